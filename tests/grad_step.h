/*
 * grad_step.h: the gradient check that test_grad and test_general share. One SGD step from the
 * initial student of a point, divided by its step size, against central finite differences of
 * the per-sample loss at the sample the step saw; then the same sample through the plain
 * reference step (sgd_reference_step), which must agree with the fused step to rounding. The
 * tests differ only in the loss (the centred index, or the general one of docs/model.md §10)
 * and in whether the sample is correlated (model_correlate) as the SGD step correlates it.
 * A planted error in a gradient term moves |grad - fd| far above its 1e-6 (1 + max |grad|).
 */
#ifndef AIMSWEEP_TESTS_GRAD_STEP_H
#define AIMSWEEP_TESTS_GRAD_STEP_H

#include <math.h>
#include <stdlib.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"

/* The per-sample loss of student s on the T tokens x (T x d). */
typedef double (*grad_step_loss)(const struct model *m, const struct student *s, const double *x);

/* Checks the point p (what names it in messages) as above, with correlate = 1 when the SGD step
 * correlates its tokens. Returns the largest |gradient| seen; when that is 0 and final is 0 it
 * checks nothing, so that the caller can retry with another seed (relu with every index
 * negative has a zero gradient). */
static double grad_step_check(const struct params *p, grad_step_loss loss, int correlate, int final,
                              const char *what)
{
    struct model *m = model_create(p);
    int d = m->d, r = m->r, T = m->T;
    size_t n = p->decomposition == DECOMP_DIRECT ? (size_t)d * d : (size_t)d * r;
    /* the fused step from the initial state, and its first sample */
    struct sgd_state *st = sgd_state_create(m);
    sgd_steps(st, 1);
    const struct student *after = sgd_student(st);
    double *x = malloc(sizeof(double) * (size_t)T * d);
    struct rng g;
    rng_init(&g, p->seed, STREAM_SGD, (uint32_t)d);
    rng_normals(&g, x, (size_t)T * d);
    if (correlate)
        model_correlate(d, T, m->L, x); /* the sample the SGD step saw */
    struct student s;
    student_init_copy(&s, m);
    /* step = -(eta/d) kappa grad, exactly (the update is linear in eta for a given sample) */
    double f = p->lr / d * m->kappa, h = 1e-6, maxerr = 0, maxg = 0;
    for (int blk = 0; blk < (p->decomposition == DECOMP_UNTIED ? 2 : 1); blk++) {
        double *P = blk ? s.B : s.A;
        const double *Pa = blk ? after->B : after->A;
        for (size_t i = 0; i < n; i++) {
            double keep = P[i];
            P[i] = keep + h;
            double lp = loss(m, &s, x);
            P[i] = keep - h;
            double lm = loss(m, &s, x);
            P[i] = keep;
            double fd = (lp - lm) / (2 * h), an = -(Pa[i] - keep) / f;
            maxerr = fmax(maxerr, fabs(fd - an));
            maxg = fmax(maxg, fabs(fd));
        }
    }
    if (maxg == 0 && !final)
        goto out;
    CHECK(maxerr <= 1e-6 * (1 + maxg) && maxg > 0,
          "%s: max |grad - finite difference| %.3g (max |grad| %.3g)", what, maxerr, maxg);
    /* the fused step and the reference step agree to rounding */
    CHECK(sgd_reference_step(p, &s, m->teacher, x) == 0, "sgd_reference_step: out of memory");
    double dmax = 0;
    for (size_t i = 0; i < n; i++) {
        dmax = fmax(dmax, fabs(s.A[i] - after->A[i]));
        if (s.B)
            dmax = fmax(dmax, fabs(s.B[i] - after->B[i]));
    }
    CHECK(dmax < 1e-12, "%s: fused vs reference step differ by %.3g", what, dmax);
out:
    student_free(&s);
    free(x);
    sgd_state_destroy(&st);
    model_destroy(&m);
    return maxg;
}

#endif
