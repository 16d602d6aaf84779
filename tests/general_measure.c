/*
 * general_measure.c: the measurements of analysis/general_index.md (not a test).
 *   settle   untied, index uncentred, outputs all, teacher goe_mean(1): the time for the mean to
 *            settle on its slow manifold, t_settle = d tau at the first record where
 *            |mu - mu*(q)| <= 0.1 |mu(0) - mu*(q(0))|, mu*(q) the root of Phi_mu on the current
 *            moments (phi_mu_slow); the flow's own trajectory for d <= 200, the stiff ODE's beyond.
 *   odeerr   the moment ODE against the flow, stiff and slaved: max ||omega12| - |omega12_flow|| and
 *            the same for mu (h2 is even: S and -S are one point) over the whole run and over
 *            t = d tau >= 10 (after the fast phase),
 *            direct (closed system) and untied (order 3, flat).
 * usage: general_measure settle|odeerr
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aimsweep/model/phi.h"
#include "aimsweep/run/worker.h"

static struct params mk(const char *decomp, const char *act, int d, uint64_t seed)
{
    struct params p;
    char err[256];
    params_default(&p);
    params_set(&p, "decomposition", decomp, err, sizeof err);
    params_set(&p, "activation", act, err, sizeof err);
    params_set(&p, "teacher", "goe_mean(1)", err, sizeof err);
    params_set(&p, "index", "uncentred", err, sizeof err);
    params_set(&p, "outputs", "all", err, sizeof err);
    p.d = d;
    p.seed = seed;
    p.lr = 0.01;
    p.order_m = 3;
    if (params_validate(&p, err, sizeof err))
        fprintf(stderr, "%s\n", err);
    return p;
}

/* t_settle of a trajectory, or -1 */
static double settle_time(const struct params *p, double mu_star, const struct traj *t)
{
    struct phi_law law;
    phi_law_of(p, mu_star, &law);
    double gap0 = -1;
    for (int i = 0; i < t->n; i++) {
        const struct obs_row *r = &t->rows[i];
        double ms;
        if (phi_mu_slow(&p->activation, p->tokens, &law, r->mu, r->omega11, r->psi11, r->omega12,
                        &ms))
            return -1;
        double g = fabs(r->mu - ms);
        if (i == 0)
            gap0 = g;
        else if (g <= 0.1 * gap0) {
            /* linear interpolation of log g between the records */
            const struct obs_row *q = &t->rows[i - 1];
            double msq;
            phi_mu_slow(&p->activation, p->tokens, &law, q->mu, q->omega11, q->psi11, q->omega12,
                        &msq);
            double gq = fabs(q->mu - msq), f = (log(gq) - log(0.1 * gap0)) / (log(gq) - log(g));
            return p->d * (q->tau + f * (r->tau - q->tau));
        }
    }
    return -1;
}

static void settle(void)
{
    const char *acts[] = {"h1", "h2"};
    const int ds[] = {50, 100, 200, 400, 800, 1600};
    printf("act d seed solver t_settle tau_settle mu0 mu_end\n");
    for (int a = 0; a < 2; a++)
        for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                int d = ds[k];
                struct params p = mk("untied", acts[a], d, seed);
                p.tau_end = 15.0 / d; /* t = d tau up to 15 */
                p.records = 150;
                p.solvers = d <= 200 ? SOLVER_FLOW | SOLVER_ODE : SOLVER_ODE;
                struct task_result r;
                if (worker_run(&p, &r, NULL, NULL))
                    return;
                for (int i = 0; i < r.nsolvers; i++) {
                    const struct traj *t = &r.traj[i];
                    double ts = t->status == RUN_OK ? settle_time(&p, r.sum[i].mu_star, t) : -1;
                    printf("%s %d %llu %s %.3f %.5f %.4f %.4f\n", acts[a], d,
                           (unsigned long long)seed, t->solver == SOLVER_FLOW ? "flow" : "ode", ts,
                           ts / d, t->rows[0].mu, t->rows[t->n - 1].mu);
                }
                fflush(stdout);
                worker_result_free(&r);
            }
}

static void gaps(const struct traj *a, const struct traj *b, int d, double *g12, double *gmu,
                 double *g12s, double *gmus)
{
    *g12 = *gmu = *g12s = *gmus = 0;
    for (int i = 0; i < a->n && i < b->n; i++) {
        /* h2 is even: S and -S are the same point, so compare |omega12| and |mu| */
        double x = fabs(fabs(a->rows[i].omega12) - fabs(b->rows[i].omega12));
        double y = fabs(fabs(a->rows[i].mu) - fabs(b->rows[i].mu));
        *g12 = fmax(*g12, x);
        *gmu = fmax(*gmu, y);
        if (d * a->rows[i].tau >= 10) {
            *g12s = fmax(*g12s, x);
            *gmus = fmax(*gmus, y);
        }
    }
}

static void odeerr(void)
{
    const char *decs[] = {"direct", "untied"};
    const int ds[] = {50, 100, 200};
    printf(
        "decomposition act d seed form max_gap_omega12 max_gap_mu gap_omega12_after_t10 gap_mu_after_t10 "
        "tau_wr_ode tau_wr_flow\n");
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++)
            for (uint64_t seed = 1; seed <= 2; seed++) {
                int d = ds[j];
                struct params p = mk(decs[k], "h2", d, seed);
                p.tau_end = fmax(0.1, 20.0 / d); /* past t = d tau = 10 for every d */
                p.records = 100;
                p.solvers = SOLVER_FLOW | SOLVER_ODE;
                struct task_result r, s;
                if (worker_run(&p, &r, NULL, NULL))
                    return;
                p.ode_mean = ODE_MEAN_SLAVED;
                p.solvers = SOLVER_ODE;
                if (worker_run(&p, &s, NULL, NULL))
                    return;
                const struct traj *fl = &r.traj[0];
                const struct traj *forms[2] = {&r.traj[1], &s.traj[0]};
                for (int f = 0; f < 2; f++) {
                    double a, b, c, e;
                    gaps(forms[f], fl, d, &a, &b, &c, &e);
                    printf("%s h2 %d %llu %s %.3g %.3g %.3g %.3g %.4g %.4g%s\n", decs[k], d,
                           (unsigned long long)seed, f ? "slaved" : "stiff", a, b, c, e,
                           obs_tau_wr(forms[f], 1, 0.5), obs_tau_wr(fl, 1, 0.5), /* h2: even */
                           forms[f]->status == RUN_OK ? "" : " (not done)");
                }
                fflush(stdout);
                worker_result_free(&r);
                worker_result_free(&s);
            }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "settle"))
        settle();
    else if (!strcmp(what, "odeerr"))
        odeerr();
    else {
        fprintf(stderr, "usage: general_measure settle|odeerr\n");
        return 2;
    }
    return 0;
}
