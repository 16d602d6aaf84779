/*
 * sgd_two.c: two SGD steps per pass over the stored matrices, for every decomposition, in double
 * with the AVX-512 kernel (T = 2, the paired layout) and in single precision with the float
 * vector kernels (T = 2, kern_update2_project2_f32: the rows bit for bit two one-step passes',
 * direct's diagonal term added in double and rounded as the one-step path adds it, every sum in
 * the one order of kern_f32_body.h).
 *
 * Every step is a scaling plus a rank-T correction of the rows of each stored matrix M (S for
 * direct, W^T for tied, P = (U + V)^T and Q = (U - V)^T for untied; sgd.c): with a factor alpha,
 * coefficients e (T x rows) and, for direct only, a diagonal term diag,
 *   M' = alpha M - sum_b e_b x_b^T + diag I,
 * where the step's e depends on the step's projections y = M x of its own sample (direct:
 * e_b = mu/sqrt(d) sum_a D_ab x_a, diag = mu trD/sqrt(d), alpha the weight decay; tied:
 * e_a = c_a = mu sum_b (D_ab + D_ba) a_b/sqrt(d), alpha = 1 - lambda eta/d^2 + 2 mu trD/sqrt(d);
 * untied: cu +- cv and alpha +- beta for P and Q, sgd.c's step_untied). M is stored as s P
 * (sgd.c): s <- alpha s, then P_ii += diag/s and row i of P takes -sum_b (e_b[i]/s) x_b, in one
 * pass (sgd_pass) that also makes the next sample's projections, which the next step's index
 * needs. Untied's projections on P and Q are turned into those on U and V once they are final
 * (the pass's of xn, the closed form's); those of the sample after xn stay on P and Q until the
 * closed form has taken them.
 *
 * Two steps per pass. A pass reads and writes all of P (16 rows d bytes) for 4 rows d
 * multiply-adds; at d = 400 it streams from the second-level cache, and beyond from the third
 * or from memory, and the bytes, not the arithmetic, bound it. Step t's correction needs only
 * step t's index, and that needs y_t = M_t x_t. The pass of step t + 1 applies step t's
 * correction (deferred) and step t + 1's to each row, and makes from the new rows (M_{t+2}) the
 * projections of the two samples that follow, x_{t+2} exactly and y'_{t+3} = M_{t+2} x_{t+3}.
 * Step t + 2 then needs no pass for its sample's successor:
 *   M_{t+3} x = alpha M_{t+2} x - sum_b e_b (x_b . x) + diag x
 * (alpha, e, x_b, diag of step t + 2),
 * O(T^2 (d + rows)), so step t + 2 only defers its correction, and the pass of step t + 3
 * applies both: half the bytes per step and the same multiply-adds
 * (kern_update2_project2_paired).
 *
 * The pairing goes by the step count: a step at even n defers (its diagonal term goes into P at
 * once, as the one-step pass would add it first), the step at odd n that follows makes the pass.
 * Each entry of P takes the same operations in the same order as two one-step passes would give
 * it (the kernel's first correction, the second step's diagonal term, the second correction),
 * so P is bit for bit what two one-step passes of that kernel make; only the projections are
 * summed in another order (the pass's, or the closed form's), which moves the output at the
 * level of rounding against the one-step path, and nothing else. Whatever needs P as it is
 * after a deferring step (sgd_student, a checkpoint, a scale leaving its range) applies the
 * deferred correction first (sgd_two_flush), with the kernel's same operations on each entry;
 * the step at odd n then makes a pass with its correction alone. So where a run stops (records,
 * polls, checkpoints) changes no bit: a flushed entry is the entry the two-step pass makes, and
 * a projection is summed the same way by every pass. A restored state (sgd_state.c) holds M_n
 * with nothing deferred; at even n the projections y'_{n+1} are made again by a projection
 * alone over the stored rows, the sums the pass that made them before the checkpoint had made,
 * so that the resumed run is the uninterrupted one bit for bit, and checkpoints of either build
 * (or of the one-step path) read back. The resync (every SGD_RESYNC steps, at even n, nothing
 * deferred) folds the scale into P; y'_{n+1} is then made again from the folded rows in every
 * run alike. Each step of a pair has its own alpha (a two-phase schedule's rate may change
 * between them, and tied's depends on the step's trD); the norms (Tr S) are kept in closed form
 * per step as on the one-step path, from the step's own projections, which are exact on both.
 *
 * Tied's and untied's float matrices are kept on this path in bands of SGD_COLS_BAND rows, each
 * band column by column: band k, the rows from s = k SGD_COLS_BAND on (nb of them), at M + s d,
 * entry (i, j) at j nb + (i - s) (sgd_cols_at), so that the pass (kern_band2_project2_f32, as
 * sgd_sym.c's bands of direct's K) holds one column of a band's rows per vector and makes each
 * row's projection in its own lane, with no sums across lanes, and each band is one stretch of
 * memory read in order. Against the row-major pass (kern_update2_project2_f32) over the same
 * entries, a standalone loop of passes made 1.12-1.20x as many multiply-adds a second at
 * d = 400-3200 over one matrix, 1.15-1.30x over untied's two; a step in single was 1.05-1.28x
 * as fast (bench/compare.sh, five rounds, d = 400-3200). The entries are the row-major kernel's
 * bit for bit; the projections are summed in another order, so tied's and untied's runs in
 * single move at the level of float rounding with it. The one-step path keeps the rows row-major
 * (sgd_set_two_step turns them), and a checkpoint holds them row-major (sgd_state.c).
 */
#include <math.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "sgd_impl.h"

void sgd_scale_and_diag(struct sgd_state *st, double alpha, double diag)
{
    int d = st->d;
    sgd_scale_by(st->P, st->Pf, (size_t)st->rows * d, &st->sp, alpha);
    double dg = diag / st->sp;
    if (st->sym)
        dg /= 2; /* K's diagonal (sgd_sym.c) */
    if (dg != 0)
        for (int i = 0; i < d; i++) {
            if (st->P)
                st->P[sgd_at(st, i, i)] += dg;
            else {
                float *e = st->Pf + sgd_diag_at_f32(st, i);
                *e = (float)(*e + dg);
            }
        }
}

static void times(double *v, size_t n, double s) { kern_scal(v, s, n); }

/* The stored matrices of the two-step path: P (direct's S, tied's W^T, untied's (U + V)^T) and,
 * for untied, Q = (U - V)^T, each with its scale, its deferred correction, and the projections
 * of xn and of the sample after it on it. */
struct mat {
    double *M;
    float *Mf;
    double *s, *cp, *on, *onn;
};

static int mats(struct sgd_state *st, struct mat m[2])
{
    m[0] = (struct mat){st->P, st->Pf, &st->sp, st->cp, st->pan, st->pnn};
    m[1] = (struct mat){st->Q, st->Qf, &st->sq, st->cq, st->pbn, st->pbnn};
    return st->Q || st->Qf ? 2 : 1;
}

size_t sgd_cols_at(int rows, int d, int i, int j)
{
    int s = i / SGD_COLS_BAND * SGD_COLS_BAND,
        nb = rows - s < SGD_COLS_BAND ? rows - s : SGD_COLS_BAND;
    return (size_t)s * d + (size_t)j * nb + (i - s);
}

/* A float matrix of `rows` rows of d from row-major into bands column by column (on) or back:
 * each band keeps the span of its rows, so one band at a time goes through w. */
static void cols_turn(float *M, int rows, int d, float *w, int on)
{
    for (int s = 0; s < rows; s += SGD_COLS_BAND) {
        int nb = rows - s < SGD_COLS_BAND ? rows - s : SGD_COLS_BAND;
        float *blk = M + (size_t)s * d;
        memcpy(w, blk, sizeof(float) * (size_t)nb * d);
        for (int i = 0; i < nb; i++)
            for (int j = 0; j < d; j++) {
                size_t r = (size_t)i * d + j, c = (size_t)j * nb + i;
                if (on)
                    blk[c] = w[r];
                else
                    blk[r] = w[c];
            }
    }
}

void sgd_cols_set(struct sgd_state *st, int on)
{
    on = on && st->colsw;
    if (on == st->cols)
        return;
    float *mf[2] = {st->Pf, st->Qf};
    for (int k = 0; k < 2; k++)
        if (mf[k])
            cols_turn(mf[k], st->rows, st->d, st->colsw, on);
    st->cols = on;
}

/* The two-step pass over a float matrix in bands column by column, band after band
 * (kern_band2_project2_f32, the arguments of kern_update2_project2_f32 below). */
static void cols_kernel(const struct sgd_state *st, float *M, const double *C1, const float *X1,
                        const double *C2, const float *X2, const float *Y, const float *Y2,
                        double *O, double *O2)
{
    int n = st->rows, d = st->d;
    for (int s = 0; s < n; s += SGD_COLS_BAND) {
        int nb = n - s < SGD_COLS_BAND ? n - s : SGD_COLS_BAND;
        kern_band2_project2_f32(M + (size_t)s * d, nb, d, d, n, C1 ? C1 + s : NULL, X1, 0,
                                C2 ? C2 + s : NULL, X2, Y, Y2, O ? O + s : NULL,
                                O2 ? O2 + s : NULL);
    }
}

void sgd_cols_project(const struct sgd_state *st, float *M, const float *Y, double *O)
{
    cols_kernel(st, M, NULL, NULL, NULL, NULL, Y, NULL, O, NULL);
}

/* The two-step kernel on a stored matrix, in its precision: the correction C1 along the deferred
 * step's tokens (xp), then dg on the diagonal, then C2 along this sample's (x); the projections
 * of xn into O when `project`, and of the sample after it into O2 when that is 2. */
static void kernel(struct sgd_state *st, const struct mat *m, const double *C1, double dg,
                   const double *C2, int project, double *O, double *O2)
{
    int n = st->rows, d = st->d;
    if (st->sym) {
        const double *y2 = project == 2 ? sgd_peek_sample(st) : NULL;
        const float *y2f = project == 2 && st->single ? sgd_peek_sample_f32(st) : NULL;
        sgd_sym_kernel(st, C1, dg, C2, project ? st->xn : NULL, project ? st->xnf : NULL, y2, y2f,
                       O, O2);
        return;
    }
    if (m->M)
        kern_update2_project2_paired(m->M, n, d, C1, st->xp, dg, C2, st->x, project ? st->xn : NULL,
                                     project == 2 ? sgd_peek_sample(st) : NULL, O, O2);
    else if (st->cols)
        cols_kernel(st, m->Mf, C1, st->xpf, C2, st->xf, project ? st->xnf : NULL,
                    project == 2 ? sgd_peek_sample_f32(st) : NULL, O, O2);
    else
        kern_update2_project2_f32(m->Mf, n, d, C1, st->xpf, dg, C2, st->xf,
                                  project ? st->xnf : NULL,
                                  project == 2 ? sgd_peek_sample_f32(st) : NULL, O, O2);
}

/* Matrix k's scale times alpha, and for P the diagonal term over the new scale (as the one-step
 * path starts a step); Q has none. */
static void scale(struct sgd_state *st, const struct mat *m, int k, double alpha, double diag)
{
    if (k == 0)
        sgd_scale_and_diag(st, alpha, diag);
    else
        sgd_scale_by(m->M, m->Mf, (size_t)st->rows * st->d, m->s, alpha);
}

void sgd_two_flush(struct sgd_state *st)
{
    if (!st->pending)
        return;
    struct mat m[2];
    for (int k = 0, nm = mats(st, m); k < nm; k++)
        kernel(st, &m[k], m[k].cp, 0, NULL, 0, NULL, NULL);
    st->pending = 0;
}

/* Step at even n: defer the corrections e[k] (over the new scales into cp, the tokens into xp)
 * and make xn's projections on M' in closed form from those on M (pan, and pbn for Q). */
static void defer(struct sgd_state *st, double *const e[2], double diag, const double alpha[2])
{
    int d = st->d, n = st->rows, T = st->T, direct = st->s.decomposition == DECOMP_DIRECT;
    size_t Tn = (size_t)T * n;
    struct mat m[2];
    int nm = mats(st, m);
    double g[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS]; /* g[c T + b] = x_b . xn_c */
    for (int c = 0; c < T; c++)
        for (int b = 0; b < T; b++)
            g[c * T + b] = kern_dot(st->x + (size_t)b * d, st->xn + (size_t)c * d, d);
    for (int k = 0; k < nm; k++) {
        if (!st->yn_ready) { /* after a restore or a resync: the pass's sums over the stored rows */
            kernel(st, &m[k], NULL, 0, NULL, 1, m[k].on, NULL);
            times(m[k].on, Tn, *m[k].s);
        }
        for (int c = 0; c < T; c++) { /* M' y = alpha M y - sum_b e_b (x_b . y) + diag y */
            double *o = m[k].on + (size_t)c * n;
            const double *y = st->xn + (size_t)c * d;
            if (st->sym) {
                sgd_sym_closed(st, o, e[k], st->x, y, alpha[k], diag);
                continue;
            }
            kern_scal(o, alpha[k], (size_t)n); /* the terms in this order, each loop along i */
            for (int b = 0; b < T; b++)        /* o - g e_b as o + (-g) e_b: the same bits */
                kern_axpy(o, e[k] + (size_t)b * n, -g[c * T + b], (size_t)n);
            if (direct)
                kern_axpy(o, y, diag, (size_t)n);
        }
        scale(st, &m[k], k, alpha[k], diag);
        double sc = *m[k].s, *cp = m[k].cp; /* locals: a store through cp could alias the scale */
        kern_div(cp, e[k], sc, Tn);
    }
    if (nm == 2)
        sgd_uv_from_pq(st->pan, st->pbn, Tn);
    memcpy(st->xp, st->x, sizeof(double) * T * d);
    if (st->xpf)
        memcpy(st->xpf, st->xf, sizeof(float) * T * d);
    st->pending = 1;
    st->yn_ready = 0;
}

/* A pass with this step's corrections, and the deferred ones first when there are (dg is then
 * this step's diagonal term, added between them); the projections of xn into pan (pbn) and of
 * the sample after it into pnn (pbnn), which sgd_steps moves to pa and pan (pb and pbn). */
static void two_pass(struct sgd_state *st, double *const e[2], double diag, const double alpha[2])
{
    int d = st->d, n = st->rows;
    size_t Tn = (size_t)st->T * n;
    struct mat m[2];
    int nm = mats(st, m);
    for (int k = 0; k < nm; k++) {
        double ns = *m[k].s * alpha[k];
        if (st->pending && !(fabs(ns) >= SGD_SCALE_MIN && fabs(ns) <= 1 / SGD_SCALE_MIN))
            sgd_two_flush(st); /* the scale folds into the array: after the deferred correction */
    }
    for (int k = 0; k < nm; k++) {
        double dg = 0;
        if (st->pending) {
            sgd_scale_by(m[k].M, m[k].Mf, (size_t)n * d, m[k].s, alpha[k]);
            dg = k == 0 ? diag / *m[k].s : 0;
        } else {
            scale(st, &m[k], k, alpha[k], diag);
        }
        double sc = *m[k].s;
        kern_div(e[k], e[k], sc, Tn);
        kernel(st, &m[k], st->pending ? m[k].cp : NULL, dg, e[k], 2, m[k].on, m[k].onn);
        times(m[k].on, Tn, sc);
        times(m[k].onn, Tn, sc);
    }
    if (nm == 2)
        sgd_uv_from_pq(st->pan, st->pbn, Tn);
    st->pending = 0;
    st->yn_ready = 1;
}

void sgd_two_step(struct sgd_state *st, double *const e[2], double diag, const double alpha[2])
{
    if (st->n % 2 == 0 && !st->pending)
        defer(st, e, diag, alpha);
    else
        two_pass(st, e, diag, alpha);
}
