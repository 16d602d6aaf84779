/*
 * sgd_sym.c: direct's S kept as half of itself, for an elementwise activation.
 *
 * With an elementwise activation S stays symmetric: it starts so (s0 goe + t I), the teacher
 * is symmetric, so h_ab = h_ba and y_ab = y_ba, D_ab = D_ba, and the correction
 * sum_ab D_ab (x_a x_b^T - cidx_ab I) is symmetric (docs/model.md §4; with softmax D is not, and
 * S is kept whole). The two-step path (sgd_two.c) then keeps, in the stored array P (over its
 * scale), a matrix K with S = K + K^T:
 *   - the rows in bands of SGD_SYM_BAND, band k the rows from s = k SGD_SYM_BAND on;
 *   - row i of band k holds K_ij = S_ij for the columns j of later bands, K_ij = S_ij / 2 for
 *     those of its own band (the band's diagonal block, both triangles), and nothing before s
 *     (those entries are zero and never read).
 * In double (paired or row-major) K's entries lie where S's do. In single each band is kept
 * column by column, band k's block of nb rows and d - s columns at P + s d, entry (i, j) at
 * (j - s) nb + (i - s) (sgd_sym_at_f32), the rest of its rows' storage zero: the float pass then
 * holds one column of the band's rows per vector and makes each row's projection in its own lane
 * (kern_band2_project2_f32), with no sums across lanes, which cost the row-major pass a third of
 * its time over half of S's short rows.
 * A pass over band k is the two-step kernel over the block of its rows and the columns from s
 * on (kern_update2_project2_paired_ld, kern_band2_project2_f32), with the corrections'
 * tokens halved over the band's own columns and direct's diagonal term halved: every operation
 * on a diagonal block is then the one on S's entry times 1/2, which is exact, so the block holds
 * half of what a pass over the whole of S would make of it. About half of S's entries are
 * passed over (d^2/2 + d SGD_SYM_BAND/2), and the step's multiply-adds and bytes halve.
 *
 * The pass's projections are r_b = K x_b (over the stored entries), and
 *   x_a^T S x_b = x_a . r_b + x_b . r_a,
 * which is how the index is made from them (sgd.c's indices). The closed form of the deferring
 * step takes K's correction, the band's tokens halved. Tr S = 2 sum_i K_ii. sgd_student writes
 * S = K + K^T out (exactly symmetric); a checkpoint holds K under a magic of its own (sgd_state.c)
 * with the band's width (negative: column by column), so that a build from before this path
 * refuses it, and a checkpoint of
 * S (the whole matrix, another build's or one from before the path) is read into K, and back,
 * so that either reads the other.
 */
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/kern.h"
#include "sgd_impl.h"

int sgd_sym_possible(const struct sgd_state *st)
{
    return st->s.decomposition == DECOMP_DIRECT && st->two && st->T == 2 && st->d % 2 == 0 &&
           st->m->p.activation.kind != ACT_SOFTMAX;
}

/* Entry (i, j) of a stored direct matrix, row-major or paired. */
static size_t at(const struct sgd_state *st, int paired, int i, int j)
{
    return paired ? kern_paired_index(st->d, st->d, i, j) : (size_t)i * st->d + j;
}

size_t sgd_sym_at_f32(int d, int i, int j)
{
    int s = i / SGD_SYM_BAND * SGD_SYM_BAND, nb = d - s < SGD_SYM_BAND ? d - s : SGD_SYM_BAND;
    return (size_t)s * d + (size_t)(j - s) * nb + (i - s);
}

size_t sgd_diag_at_f32(const struct sgd_state *st, int i)
{
    return st->sym ? sgd_sym_at_f32(st->d, i, i) : (size_t)i * st->d + i;
}

/* Entry (i, j) of what P holds, with S's places (the whole S, or K over row-major bands); col:
 * K's bands column by column (single), where nothing before a band's first column is kept. */
static double get(const struct sgd_state *st, int paired, int col, int i, int j)
{
    if (!st->Pf)
        return st->P[at(st, paired, i, j)];
    if (!col)
        return st->Pf[(size_t)i * st->d + j];
    return j < i / SGD_SYM_BAND * SGD_SYM_BAND ? 0 : st->Pf[sgd_sym_at_f32(st->d, i, j)];
}

static void put(struct sgd_state *st, int paired, int i, int j, double v)
{
    if (!st->Pf)
        st->P[at(st, paired, i, j)] = v;
    else
        st->Pf[(size_t)i * st->d + j] = (float)v;
}

double sgd_sym_entry(const struct sgd_state *st, int i, int j)
{
    int bi = i / SGD_SYM_BAND, bj = j / SGD_SYM_BAND, col = st->Pf != NULL;
    if (bi == bj)
        return get(st, st->paired, col, i, j) + get(st, st->paired, col, j, i);
    return bi < bj ? get(st, st->paired, col, i, j) : get(st, st->paired, col, j, i);
}

/* Single: K's bands column by column. The conversions go band by band through a scratch of
 * SGD_SYM_BAND d floats, past the halved tokens in st->hxf, which a state that keeps K has; a
 * state that reads a checkpoint of K without keeping it allocates its own (*owned; NULL, and
 * no scratch, when that fails). */
static float *scratch(const struct sgd_state *st, float **owned)
{
    *owned = NULL;
    if (st->hxf)
        return st->hxf + 2 * (size_t)st->T * st->d;
    *owned = malloc(sizeof(float) * SGD_SYM_BAND * (size_t)st->d);
    return *owned;
}

/* S (row-major in P) into K, band after band from the first: band k's block is made in the
 * scratch from its own rows and the later ones (still S), then written over its rows, the rest
 * of which is zeroed. The same arithmetic as the generic conversion below. Only a state that
 * keeps K makes it, so the scratch is hxf's. */
static void from_full_f32(struct sgd_state *st)
{
    int d = st->d;
    float *P = st->Pf, *w = st->hxf + 2 * (size_t)st->T * d;
    for (int s = 0; s < d; s += SGD_SYM_BAND) {
        int nb = d - s < SGD_SYM_BAND ? d - s : SGD_SYM_BAND;
        for (int i = s; i < s + nb; i++)
            for (int j = s; j < d; j++) {
                double a = P[(size_t)i * d + j];
                double v = j < s + nb ? a / 2 : (a + P[(size_t)j * d + i]) / 2;
                w[(size_t)(j - s) * nb + (i - s)] = (float)v;
            }
        memset(P + (size_t)s * d, 0, sizeof(float) * (size_t)nb * d);
        memcpy(P + (size_t)s * d, w, sizeof(float) * (size_t)nb * (d - s));
    }
}

/* K into S, band after band from the last: band k's rows are made in the scratch from its own
 * block and the earlier ones (still K), then written over its block. */
static int to_full_f32(struct sgd_state *st)
{
    int d = st->d;
    float *P = st->Pf, *owned, *w = scratch(st, &owned);
    if (!w)
        return -1;
    for (int s = (d - 1) / SGD_SYM_BAND * SGD_SYM_BAND; s >= 0; s -= SGD_SYM_BAND) {
        int nb = d - s < SGD_SYM_BAND ? d - s : SGD_SYM_BAND;
        const float *blk = P + (size_t)s * d;
        for (int i = s; i < s + nb; i++)
            for (int j = 0; j < d; j++) {
                double v;
                if (j >= s + nb) /* a later band's column: K_ij */
                    v = blk[(size_t)(j - s) * nb + (i - s)];
                else if (j >= s) /* the band's own: K_ij + K_ji */
                    v = (double)blk[(size_t)(j - s) * nb + (i - s)] +
                        blk[(size_t)(i - s) * nb + (j - s)];
                else /* an earlier band's: K_ji, in that band's block */
                    v = P[sgd_sym_at_f32(d, j, i)];
                w[(size_t)(i - s) * d + j] = (float)v;
            }
        memcpy(P + (size_t)s * d, w, sizeof(float) * (size_t)nb * d);
    }
    free(owned);
    return 0;
}

void sgd_sym_from_full(struct sgd_state *st, int paired)
{
    if (st->Pf) {
        from_full_f32(st);
        return;
    }
    int d = st->d;
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double a = get(st, paired, 0, i, j), b = get(st, paired, 0, j, i);
            if (i / SGD_SYM_BAND == j / SGD_SYM_BAND) {
                put(st, paired, i, j, a / 2);
                put(st, paired, j, i, b / 2);
            } else {
                put(st, paired, i, j, (a + b) / 2);
                put(st, paired, j, i, 0);
            }
        }
}

int sgd_sym_to_full(struct sgd_state *st, int paired, int band)
{
    if (band < 0)
        return st->Pf && band == -SGD_SYM_BAND ? to_full_f32(st) : -1;
    int d = st->d;
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double a = get(st, paired, 0, i, j), b = get(st, paired, 0, j, i);
            if (i / band == j / band) {
                put(st, paired, i, j, a + b);
                put(st, paired, j, i, a + b);
            } else {
                put(st, paired, j, i, a);
            }
        }
    return 0;
}

/* The entries [s, s + nb) of each of the T tokens (rows of d) in h (double) or hf (float),
 * halved in place. */
static void halve(double *h, float *hf, int T, int d, int s, int nb)
{
    for (int t = 0; t < T; t++)
        for (int j = s; j < s + nb; j++) {
            size_t e = (size_t)t * d + j;
            if (h)
                h[e] /= 2;
            else if (hf)
                hf[e] /= 2;
        }
}

/* The bands in order, each over its columns from s on: band k's own columns are halved in the
 * copies of the tokens just before its pass, and no later band reads them, so nothing is put
 * back. */
void sgd_sym_kernel(struct sgd_state *st, const double *C1, double dg, const double *C2,
                    const double *Y, const float *Yf, const double *Y2, const float *Y2f, double *O,
                    double *O2)
{
    int d = st->d, T = st->T;
    size_t Td = (size_t)T * d;
    double *h1 = st->hx, *h2 = st->hx ? st->hx + Td : NULL;
    float *h1f = st->hxf, *h2f = st->hxf ? st->hxf + Td : NULL;
    if (h1 && h2) {
        if (C1)
            memcpy(h1, st->xp, sizeof(double) * Td);
        if (C2)
            memcpy(h2, st->x, sizeof(double) * Td);
    } else if (h1f && h2f) {
        if (C1)
            memcpy(h1f, st->xpf, sizeof(float) * Td);
        if (C2)
            memcpy(h2f, st->xf, sizeof(float) * Td);
    }
    for (int s = 0; s < d; s += SGD_SYM_BAND) {
        int nb = d - s < SGD_SYM_BAND ? d - s : SGD_SYM_BAND, len = d - s;
        const double *c1 = C1 ? C1 + s : NULL, *c2 = C2 ? C2 + s : NULL;
        double *o = O ? O + s : NULL, *o2 = O2 ? O2 + s : NULL;
        if (C1)
            halve(h1, h1f, T, d, s, nb);
        if (C2)
            halve(h2, h2f, T, d, s, nb);
        if (st->P)
            kern_update2_project2_paired_ld(st->P + (size_t)s * d + 2 * (size_t)s, nb, len,
                                            (size_t)d, d, d, c1, c1 ? h1 + s : NULL, dg / 2, c2,
                                            c2 ? h2 + s : NULL, Y ? Y + s : NULL,
                                            Y2 ? Y2 + s : NULL, o, o2);
        else
            kern_band2_project2_f32(st->Pf + (size_t)s * d, nb, len, d, d, c1, c1 ? h1f + s : NULL,
                                    dg / 2, c2, c2 ? h2f + s : NULL, Yf ? Yf + s : NULL,
                                    Y2f ? Y2f + s : NULL, o, o2);
    }
}

void sgd_sym_closed(const struct sgd_state *st, double *o, const double *e, const double *x,
                    const double *y, double alpha, double diag)
{
    int d = st->d, T = st->T;
    for (int i = 0; i < d; i++) /* the terms in the order of sgd_two.c's closed form */
        o[i] *= alpha;
    for (int b = 0; b < T; b++) {
        const double *xb = x + (size_t)b * d, *eb = e + (size_t)b * d;
        double after = 0; /* x_b . y over the bands after this one */
        for (int s = (d - 1) / SGD_SYM_BAND * SGD_SYM_BAND; s >= 0; s -= SGD_SYM_BAND) {
            int end = s + SGD_SYM_BAND < d ? s + SGD_SYM_BAND : d;
            double own = 0;
            for (int j = s; j < end; j++)
                own += xb[j] * y[j];
            double g = after + own / 2;
            for (int i = s; i < end; i++)
                o[i] -= g * eb[i];
            after += own;
        }
    }
    for (int i = 0; i < d; i++)
        o[i] += diag / 2 * y[i];
}
