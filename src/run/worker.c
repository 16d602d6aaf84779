/*
 * worker.c: one grid point, every requested solver, and the summary rows.
 */
#include "aimsweep/base/clock.h"
#include "aimsweep/run/worker.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aimsweep/solvers/flow.h"
#include "aimsweep/model/model.h"
#include "aimsweep/theory/ode.h"
#include "aimsweep/solvers/sgd.h"

static void summarise(const struct params *p, double mu_t2, const struct traj *t, const struct traj *sgd,
                      struct solver_summary *s)
{
    s->solver = t->solver;
    s->status = t->status;
    if (obs_recovery(t, p->recovery_threshold, &s->tau_wr, &s->samples_wr))
        s->tau_wr = s->samples_wr = -1;
    s->final_overlap = t->n ? t->rows[t->n - 1].overlap : NAN;
    s->final_loss = t->n ? t->rows[t->n - 1].loss : NAN;
    s->max_gap_to_sgd = -1;
    s->mu_star = sqrt((double)p->d) * mu_t2;
    if (sgd && sgd != t) {
        int n = t->n < sgd->n ? t->n : sgd->n;
        double g = 0;
        for (int i = 0; i < n; i++) {
            double e = fabs(t->rows[i].omega12 - sgd->rows[i].omega12);
            g = e > g ? e : g;
        }
        s->max_gap_to_sgd = n ? g : -1;
    }
}

int worker_run(const struct params *p, struct task_result *res, obs_stop_fn stop, void *ctx)
{
    memset(res, 0, sizeof *res);
    double t0 = clock_now_s();
    struct model *m = model_create(p);
    if (!m)
        return -1;
    static const int order[SOLVER_COUNT] = {SOLVER_SGD, SOLVER_FLOW, SOLVER_ODE};
    int isgd = -1;
    for (int i = 0; i < SOLVER_COUNT; i++) {
        int sv = order[i];
        if (!(p->solvers & (unsigned)sv))
            continue;
        struct traj *t = &res->traj[res->nsolvers];
        if (traj_init(t, sv, p->records + 1))
            goto fail;
        res->nsolvers++;
        double ts = clock_now_s();
        int rc = sv == SOLVER_SGD ? sgd_run(m, t, stop, ctx)
                 : sv == SOLVER_FLOW ? flow_run(m, t, stop, ctx)
                                     : ode_run(m, t);
        t->wall_s = clock_now_s() - ts;
        if (rc)
            goto fail;
        /* the mean of MODEL.md §10, mu = Tr S/sqrt(d), for every solver from its t1 */
        for (int k = 0; k < t->n; k++)
            t->rows[k].mu = sqrt((double)p->d) * t->rows[k].trace;
        if (sv == SOLVER_SGD)
            isgd = res->nsolvers - 1;
        if (t->status == RUN_INTERRUPTED)
            break;
    }
    for (int i = 0; i < res->nsolvers; i++)
        summarise(p, m->t2, &res->traj[i], isgd >= 0 ? &res->traj[isgd] : NULL, &res->sum[i]);
    res->wall_s = clock_now_s() - t0;
    model_destroy(&m);
    return 0;
fail:
    model_destroy(&m);
    worker_result_free(res);
    return -1;
}

int worker_check(const struct params *p, char *err, size_t errlen)
{
    if (params_validate(p, err, errlen))
        return -1;
    if ((p->solvers & SOLVER_ODE) && ode_check(p, err, errlen))
        return -1;
    return 0;
}

int worker_ignored(const struct params *p, char *buf, size_t n)
{
    if (p->decomposition == DECOMP_DIRECT && p->closure != CLOSURE_AUTO) {
        snprintf(buf, n, "closure %s has no effect on direct (its moment ODE is closed and exact)",
                 params_closure_name(p->closure));
        return 1;
    }
    if (!(p->solvers & SOLVER_ODE) && (p->closure != CLOSURE_AUTO || p->ode_noise)) {
        snprintf(buf, n, "%s has no effect without the ode solver (solvers %s)",
                 p->ode_noise ? "ode_noise" : "closure", p->solvers & SOLVER_FLOW ? "without ode" : "sgd");
        return 1;
    }
    return 0;
}

void worker_result_free(struct task_result *res)
{
    for (int i = 0; i < res->nsolvers; i++)
        traj_free(&res->traj[i]);
    res->nsolvers = 0;
}
