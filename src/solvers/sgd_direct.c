/*
 * sgd_direct.c: direct's SGD step (docs/model.md §4), S <- alpha S - mu g.
 *
 * With e_b = mu/sqrt(d) sum_a D_ab x_a (the T tokens x_a of this sample) and
 * diag = mu trD/sqrt(d),
 *   S' = alpha S - sum_b e_b x_b^T + diag I,   Tr S' = alpha Tr S - sum_b e_b . x_b + d diag.
 * S is stored as s P (sgd.c): s <- alpha s, then P_ii += diag/s and row i of P takes
 * -sum_b (e_b[i]/s) x_b, in one pass (sgd_pass) that also makes the next sample's projections
 * y = S x_next, which the next step's index needs; with the AVX-512 kernel in double, or the
 * float kernels in single precision, two steps per pass (sgd_two.c), and with an elementwise
 * activation there half of the symmetric S (sgd_sym.c).
 */
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
            kern_axpy(eb, st->x + (size_t)a * d, f, (size_t)d);
        }
    }
    return st->mu * trD / st->sqd;
}

void sgd_step_direct(struct sgd_state *st, const double *D, double trD)
{
    int d = st->d, T = st->T;
    double *e = st->ca; /* T x d: row i of the correction is -sum_b e_b[i] x_b */
    double diag = coefficients(st, D, trD, e), alpha = st->alpha;
    st->trS = alpha * st->trS - sgd_dot_rows(e, st->x, d, T) + d * diag;
    int f = st->nfz; /* the teacher rows of xn made ahead (sgd_sample.c) */
    if (st->two) {
        double *es[2] = {e, NULL}, al[2] = {alpha, 0};
        sgd_two_step(st, es, diag, al);
    } else {
        sgd_scale_and_diag(st, alpha, diag);
        f = 0;
        sgd_pass(st, st->P, st->Pf, st->sp, e, st->pan, &f);
    }
    sgd_teacher_rest(st, st->xn, st->xnf, st->zn, f);
}
