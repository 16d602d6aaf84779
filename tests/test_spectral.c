/* The tied closure `spectral` (docs/model.md §7b):
 *  - the Gauss rule integrates the moments 0 .. 2M-1 of a discrete measure exactly;
 *  - the Marchenko-Pastur discretisation has the law's first two moments and is close to the
 *    empirical spectrum of a sampled initialisation;
 *  - the free-subordination traces equal the exact traces of S = E (I + S0 F(P))^-1 S0 E built
 *    with dense linear algebra on the run's own matrices (to finite-d accuracy);
 *  - at tau = 0 the spectral time derivatives match finite differences along the flow;
 *  - against the flow at d = 300 over tau in [0, 0.4] (h1; h2 over [0, 0.2]), the error on omega11 and omega12 falls
 *    with M and reaches the finite-d level by M ~ 4-6;
 *  - the scaled solve (spectral_solve_scaled, from log c and z = F/(1 + c)) equals the unscaled
 *    one where both are representable;
 *  - through strong recovery (S -> S*, c -> infinity): tied h4 to tau = 1 and h3 to tau = 2 (the
 *    state is rescaled for its rate) and h2 to tau = 8 (for its size, past exp's overflow at
 *    tau ~ 7) against the flow, status ok. Without the scaled state the h4 and h2 runs end
 *    ode_diverged (h4 at tau = 0.31, h2 at 6.93: c overflows), and the checks on status and on
 *    the last records fail. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/theory/ode.h"
#include "aimsweep/theory/spectral.h"
#include "check.h"

static struct params mk(const char *act, int d, double tau_end, int records)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", "tied", err, sizeof err);
    CHECK(params_set(&p, "activation", act, err, sizeof err) == 0, "%s", err);
    p.d = d;
    p.tau_end = tau_end;
    p.records = records;
    return p;
}

static void gauss_rule(void)
{
    struct rng g;
    rng_init(&g, 3, STREAM_TEST, 1);
    int n = 200;
    double e[200], x[12], w[12];
    for (int i = 0; i < n; i++)
        e[i] = rng_uniform(&g) * rng_uniform(&g) * 3 - 0.5;
    for (int M = 1; M <= 10; M += 3) {
        int m = spectral_gauss_rule(e, n, M, x, w);
        CHECK(m == M, "nodes %d of %d", m, M);
        for (int k = 0; k <= 2 * M - 1; k++) {
            double ex = 0, q = 0;
            for (int i = 0; i < n; i++)
                ex += pow(e[i], k) / n;
            for (int j = 0; j < m; j++)
                q += w[j] * pow(x[j], k);
            char what[64];
            snprintf(what, sizeof what, "moment %d at M = %d", k, M);
            CHECK_CLOSE(q, ex, 1e-11, 1e-9, what);
        }
    }
    /* a measure with 3 atoms: M = 6 is reduced to 3 */
    double a3[9] = {0, 0, 0, 1, 1, 2, 2, 2, 2};
    CHECK(spectral_gauss_rule(a3, 9, 6, x, w) == 3, "distinct atoms");
}

/* dense S = E (I + S0 F(P))^-1 S0 E and its traces */
static void exact_traces(const struct model *m, double phi, double psi, double f0, double f1,
                         double *t1, double *o12, double *o11)
{
    int d = m->d, r = m->r;
    size_t n = (size_t)d * d;
    gsl_matrix *P = gsl_matrix_alloc(d, d), *Q = gsl_matrix_alloc(d, d);
    gsl_vector *lam = gsl_vector_alloc(d);
    memcpy(P->data, m->teacher, sizeof(double) * n);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc(d);
    gsl_eigen_symmv(P, lam, Q, ws);
    gsl_eigen_symmv_free(ws);
    double *S0 = calloc(n, sizeof(double)), *FP = calloc(n, sizeof(double)),
           *EP = calloc(n, sizeof(double));
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double a = 0;
            for (int k = 0; k < r; k++)
                a += m->W0[(size_t)i * r + k] * m->W0[(size_t)j * r + k];
            S0[(size_t)i * d + j] = a / m->kappa;
        }
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double a = 0, b = 0;
            for (int k = 0; k < d; k++) {
                double l = gsl_vector_get(lam, k), qi = gsl_matrix_get(Q, i, k),
                       qj = gsl_matrix_get(Q, j, k);
                a += qi * qj * (f0 + f1 * l);
                b += qi * qj * exp(-phi * l - psi);
            }
            FP[(size_t)i * d + j] = a;
            EP[(size_t)i * d + j] = b;
        }
    gsl_matrix *A = gsl_matrix_alloc(d, d), *X = gsl_matrix_alloc(d, d),
               *S = gsl_matrix_alloc(d, d);
    gsl_matrix_view s0 = gsl_matrix_view_array(S0, d, d), fp = gsl_matrix_view_array(FP, d, d),
                    ep = gsl_matrix_view_array(EP, d, d);
    gsl_matrix_set_identity(A);
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, &s0.matrix, &fp.matrix, 1.0, A);
    gsl_permutation *perm = gsl_permutation_alloc(d);
    int sg;
    gsl_linalg_LU_decomp(A, perm, &sg);
    for (int j = 0; j < d; j++) {
        gsl_vector_view col = gsl_matrix_column(X, j);
        gsl_vector_const_view b = gsl_matrix_const_column(&s0.matrix, j);
        gsl_linalg_LU_solve(A, perm, &b.vector, &col.vector);
    }
    gsl_matrix *T1 = gsl_matrix_alloc(d, d);
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, &ep.matrix, X, 0.0, T1);
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, T1, &ep.matrix, 0.0, S);
    double a = 0, b = 0, c = 0;
    for (int i = 0; i < d; i++) {
        a += gsl_matrix_get(S, i, i);
        for (int j = 0; j < d; j++) {
            b += gsl_matrix_get(S, i, j) * m->teacher[(size_t)j * d + i];
            c += gsl_matrix_get(S, i, j) * gsl_matrix_get(S, j, i);
        }
    }
    *t1 = a / d;
    *o12 = b / d;
    *o11 = c / d;
    gsl_matrix_free(P);
    gsl_matrix_free(Q);
    gsl_vector_free(lam);
    gsl_matrix_free(A);
    gsl_matrix_free(X);
    gsl_matrix_free(S);
    gsl_matrix_free(T1);
    gsl_permutation_free(perm);
    free(S0);
    free(FP);
    free(EP);
}

static void subordination_vs_dense(void)
{
    struct params p = mk("h1", 300, 0.4, 4);
    struct model *m = model_create(&p);
    int d = m->d, r = m->r;
    /* spectra: the teacher's (all d eigenvalues as nodes) and S0's */
    double *ev = malloc(sizeof(double) * d), *cw = malloc(sizeof(double) * d);
    gsl_matrix *P = gsl_matrix_alloc(d, d);
    memcpy(P->data, m->teacher, sizeof(double) * (size_t)d * d);
    gsl_vector *lam = gsl_vector_alloc(d);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc(d);
    gsl_eigen_symm(P, lam, ws);
    gsl_eigen_symm_free(ws);
    double *G = malloc(sizeof(double) * (size_t)r * r);
    for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) {
            double a = 0;
            for (int k = 0; k < d; k++)
                a += m->W0[(size_t)k * r + i] * m->W0[(size_t)k * r + j];
            G[(size_t)i * r + j] = a / m->kappa;
        }
    gsl_matrix_view gv = gsl_matrix_view_array(G, r, r);
    gsl_vector *sv = gsl_vector_alloc(r);
    ws = gsl_eigen_symm_alloc(r);
    gsl_eigen_symm(&gv.matrix, sv, ws);
    gsl_eigen_symm_free(ws);
    struct spectral_measure mu = {r, malloc(sizeof(double) * r), malloc(sizeof(double) * r)};
    for (int i = 0; i < r; i++) {
        mu.s[i] = fmax(0.0, gsl_vector_get(sv, i));
        mu.q[i] = 1.0 / d;
    }
    /* the last case has every c > 1 (psi < 0), so that the scaled solve runs at eps = e^-1 */
    const double cases[4][4] = {
        {0.0, 0.0, 0.0, 0.0}, {-0.4, 0.05, 0.8, 1.5}, {0.3, 0.0, 2.0, 0.5}, {-0.3, -0.5, 2.0, 1.5}};
    for (int t = 0; t < 4; t++) {
        double phi = cases[t][0], psi = cases[t][1], f0 = cases[t][2], f1 = cases[t][3];
        double *F = malloc(sizeof(double) * d), *c = malloc(sizeof(double) * d);
        for (int k = 0; k < d; k++) {
            double l = gsl_vector_get(lam, k);
            ev[k] = l;
            cw[k] = 1.0 / d;
            F[k] = f0 + f1 * l;
            c[k] = exp(-2 * phi * l - 2 * psi);
        }
        struct spectral_traces tr;
        double gg[3] = {-0.5, NAN, NAN};
        CHECK(spectral_solve(&mu, d, ev, cw, F, c, gg, &tr) == 0, "solve case %d", t);
        /* the scaled form from log c and z = F/(1 + c): the same traces to rounding */
        {
            double *x = malloc(sizeof(double) * d), *z = malloc(sizeof(double) * d),
                   *wk = malloc(sizeof(double) * 3 * d), g4[4] = {-0.5, NAN, NAN, 0.0};
            for (int k = 0; k < d; k++) {
                x[k] = -2 * phi * ev[k] - 2 * psi;
                z[k] = F[k] / (1.0 + c[k]);
            }
            struct spectral_traces ts;
            CHECK(spectral_solve_scaled(&mu, d, ev, cw, x, z, wk, g4, &ts) == 0,
                  "scaled solve case %d", t);
            CHECK_CLOSE(ts.t1, tr.t1, 1e-12, 1e-9, "scaled t1");
            CHECK_CLOSE(ts.omega12, tr.omega12, 1e-12, 1e-9, "scaled omega12");
            CHECK_CLOSE(ts.omega11, tr.omega11, 1e-12, 1e-9, "scaled omega11");
            CHECK(t < 3 || ts.log_scale > 0.99, "case %d runs scaled: -log eps = %g", t,
                  ts.log_scale);
            free(x);
            free(z);
            free(wk);
        }
        double t1, o12, o11;
        exact_traces(m, phi, psi, f0, f1, &t1, &o12, &o11);
        char w[64];
        snprintf(w, sizeof w, "t1 case %d", t);
        CHECK_CLOSE(tr.t1, t1, 0.004, 0.01, w);
        snprintf(w, sizeof w, "omega12 case %d", t);
        CHECK_CLOSE(tr.omega12, o12, 0.004, 0.01, w);
        snprintf(w, sizeof w, "omega11 case %d", t);
        CHECK_CLOSE(tr.omega11, o11, 0.004, 0.01, w);
        /* the 8-node Gauss rule of nu gives the same traces as all d nodes */
        double x8[8], w8[8], F8[8], c8[8];
        int m8 = spectral_gauss_rule(ev, d, 8, x8, w8);
        for (int k = 0; k < m8; k++) {
            F8[k] = f0 + f1 * x8[k];
            c8[k] = exp(-2 * phi * x8[k] - 2 * psi);
        }
        struct spectral_traces t8;
        CHECK(spectral_solve(&mu, m8, x8, w8, F8, c8, gg, &t8) == 0, "solve M=8");
        CHECK_CLOSE(t8.omega12, tr.omega12, 1e-6, 1e-6, "omega12 Gauss M=8 vs all nodes");
        CHECK_CLOSE(t8.omega11, tr.omega11, 1e-6, 1e-6, "omega11 Gauss M=8 vs all nodes");
        free(F);
        free(c);
    }
    /* Marchenko-Pastur: moments of the law and closeness to this sample */
    struct spectral_measure mp;
    CHECK(spectral_mp_measure(p.init_scale, 1.0, 512, &mp) == 0, "mp");
    double m1 = 0, m2 = 0, e1 = 0, e2 = 0, s0 = p.init_scale;
    for (int j = 0; j < mp.n; j++) {
        m1 += mp.q[j] * mp.s[j];
        m2 += mp.q[j] * mp.s[j] * mp.s[j];
    }
    for (int j = 0; j < mu.n; j++) {
        e1 += mu.q[j] * mu.s[j];
        e2 += mu.q[j] * mu.s[j] * mu.s[j];
    }
    CHECK_CLOSE(m1, s0 * s0, 1e-9, 1e-9, "MP mean s0^2 sqrt(rho)");
    CHECK_CLOSE(m2, pow(s0, 4) * 2.0, 1e-9, 1e-6, "MP second moment s0^4 (rho + 1)");
    CHECK_CLOSE(e1, m1, 0, 0.03, "empirical vs MP mean");
    CHECK_CLOSE(e2, m2, 0, 0.03, "empirical vs MP second moment");
    struct spectral_measure mp2;
    spectral_mp_measure(1.0, 0.5, 512, &mp2); /* rho < 1: an atom at 0 of mass 1/2 */
    double q = 0, mm = 0;
    for (int j = 0; j < mp2.n; j++) {
        q += mp2.q[j];
        mm += mp2.q[j] * mp2.s[j];
    }
    CHECK_CLOSE(q, 0.5, 1e-12, 0, "MP rho = 1/2: continuous mass");
    CHECK_CLOSE(mm, sqrt(0.5), 1e-9, 1e-9, "MP rho = 1/2: mean");
    /* the MP rule is converged: 512 and 4096 atoms (the latter beyond the stack buffer) agree */
    {
        struct spectral_measure big;
        spectral_mp_measure(p.init_scale, 1.0, 4096, &big);
        double x4[4], w4[4], F4[4], c4[4];
        int m4 = spectral_gauss_rule(ev, d, 4, x4, w4);
        for (int k = 0; k < m4; k++) {
            F4[k] = 0.5 + x4[k];
            c4[k] = exp(0.6 * x4[k]);
        }
        struct spectral_traces a, b;
        double g1[3] = {-0.5, NAN, NAN}, g2[3] = {-0.5, NAN, NAN};
        CHECK(spectral_solve(&mp, m4, x4, w4, F4, c4, g1, &a) == 0, "MP 512");
        CHECK(spectral_solve(&big, m4, x4, w4, F4, c4, g2, &b) == 0, "MP 4096");
        CHECK_CLOSE(a.omega11, b.omega11, 1e-8, 1e-8, "omega11, MP 512 vs 4096 atoms");
        CHECK_CLOSE(a.omega12, b.omega12, 1e-8, 1e-8, "omega12, MP 512 vs 4096 atoms");
        free(big.s);
        free(big.q);
    }
    free(mp.s);
    free(mp.q);
    free(mp2.s);
    free(mp2.q);
    free(mu.s);
    free(mu.q);
    free(ev);
    free(cw);
    free(G);
    gsl_vector_free(sv);
    gsl_vector_free(lam);
    gsl_matrix_free(P);
    model_destroy(&m);
}

/* At tau = 0, d/dtau of the spectral traces (finite differences of observe along the ODE's
 * own rhs) against the flow's (finite differences of the traces along flow_rhs). */
static void rhs_vs_flow(const char *act)
{
    struct params p = mk(act, 300, 0.4, 4);
    p.order_m = 8;
    struct model *m = model_create(&p);
    int d = m->d, r = m->r;
    size_t n = (size_t)d * r;
    struct student s, sp, sm;
    student_init_copy(&s, m);
    student_init_copy(&sp, m);
    student_init_copy(&sm, m);
    double *dW = malloc(sizeof(double) * n), h = 1e-5;
    flow_rhs(m, &s, dW, NULL);
    for (size_t i = 0; i < n; i++) {
        sp.A[i] = s.A[i] + h * dW[i];
        sm.A[i] = s.A[i] - h * dW[i];
    }
    struct order_params op, om;
    model_order_params(m, &sp, &op);
    model_order_params(m, &sm, &om);
    struct mom_sys sys;
    char err[256];
    CHECK(ode_system_create(m, &sys, err, sizeof err) == 0, "%s", err);
    double *dy = malloc(sizeof(double) * sys.dim), *yp = malloc(sizeof(double) * sys.dim),
           *ym = malloc(sizeof(double) * sys.dim);
    sys.rhs(sys.ctx, 0, sys.y0, dy);
    for (int i = 0; i < sys.dim; i++) {
        yp[i] = sys.y0[i] + h * dy[i];
        ym[i] = sys.y0[i] - h * dy[i];
    }
    struct obs_row rp, rm;
    sys.observe(sys.ctx, yp, &rp);
    sys.observe(sys.ctx, ym, &rm);
    double f11 = (op.omega11 - om.omega11) / (2 * h), f12 = (op.omega12 - om.omega12) / (2 * h);
    double s11 = (rp.omega11 - rm.omega11) / (2 * h), s12 = (rp.omega12 - rm.omega12) / (2 * h);
    char w[64];
    snprintf(w, sizeof w, "d omega11/dtau at 0 (%s, d=300)", act);
    CHECK_CLOSE(s11, f11, 0.02, 0.02, w);
    snprintf(w, sizeof w, "d omega12/dtau at 0 (%s, d=300)", act);
    CHECK_CLOSE(s12, f12, 0.02, 0.02, w);
    mom_sys_destroy(&sys);
    student_free(&s);
    student_free(&sp);
    student_free(&sm);
    free(dW);
    free(dy);
    free(yp);
    free(ym);
    model_destroy(&m);
}

static void max_err(const struct traj *a, const struct traj *b, double *e11, double *e12)
{
    *e11 = *e12 = 0;
    for (int k = 0; k < a->n && k < b->n; k++) {
        *e11 = fmax(*e11, fabs(a->rows[k].omega11 - b->rows[k].omega11));
        *e12 = fmax(*e12, fabs(a->rows[k].omega12 - b->rows[k].omega12));
    }
    if (a->n != b->n)
        *e11 = *e12 = INFINITY;
}

static void convergence_in_M(const char *act, int d, double tau_end, double floor_level)
{
    struct params p = mk(act, d, tau_end, 20);
    struct model *m = model_create(&p);
    struct traj tf;
    traj_init(&tf, SOLVER_FLOW, p.records + 1);
    flow_run(m, &tf, NULL, NULL);
    const int Ms[] = {1, 2, 3, 4, 6, 8};
    double e11[6], e12[6];
    for (int i = 0; i < 6; i++) {
        m->p.order_m = Ms[i];
        struct traj to;
        traj_init(&to, SOLVER_ODE, p.records + 1);
        ode_run(m, &to);
        CHECK(to.status == RUN_OK, "%s M=%d: %s", act, Ms[i], to.error);
        max_err(&to, &tf, &e11[i], &e12[i]);
        printf("spectral %s d=%d M=%d: max|d omega11| = %.3g, max|d omega12| = %.3g\n", act, d,
               Ms[i], e11[i], e12[i]);
        traj_free(&to);
    }
    for (int i = 0; i + 1 < 4; i++) { /* strictly falling until the finite-d floor */
        CHECK(e12[i + 1] < e12[i] || e12[i + 1] < floor_level, "%s omega12 M=%d -> %d", act, Ms[i],
              Ms[i + 1]);
        CHECK(e11[i + 1] < e11[i] || e11[i + 1] < floor_level, "%s omega11 M=%d -> %d", act, Ms[i],
              Ms[i + 1]);
    }
    CHECK(e12[4] < floor_level && e11[4] < floor_level,
          "%s at M=6: %.3g %.3g above finite-d level %.3g", act, e11[4], e12[4], floor_level);
    CHECK(e12[1] > 5 * e12[4], "%s: M=2 error %.3g not well above M=6 %.3g", act, e12[1], e12[4]);
    CHECK(fabs(e12[5] - e12[4]) < 0.2 * e12[4] + 1e-4, "%s: M=6 and M=8 at the same floor", act);
    traj_free(&tf);
    model_destroy(&m);
}

/* weight decay enters as psi = lambda tau (docs/model.md §7b): spectral against the flow */
static void weight_decay(void)
{
    struct params p = mk("h1", 200, 0.3, 6);
    p.weight_decay = 0.5;
    p.order_m = 6;
    struct model *m = model_create(&p);
    struct traj tf, to;
    traj_init(&tf, SOLVER_FLOW, p.records + 1);
    traj_init(&to, SOLVER_ODE, p.records + 1);
    flow_run(m, &tf, NULL, NULL);
    ode_run(m, &to);
    double e11, e12;
    max_err(&to, &tf, &e11, &e12);
    CHECK(to.status == RUN_OK && e11 < 0.01 && e12 < 0.01,
          "weight decay 0.5, d=200: max|d omega11| %.3g, max|d omega12| %.3g (%s)", e11, e12,
          to.error);
    /* and it matters: without it in the ode the error is large */
    m->p.weight_decay = 0.0;
    struct traj t0;
    traj_init(&t0, SOLVER_ODE, p.records + 1);
    ode_run(m, &t0);
    double f11, f12;
    max_err(&t0, &tf, &f11, &f12);
    CHECK(f11 > 5 * e11, "weight decay changes the ode: %.3g vs %.3g", f11, e11);
    traj_free(&tf);
    traj_free(&to);
    traj_free(&t0);
    model_destroy(&m);
}

/* Through strong recovery against the flow (tied, wishart(0.5) teacher, init scale 0.7): the
 * ode must end status ok at tau_end with |d omega11|, |d omega12| <= tol at every record from
 * tau_from on (measured, d = 30: h4 3.8e-5 from tau = 0.1; h3 3.7e-5 from tau = 0.5; h2 4.3e-5
 * from tau = 2), and its overlap at the end above ov_min. Before the scaled state h4 and h2 ended
 * ode_diverged (h4 at tau = 0.31, h2 at tau = 6.93) with the records after that missing. A student narrower than the
 * teacher's rank (width 0.25: r = 8 < rank S* = 15 at d = 30) has its fixed point short of S*
 * (overlap 0.97; M = 8 within 2.4e-3 of the flow); without the scale of g in the scaled solve
 * (g/eps ~ 1e-80, its fourth power subnormal) it ended ode_diverged, "step size
 * collapsed" (M = 8: at tau = 0.43). */
static void recovery_vs_flow(const char *act, int d, double width, int order_m, double tau_end,
                             int records, double tau_from, double tol, double ov_min)
{
    struct params p = mk(act, d, tau_end, records);
    p.init_scale = 0.7;
    p.width = width;
    p.order_m = order_m;
    struct model *m = model_create(&p);
    struct traj tf, to;
    traj_init(&tf, SOLVER_FLOW, p.records + 1);
    traj_init(&to, SOLVER_ODE, p.records + 1);
    flow_run(m, &tf, NULL, NULL);
    ode_run(m, &to);
    CHECK(tf.status == RUN_OK && tf.n == records + 1, "%s flow: %s", act, tf.error);
    CHECK(to.status == RUN_OK && to.n == records + 1, "%s ode to tau %g: %d rows, %s", act, tau_end,
          to.n, to.error);
    double e11 = 0, e12 = 0;
    for (int k = 0; k < to.n && k < tf.n; k++)
        if (to.rows[k].tau >= tau_from) {
            e11 = fmax(e11, fabs(to.rows[k].omega11 - tf.rows[k].omega11));
            e12 = fmax(e12, fabs(to.rows[k].omega12 - tf.rows[k].omega12));
        }
    printf("spectral %s d=%d width %g M=%d to tau %g: max|d omega11| = %.3g, max|d omega12| = "
           "%.3g from tau %g\n",
           act, d, width, order_m, tau_end, e11, e12, tau_from);
    CHECK(to.n > 0 && e11 <= tol && e12 <= tol, "%s against the flow: %.3g %.3g > %.3g", act, e11,
          e12, tol);
    CHECK(to.n > 0 && to.rows[to.n - 1].overlap > ov_min, "%s ode overlap at the end %.9g", act,
          to.n > 0 ? to.rows[to.n - 1].overlap : NAN);
    traj_free(&tf);
    traj_free(&to);
    model_destroy(&m);
}

int main(void)
{
    weight_decay();
    gauss_rule();
    subordination_vs_dense();
    rhs_vs_flow("h1");
    rhs_vs_flow("h2");
    convergence_in_M("h1", 300, 0.4, 0.005);
    convergence_in_M("h2", 300, 0.2, 0.008);
    recovery_vs_flow("h4", 30, 1.0, 4, 1.0, 10, 0.1, 1e-4, 1.0 - 1e-5);
    recovery_vs_flow("h3", 30, 1.0, 4, 2.0, 8, 0.5, 1e-4, 1.0 - 1e-5);
    recovery_vs_flow("h2", 30, 1.0, 4, 8.0, 8, 2.0, 1e-4, 1.0 - 1e-5);
    recovery_vs_flow("h4", 30, 0.25, 8, 2.0, 4, 0.5, 5e-3, 0.96);
    return check_done("test_spectral");
}
