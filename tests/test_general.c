/*
 * test_general.c: the general index of docs/model.md §10 (correlated tokens, the index with a mean,
 * outputs on every entry) through every solver. One program, one ctest per section:
 *  isserlis   the empirical mean and covariances of h_ab over many samples at d = 200 against
 *             §10's exact formulas (c in {0, 0.3}, centred and uncentred), 3 standard errors.
 *             A planted error (tokens drawn with C^(1/2) on the wrong side, a missing c^2, the
 *             centring by delta_ab instead of C_ab) moves a mean or covariance by many errors.
 *  grad       the step SGD takes (direct, tied centred, untied; every activation family) against
 *             central finite differences of the per-sample loss with correlated tokens, and the
 *             fused step against the plain reference step. A dropped cidx in the I term of g
 *             fails the uncentred cases by O(1).
 *  theorem1   Phi under the law at the order parameters of actual matrices against Monte Carlo
 *             of the per-sample loss at d = 200 (3 standard errors, plus the O(1/d) finite-d
 *             bias allowance of test_drift for the polynomial activations).
 *  drift      the mean one-step SGD change of mu, omega12 and omega11 per unit tau against the
 *             flow's right-hand side (finite differences of the traces along it).
 *  solvers    SGD against the flow, and the moment ODE (stiff and slaved) against the flow, for
 *             direct and untied with index uncentred and outputs all, h1 and h2 (the stiff
 *             direct ODE is exact: 1e-5; the slaved one meets the flow once the fast phase is over).
 *  tied       tied with token_corr 0.6 (centred): the moment ODE (spectral and the word
 *             hierarchy) against the flow and SGD, and the ODE at c = 0 as the planted error.
 *  order5     the untied word hierarchy at order 5 through strong recovery (outputs all), and
 *             its bounds with the mean (refusal of the stiff form; the slaved form's reason).
 */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/model.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/run/worker.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/solvers/sgd.h"
#include "aimsweep/theory/noise.h"
#include "check.h"
#include "grad_step.h"
#include "test_util.h"

static struct params mk(const char *decomp, const char *act, const char *teacher, double c,
                        const char *index, const char *outputs, int d)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", decomp, err, sizeof err);
    params_set(&p, "activation", act, err, sizeof err);
    params_set(&p, "teacher", teacher, err, sizeof err);
    params_set(&p, "index", index, err, sizeof err);
    params_set(&p, "outputs", outputs, err, sizeof err);
    p.token_corr = c;
    p.d = d;
    CHECK(params_validate(&p, err, sizeof err) == 0, "%s", err);
    return p;
}

/* ---- isserlis ---- */

static void isserlis(double c, const char *index)
{
    const int d = 200, T = 3, N = 12000;
    struct params p = mk("direct", "h1", "goe_mean(1)", c, index, "offdiag", d);
    p.tokens = T;
    struct model *m = model_create(&p);
    /* a non-symmetric S with a mean: S0 + 0.3 A/sqrt(d) + 0.5 S* + (0.6/sqrt(d)) I, A with N(0,1) entries */
    size_t dd = (size_t)d * d;
    double *S = malloc(sizeof(double) * dd), *A = malloc(sizeof(double) * dd);
    struct rng g;
    rng_init(&g, 3, STREAM_TEST, (uint32_t)d);
    rng_normals(&g, A, dd);
    /* a teacher component, so that the cross-covariances are tested away from 0 */
    for (size_t i = 0; i < dd; i++)
        S[i] = m->S0[i] + 0.3 * A[i] / sqrt((double)d) + 0.5 * m->teacher[i];
    for (int i = 0; i < d; i++)
        S[(size_t)i * d + i] += 0.6 / sqrt((double)d);
    const double *P = m->teacher;
    double trS = 0, trP = 0;
    for (int i = 0; i < d; i++) {
        trS += S[(size_t)i * d + i];
        trP += P[(size_t)i * d + i];
    }
    double om = test_trace_prod(d, S, S, 1) / d, ps = test_trace_prod(d, S, S, 0) / d,
           o12 = test_trace_prod(d, S, P, 0) / d;
    double mu = trS / sqrt((double)d), ms = trP / sqrt((double)d),
           unc = !strcmp(index, "uncentred");
    /* the statistics and their exact values (docs/model.md §10; C_ab = c for a != b) */
    enum { M_OFF, M_DIAG, V_OFF, V_DIAG, C12_OFF, C12_DIAG, C_ABBA, C_AABB, C_ABAC, NSTAT };
    const char *names[NSTAT] = {"E h_01",          "E h_00",           "Var h_01",
                                "Var h_00",        "Cov(h_01, h*_01)", "Cov(h_00, h*_00)",
                                "Cov(h_01, h_10)", "Cov(h_00, h_11)",  "Cov(h_01, h_02)"};
    double exact[NSTAT] = {unc * c * mu,    unc * mu,          om + c * c * ps,
                           om + ps,         (1 + c * c) * o12, 2 * o12,
                           c * c * om + ps, c * c * (om + ps), c * om + c * c * ps};
    double sum[NSTAT] = {0}, sq[NSTAT] = {0};
    double *x = malloc(sizeof(double) * (size_t)T * d), h[9], hs[9];
    rng_init(&g, 4 + (uint64_t)(10 * c) + 100 * (uint64_t)unc, STREAM_TEST,
             (uint32_t)d); /* a stream per case */
    for (int n = 0; n < N; n++) {
        rng_normals(&g, x, (size_t)T * d);
        model_correlate(d, T, m->L, x);
        model_index_general(d, T, S, x, m->cidx, h);
        model_index_general(d, T, P, x, m->cidx, hs);
        double e01 = exact[M_OFF], e00 = exact[M_DIAG], es01 = unc * c * ms, es00 = unc * ms;
        double v[NSTAT] = {h[1],
                           h[0],
                           (h[1] - e01) * (h[1] - e01),
                           (h[0] - e00) * (h[0] - e00),
                           (h[1] - e01) * (hs[1] - es01),
                           (h[0] - e00) * (hs[0] - es00),
                           (h[1] - e01) * (h[3] - e01),
                           (h[0] - e00) * (h[4] - e00),
                           (h[1] - e01) * (h[2] - e01)};
        for (int k = 0; k < NSTAT; k++) {
            sum[k] += v[k];
            sq[k] += v[k] * v[k];
        }
    }
    for (int k = 0; k < NSTAT; k++) {
        double mean = sum[k] / N, se = sqrt((sq[k] / N - mean * mean) / N);
        printf("isserlis c=%.1f %-9s %-18s exact %+.4f  empirical %+.4f +- %.4f\n", c, index,
               names[k], exact[k], mean, se);
        CHECK(fabs(mean - exact[k]) < 3 * se, "c=%g %s %s: exact %.5g, empirical %.5g +- %.2g", c,
              index, names[k], exact[k], mean, se);
    }
    free(x);
    free(S);
    free(A);
    model_destroy(&m);
}

/* ---- grad ---- */

static double loss_of(const struct model *m, const struct student *s, const double *x)
{
    int d = m->d, T = m->T;
    double *S = malloc(sizeof(double) * (size_t)d * d), h[64], hs[64];
    model_form_S(s, S);
    model_index_general(d, T, S, x, m->cidx, h);
    model_index_general(d, T, m->teacher, x, m->cidx, hs);
    double l = model_loss_outputs(&m->p.activation, T, m->p.outputs, h, hs, NULL);
    free(S);
    return l;
}

/* Returns the largest |gradient| seen (grad_step_check). */
static double grad_try(const char *decomp, const char *act, double c, const char *index,
                       const char *outputs, int T, uint64_t seed, int final)
{
    struct params p = mk(decomp, act, "goe_mean(0.8)", c, index, outputs, 9);
    char what[160];
    p.width = 7.0 / 9.0;
    p.tokens = T;
    p.lr = 1e-3;
    p.init_scale = 0.8;
    p.seed = seed;
    snprintf(what, sizeof what, "%s %s c=%g %s %s T=%d", decomp, act, c, index, outputs, T);
    return grad_step_check(&p, loss_of, 1, final, what);
}

static void grad_one(const char *decomp, const char *act, double c, const char *index,
                     const char *outputs, int T)
{
    for (uint64_t seed = 7; seed < 12; seed++)
        if (grad_try(decomp, act, c, index, outputs, T, seed, seed == 11) > 0)
            return;
}

static void grad(void)
{
    const char *acts[] = {"h1", "h2", "hermite(0.2,1,0.5)", "relu", "tanh", "erf", "softmax(1)"};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        int sm = !strncmp(acts[a], "softmax", 7);
        for (int T = 2; T <= 3; T++) {
            grad_one("direct", acts[a], 0.3, "uncentred", sm ? "offdiag" : "all", T);
            grad_one("direct", acts[a], 0.3, "centred", "offdiag", T);
            grad_one("untied", acts[a], 0.3, "uncentred", sm ? "offdiag" : "all", T);
            grad_one("untied", acts[a], 0.0, "uncentred", "offdiag", T);
            grad_one("tied", acts[a], 0.3, "centred", sm ? "offdiag" : "all", T);
        }
    }
}

/* ---- theorem1 ---- */

static void theorem1_one(const char *decomp, const char *act, double c, const char *index,
                         const char *outputs, double allowance)
{
    const int d = 200, T = 2, N = 30000;
    struct params p = mk(decomp, act, "goe_mean(0.8)", c, index, outputs, d);
    p.init_scale = 0.5;
    p.seed = 3;
    struct model *m = model_create(&p);
    struct student s;
    student_init_copy(&s, m);
    /* a teacher component so that omega12 != 0: S = S0 + 0.6 S* (direct), U += 0.6 S* V-ish
     * (untied: U <- U + 0.6 S* V / t, t = |V|^2/kappa d) */
    int r = m->r;
    if (p.decomposition == DECOMP_DIRECT) {
        for (size_t i = 0; i < (size_t)d * d; i++)
            s.A[i] += 0.6 * m->teacher[i];
    } else {
        double *PV = malloc(sizeof(double) * (size_t)d * r);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, d, 1.0, m->teacher, d, s.B, r,
                    0.0, PV, r);
        double t = cblas_ddot(d * r, s.B, 1, s.B, 1) / (m->kappa * d);
        for (size_t i = 0; i < (size_t)d * r; i++)
            s.A[i] += 0.6 * PV[i] / t;
        free(PV);
    }
    double *S = malloc(sizeof(double) * (size_t)d * d);
    model_form_S(&s, S);
    struct order_params o;
    model_order_params(m, &s, &o);
    double mu = sqrt((double)d) * o.t1;
    struct phi_val pv;
    CHECK(phi_eval_law(&p.activation, T, &m->law, mu, o.omega11, o.psi11, o.omega12, &pv) == 0,
          "phi");
    struct rng g;
    rng_init(&g, 11, STREAM_TEST, (uint32_t)d);
    double *x = malloc(sizeof(double) * (size_t)T * d), h[4], hs[4], sum = 0, sum2 = 0;
    for (int n = 0; n < N; n++) {
        rng_normals(&g, x, (size_t)T * d);
        model_correlate(d, T, m->L, x);
        model_index_general(d, T, S, x, m->cidx, h);
        model_index_general(d, T, m->teacher, x, m->cidx, hs);
        double l = model_loss_outputs(&p.activation, T, p.outputs, h, hs, NULL);
        sum += l;
        sum2 += l * l;
    }
    double mean = sum / N, se = sqrt((sum2 / N - mean * mean) / N);
    printf(
        "theorem1 %-6s %-10s c=%.1f %-9s %-7s mu=%+.3f mu*=%+.3f omega12=%.3f  Phi=%.5f  MC=%.5f +- %.5f\n",
        decomp, act, c, index, outputs, mu, m->mu_star, o.omega12, pv.phi, mean, se);
    CHECK(fabs(mean - pv.phi) < 3 * se + allowance * fabs(pv.phi) + 3 * pv.err,
          "%s %s c=%g %s %s: Phi %.6g vs Monte Carlo %.6g +- %.2g", decomp, act, c, index, outputs,
          pv.phi, mean, se);
    CHECK(fabs(o.omega12) > 0.1, "%s: the student should carry a teacher component (omega12 = %g)",
          decomp, o.omega12);
    free(x);
    free(S);
    student_free(&s);
    model_destroy(&m);
}

static void theorem1(void)
{
    /* bounded activations: no finite-d bias allowance beyond 1/d; polynomials: 10/d (test_drift) */
    const char *acts[] = {"h1", "relu", "tanh", "erf", "h2", "softmax(1)"};
    const double allow[] = {0, 1.0 / 200, 1.0 / 200, 1.0 / 200, 10.0 / 200, 1.0 / 200};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        int sm = !strncmp(acts[a], "softmax", 7);
        theorem1_one("direct", acts[a], 0.3, "uncentred", sm ? "offdiag" : "all", allow[a]);
        theorem1_one("untied", acts[a], 0.3, "uncentred", sm ? "offdiag" : "all", allow[a]);
        theorem1_one("untied", acts[a], 0.3, "centred", "offdiag", allow[a]);
    }
}

/* ---- drift ---- */

#define DRIFT_TRIALS 12000

static void drift_one(const char *decomp, const char *act, double c, const char *outputs, int d,
                      double allowance)
{
    struct params p = mk(decomp, act, "goe_mean(0.8)", c, "uncentred", outputs, d);
    p.lr = 1e-3;
    p.init_scale = 0.6;
    p.seed = 5;
    struct model *m = model_create(&p);
    struct student s0, sp, sm;
    student_init_copy(&s0, m);
    student_init_copy(&sp, m);
    student_init_copy(&sm, m);
    struct order_params o0, op, om;
    model_order_params(m, &s0, &o0);
    size_t n = p.decomposition == DECOMP_DIRECT ? (size_t)d * d : (size_t)d * m->r;
    double *dA = malloc(sizeof(double) * n), *dB = s0.B ? malloc(sizeof(double) * n) : NULL;
    CHECK(flow_rhs(m, &s0, dA, dB) == 0, "flow_rhs");
    double eps = 1e-6;
    test_shift_along(&sp, &sm, dA, dB, n, eps);
    model_order_params(m, &sp, &op);
    model_order_params(m, &sm, &om);
    double sqd = sqrt((double)d);
    double flow[3] = {sqd * (op.t1 - om.t1) / (2 * eps), (op.omega12 - om.omega12) / (2 * eps),
                      (op.omega11 - om.omega11) / (2 * eps)};
    double per_tau = (double)d * d / p.lr, s[3] = {0}, q[3] = {0};
    for (long k = 0; k < DRIFT_TRIALS; k++) {
        struct sgd_state *st = sgd_state_create_at(m, k);
        sgd_steps(st, 1);
        struct order_params o;
        model_order_params(m, sgd_student(st), &o);
        double r[3] = {sqd * (o.t1 - o0.t1) * per_tau, (o.omega12 - o0.omega12) * per_tau,
                       (o.omega11 - o0.omega11) * per_tau};
        for (int i = 0; i < 3; i++) {
            s[i] += r[i];
            q[i] += r[i] * r[i];
        }
        sgd_state_destroy(&st);
    }
    const char *names[3] = {"dmu/dtau", "domega12/dtau", "domega11/dtau"};
    for (int i = 0; i < 3; i++) {
        double mean = s[i] / DRIFT_TRIALS,
               se = sqrt((q[i] / DRIFT_TRIALS - mean * mean) / DRIFT_TRIALS);
        printf("drift %-6s %-16s c=%.1f %-7s d=%d %-14s sgd %+.4f +- %.4f  flow %+.4f\n", decomp,
               act, c, outputs, d, names[i], mean, se, flow[i]);
        CHECK(fabs(mean - flow[i]) < 3 * se + allowance * fabs(flow[i]),
              "%s %s %s: sgd %.5g +- %.2g vs flow %.5g", decomp, act, names[i], mean, se, flow[i]);
    }
    CHECK(fabs(flow[0]) >
              5 * sqrt(q[0] / DRIFT_TRIALS - pow(s[0] / DRIFT_TRIALS, 2)) / sqrt(DRIFT_TRIALS),
          "%s %s: the mean's drift should be resolved", decomp, act);
    free(dA);
    free(dB);
    student_free(&s0);
    student_free(&sp);
    student_free(&sm);
    model_destroy(&m);
}

static void drift(void)
{
    drift_one("direct", "h1", 0.3, "all", 40, 0);
    drift_one("untied", "h1", 0.3, "all", 40, 0);
    drift_one("direct", "hermite(0,1,0.5)", 0.3, "all", 60, 10.0 / 60);
    drift_one("untied", "hermite(0,1,0.5)", 0.0, "all", 60, 10.0 / 60);
}

/* ---- solvers ---- */

/* Largest gap of omega12 (what 0) or mu (what 1) between two runs from record from on; with
 * sign -1, between a and the mirror image of b (S -> -S, which flips both). */
static double gap_signed(const struct traj *a, const struct traj *b, int what, int from,
                         double sign)
{
    double g = 0;
    for (int i = from; i < a->n && i < b->n; i++) {
        double x = what ? a->rows[i].mu - sign * b->rows[i].mu
                        : a->rows[i].omega12 - sign * b->rows[i].omega12;
        g = fmax(g, fabs(x));
    }
    return g;
}

static double gap(const struct traj *a, const struct traj *b, int what, int from)
{
    return gap_signed(a, b, what, from, 1.0);
}

/* The sign that maps b's branch onto a's: -1 when the activation is even (the loss cannot tell S
 * from -S, and with the index uncentred neither can the mean) and the two runs end on opposite
 * branches (omega12 of opposite signs at the last record), else +1. SGD's noise and the slaved
 * mean's first Newton step can pick the other branch than the flow from the same start. */
static double branch(const char *act, const struct traj *a, const struct traj *b)
{
    struct act sa;
    char err[128];
    if (params_parse_act(act, &sa, err, sizeof err) || !params_act_sign_symmetric(&sa))
        return 1.0;
    return a->rows[a->n - 1].omega12 * b->rows[b->n - 1].omega12 < 0 ? -1.0 : 1.0;
}

static void solvers_one(const char *decomp, const char *act, int d, double lr, double tau_end,
                        double tol_sgd, double tol_ode)
{
    struct params p = mk(decomp, act, "goe_mean(1)", 0.0, "uncentred", "all", d);
    p.lr = lr;
    p.tau_end = tau_end;
    p.records = 10;
    p.seed = 2;
    p.order_m = 3;
    p.solvers = SOLVER_SGD | SOLVER_FLOW | SOLVER_ODE;
    struct task_result r, rs;
    CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run");
    p.ode_mean = ODE_MEAN_SLAVED;
    p.solvers = SOLVER_ODE;
    CHECK(worker_run(&p, &rs, NULL, NULL) == 0, "worker_run slaved");
    const struct traj *sg = &r.traj[0], *fl = &r.traj[1], *od = &r.traj[2], *sl = &rs.traj[0];
    CHECK(sg->status == RUN_OK && fl->status == RUN_OK && od->status == RUN_OK &&
              sl->status == RUN_OK,
          "%s %s d=%d: statuses %s %s %s %s", decomp, act, d, run_status_name(sg->status),
          run_status_name(fl->status), run_status_name(od->status), run_status_name(sl->status));
    double bs = branch(act, sg, fl), bl = branch(act, sl, fl);
    double g_sgd = gap_signed(sg, fl, 0, 0, bs), g_sgd_mu = gap_signed(sg, fl, 1, 0, bs),
           g_ode = gap(od, fl, 0, 0), g_ode_mu = gap(od, fl, 1, 0);
    /* The slaved form skips the fast phase (t = d tau of order 1), which shifts its curve in tau
     * by O(1/d); once both have settled they meet: compare the last record (on the flow's
     * branch; the stiff ODE follows the flow's own, compared signed). */
    int last = fl->n - 1;
    double g_sl = fabs(sl->rows[last].omega12 - bl * fl->rows[last].omega12),
           g_sl_mu = fabs(sl->rows[last].mu - bl * fl->rows[last].mu);
    printf(
        "solvers %-6s %-3s d=%d: m(end) sgd %.3f flow %.3f; max gaps to flow: sgd omega12 %.4f mu %.4f, ode (stiff) "
        "omega12 %.2e mu %.2e; slaved at the end: omega12 %.2e mu %.2e\n",
        decomp, act, d, sg->rows[sg->n - 1].overlap, fl->rows[fl->n - 1].overlap, g_sgd, g_sgd_mu,
        g_ode, g_ode_mu, g_sl, g_sl_mu);
    CHECK(g_sgd < tol_sgd && g_sgd_mu < 5 * tol_sgd,
          "%s %s d=%d: SGD leaves the flow by %.3g (mu %.3g)", decomp, act, d, g_sgd, g_sgd_mu);
    /* mu is O(1) here (goe_mean(1)): its gaps are held on the scale of omega12's (measured: untied
     * h2 0.058 stiff, 0.027 slaved, h1 0.006, 0.013; 10 tol_ode + 0.05 let mu be off by 1) */
    CHECK(g_ode < tol_ode && g_ode_mu < 2 * tol_ode,
          "%s %s d=%d: the stiff ODE leaves the flow by %.3g (mu %.3g)", decomp, act, d, g_ode,
          g_ode_mu);
    CHECK(g_sl < 3 * tol_ode + 0.02 && g_sl_mu < 2 * tol_ode + 0.02,
          "%s %s d=%d: the slaved ODE ends %.3g (mu %.3g) from the flow", decomp, act, d, g_sl,
          g_sl_mu);
    CHECK(fabs(fl->rows[fl->n - 1].overlap) > 0.5,
          "%s %s d=%d: no recovery through the mean (m = %.3g)", decomp, act, d,
          fl->rows[fl->n - 1].overlap);
    worker_result_free(&r);
    worker_result_free(&rs);
}

static void solvers(void)
{
    /* direct: the ODE is the closed system, exact up to the integrator's tolerance */
    solvers_one("direct", "h1", 100, 0.01, 0.1, 0.03, 1e-5);
    solvers_one("direct", "h2", 50, 0.005, 0.1, 0.1, 1e-5);
    solvers_one("direct", "h2", 200, 0.005, 0.1, 0.1, 1e-5);
    /* untied: the word hierarchy at order 3 (flat) carries its truncation error */
    solvers_one("untied", "h1", 60, 0.01, 0.1, 0.03, 0.02);
    solvers_one("untied", "h2", 60, 0.005, 0.1, 0.06, 0.1);
}

/* ---- noise ---- */

/* The O(eta) noise expectations under the general index (noise.h, docs/noise.md) against their
 * definition at finite d: for direct, the second-order change of omega11 and psi11 per step is
 * (eta/d)^2 Tr(g g^T) and (eta/d)^2 Tr(g g) with the actual per-sample gradient
 * g = sum_ab D_ab (x_a x_b^T - k C_ab I)/sqrt(d), so E Tr(g g^T)/d -> n1 and E Tr(g g)/d -> n2.
 * Monte Carlo over correlated tokens (T = 3, c = 0.5: every pattern of coinciding indices occurs;
 * d = 150, h2 at d = 400), through the token Gram matrix K = X X^T:
 *   Tr(g g^T)/d = d^-2 sum D_ab D_a'b' [K_bb' K_aa' - k C_a'b' K_ab - k C_ab K_a'b' + k^2 d C_ab C_a'b'],
 *   Tr(g g)/d   = d^-2 sum D_ab D_a'b' [K_ba' K_b'a - k C_a'b' K_ab - k C_ab K_a'b' + k^2 d C_ab C_a'b'].
 * Allowance: 3 standard errors plus 12 % (the contraction x^T A x' -> C Tr A and the Gaussian law
 * are leading order in d; measured excess of the Monte Carlo 4-9 %; in the special case the same
 * excess is 4.7 % for h1 at d = 150). Planted error: the special formula (noise_eval,
 * no token correlation, no diagonal, no mean) is checked to lie outside the same band. */
static void noise_one(const char *act, const char *index, double c, const char *outputs, int d,
                      int N)
{
    const int T = 3;
    struct params p = mk("direct", act, "goe_mean(1)", c, index, outputs, d);
    p.tokens = T;
    struct model *m = model_create(&p);
    size_t dd = (size_t)d * d;
    double *S = malloc(sizeof(double) * dd), *A = malloc(sizeof(double) * dd);
    struct rng g;
    rng_init(&g, 5, STREAM_TEST, (uint32_t)d);
    rng_normals(&g, A, dd); /* a non-symmetric part, so that n1 != n2 */
    for (size_t i = 0; i < dd; i++)
        S[i] = m->S0[i] + 0.3 * A[i] / sqrt((double)d) + 0.6 * m->teacher[i];
    for (int i = 0; i < d; i++)
        S[(size_t)i * d + i] += 0.4 / sqrt((double)d);
    const double *P = m->teacher;
    double trS = 0;
    for (int i = 0; i < d; i++)
        trS += S[(size_t)i * d + i];
    double om = test_trace_prod(d, S, S, 1) / d, ps = test_trace_prod(d, S, S, 0) / d,
           o12 = test_trace_prod(d, S, P, 0) / d, mu = trS / sqrt((double)d);
    double k = !strcmp(index, "uncentred") ? 0.0 : 1.0;
    struct noise_val nv, ns;
    CHECK(noise_eval_law(&p.activation, T, &m->law, mu, om, ps, o12, 1, &nv) == 0,
          "noise_eval_law %s", act);
    CHECK(noise_eval(&p.activation, T, om, ps, o12, 0, &ns) == 0, "noise_eval %s", act);
    double *x = malloc(sizeof(double) * (size_t)T * d), h[9], hs[9], D[9], K[9], Cm[9];
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            Cm[a * T + b] = a == b ? 1.0 : c;
    rng_init(&g, 77 + (uint64_t)k, STREAM_TEST, (uint32_t)d);
    double s1 = 0, q1 = 0, s2 = 0, q2 = 0;
    for (int n = 0; n < N; n++) {
        rng_normals(&g, x, (size_t)T * d);
        model_correlate(d, T, m->L, x);
        model_index_general(d, T, S, x, m->cidx, h);
        model_index_general(d, T, P, x, m->cidx, hs);
        for (int e = 0; e < T * T; e++)
            D[e] = e % (T + 1) == 0 && !m->law.all
                       ? 0.0 /* a diagonal entry is no output */
                       : (act_f(&p.activation, h[e]) - act_f(&p.activation, hs[e])) *
                             act_df(&p.activation, h[e]);
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                K[a * T + b] = cblas_ddot(d, x + (size_t)a * d, 1, x + (size_t)b * d, 1);
        double t1 = 0, t2 = 0;
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                for (int a2 = 0; a2 < T; a2++)
                    for (int b2 = 0; b2 < T; b2++) {
                        double dd2 = D[a * T + b] * D[a2 * T + b2];
                        double rest = -k * Cm[a2 * T + b2] * K[a * T + b] -
                                      k * Cm[a * T + b] * K[a2 * T + b2] +
                                      k * k * d * Cm[a * T + b] * Cm[a2 * T + b2];
                        t1 += dd2 * (K[b * T + b2] * K[a * T + a2] + rest);
                        t2 += dd2 * (K[b * T + a2] * K[b2 * T + a] + rest);
                    }
        t1 /= (double)d * d;
        t2 /= (double)d * d;
        s1 += t1;
        q1 += t1 * t1;
        s2 += t2;
        q2 += t2 * t2;
    }
    double m1 = s1 / N, m2 = s2 / N, se1 = sqrt((q1 / N - m1 * m1) / N),
           se2 = sqrt((q2 / N - m2 * m2) / N);
    double b1 = 3 * se1 + 0.12 * fabs(m1) + 3 * nv.err, b2 = 3 * se2 + 0.12 * fabs(m2) + 3 * nv.err;
    printf("noise %-4s %-9s c=%.1f d=%d: n1 law %.4g, special %.4g, Monte Carlo %.4g +- %.2g; "
           "n2 law %.4g, special %.4g, Monte Carlo %.4g +- %.2g\n",
           act, index, c, d, nv.n1, ns.n1, m1, se1, nv.n2, ns.n2, m2, se2);
    CHECK(fabs(nv.n1 - m1) < b1 && fabs(nv.n2 - m2) < b2, "%s %s: n1 %.4g vs %.4g, n2 %.4g vs %.4g",
          act, index, nv.n1, m1, nv.n2, m2);
    CHECK(fabs(ns.n1 - m1) > b1 || fabs(ns.n2 - m2) > b2,
          "%s %s: the special formula is as close: the check cannot see the law", act, index);
    free(x);
    free(S);
    free(A);
    model_destroy(&m);
}

static void noise(int argc, char **argv)
{
    if (argc == 8) { /* exploration: noise ACT INDEX C OUTPUTS D N */
        noise_one(argv[2], argv[3], atof(argv[4]), argv[5], atoi(argv[6]), atoi(argv[7]));
        return;
    }
    noise_one("h1", "uncentred", 0.5, "offdiag", 150, 6000);
    noise_one("h1", "centred", 0.5, "all", 150, 6000);
    noise_one("relu", "uncentred", 0.5, "all", 150, 6000);
    /* h2: D^2 has degree 6 and the finite-d excess is large at d = 150 (+46 %), 4 % at d = 400 */
    noise_one("h2", "centred", 0.5, "all", 400, 3000);
}

/* ---- noise_sgd ---- */

static void ode_only(struct params p, enum closure cl, int M, struct traj *out);

/* The ODE's O(eta) noise term under the general index against SGD at finite d, as
 * tests/test_ode_noise.c does for the special case: eta = 0.05, d = 40, 6 seeds, each seed's ODE
 * from that seed's own matrices; the error is the seed-averaged bias of the ODE against SGD, max
 * over records, on omega11 and psi11. With the term the bias must fall clearly (to 3/4 or less).
 * Planted error: a noise term without the token correlation (the special formula, n1 5x too
 * small here, test noise) leaves most of the bias and fails the 3/4. */
static void noise_sgd_one(const char *decomp, const char *index, const char *teacher)
{
    enum { NSEED = 6, NREC = 10 };
    double bias[2][NREC + 1][2] = {{{0}}};
    for (int s = 0; s < NSEED; s++) {
        struct params p = mk(decomp, "h1", teacher, 0.5, index, "all", 40);
        p.lr = 0.05;
        p.tau_end = 1.0;
        p.records = NREC;
        p.seed = 100 + s;
        p.order_m = 3;
        p.solvers = SOLVER_SGD;
        struct task_result r;
        CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run sgd");
        const struct traj *ts = &r.traj[0];
        CHECK(ts->status == RUN_OK && ts->n == NREC + 1, "sgd %s seed %d", decomp, s);
        for (int nz = 0; nz < 2; nz++) {
            struct traj to = {0};
            p.ode_noise = nz;
            ode_only(p, p.closure, 3, &to);
            CHECK(to.status == RUN_OK && to.n == NREC + 1, "ode %s noise %d: %s", decomp, nz,
                  to.error);
            for (int k = 0; k < to.n && k < ts->n; k++) {
                bias[nz][k][0] += (ts->rows[k].omega11 - to.rows[k].omega11) / NSEED;
                bias[nz][k][1] += (ts->rows[k].psi11 - to.rows[k].psi11) / NSEED;
            }
            free(to.rows);
        }
        worker_result_free(&r);
    }
    for (int v = 0; v < 2; v++) {
        double e[2] = {0, 0};
        for (int nz = 0; nz < 2; nz++)
            for (int k = 0; k <= NREC; k++)
                e[nz] = fmax(e[nz], fabs(bias[nz][k][v]));
        printf("noise_sgd %-6s h1 %-9s all c=0.5 d=40 eta=0.05 %s: max seed-averaged |sgd - ode| "
               "noise off %.4g, on %.4g\n",
               decomp, index, v ? "psi11" : "omega11", e[0], e[1]);
        CHECK(e[1] < 0.75 * e[0], "%s %s %s: noise on %.4g not clearly below off %.4g", decomp,
              index, v ? "psi11" : "omega11", e[1], e[0]);
    }
}

static void noise_sgd(void)
{
    noise_sgd_one("direct", "uncentred", "goe_mean(1)");
    noise_sgd_one("direct", "centred", "goe");
}

/* ---- tied ---- */

/* The larger of the gaps on omega12 and omega11 over every record. */
static double gap2(const struct traj *a, const struct traj *b)
{
    double g = 0;
    for (int i = 0; i < a->n && i < b->n; i++)
        g = fmax(g, fmax(fabs(a->rows[i].omega12 - b->rows[i].omega12),
                         fabs(a->rows[i].omega11 - b->rows[i].omega11)));
    return a->n == b->n ? g : INFINITY;
}

/* One ODE run of p (closure cl at order M), its trajectory moved into *out. */
static void ode_only(struct params p, enum closure cl, int M, struct traj *out)
{
    struct task_result r;
    p.solvers = SOLVER_ODE;
    p.closure = cl;
    p.order_m = M;
    CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run ode");
    *out = r.traj[0];
    memset(&r.traj[0], 0, sizeof r.traj[0]);
    worker_result_free(&r);
}

/* Tied with the centred index and correlated tokens (docs/model.md §10): the moment ODE
 * (spectral, M = 6, and the word hierarchy, flat at order 3) against the flow and against SGD,
 * wishart teacher (deterministic drift), d = 100, tau in [0, 0.25] through weak recovery.
 * Tolerances, from measurement: spectral vs flow 3.5e-3-7.6e-3 (the finite-d freeness floor of
 * docs/model.md §7b), tol 0.012; flat-3 vs flow 0.039-0.053 (its truncation), tol 0.07; SGD vs
 * the ODE: h1 and softmax(1) 2e-3-6e-3 (tol 0.015); relu 0.08 (tol 0.12): relu's drift sees the
 * index's third cumulant, which for S >= 0 (tied) is O(tr S^3 / sqrt(d)) once c != 0 or the
 * diagonal is an output (analysis/general_index.md), where the flow and the ODE take the Gaussian
 * limit. Planted error: the ODE taking Phi's partials at c = 0 (phi_eval instead of the law, the
 * state of the code before) leaves the flow by 0.043-0.26 on these cases, above 3x spectral's
 * tolerance and above flat's; the check on it below would catch that the law is dropped. */
static void tied_one(const char *act, const char *outputs, double tol_sgd, int words, int recovers)
{
    const double c = 0.6, tol_spec = 0.012, tol_words = 0.07;
    struct params p = mk("tied", act, "wishart(1)", c, "centred", outputs, 100);
    p.lr = 0.01;
    p.tau_end = 0.25;
    p.records = 10;
    p.seed = 3;
    p.order_m = 6;
    p.solvers = SOLVER_SGD | SOLVER_FLOW | SOLVER_ODE;
    char err[256];
    CHECK(worker_check(&p, err, sizeof err) == 0, "tied %s %s: refused: %s", act, outputs, err);
    struct task_result r;
    CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run");
    const struct traj *sg = &r.traj[0], *fl = &r.traj[1], *od = &r.traj[2];
    CHECK(sg->status == RUN_OK && fl->status == RUN_OK && od->status == RUN_OK,
          "tied %s %s: statuses %s %s %s (%s)", act, outputs, run_status_name(sg->status),
          run_status_name(fl->status), run_status_name(od->status), od->error);
    struct traj wd = {0}, z = {0};
    struct params p0 = p;
    p0.token_corr = 0; /* same seed: the same S0 and teacher, Phi at c = 0 */
    ode_only(p0, CLOSURE_AUTO, 6, &z);
    double g_ode = gap2(od, fl), g_sgd = gap2(sg, od), g_zero = gap2(&z, fl), g_words = 0;
    if (words) {
        ode_only(p, CLOSURE_FLAT, 3, &wd);
        g_words = gap2(&wd, fl);
    }
    printf(
        "tied %-10s %-7s c=%.1f: m(end) flow %.3f; max gaps: spectral-flow %.2e, flat3-flow %.2e, "
        "sgd-spectral %.2e, spectral at c=0 - flow %.2e\n",
        act, outputs, c, fl->rows[fl->n - 1].overlap, g_ode, g_words, g_sgd, g_zero);
    CHECK(g_ode < tol_spec, "tied %s %s: spectral ODE leaves the flow by %.3g", act, outputs,
          g_ode);
    CHECK(g_sgd < tol_sgd, "tied %s %s: SGD leaves the ODE by %.3g", act, outputs, g_sgd);
    CHECK(g_zero > 3 * tol_spec && (!words || g_zero > 1.5 * g_words),
          "tied %s %s: the ODE without the token correlation is as close (%.3g): the check "
          "cannot see the law",
          act, outputs, g_zero);
    if (words)
        CHECK(wd.status == RUN_OK && g_words < tol_words,
              "tied %s %s: the word hierarchy (flat, 3) leaves the flow by %.3g (%s)", act, outputs,
              g_words, run_status_name(wd.status));
    CHECK(!recovers || fabs(fl->rows[fl->n - 1].overlap) > 0.5,
          "tied %s %s: no weak recovery (m = %.3g)", act, outputs, fl->rows[fl->n - 1].overlap);
    free(wd.rows);
    free(z.rows);
    worker_result_free(&r);
}

static void tied(void)
{
    tied_one("h1", "offdiag", 0.015, 1, 1);
    tied_one("h1", "all", 0.015, 0, 1);
    tied_one("relu", "all", 0.12, 0, 1);
    tied_one("softmax(1)", "offdiag", 0.015, 0, 0); /* slow: m = 0.14 at tau = 0.25 */
    /* h2: SGD is O(eta) and O(1/sqrt(d)) away (0.13 here): a loose bound only */
    tied_one("h2", "offdiag", 0.3, 1, 1);
}

/* ---- order5 ---- */

/* gap2 over the records up to index last (inclusive) */
static double gap2_upto(const struct traj *a, const struct traj *b, int last)
{
    double g = 0;
    for (int i = 0; i <= last && i < a->n && i < b->n; i++)
        g = fmax(g, fmax(fabs(a->rows[i].omega12 - b->rows[i].omega12),
                         fabs(a->rows[i].omega11 - b->rows[i].omega11)));
    return g;
}

/* The untied word hierarchy at order 5 through strong recovery, under the general index: h2,
 * outputs all, goe_mean(1), d = 60 (m reaches 0.87). Centred (no mean), flat at order 5 must run
 * to the end and beat order 3: measured max gap to the flow 0.040 (order 3: 0.14) over the run,
 * 1e-3 (order 3: 0.07) before recovery (tau <= 0.06). Planted error: flat's eigenvalue cut back
 * at 1e-12 (below the integrator's own tolerance) divides by directions that are rounding noise
 * at strong recovery and the step collapses at tau = 0.078 (status ode_diverged, this fails).
 * With the mean (uncentred): the stiff form above order 4 is refused at validation, and the
 * slaved order 5 stops at strong recovery with the reason (its moments leave the positive cone). */
static void order5(void)
{
    struct params p = mk("untied", "h2", "goe_mean(1)", 0.0, "centred", "all", 60);
    p.lr = 0.01;
    p.tau_end = 0.1;
    p.records = 20;
    p.seed = 2;
    p.solvers = SOLVER_FLOW;
    struct task_result r;
    CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run flow");
    const struct traj *fl = &r.traj[0];
    struct traj o5 = {0}, o3 = {0};
    ode_only(p, CLOSURE_FLAT, 5, &o5);
    ode_only(p, CLOSURE_FLAT, 3, &o3);
    double g5 = gap2(&o5, fl), g3 = gap2(&o3, fl), e5 = gap2_upto(&o5, fl, 12),
           e3 = gap2_upto(&o3, fl, 12);
    printf("order5 untied h2 all d=60: m(end) flow %.3f; max gap to flow: flat5 %.2e (tau <= 0.06: "
           "%.2e), flat3 %.2e (%.2e)\n",
           fl->rows[fl->n - 1].overlap, g5, e5, g3, e3);
    CHECK(o5.status == RUN_OK, "flat order 5 stopped: %s", o5.error);
    CHECK(fabs(fl->rows[fl->n - 1].overlap) > 0.8, "no strong recovery in the flow (m = %.3g)",
          fl->rows[fl->n - 1].overlap);
    CHECK(g5 < 0.06 && g5 < g3, "flat order 5 leaves the flow by %.3g (order 3: %.3g)", g5, g3);
    CHECK(e5 < 0.005 && e5 < 0.2 * e3,
          "before recovery flat 5 is %.3g from the flow (order 3 %.3g)", e5, e3);
    /* with the mean */
    p.index = INDEX_UNCENTRED;
    p.order_m = 5;
    p.solvers = SOLVER_ODE;
    char err[512];
    CHECK(params_validate(&p, err, sizeof err) != 0 && strstr(err, "order_m up to 4"),
          "the stiff untied ODE with the mean at order 5 is not refused (%s)", err);
    p.ode_mean = ODE_MEAN_SLAVED;
    CHECK(params_validate(&p, err, sizeof err) == 0, "slaved order 5 refused: %s", err);
    struct traj sl = {0};
    ode_only(p, CLOSURE_FLAT, 5, &sl);
    printf("order5 untied h2 all uncentred slaved d=60: %s %s\n", run_status_name(sl.status),
           sl.error);
    CHECK(sl.status == RUN_OK || strstr(sl.error, "positive cone"),
          "slaved order 5 stopped without its reason: %s", sl.error);
    free(o5.rows);
    free(o3.rows);
    free(sl.rows);
    worker_result_free(&r);
}

/* ---- teacher_mean ---- */

/* goe_mean(m) against its closed form (docs/model.md §10): mu* = Tr(S*) / sqrt(d) = m exactly,
 * Tr(S*^2)/d = 1 exactly, symmetric, and the part left after removing (m/sqrt(d)) I has trace 0
 * and is a positive multiple of the seed's goe draw with its own trace removed (the plain goe
 * teacher of the same seed, whose trace is O(1/sqrt(d)) and not removed). */
static void teacher_mean(void)
{
    const double ms[] = {0.0, 0.7, -1.3};
    const int ds[] = {9, 50, 101};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            char t[64];
            int d = ds[a];
            snprintf(t, sizeof t, "goe_mean(%g)", ms[b]);
            struct params p = mk("direct", "h2", t, 0.0, "uncentred", "offdiag", d),
                          q = mk("direct", "h2", "goe", 0.0, "uncentred", "offdiag", d);
            p.seed = q.seed = 5;
            struct model *m = model_create(&p), *g = model_create(&q);
            CHECK(m && g, "model_create");
            double tr = 0, tg = 0, f = 0, asym = 0;
            for (int i = 0; i < d; i++) {
                tr += m->teacher[(size_t)i * d + i];
                tg += g->teacher[(size_t)i * d + i];
            }
            for (size_t i = 0; i < (size_t)d * d; i++)
                f += m->teacher[i] * m->teacher[i];
            for (int i = 0; i < d; i++)
                for (int j = 0; j < i; j++)
                    asym = fmax(
                        asym, fabs(m->teacher[(size_t)i * d + j] - m->teacher[(size_t)j * d + i]));
            /* the goe part: S* - (m/sqrt(d)) I against goe - t_G I, up to one positive factor c
             * (taken from the entry (0, 1)) */
            double sh = ms[b] / sqrt((double)d), c = m->teacher[1] / g->teacher[1], ratio_gap = 0;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    double x = m->teacher[(size_t)i * d + j] - (i == j ? sh : 0),
                           y = g->teacher[(size_t)i * d + j] - (i == j ? tg / d : 0);
                    ratio_gap = fmax(ratio_gap, fabs(x - c * y));
                }
            CHECK(fabs(tr / sqrt((double)d) - ms[b]) < 1e-13, "d %d m %g: mu* = %.17g", d, ms[b],
                  tr / sqrt((double)d));
            CHECK(fabs(m->t2 * sqrt((double)d) - ms[b]) < 1e-13, "d %d m %g: t2 sqrt(d) = %.17g", d,
                  ms[b], m->t2 * sqrt((double)d));
            CHECK(fabs(f / d - 1) < 1e-13, "d %d m %g: Tr S*^2/d = %.17g", d, ms[b], f / d);
            CHECK(asym == 0, "d %d m %g: not symmetric (%g)", d, ms[b], asym);
            CHECK(c > 0 && ratio_gap < 1e-12, "d %d m %g: goe part not the seed's draw (c %g, %g)",
                  d, ms[b], c, ratio_gap);
            CHECK(fabs(tg / sqrt((double)d)) > 1e-6,
                  "d %d: the plain goe's trace is not O(1/sqrt d)", d);
            model_destroy(&m);
            model_destroy(&g);
        }
}

/* ---- ode_limit ---- */

/* The moment ODE from the d -> infinity uninformative start (ode_init limit, m(0) = 0 exactly;
 * docs/model.md §12, the seed's Figure 2), wishart(0.5) teacher, d = 120: direct's manifold
 * Omega12 = 0 is invariant for h2 and h3 (m stays 0 to rounding, while the matched ODE from the
 * run's own O(1/sqrt(d)) overlap leaves it for h2), and tied leaves it by the drift of its trace
 * coupling (condition (19)), on the flow's curve (the flow from the run's own matrices: an
 * independent solver). Measured at d = 120: tied's largest |m_ode - m_flow| 0.022 (h2), 0.040
 * (h3), over tau <= 0.2 in 10 records, through the escape; held to 0.06. */
static void ode_limit(void)
{
    const char *acts[] = {"h2", "h3"};
    for (int a = 0; a < 2; a++) {
        struct params p = mk("direct", acts[a], "wishart(0.5)", 0.0, "centred", "offdiag", 120);
        p.tau_end = 0.4;
        p.records = 8;
        p.solvers = SOLVER_ODE;
        p.ode_init = ODE_INIT_LIMIT;
        struct task_result r, rm;
        CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run");
        p.ode_init = ODE_INIT_MATCHED;
        CHECK(worker_run(&p, &rm, NULL, NULL) == 0, "worker_run matched");
        const struct traj *od = &r.traj[0], *om = &rm.traj[0];
        double worst = 0;
        for (int k = 0; k < od->n; k++)
            worst = fmax(worst, fmax(fabs(od->rows[k].overlap), fabs(od->rows[k].omega12)));
        printf("ode_limit direct %s: max |m|, |omega12| from the limit %.2e; matched |m| %.4f -> "
               "%.4f\n",
               acts[a], worst, fabs(om->rows[0].overlap), fabs(om->rows[om->n - 1].overlap));
        CHECK(od->status == RUN_OK && od->n == 9 && worst < 1e-12,
              "direct %s: the limit ODE leaves m = 0 (%g)", acts[a], worst);
        if (a == 0)
            CHECK(fabs(om->rows[om->n - 1].overlap) > 5 * fabs(om->rows[0].overlap),
                  "direct h2: the matched ODE does not leave its O(1/sqrt d) start");
        worker_result_free(&r);
        worker_result_free(&rm);
    }
    for (int a = 0; a < 2; a++) {
        struct params p = mk("tied", acts[a], "wishart(0.5)", 0.0, "centred", "offdiag", 120);
        p.tau_end = 0.2;
        p.records = 10;
        p.solvers = SOLVER_FLOW | SOLVER_ODE;
        p.ode_init = ODE_INIT_LIMIT;
        struct task_result r;
        CHECK(worker_run(&p, &r, NULL, NULL) == 0, "worker_run");
        const struct traj *fl = &r.traj[0], *od = &r.traj[1];
        double g = 0;
        for (int k = 0; k < od->n && k < fl->n; k++)
            g = fmax(g, fabs(od->rows[k].overlap - fl->rows[k].overlap));
        printf("ode_limit tied %s: m(0) %.2e, m(end) ode %.4f flow %.4f, largest gap %.4f\n",
               acts[a], od->rows[0].overlap, od->rows[od->n - 1].overlap,
               fl->rows[fl->n - 1].overlap, g);
        CHECK(od->status == RUN_OK && fl->status == RUN_OK && od->n == fl->n, "tied %s: statuses",
              acts[a]);
        CHECK(fabs(od->rows[0].overlap) < 1e-12, "tied %s: m(0) = %g, not 0", acts[a],
              od->rows[0].overlap);
        CHECK(od->rows[od->n - 1].overlap > 0.5 && g < 0.06,
              "tied %s: the limit ODE does not leave m = 0 on the flow's curve (end %g, gap %g)",
              acts[a], od->rows[od->n - 1].overlap, g);
        worker_result_free(&r);
    }
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "all";
    int all = !strcmp(s, "all");
    if (all || !strcmp(s, "isserlis")) {
        isserlis(0.0, "centred");
        isserlis(0.0, "uncentred");
        isserlis(0.3, "centred");
        isserlis(0.3, "uncentred");
    }
    if (all || !strcmp(s, "teacher_mean"))
        teacher_mean();
    if (all || !strcmp(s, "ode_limit"))
        ode_limit();
    if (all || !strcmp(s, "grad"))
        grad();
    if (all || !strcmp(s, "theorem1"))
        theorem1();
    if (all || !strcmp(s, "drift"))
        drift();
    if (all || !strcmp(s, "solvers"))
        solvers();
    if (all || !strcmp(s, "noise"))
        noise(argc, argv);
    if (all || !strcmp(s, "noise_sgd"))
        noise_sgd();
    if (all || !strcmp(s, "tied"))
        tied();
    if (all || !strcmp(s, "order5"))
        order5();
    return check_done("test_general");
}
