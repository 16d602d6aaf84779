/* Drift: the mean one-step change of omega12 and omega11 under SGD, per unit tau, equals the
 * population flow's rate of change (docs/model.md §4, §6), for every decomposition.
 *
 * The flow's rate is measured independently of its formulas for the traces: a central finite
 * difference of the order parameters along the flow's right-hand side. For h1 the finite-d
 * expected loss equals Phi exactly, so the test is within three standard errors; for the others
 * the finite-d gradient differs from d grad Phi by O(1/d) (see test_theorem1), allowed as
 * 10/d relative. eta is small so that the O(eta) noise drift of omega11 stays below the error. */
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"
#include "test_util.h"

#define TRIALS 12000

static void one(const char *decomp, const char *act, int d, double allowance)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", decomp, err, sizeof err);
    params_set(&p, "activation", act, err, sizeof err);
    p.d = d;
    p.lr = 1e-3;
    p.init_scale = 0.6;
    p.seed = 5;
    struct model *m = model_create(&p);
    struct student s0;
    student_init_copy(&s0, m);
    struct order_params o0;
    model_order_params(m, &s0, &o0);
    /* flow rate: finite difference of the traces along the right-hand side */
    size_t n = p.decomposition == DECOMP_DIRECT ? (size_t)d * d : (size_t)d * m->r;
    double *dA = malloc(sizeof(double) * n), *dB = s0.B ? malloc(sizeof(double) * n) : NULL;
    flow_rhs(m, &s0, dA, dB);
    struct student sp, sm;
    student_init_copy(&sp, m);
    student_init_copy(&sm, m);
    double eps = 1e-5;
    test_shift_along(&sp, &sm, dA, dB, n, eps);
    struct order_params op, om;
    model_order_params(m, &sp, &op);
    model_order_params(m, &sm, &om);
    double flow12 = (op.omega12 - om.omega12) / (2 * eps),
           flow11 = (op.omega11 - om.omega11) / (2 * eps);
    /* SGD: one step from the initial state with each of TRIALS samples */
    double per_tau = (double)d * d / p.lr, s12 = 0, q12 = 0, s11 = 0, q11 = 0;
    for (long k = 0; k < TRIALS; k++) {
        struct sgd_state *st = sgd_state_create_at(m, k);
        sgd_steps(st, 1);
        struct order_params o;
        model_order_params(m, sgd_student(st), &o);
        double r12 = (o.omega12 - o0.omega12) * per_tau, r11 = (o.omega11 - o0.omega11) * per_tau;
        s12 += r12;
        q12 += r12 * r12;
        s11 += r11;
        q11 += r11 * r11;
        sgd_state_destroy(&st);
    }
    double m12 = s12 / TRIALS, m11 = s11 / TRIALS;
    double se12 = sqrt((q12 / TRIALS - m12 * m12) / TRIALS),
           se11 = sqrt((q11 / TRIALS - m11 * m11) / TRIALS);
    printf(
        "%-7s %-10s d=%d  domega12/dtau: sgd %.4f +- %.4f flow %.4f   domega11/dtau: sgd %.4f +- %.4f flow %.4f\n",
        decomp, act, d, m12, se12, flow12, m11, se11, flow11);
    CHECK(fabs(m12 - flow12) < 3 * se12 + allowance * fabs(flow12),
          "%s %s omega12 drift %.5g +- %.2g vs flow %.5g", decomp, act, m12, se12, flow12);
    CHECK(fabs(m11 - flow11) < 3 * se11 + allowance * fabs(flow11),
          "%s %s omega11 drift %.5g +- %.2g vs flow %.5g", decomp, act, m11, se11, flow11);
    CHECK(fabs(flow12) > 5 * se12, "%s %s: the drift should be resolved (flow %.3g, se %.3g)",
          decomp, act, flow12, se12);
    free(dA);
    free(dB);
    student_free(&s0);
    student_free(&sp);
    student_free(&sm);
    model_destroy(&m);
}

int main(void)
{
    const char *decomps[] = {"direct", "tied", "untied"};
    for (int i = 0; i < 3; i++) {
        one(decomps[i], "h1", 40, 0);
        one(decomps[i], "softmax(1)", 60, 10.0 / 60);
        one(decomps[i], "hermite(0,1,0.5)", 60, 10.0 / 60);
    }
    return check_done("test_drift");
}
