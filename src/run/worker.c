/*
 * worker.c: one grid point, every requested solver, and the summary rows.
 */
#include "aimsweep/run/worker.h"
#include "aimsweep/base/clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aimsweep/model/model.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/solvers/sgd.h"
#include "aimsweep/theory/ode.h"

static void summarise(const struct params *p, double mu_t2, const struct traj *t,
                      const struct traj *sgd, struct solver_summary *s)
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

/* Doubles in the flow's state per Runge-Kutta-Prince-Dormand 8(9) stage and its error
 * control: 13 stages plus the state, its copy, the error and the driver's scratch. */
#define WORKER_RK_COPIES 18.0
/* d x d workspaces of the moment ODE's exact initial traces (words.c: one per letter pair and
 * per word length) and the spectral closure's dense eigenproblem, bounded above. */
#define WORKER_ODE_DD 40.0
/* Doubles per record and solver (struct obs_row). */
#define WORKER_ROW_DOUBLES 8.0

double worker_estimate_bytes(const struct params *p)
{
    double d = p->d, dd = d * d, r = p->decomposition == DECOMP_DIRECT ? d : params_rank(p);
    double rs = p->teacher.kind == TEACHER_WISHART ? nearbyint(p->teacher.arg * d) : d;
    double student = p->decomposition == DECOMP_DIRECT ? dd
                     : p->decomposition == DECOMP_TIED ? d * r
                                                       : 2 * d * r;
    double model = dd + d * rs + rs + student;
    double rows = p->decomposition == DECOMP_DIRECT ? d : r;
    double sgd = 0, flow = 0, ode = 0;
    if (p->solvers & SOLVER_SGD) /* stored parameters, the teacher's factor transposed, a copy */
        sgd = 2 * rows * d * (p->decomposition == DECOMP_UNTIED ? 2 : 1) + rs * d + student;
    if (p->solvers & SOLVER_FLOW)
        flow = WORKER_RK_COPIES * student + 3 * r * r + 2 * d * r;
    if (p->solvers & SOLVER_ODE)
        ode = p->decomposition == DECOMP_DIRECT ? 0 : WORKER_ODE_DD * dd;
    double solver = sgd > flow ? sgd : flow;
    solver = solver > ode ? solver : ode;
    double records = WORKER_ROW_DOUBLES * SOLVER_COUNT * (p->records + 1.0);
    return 8.0 * (model + solver + records);
}

/* A solver that says done must have done what was asked: every record, all finite, and (SGD)
 * samples counted up to the end. Otherwise it becomes an error with the reason. */
static void check_complete(const struct params *p, struct traj *t)
{
    if (t->status != RUN_OK)
        return;
    const char *name = obs_solver_name(t->solver);
    if (t->n != p->records + 1) {
        t->status = RUN_ERROR;
        snprintf(t->error, sizeof t->error, "%s: %d of %d records", name, t->n, p->records + 1);
        return;
    }
    for (int k = 0; k < t->n; k++) {
        const struct obs_row *o = &t->rows[k];
        double v[8] = {o->tau,     o->samples, o->omega11, o->psi11,
                       o->omega12, o->trace,   o->overlap, o->loss};
        for (int j = 0; j < 8; j++)
            if (!isfinite(v[j])) {
                t->status = RUN_ERROR;
                snprintf(t->error, sizeof t->error,
                         "%s: record %d (tau = %g) holds a value that is not finite", name, k,
                         o->tau);
                return;
            }
    }
    if (t->solver == SOLVER_SGD && !(t->rows[t->n - 1].samples > 0)) {
        t->status = RUN_ERROR;
        snprintf(t->error, sizeof t->error, "sgd: no sample taken by tau = %g",
                 t->rows[t->n - 1].tau);
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
        int rc = sv == SOLVER_SGD    ? sgd_run(m, t, stop, ctx)
                 : sv == SOLVER_FLOW ? flow_run(m, t, stop, ctx)
                                     : ode_run(m, t);
        t->wall_s = clock_now_s() - ts;
        if (rc)
            goto fail;
        /* the mean of docs/model.md §10, mu = Tr S/sqrt(d), for every solver from its t1 */
        for (int k = 0; k < t->n; k++)
            t->rows[k].mu = sqrt((double)p->d) * t->rows[k].trace;
        check_complete(p, t);
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
    double b = worker_estimate_bytes(p);
    if (b > WORKER_MAX_TASK_BYTES) {
        snprintf(err, errlen,
                 "d = %d, width and teacher as given: the task needs about %.3g GB of memory, more "
                 "than the limit %.3g GB per task; lower d (or width, or the wishart rho)",
                 p->d, b / 1e9, WORKER_MAX_TASK_BYTES / 1e9);
        return -1;
    }
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
                 p->ode_noise ? "ode_noise" : "closure",
                 p->solvers & SOLVER_FLOW ? "without ode" : "sgd");
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
