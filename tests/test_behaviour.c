/* What a correct implementation shows (docs/model.md §9):
 * - tied with a wishart teacher: m grows from ~0 by deterministic drift, SGD follows the flow;
 * - direct with h2, and tied with a goe teacher: m stays near 0 over the same time;
 * - h3 at a large learning rate is recorded as diverged, with the step, and nothing crashes. */
#include <string.h>

#include "aimsweep/run/worker.h"
#include "check.h"

static void run(struct task_result *r, const char *decomp, const char *act, const char *teacher,
                double lr, double tau_end, int seed)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", decomp, err, sizeof err);
    params_set(&p, "activation", act, err, sizeof err);
    params_set(&p, "teacher", teacher, err, sizeof err);
    p.d = 100;
    p.lr = lr;
    p.tau_end = tau_end;
    p.records = 10;
    p.seed = (uint64_t)seed;
    CHECK(params_validate(&p, err, sizeof err) == 0, "%s", err);
    CHECK(worker_run(&p, r, NULL, NULL) == 0, "worker_run");
}

static double max_abs_m(const struct traj *t, double tau_max)
{
    double mx = 0;
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].tau <= tau_max + 1e-12)
            mx = fmax(mx, fabs(t->rows[i].overlap));
    return mx;
}

int main(void)
{
    struct task_result r;
    /* Tied, wishart(0.5): recovery by drift, SGD on the flow's curve. */
    const char *acts[] = {"h1", "h2"};
    const double lrs[] = {0.05, 0.01}, tol[] = {0.05, 0.1};
    for (int a = 0; a < 2; a++) {
        run(&r, "tied", acts[a], "wishart(0.5)", lrs[a], 0.2, 1);
        const struct traj *s = &r.traj[0], *f = &r.traj[1];
        CHECK(s->status == RUN_OK && f->status == RUN_OK && s->n == 11 && f->n == 11,
              "tied %s runs", acts[a]);
        CHECK(fabs(s->rows[0].overlap) < 0.1, "tied %s: m(0) = %g, not ~0", acts[a],
              s->rows[0].overlap);
        CHECK(fabs(s->rows[s->n - 1].overlap) > 0.8, "tied %s: m(0.2) = %g: no recovery", acts[a],
              s->rows[s->n - 1].overlap);
        CHECK(fabs(s->rows[5].overlap) > 0.5, "tied %s: m(0.1) = %g", acts[a], s->rows[5].overlap);
        double gap = 0;
        for (int i = 0; i < s->n; i++)
            gap = fmax(gap, fabs(s->rows[i].overlap - f->rows[i].overlap));
        printf(
            "tied %s wishart(0.5) lr=%g: m(0)=%.3f m(0.1)=%.3f m(0.2)=%.3f, max |m_sgd - m_flow| = %.3f\n",
            acts[a], lrs[a], s->rows[0].overlap, s->rows[5].overlap, s->rows[10].overlap, gap);
        CHECK(gap < tol[a], "tied %s: SGD leaves the flow by %.3g", acts[a], gap);
        worker_result_free(&r);
    }
    /* Direct with h2, and tied with a goe teacher: no drift out of m ~ 0 by tau = 0.1, where the
     * tied/wishart runs above are past |m| = 0.5. */
    for (int seed = 1; seed <= 3; seed++) {
        run(&r, "direct", "h2", "wishart(0.5)", 0.05, 0.1, seed);
        double ms = max_abs_m(&r.traj[0], 0.1), mf = max_abs_m(&r.traj[1], 0.1);
        printf("direct h2 wishart(0.5) seed %d: max |m| sgd %.3f flow %.3f\n", seed, ms, mf);
        CHECK(ms < 0.2 && mf < 0.2, "direct h2 seed %d: m leaves 0 (sgd %.3g, flow %.3g)", seed, ms,
              mf);
        worker_result_free(&r);
        run(&r, "tied", "h2", "goe", 0.05, 0.1, seed);
        ms = max_abs_m(&r.traj[0], 0.1);
        mf = max_abs_m(&r.traj[1], 0.1);
        printf("tied h2 goe seed %d: max |m| sgd %.3f flow %.3f\n", seed, ms, mf);
        CHECK(ms < 0.2 && mf < 0.2, "tied h2 goe seed %d: m leaves 0 (sgd %.3g, flow %.3g)", seed,
              ms, mf);
        worker_result_free(&r);
    }
    /* h3 at a large learning rate: diverged, with the step, for every decomposition. */
    const char *decomps[] = {"direct", "tied", "untied"};
    for (int i = 0; i < 3; i++) {
        run(&r, decomps[i], "h3", "wishart(0.5)", 2.0, 0.2, 1);
        const struct traj *s = &r.traj[0];
        printf("%s h3 lr=2: sgd %s at sample %.0f\n", decomps[i], run_status_name(s->status),
               s->diverged_at_samples);
        CHECK(s->status == RUN_DIVERGED && s->diverged_at_samples > 0 &&
                  s->diverged_at_samples < 0.2 * 100 * 100 / 2.0,
              "%s h3 lr=2: status %s at %g", decomps[i], run_status_name(s->status),
              s->diverged_at_samples);
        CHECK(r.sum[0].status == RUN_DIVERGED, "summary status");
        worker_result_free(&r);
    }
    return check_done("test_behaviour");
}
