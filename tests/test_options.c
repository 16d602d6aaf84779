/*
 * test_options.c: the options of docs/model.md §11 that change the numerics: the two_phase learning
 * rate, the orthogonal initialisation and direct's init_trace.
 *
 * two_phase: the sample counts SGD records against ones computed here by hand from eta1,
 * t_switch and lr; the SGD state against plain reference steps taken at eta1 for the first n1
 * steps and at lr after (a switch one step early or late, or a rate that ignores the schedule,
 * moves Omega12 by far more than the 1e-9 allowed); the tau grid unchanged; eta1 = lr
 * reproduces constant bit for bit in every solver; the ODE's noise term takes eta1 before the
 * switch (a schedule that never switches equals a constant run at eta1).
 * orthogonal: W^T W = c^2 I to 1e-12, and Omega11(0) equal to the mean of the Gaussian start's
 * Omega11(0) over seeds (Monte Carlo, 3 standard errors) — a wrong scale c (e.g. the naive
 * s0^2 d for tied) is off by many standard errors.
 * init_trace: t1(0) = t + the goe's trace and Omega12(0) = t t2 + s0 Tr(goe S*)/d, the last term
 * checked against its law N(0, 2 s0^2/d^2) over seeds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/run/worker.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"

static void base_params(struct params *p, const char *decomp, const char *act)
{
    char err[256];
    params_default(p);
    params_set(p, "decomposition", decomp, err, sizeof err);
    params_set(p, "activation", act, err, sizeof err);
}

static int set(struct params *p, const char *key, const char *value)
{
    char err[256];
    int rc = params_set(p, key, value, err, sizeof err);
    if (!rc)
        rc = params_validate(p, err, sizeof err);
    CHECK(rc == 0, "%s = %s: %s", key, value, err);
    return rc;
}

/* two_phase sample counts by hand: tied h1, d = 40, lr = 0.05, eta1 = 0.2, t_switch = 1.
 * n1 = ceil(t_switch d/eta1) = 200 steps at eta1, so tau_sw = 200 * 0.2/1600 = 0.025; on the
 * grid tau_k = 0.0125 k: n = tau d^2/eta1 = 8000 tau up to 0.025, then 200 + (tau - 0.025) 32000. */
static void test_two_phase_counts(void)
{
    struct params p;
    base_params(&p, "tied", "h1");
    p.d = 40;
    p.lr = 0.05;
    p.tau_end = 0.1;
    p.records = 8;
    p.solvers = SOLVER_SGD | SOLVER_FLOW | SOLVER_ODE;
    if (set(&p, "lr_schedule", "two_phase(0.2,1)"))
        return;
    CHECK(params_switch_steps(&p) == 200, "n1 = %ld, expected 200", params_switch_steps(&p));
    CHECK_CLOSE(params_switch_tau(&p), 0.025, 1e-15, 0, "tau_sw");
    CHECK(params_rate(&p, 0.0249) == 0.2 && params_rate(&p, 0.025) == 0.05,
          "rate in force around the switch");
    struct params bad = p;
    char err[256];
    CHECK(params_set(&bad, "lr_schedule", "two_phase(1e-300,1)", err, sizeof err) == 0 &&
              params_validate(&bad, err, sizeof err) != 0 && strstr(err, "steps"),
          "a first phase of 4e301 steps is not refused: %s", err);
    struct params c = p;
    c.lr_schedule.kind = LR_CONSTANT;
    CHECK(params_rate(&c, 0) == 0.05 && params_switch_steps(&c) == 0 &&
              params_samples(&c, 0.1) == 0.1 * (1600.0 / 0.05),
          "constant: rate lr, no switch, n = tau d^2/lr");
    struct task_result res;
    if (worker_run(&p, &res, NULL, NULL)) {
        CHECK(0, "worker_run failed");
        return;
    }
    const long by_hand[9] = {0, 100, 200, 600, 1000, 1400, 1800, 2200, 2600};
    for (int i = 0; i < res.nsolvers; i++) {
        const struct traj *t = &res.traj[i];
        CHECK(t->n == 9, "%s: %d rows", obs_solver_name(t->solver), t->n);
        for (int k = 0; k < t->n && k < 9; k++) {
            double tau = 0.1 * k / 8;
            CHECK(t->rows[k].tau == (k == 8 ? 0.1 : tau),
                  "%s: tau grid changed at record %d: %.17g", obs_solver_name(t->solver), k,
                  t->rows[k].tau);
            if (t->solver == SOLVER_SGD)
                CHECK(t->rows[k].samples == (double)by_hand[k],
                      "sgd: record %d: %.0f samples, by hand %ld", k, t->rows[k].samples,
                      by_hand[k]);
            else
                CHECK_CLOSE(t->rows[k].samples, (double)by_hand[k], 1e-9, 1e-12,
                            "flow/ode samples");
        }
    }
    /* samples_wr: the records' counts interpolated to the (interpolated) tau_wr and rounded to
     * a whole sample, so n(tau_wr) of the schedule by hand to within 0.5 (the switch at
     * tau = 0.025 is a record, so no interpolation straddles it; tied h1 on a wishart teacher
     * recovers) */
    for (int i = 0; i < res.nsolvers; i++) {
        const struct solver_summary *s = &res.sum[i];
        if (s->tau_wr < 0)
            continue;
        double expect = s->tau_wr <= 0.025 ? 8000 * s->tau_wr : 200 + (s->tau_wr - 0.025) * 32000;
        CHECK_CLOSE(s->samples_wr, expect, 0.5 + 1e-9, 0, "samples_wr by hand");
    }
    CHECK(res.sum[0].tau_wr >= 0,
          "tied h1 did not recover by tau = 0.1 (the samples_wr check saw nothing)");
    worker_result_free(&res);
}

/* The SGD state after a two_phase run against plain reference steps at the rate by hand. */
static void test_two_phase_steps(const char *decomp)
{
    struct params p;
    base_params(&p, decomp, "h1");
    p.d = 12;
    p.width = 0.75;
    p.lr = 0.05;
    p.weight_decay = 0.3; /* the decay factor also takes the rate in force */
    p.tau_end = 0.6;
    p.records = 3;
    p.seed = 4;
    p.solvers = SOLVER_SGD;
    if (set(&p, "lr_schedule", "two_phase(0.15,2.5)"))
        return;
    long n1 = (long)ceil(2.5 * 12 / 0.15); /* 200 */
    struct model *m = model_create(&p);
    struct traj t;
    traj_init(&t, SOLVER_SGD, p.records + 1);
    sgd_run(m, &t, NULL, NULL);
    long n = (long)t.rows[t.n - 1].samples;
    CHECK(n > n1, "the run ended in the first phase (%ld steps)", n);
    struct student s;
    student_init_copy(&s, m);
    struct rng g;
    rng_init(&g, p.seed, STREAM_SGD, (uint32_t)p.d);
    double x[2 * 12];
    struct params q = p;
    for (long k = 0; k < n; k++) {
        q.lr = k < n1 ? 0.15 : 0.05;
        rng_normals(&g, x, (size_t)p.tokens * p.d);
        CHECK(sgd_reference_step(&q, &s, m->teacher, x) == 0, "sgd_reference_step: out of memory");
    }
    struct order_params o;
    model_order_params(m, &s, &o);
    CHECK_CLOSE(t.rows[t.n - 1].omega12, o.omega12, 1e-12, 1e-9,
                "two_phase: Omega12 against reference steps");
    CHECK_CLOSE(t.rows[t.n - 1].omega11, o.omega11, 1e-12, 1e-9,
                "two_phase: Omega11 against reference steps");
    /* the same reference at the constant rate is far away: the check above can fail */
    struct student c;
    student_init_copy(&c, m);
    rng_init(&g, p.seed, STREAM_SGD, (uint32_t)p.d);
    q.lr = 0.05;
    for (long k = 0; k < n; k++) {
        rng_normals(&g, x, (size_t)p.tokens * p.d);
        CHECK(sgd_reference_step(&q, &c, m->teacher, x) == 0, "sgd_reference_step: out of memory");
    }
    struct order_params oc;
    model_order_params(m, &c, &oc);
    CHECK(fabs(oc.omega11 - o.omega11) > 1e-6, "%s: the schedule made no difference (%.3g)", decomp,
          fabs(oc.omega11 - o.omega11));
    student_free(&s);
    student_free(&c);
    traj_free(&t);
    model_destroy(&m);
}

static int same_rows(const struct task_result *a, const struct task_result *b, int skip_samples)
{
    if (a->nsolvers != b->nsolvers)
        return 0;
    for (int i = 0; i < a->nsolvers; i++) {
        const struct traj *x = &a->traj[i], *y = &b->traj[i];
        if (x->n != y->n || x->status != y->status)
            return 0;
        for (int k = 0; k < x->n; k++) {
            struct obs_row r = x->rows[k], s = y->rows[k];
            if (skip_samples)
                r.samples = s.samples = 0;
            if (memcmp(&r, &s, sizeof r)) {
                fprintf(
                    stderr,
                    "solver %d record %d: tau %.17g %.17g samples %.17g %.17g o11 %.17g %.17g mu %.17g %.17g loss %.17g %.17g\n",
                    x->solver, k, r.tau, s.tau, r.samples, s.samples, r.omega11, s.omega11, r.mu,
                    s.mu, r.loss, s.loss);
                return 0;
            }
        }
        /* samples_wr: constant keeps tau_wr d^2/lr, two_phase takes the recovering record's own
         * count, which for SGD is that number rounded to whole steps */
        if (!skip_samples && a->sum[i].tau_wr != b->sum[i].tau_wr)
            return 0;
        if (!skip_samples && !(fabs(a->sum[i].samples_wr - b->sum[i].samples_wr) <= 0.5 + 1e-9))
            return 0;
    }
    return 1;
}

/* eta1 = lr: every solver bit for bit as constant (noise on, so the ODE's rate is read too). */
static void test_two_phase_identity(const char *decomp)
{
    struct params p, q;
    base_params(&p, decomp, "h2");
    p.d = 30;
    p.lr = 0.05;
    p.tau_end = 0.3;
    p.records = 6;
    p.weight_decay = 0.2;
    p.ode_noise = 1;
    p.solvers = SOLVER_SGD | SOLVER_FLOW | SOLVER_ODE;
    if (!strcmp(decomp, "tied"))
        p.closure = CLOSURE_FREE_CUMULANT; /* the spectral closure has no noise term */
    q = p;
    if (set(&q, "lr_schedule", "two_phase(0.05,3.3)"))
        return;
    struct task_result a, b;
    worker_run(&p, &a, NULL, NULL);
    worker_run(&q, &b, NULL, NULL);
    CHECK(same_rows(&a, &b, 0), "%s: two_phase(lr, t) differs from constant", decomp);
    worker_result_free(&a);
    worker_result_free(&b);
}

/* The ODE's noise term takes the rate in force: a schedule that never switches (t_switch past
 * tau_end d) is the constant run at eta1, samples aside; one that switches after one step is
 * close to the constant run at lr. */
static void test_two_phase_ode_rate(void)
{
    struct params p, q, r;
    base_params(&p, "direct", "h2");
    p.d = 40;
    p.lr = 0.2;
    p.tau_end = 1;
    p.records = 5;
    p.ode_noise = 1;
    p.solvers = SOLVER_ODE;
    q = p;
    if (set(&q, "lr_schedule", "two_phase(0.2,100)")) /* never switches: tau_end d = 40 */
        return;
    q.lr = 0.05;
    struct task_result a, b;
    worker_run(&p, &a, NULL, NULL);
    worker_run(&q, &b, NULL, NULL);
    CHECK(same_rows(&a, &b, 1),
          "ode: a schedule that never leaves eta1 differs from constant eta1");
    r = p;
    r.lr = 0.05;
    struct task_result c;
    worker_run(&r, &c, NULL, NULL);
    const struct obs_row *ea = &a.traj[0].rows[a.traj[0].n - 1],
                         *ec = &c.traj[0].rows[c.traj[0].n - 1];
    CHECK(fabs(ea->omega11 - ec->omega11) > 1e-4,
          "ode noise: eta 0.2 and 0.05 give the same Omega11 (%.3g)",
          fabs(ea->omega11 - ec->omega11));
    worker_result_free(&a);
    worker_result_free(&b);
    worker_result_free(&c);
}

/* orthogonal: W^T W = c^2 I (to 1e-12) and Omega11(0) at the Gaussian's mean over seeds. */
static void test_orthogonal(const char *decomp, double width)
{
    struct params p;
    base_params(&p, decomp, "h2");
    p.d = 30;
    p.width = width;
    p.init_scale = 0.8;
    const int seeds = 400;
    double sum = 0, sum2 = 0, orth = 0;
    for (int sd = 1; sd <= seeds; sd++) {
        p.seed = (uint64_t)sd;
        p.init = INIT_GAUSSIAN;
        struct model *g = model_create(&p);
        struct student s;
        struct order_params o;
        student_init_copy(&s, g);
        model_order_params(g, &s, &o);
        sum += o.omega11;
        sum2 += o.omega11 * o.omega11;
        student_free(&s);
        model_destroy(&g);
        if (sd > 3)
            continue;
        if (set(&p, "init", "orthogonal"))
            return;
        struct model *m = model_create(&p);
        int d = m->d, r = m->r;
        double c = model_orthogonal_scale(p.decomposition, d, r, p.init_scale), worst = 0;
        for (int f = 0; f < (p.decomposition == DECOMP_UNTIED ? 2 : 1); f++) {
            const double *W = f ? m->V0 : m->W0;
            for (int i = 0; i < r; i++)
                for (int j = 0; j < r; j++) {
                    double v = 0;
                    for (int k = 0; k < d; k++)
                        v += W[(size_t)k * r + i] * W[(size_t)k * r + j];
                    worst = fmax(worst, fabs(v / (c * c) - (i == j)));
                }
        }
        CHECK(worst <= 1e-12, "%s width %g: W^T W/c^2 - I = %.3g", decomp, width, worst);
        student_init_copy(&s, m);
        model_order_params(m, &s, &o);
        orth = o.omega11;
        student_free(&s);
        model_destroy(&m);
    }
    double mean = sum / seeds, se = sqrt((sum2 / seeds - mean * mean) / (seeds - 1));
    CHECK(fabs(orth - mean) <= 3 * se,
          "%s width %g: orthogonal Omega11(0) = %.6g, Gaussian mean %.6g +- %.2g", decomp, width,
          orth, mean, se);
    /* the expectation of model.c's derivation, s0^4 (d + r + 1)/d (tied) or s0^4 (untied) */
    int r = (int)lround(width * p.d);
    double s4 = pow(p.init_scale, 4),
           expect = p.decomposition == DECOMP_TIED ? s4 * (p.d + r + 1.0) / p.d : s4;
    CHECK_CLOSE(orth, expect, 0, 1e-12, "orthogonal Omega11(0) against the formula");
}

/* init_trace t (direct): t1(0) = t + Tr(s0 goe)/d exactly (same seed, same goe), and
 * Omega12(0) = t t2 + e with e = s0 Tr(goe S*)/d ~ N(0, 2 s0^2/d^2) (Tr S*^2 = d). */
static void test_init_trace(void)
{
    struct params p;
    base_params(&p, "direct", "h2");
    p.d = 60;
    p.init_scale = 0.5;
    const double t = 0.7;
    const int seeds = 60;
    double se = 0, se2 = 0;
    for (int sd = 1; sd <= seeds; sd++) {
        struct params q;
        p.seed = (uint64_t)sd;
        p.init_trace = 0;
        q = p;
        if (set(&q, "init_trace", "0.7"))
            return;
        struct model *a = model_create(&p), *b = model_create(&q);
        struct student sa, sb;
        struct order_params oa, ob;
        student_init_copy(&sa, a);
        student_init_copy(&sb, b);
        model_order_params(a, &sa, &oa);
        model_order_params(b, &sb, &ob);
        CHECK_CLOSE(ob.t1, t + oa.t1, 1e-14, 0, "init_trace: t1(0) = t + goe's trace");
        CHECK_CLOSE(ob.omega12, oa.omega12 + t * b->t2, 1e-14, 0,
                    "init_trace: Omega12(0) = Omega12_goe + t t2");
        CHECK(b->t2 > 0.3, "wishart teacher: t2 = %.3g", b->t2);
        double e = ob.omega12 - t * b->t2;
        se += e;
        se2 += e * e;
        student_free(&sa);
        student_free(&sb);
        model_destroy(&a);
        model_destroy(&b);
    }
    double var = 2 * p.init_scale * p.init_scale / ((double)p.d * p.d);
    double mean = se / seeds, msq = se2 / seeds;
    CHECK(fabs(mean) <= 3 * sqrt(var / seeds),
          "init_trace: Omega12(0) - t t2 has mean %.3g (sd of the mean %.3g)", mean,
          sqrt(var / seeds));
    /* the mean square of N(0, var) over 60 draws: sd var sqrt(2/60) */
    CHECK(fabs(msq - var) <= 3 * var * sqrt(2.0 / seeds),
          "init_trace: mean square %.3g, expected %.3g", msq, var);
}

int main(void)
{
    test_two_phase_counts();
    test_two_phase_steps("direct");
    test_two_phase_steps("tied");
    test_two_phase_steps("untied");
    test_two_phase_identity("direct");
    test_two_phase_identity("tied");
    test_two_phase_identity("untied");
    test_two_phase_ode_rate();
    test_orthogonal("tied", 1);
    test_orthogonal("tied", 0.5);
    test_orthogonal("untied", 1);
    test_orthogonal("untied", 0.5);
    test_init_trace();
    return check_done("test_options");
}
