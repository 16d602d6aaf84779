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
 * A pass over band k is the two-step kernel over the block of its rows and the columns from s
 * on (kern_update2_project2_paired_ld, kern_update2_project2_f32_ld), with the corrections'
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
 * with the band's width, so that a build from before this path refuses it, and a checkpoint of
 * S (the whole matrix, another build's or one from before the path) is read into K, and back,
 * so that either reads the other.
 */
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

static double get(const struct sgd_state *st, int paired, int i, int j)
{
    return st->P ? st->P[at(st, paired, i, j)] : st->Pf[(size_t)i * st->d + j];
}

static void put(struct sgd_state *st, int paired, int i, int j, double v)
{
    if (st->P)
        st->P[at(st, paired, i, j)] = v;
    else
        st->Pf[(size_t)i * st->d + j] = (float)v;
}

double sgd_sym_entry(const struct sgd_state *st, int i, int j)
{
    int bi = i / SGD_SYM_BAND, bj = j / SGD_SYM_BAND;
    if (bi == bj)
        return get(st, st->paired, i, j) + get(st, st->paired, j, i);
    return bi < bj ? get(st, st->paired, i, j) : get(st, st->paired, j, i);
}

void sgd_sym_from_full(struct sgd_state *st, int paired)
{
    int d = st->d;
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double a = get(st, paired, i, j), b = get(st, paired, j, i);
            if (i / SGD_SYM_BAND == j / SGD_SYM_BAND) {
                put(st, paired, i, j, a / 2);
                put(st, paired, j, i, b / 2);
            } else {
                put(st, paired, i, j, (a + b) / 2);
                put(st, paired, j, i, 0);
            }
        }
}

void sgd_sym_to_full(struct sgd_state *st, int paired, int band)
{
    int d = st->d;
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double a = get(st, paired, i, j), b = get(st, paired, j, i);
            if (i / band == j / band) {
                put(st, paired, i, j, a + b);
                put(st, paired, j, i, a + b);
            } else {
                put(st, paired, j, i, a);
            }
        }
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
            kern_update2_project2_f32_ld(st->Pf + (size_t)s * d + s, nb, len, (size_t)d, d, d, c1,
                                         c1 ? h1f + s : NULL, dg / 2, c2, c2 ? h2f + s : NULL,
                                         Yf ? Yf + s : NULL, Y2f ? Y2f + s : NULL, o, o2);
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
