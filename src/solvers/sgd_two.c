/*
 * sgd_two.c: two SGD steps per pass over the stored matrix, for direct and tied in double with
 * the AVX-512 kernel (T = 2, the paired layout), and for tied in single precision with the float
 * vector kernels (T = 2, kern_update2_project2_f32: the rows bit for bit two one-step passes',
 * every sum in the one order of kern_f32.c).
 *
 * Both steps are a scaling plus a rank-T correction of the rows of the stored matrix M (S for
 * direct, W^T for tied; sgd.c): with a factor alpha, coefficients e (T x rows) and, for direct
 * only, a diagonal term diag,
 *   M' = alpha M - sum_b e_b x_b^T + diag I,
 * where the step's e depends on the step's projections y = M x of its own sample (direct:
 * e_b = mu/sqrt(d) sum_a D_ab x_a, diag = mu trD/sqrt(d), alpha the weight decay; tied:
 * e_a = c_a = mu sum_b (D_ab + D_ba) a_b/sqrt(d), alpha = 1 - lambda eta/d^2 + 2 mu trD/sqrt(d)).
 * M is stored as s P (sgd.c): s <- alpha s, then P_ii += diag/s and row i of P takes
 * -sum_b (e_b[i]/s) x_b, in one pass (sgd_pass) that also makes the next sample's projections,
 * which the next step's index needs.
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
    if (dg != 0)
        for (int i = 0; i < d; i++) {
            if (st->P)
                st->P[sgd_at(st, i, i)] += dg;
            else
                st->Pf[(size_t)i * d + i] = (float)(st->Pf[(size_t)i * d + i] + dg);
        }
}

static void times(double *v, size_t n, double s)
{
    for (size_t i = 0; i < n; i++)
        v[i] *= s;
}

/* The two-step kernel on the stored matrix, in its precision: the correction C1 along the
 * deferred step's tokens (xp), then dg on the diagonal, then C2 along this sample's (x); the
 * projections of xn into O when `project`, and of the sample after it into O2 when that is 2. */
static void kernel(struct sgd_state *st, const double *C1, double dg, const double *C2, int project,
                   double *O, double *O2)
{
    int n = st->rows, d = st->d;
    if (st->P)
        kern_update2_project2_paired(st->P, n, d, C1, st->xp, dg, C2, st->x,
                                     project ? st->xn : NULL,
                                     project == 2 ? sgd_peek_sample(st) : NULL, O, O2);
    else /* tied: dg is 0 */
        kern_update2_project2_f32(st->Pf, n, d, C1, st->xpf, C2, st->xf, project ? st->xnf : NULL,
                                  project == 2 ? sgd_peek_sample_f32(st) : NULL, O, O2);
}

void sgd_two_flush(struct sgd_state *st)
{
    if (!st->pending)
        return;
    kernel(st, st->cp, 0, NULL, 0, NULL, NULL);
    st->pending = 0;
}

/* Step at even n: defer the correction e (over the new scale into cp, the tokens into xp) and
 * make xn's projections on M' in closed form from those on M (pan). */
static void defer(struct sgd_state *st, const double *e, double diag, double alpha)
{
    int d = st->d, n = st->rows, T = st->T, direct = st->s.decomposition == DECOMP_DIRECT;
    size_t Tn = (size_t)T * n;
    if (!st->yn_ready) { /* after a restore or a resync: the pass's sums, over the stored rows */
        kernel(st, NULL, 0, NULL, 1, st->pan, NULL);
        times(st->pan, Tn, st->sp);
    }
    for (int c = 0; c < T; c++) { /* M' y = alpha M y - sum_b e_b (x_b . y) + diag y */
        double g[PARAMS_MAX_TOKENS], *o = st->pan + (size_t)c * n;
        const double *y = st->xn + (size_t)c * d;
        for (int b = 0; b < T; b++)
            g[b] = kern_dot(st->x + (size_t)b * d, y, d);
        for (int i = 0; i < n; i++) /* the terms in this order, each loop along i */
            o[i] *= alpha;
        for (int b = 0; b < T; b++) {
            const double gb = g[b], *eb = e + (size_t)b * n;
            for (int i = 0; i < n; i++)
                o[i] -= gb * eb[i];
        }
        if (direct)
            for (int i = 0; i < n; i++)
                o[i] += diag * y[i];
    }
    sgd_scale_and_diag(st, alpha, diag);
    double sp = st->sp, *cp = st->cp; /* locals: a store through cp could alias st->sp */
    for (size_t i = 0; i < Tn; i++)
        cp[i] = e[i] / sp;
    memcpy(st->xp, st->x, sizeof(double) * T * d);
    if (st->xpf)
        memcpy(st->xpf, st->xf, sizeof(float) * T * d);
    st->pending = 1;
    st->yn_ready = 0;
}

/* A pass with this step's correction, and the deferred one's first when there is one (dg is then
 * this step's diagonal term, added between them); the projections of xn into pan and of the
 * sample after it into pnn (sgd_steps moves them to pa and pan). */
static void two_pass(struct sgd_state *st, double *e, double diag, double alpha)
{
    int d = st->d, n = st->rows;
    size_t Tn = (size_t)st->T * n;
    double ns = st->sp * alpha;
    if (st->pending && !(fabs(ns) >= SGD_SCALE_MIN && fabs(ns) <= 1 / SGD_SCALE_MIN))
        sgd_two_flush(st); /* the scale folds into P: after the deferred correction */
    double dg = 0;
    if (st->pending) {
        sgd_scale_by(st->P, st->Pf, (size_t)n * d, &st->sp, alpha);
        dg = diag / st->sp;
    } else {
        sgd_scale_and_diag(st, alpha, diag);
    }
    double sp = st->sp;
    for (size_t i = 0; i < Tn; i++)
        e[i] /= sp;
    kernel(st, st->pending ? st->cp : NULL, dg, e, 2, st->pan, st->pnn);
    times(st->pan, Tn, sp);
    times(st->pnn, Tn, sp);
    st->pending = 0;
    st->yn_ready = 1;
}

void sgd_two_step(struct sgd_state *st, double *e, double diag, double alpha)
{
    if (st->n % 2 == 0 && !st->pending)
        defer(st, e, diag, alpha);
    else
        two_pass(st, e, diag, alpha);
}
