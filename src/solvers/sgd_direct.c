/*
 * sgd_direct.c: direct's SGD step (docs/model.md §4), S <- alpha S - mu g, and with the AVX-512
 * kernel (direct in double, T = 2, the paired layout) two steps per pass over S.
 *
 * The step. With e_b = mu/sqrt(d) sum_a D_ab x_a (the T tokens x_a of this sample) and
 * diag = mu trD/sqrt(d),
 *   S' = alpha S - sum_b e_b x_b^T + diag I,   Tr S' = alpha Tr S - sum_b e_b . x_b + d diag.
 * S is stored as s P (sgd.c): s <- alpha s, then P_ii += diag/s and row i of P takes
 * -sum_b (e_b[i]/s) x_b, in one pass (sgd_pass) that also makes the next sample's projections
 * y = S x_next, which the next step's index needs.
 *
 * Two steps per pass. A pass reads and writes all of S (16 d^2 bytes) for 4 d^2 multiply-adds;
 * at d = 400 it streams from the second-level cache and the bytes, not the arithmetic, bound
 * it. Step t's correction needs only step t's index, and that needs y_t = S_t x_t. The pass of
 * step t + 1 applies step t's correction (deferred) and step t + 1's to each row, and makes from
 * the new rows (S_{t+2}) the projections of the two samples that follow, x_{t+2} exactly and
 * y'_{t+3} = S_{t+2} x_{t+3}. Step t + 2 then needs no pass for its sample's successor:
 *   S_{t+3} x = alpha S_{t+2} x - sum_b e_b (x_b . x) + diag x    (e, x_b, diag of step t + 2),
 * O(T^2 d), so step t + 2 only defers its correction, and the pass of step t + 3 applies both:
 * half the bytes per step and the same multiply-adds (kern_update2_project2_paired).
 *
 * The pairing goes by the step count: a step at even n defers (its diagonal term goes into P at
 * once, as the one-step pass would add it first), the step at odd n that follows makes the pass.
 * Each entry of P takes the same operations in the same order as two one-step passes would give
 * it (the kernel's first correction, the second step's diagonal term, the second correction),
 * so P is bit for bit what two one-step passes of that kernel make; only the projections are
 * summed in another order (the pass's, or the closed form's), which moves direct's output at
 * the level of rounding against the one-step path, and nothing else. Whatever needs P as it is
 * after a deferring step (sgd_student, a checkpoint, a scale leaving its range) applies the
 * deferred correction first (sgd_direct_flush), with the kernel's same operations on each entry;
 * the step at odd n then makes a pass with its correction alone. So where a run stops (records,
 * polls, checkpoints) changes no bit: a flushed entry is the entry the two-step pass makes, and
 * a projection is summed the same way by every pass. A restored state (sgd_state.c) holds S_n
 * with nothing deferred; at even n the projections y'_{n+1} are made again by a projection
 * alone over the stored rows, the sums the pass that made them before the checkpoint had made,
 * so that the resumed run is the uninterrupted one bit for bit, and checkpoints of either build
 * (or of the one-step path) read back. The resync (every SGD_RESYNC steps, at even n, nothing
 * deferred) folds the scale into P; y'_{n+1} is then made again from the folded rows in every
 * run alike. The weight decay is alpha in both steps of a pair, each with its own (the rate of
 * a two-phase schedule may change between them), Tr S is kept in closed form per step as before.
 */
#include <math.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "sgd_impl.h"

/* e_b = mu/sqrt(d) sum_a D_ab x_a into e (T x d); returns diag. */
static double coefficients(const struct sgd_state *st, const double *D, double trD, double *e)
{
    int d = st->d, T = st->T;
    for (int b = 0; b < T; b++) {
        double *eb = e + (size_t)b * d;
        memset(eb, 0, sizeof(double) * (size_t)d);
        for (int a = 0; a < T; a++) {
            double f = st->mu * D[a * T + b] / st->sqd;
            const double *xa = st->x + (size_t)a * d;
            for (int i = 0; i < d; i++)
                eb[i] += f * xa[i];
        }
    }
    return st->mu * trD / st->sqd;
}

/* s <- alpha s and P_ii += diag / s, as the one-step path does before its pass. */
static void scale_and_diag(struct sgd_state *st, double alpha, double diag)
{
    int d = st->d;
    sgd_scale_by(st->P, st->Pf, (size_t)d * d, &st->sp, alpha);
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

void sgd_direct_flush(struct sgd_state *st)
{
    if (!st->pending)
        return;
    kern_update2_project2_paired(st->P, st->d, st->d, st->cp, st->xp, 0, NULL, NULL, NULL, NULL,
                                 NULL, NULL);
    st->pending = 0;
}

/* Step at even n: defer the correction e (over the new scale into cp, the tokens into xp) and
 * make xn's projections on S' in closed form from those on S (pan). */
static void defer(struct sgd_state *st, double *e, double diag)
{
    int d = st->d, T = st->T;
    size_t Td = (size_t)T * d;
    if (!st->yn_ready) { /* after a restore or a resync: the pass's sums, over the stored rows */
        kern_update2_project2_paired(st->P, d, d, NULL, NULL, 0, NULL, NULL, st->xn, NULL, st->pan,
                                     NULL);
        times(st->pan, Td, st->sp);
    }
    double alpha = st->alpha;
    for (int c = 0; c < T; c++) { /* S' y = alpha S y - sum_b e_b (x_b . y) + diag y */
        double g[PARAMS_MAX_TOKENS], *o = st->pan + (size_t)c * d;
        const double *y = st->xn + (size_t)c * d;
        for (int b = 0; b < T; b++)
            g[b] = kern_dot(st->x + (size_t)b * d, y, d);
        for (int i = 0; i < d; i++) /* the terms in this order, each loop along i */
            o[i] *= alpha;
        for (int b = 0; b < T; b++) {
            const double gb = g[b], *eb = e + (size_t)b * d;
            for (int i = 0; i < d; i++)
                o[i] -= gb * eb[i];
        }
        for (int i = 0; i < d; i++)
            o[i] += diag * y[i];
    }
    scale_and_diag(st, alpha, diag);
    double sp = st->sp, *cp = st->cp; /* locals: a store through cp could alias st->sp */
    for (size_t i = 0; i < Td; i++)
        cp[i] = e[i] / sp;
    memcpy(st->xp, st->x, sizeof(double) * Td);
    st->pending = 1;
    st->yn_ready = 0;
}

/* A pass with this step's correction, and the deferred one's first when there is one (dg is then
 * this step's diagonal term, added between them); the projections of xn into pan and of the
 * sample after it into pnn (sgd_steps moves them to pa and pan). */
static void two_pass(struct sgd_state *st, double *e, double diag)
{
    int d = st->d;
    size_t Td = (size_t)st->T * d;
    double alpha = st->alpha, ns = st->sp * alpha;
    if (st->pending && !(fabs(ns) >= SGD_SCALE_MIN && fabs(ns) <= 1 / SGD_SCALE_MIN))
        sgd_direct_flush(st); /* the scale folds into P: after the deferred correction */
    double dg = 0;
    if (st->pending) {
        sgd_scale_by(st->P, NULL, (size_t)d * d, &st->sp, alpha);
        dg = diag / st->sp;
    } else {
        scale_and_diag(st, alpha, diag);
    }
    double sp = st->sp;
    for (size_t i = 0; i < Td; i++)
        e[i] /= sp;
    kern_update2_project2_paired(st->P, d, d, st->pending ? st->cp : NULL, st->xp, dg, e, st->x,
                                 st->xn, sgd_peek_sample(st), st->pan, st->pnn);
    times(st->pan, Td, sp);
    times(st->pnn, Td, sp);
    st->pending = 0;
    st->yn_ready = 1;
}

void sgd_step_direct(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, T = st->T;
    double *e = st->ca; /* T x d: row i of the correction is -sum_b e_b[i] x_b */
    double diag = coefficients(st, D, trD, e), alpha = st->alpha;
    st->trS = alpha * st->trS - sgd_dot_rows(e, st->x, d, T) + d * diag;
    int f = st->nfz; /* the teacher rows of xn made ahead (sgd_sample.c) */
    if (st->two && st->n % 2 == 0 && !st->pending) {
        defer(st, e, diag);
    } else if (st->two) {
        two_pass(st, e, diag);
    } else {
        scale_and_diag(st, alpha, diag);
        f = 0;
        sgd_pass(st, st->P, st->Pf, st->sp, e, st->pan, &f);
    }
    sgd_teacher_rest(st, st->xn, st->xnf, st->zn, f);
}
