/* The direct moment ODE and the shared integrator:
 *  - at tau = 0 its right-hand side equals central finite differences of the traces along the
 *    flow's own right-hand side on the d x d matrix (exact for quadratic traces);
 *  - integrated, it agrees with the flow (direct is closed at any d: integrator tolerance);
 *  - divergence is a status with its tau, for a system that blows up in finite time and for
 *    an unstable real configuration (h3 with the noise drift at a large learning rate);
 *  - the noise expectations n1, n2 match Monte Carlo over the Gaussian law of docs/model.md §5 with
 *    D from the per-sample loss model_loss (an independent implementation of D). */
#include <gsl/gsl_eigen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/theory/noise.h"
#include "aimsweep/theory/ode.h"
#include "check.h"

static struct params mk(const char *decomp, const char *act, int d, double tau_end, int records)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", decomp, err, sizeof err);
    CHECK(params_set(&p, "activation", act, err, sizeof err) == 0, "%s", err);
    p.d = d;
    p.tau_end = tau_end;
    p.records = records;
    return p;
}

static void traces(const struct model *m, const double *S, struct order_params *o)
{
    struct student s;
    student_init_copy(&s, m);
    memcpy(s.A, S, sizeof(double) * (size_t)m->d * m->d);
    model_order_params(m, &s, o);
    student_free(&s);
}

static void rhs_vs_flow_fd(const char *act, double wd)
{
    struct params p = mk("direct", act, 60, 1.0, 4);
    p.weight_decay = wd;
    struct model *m = model_create(&p);
    int d = m->d;
    size_t n = (size_t)d * d;
    struct student s;
    student_init_copy(&s, m);
    double *dS = malloc(sizeof(double) * n), *Sp = malloc(sizeof(double) * n),
           *Sm = malloc(sizeof(double) * n);
    CHECK(flow_rhs(m, &s, dS, NULL) == 0, "flow_rhs %s", act);
    double h = 1e-4;
    for (size_t i = 0; i < n; i++) {
        Sp[i] = s.A[i] + h * dS[i];
        Sm[i] = s.A[i] - h * dS[i];
    }
    struct order_params op, om;
    traces(m, Sp, &op);
    traces(m, Sm, &om);
    double fd[4] = {(op.omega11 - om.omega11) / (2 * h), (op.psi11 - om.psi11) / (2 * h),
                    (op.omega12 - om.omega12) / (2 * h), (op.t1 - om.t1) / (2 * h)};
    struct mom_sys sys;
    char err[256];
    CHECK(ode_system_create(m, &sys, err, sizeof err) == 0, "%s", err);
    double dy[4];
    CHECK(sys.rhs(sys.ctx, 0.0, sys.y0, dy) == 0, "rhs %s", act);
    const char *nm[4] = {"d omega11", "d psi11", "d omega12", "d t1"};
    for (int i = 0; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s (%s, wd %g)", nm[i], act, wd);
        CHECK_CLOSE(dy[i], fd[i], 1e-7, 1e-6, what);
    }
    mom_sys_destroy(&sys);
    student_free(&s);
    free(dS);
    free(Sp);
    free(Sm);
    model_destroy(&m);
}

static void ode_vs_flow(const char *act, const char *teacher)
{
    struct params p = mk("direct", act, 100, 1.0, 10);
    char err[256];
    params_set(&p, "teacher", teacher, err, sizeof err);
    struct model *m = model_create(&p);
    struct traj tf, to;
    traj_init(&tf, SOLVER_FLOW, p.records + 1);
    traj_init(&to, SOLVER_ODE, p.records + 1);
    flow_run(m, &tf, NULL, NULL);
    ode_run(m, &to);
    CHECK(to.status == RUN_OK && tf.status == RUN_OK, "status %d %d %s", to.status, tf.status,
          to.error);
    CHECK(to.n == tf.n && to.n == p.records + 1, "rows %d %d", to.n, tf.n);
    double e = 0;
    for (int k = 0; k < to.n && k < tf.n; k++) {
        CHECK(fabs(to.rows[k].tau - tf.rows[k].tau) < 1e-12, "tau grid");
        e = fmax(e, fabs(to.rows[k].omega11 - tf.rows[k].omega11));
        e = fmax(e, fabs(to.rows[k].psi11 - tf.rows[k].psi11));
        e = fmax(e, fabs(to.rows[k].omega12 - tf.rows[k].omega12));
        e = fmax(e, fabs(to.rows[k].trace - tf.rows[k].trace));
    }
    CHECK(e < 1e-6, "direct %s/%s: max |ode - flow| = %.3g", act, teacher, e);
    traj_free(&tf);
    traj_free(&to);
    model_destroy(&m);
}

/* y' = y^2 from y = 1 blows up at tau = 1. */
static int blow_rhs(void *c, double t, const double *y, double *dy)
{
    (void)c;
    (void)t;
    dy[0] = y[0] * y[0];
    return 0;
}
static int blow_obs(void *c, const double *y, struct obs_row *r)
{
    (void)c;
    r->omega11 = r->psi11 = y[0];
    r->omega12 = r->trace = r->overlap = r->loss = 0;
    return 0;
}

static void divergence(void)
{
    struct params p = mk("direct", "h1", 20, 2.0, 20);
    double y0 = 1.0;
    struct mom_sys sys = {1, &y0, blow_rhs, blow_obs, NULL, NULL, 0, NULL, NULL};
    struct traj t;
    traj_init(&t, SOLVER_ODE, p.records + 1);
    CHECK(mom_integrate(&sys, &p, 0, NULL, &t) == 0, "integrate");
    CHECK(t.status == RUN_ODE_DIVERGED, "status %d", t.status);
    double tau = t.diverged_at_samples * p.lr / ((double)p.d * p.d);
    CHECK(tau > 0.9 && tau <= 1.0, "blow-up tau %.6g (exact 1)", tau);
    CHECK(t.n == 10, "rows before the blow-up: %d (tau 0 .. 0.9)", t.n);
    traj_free(&t);

    /* h3 with the noise drift eta n1 ~ omega^5 at a large learning rate */
    p = mk("direct", "h3", 40, 1.0, 10);
    p.lr = 3.0;
    p.ode_noise = 1;
    p.init_scale = 1.0;
    struct model *m = model_create(&p);
    traj_init(&t, SOLVER_ODE, p.records + 1);
    CHECK(ode_run(m, &t) == 0, "ode_run");
    CHECK(t.status == RUN_ODE_DIVERGED, "unstable h3: status %d (%s)", t.status, t.error);
    CHECK(t.diverged_at_samples > 0 && strstr(t.error, "tau=") != NULL, "recorded tau: %s",
          t.error);
    traj_free(&t);
    model_destroy(&m);
}

/* Monte Carlo of n1 = E sum D_ab^2 and n2 = E sum D_ab D_ba: all 2 T^2 entries (student and
 * teacher indices) drawn jointly from the covariance of docs/model.md §5 by a symmetric square root. */
static void noise_mc(const char *act, int T, double om, double ps, double c)
{
    struct params p = mk("direct", act, 10, 1, 1);
    int n = 2 * T * T;
    gsl_matrix *C = gsl_matrix_calloc((size_t)n, (size_t)n),
               *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    /* index: student (a, b) -> a T + b, teacher -> T^2 + a T + b */
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 2; l++)
            for (int a = 0; a < T; a++)
                for (int b = 0; b < T; b++)
                    for (int a2 = 0; a2 < T; a2++)
                        for (int b2 = 0; b2 < T; b2++) {
                            double O = k == 0 && l == 0 ? om : k != l ? c : 1.0;
                            double Ps = k == 0 && l == 0 ? ps : k != l ? c : 1.0;
                            double v = (a == a2 && b == b2 ? O : 0) + (a == b2 && b == a2 ? Ps : 0);
                            gsl_matrix_set(C, (size_t)(k * T * T + a * T + b),
                                           (size_t)(l * T * T + a2 * T + b2), v);
                        }
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)n);
    gsl_eigen_symmv(C, ev, V, ws);
    gsl_eigen_symmv_free(ws);
    double L[64 * 64];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double e = gsl_vector_get(ev, (size_t)j);
            L[i * n + j] = gsl_matrix_get(V, (size_t)i, (size_t)j) * sqrt(e > 0 ? e : 0);
        }
    struct rng g;
    rng_init(&g, 7, STREAM_TEST, (uint32_t)n);
    long N = 400000;
    double z[64], x[64], D[16], s1 = 0, s1q = 0, s2 = 0, s2q = 0;
    for (long it = 0; it < N; it++) {
        rng_normals(&g, z, (size_t)n);
        for (int i = 0; i < n; i++) {
            double acc = 0;
            for (int j = 0; j < n; j++)
                acc += L[i * n + j] * z[j];
            x[i] = acc;
        }
        model_loss(&p.activation, T, x, x + T * T, D);
        double a1 = 0, a2 = 0;
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                a1 += D[a * T + b] * D[a * T + b];
                a2 += D[a * T + b] * D[b * T + a];
            }
        s1 += a1;
        s1q += a1 * a1;
        s2 += a2;
        s2q += a2 * a2;
    }
    double m1 = s1 / N, m2 = s2 / N;
    double se1 = sqrt((s1q / N - m1 * m1) / N), se2 = sqrt((s2q / N - m2 * m2) / N);
    struct noise_val nv;
    CHECK(noise_eval(&p.activation, T, om, ps, c, 1, &nv) == 0, "noise_eval %s", act);
    char w1[96], w2[96];
    snprintf(w1, sizeof w1, "n1 %s T=%d (MC se %.2g)", act, T, se1);
    snprintf(w2, sizeof w2, "n2 %s T=%d (MC se %.2g)", act, T, se2);
    CHECK_CLOSE(nv.n1, m1, 5 * se1 + nv.err, 0, w1);
    CHECK_CLOSE(nv.n2, m2, 5 * se2 + nv.err, 0, w2);
    gsl_matrix_free(C);
    gsl_matrix_free(V);
    gsl_vector_free(ev);
}

int main(void)
{
    rhs_vs_flow_fd("h1", 0.0);
    rhs_vs_flow_fd("h3", 0.3);
    rhs_vs_flow_fd("softmax(1.5)", 0.0);
    rhs_vs_flow_fd("tanh", 0.0);
    ode_vs_flow("h2", "goe_shift(0.5)");
    ode_vs_flow("softmax(1)", "wishart(0.5)");
    divergence();
    noise_mc("h2", 2, 0.6, 0.3, 0.4);
    noise_mc("relu", 2, 0.8, 0.8, 0.5);
    noise_mc("softmax(1.5)", 2, 0.7, 0.2, 0.3);
    noise_mc("softmax(1)", 3, 0.5, 0.4, 0.3);
    return check_done("test_ode");
}
