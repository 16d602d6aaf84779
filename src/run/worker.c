/*
 * worker.c: one grid point, every requested solver, and the summary rows.
 *
 * With a checkpoint path, a task stopped on request leaves a checkpoint (ckpt.h): the
 * trajectories of the solvers that finished and the state of the one that was stopped, also
 * written every ckpt_every_s seconds of wall time while it runs. The next run of the task
 * continues from it; the file is removed when the task finishes.
 */
#include "aimsweep/run/worker.h"
#include "aimsweep/base/clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aimsweep/model/model.h"
#include "aimsweep/run/ckpt.h"
#include "aimsweep/solvers/flow.h"
#include "aimsweep/solvers/sgd.h"
#include "aimsweep/theory/ode.h"

#include <unistd.h>

static void summarise(const struct params *p, double mu_t2, const struct traj *t,
                      const struct traj *sgd, struct solver_summary *s)
{
    s->solver = t->solver;
    s->status = t->status;
    if (obs_recovery(t, params_act_sign_symmetric(&p->activation), p->recovery_threshold,
                     &s->tau_wr, &s->samples_wr))
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

/* A solver's stop callback, remembering whether it was the task's wall limit that answered. */
struct wstop {
    obs_stop_fn fn;
    void *ctx;
    int last;
};

static int wstop_poll(void *ctx)
{
    struct wstop *w = ctx;
    int r = w->fn ? w->fn(w->ctx) : 0;
    if (r)
        w->last = r;
    return r;
}

/* The checkpoint side of a task: where the file is, what it is tied to, and what is finished. */
struct wsave {
    struct worker_ctl *wc;
    struct wstop *stop; /* an abandoned task (OBS_STOP_ABANDON) saves nothing */
    uint64_t id, hash;
    struct task_result *res;
    int cur;         /* index in res->traj of the running solver */
    double last, ts; /* last save; when the running solver started */
    double prior_s;  /* wall time the running solver had before a resume */
};

static int wsave_due(void *ctx)
{
    struct wsave *w = ctx;
    return w->wc->ckpt_every_s > 0 && clock_now_s() - w->last >= w->wc->ckpt_every_s;
}

static int abandoned(struct wsave *w)
{
    return wstop_poll(w->stop) == OBS_STOP_ABANDON || w->stop->last == OBS_STOP_ABANDON;
}

/* Asked again once a save is written: a rank stopped (SIGSTOP) in the middle of writing it
 * finishes the write when it continues, after its task was given to another rank, which may have
 * finished it and removed its checkpoint. The file is then removed: it is stale, or it replaced
 * the other rank's checkpoint of the same task with an earlier one, whose next save restores it. */
static void drop_if_abandoned(struct wsave *w)
{
    if (abandoned(w))
        unlink(w->wc->ckpt_path);
}

static int wsave_save(void *ctx, const struct traj *t, const void *state, size_t len)
{
    struct wsave *w = ctx;
    /* asked first: a periodic save can come due before the solver's next poll, e.g. in a rank
     * that was stopped (SIGSTOP) and has had its task given to another */
    if (abandoned(w))
        return 0;
    struct traj trajs[SOLVER_COUNT];
    for (int i = 0; i < w->cur; i++)
        trajs[i] = w->res->traj[i];
    trajs[w->cur] = *t;
    trajs[w->cur].wall_s = w->prior_s + clock_now_s() - w->ts;
    char err[512];
    w->last = clock_now_s();
    if (ckpt_write(w->wc->ckpt_path, w->id, w->hash, trajs, w->cur + 1, state, len, err,
                   sizeof err)) {
        snprintf(w->wc->note, sizeof w->wc->note, "%s", err);
        return -1;
    }
    w->wc->saved++;
    drop_if_abandoned(w);
    return 0;
}

/* A checkpoint of the first n solvers only (they finished; the next one restarts). */
static int wsave_finished(struct wsave *w, int n)
{
    char err[512];
    if (w->stop->last == OBS_STOP_ABANDON)
        return 0;
    if (ckpt_write(w->wc->ckpt_path, w->id, w->hash, w->res->traj, n, NULL, 0, err, sizeof err)) {
        snprintf(w->wc->note, sizeof w->wc->note, "%s", err);
        return -1;
    }
    w->wc->saved++;
    drop_if_abandoned(w);
    return 0;
}

/* Takes the trajectories of a checkpoint into res (moving their rows). */
static void take_ckpt(struct ckpt *c, struct task_result *res)
{
    for (int i = 0; i < c->ntraj; i++) {
        res->traj[i] = c->traj[i];
        memset(&c->traj[i], 0, sizeof c->traj[i]);
    }
    res->nsolvers = c->ntraj;
    c->ntraj = 0;
}

int worker_run(const struct params *p, struct task_result *res, obs_stop_fn stop, void *ctx)
{
    struct worker_ctl wc;
    memset(&wc, 0, sizeof wc);
    wc.stop = stop;
    wc.stop_ctx = ctx;
    return worker_run_ctl(p, res, &wc);
}

int worker_run_ctl(const struct params *p, struct task_result *res, struct worker_ctl *wc)
{
    memset(res, 0, sizeof *res);
    wc->note[0] = 0;
    wc->resumed = wc->saved = 0;
    double t0 = clock_now_s();
    struct ckpt ck;
    memset(&ck, 0, sizeof ck);
    struct model *m = model_create(p);
    if (!m)
        return -1;
    struct wstop ws = {wc->stop, wc->stop_ctx, 0};
    struct wsave sv = {wc, &ws, params_task_id(p), 0, res, 0, t0, t0, 0};
    char text[8192];
    if (wc->ckpt_path && params_canonical(p, text, sizeof text) > 0) {
        sv.hash = ckpt_text_hash(text);
        char err[512] = "";
        int r = ckpt_read(wc->ckpt_path, sv.id, sv.hash, &ck, err, sizeof err);
        if (r < 0) {
            snprintf(wc->note, sizeof wc->note, "%.440s; the task starts from the beginning", err);
            unlink(wc->ckpt_path);
        } else if (r == 0) {
            take_ckpt(&ck, res);
            wc->resumed = 1;
        }
    }
    static const int order[SOLVER_COUNT] = {SOLVER_SGD, SOLVER_FLOW, SOLVER_ODE};
    int isgd = -1, resume_idx = res->nsolvers - (ck.state_len ? 1 : 0), stopped = 0;
    for (int i = 0, slot = 0; i < SOLVER_COUNT && !stopped; i++) {
        int s = order[i];
        if (!(p->solvers & (unsigned)s))
            continue;
        struct traj *t = &res->traj[slot];
        if (slot < resume_idx) { /* finished before the checkpoint */
            if (t->solver != s)
                goto refuse;
            if (s == SOLVER_SGD)
                isgd = slot;
            slot++;
            continue;
        }
        struct obs_ctl ctl = {wstop_poll, &ws, NULL, NULL, NULL, NULL, 0};
        if (wc->ckpt_path) {
            ctl.due = wsave_due;
            ctl.save = wsave_save;
            ctl.save_ctx = &sv;
        }
        sv.prior_s = 0;
        if (slot == resume_idx && ck.state_len) {
            if (t->solver != s || s == SOLVER_ODE)
                goto refuse;
            ctl.resume = ck.state;
            ctl.resume_len = ck.state_len;
            sv.prior_s = t->wall_s;
            t->status = RUN_OK;
        } else {
            if (traj_init(t, s, p->records + 1))
                goto fail;
            res->nsolvers = slot + 1;
        }
        sv.cur = slot;
        double ts = sv.ts = clock_now_s();
        int rc = s == SOLVER_SGD    ? sgd_run_ctl(m, t, &ctl)
                 : s == SOLVER_FLOW ? flow_run_ctl(m, t, &ctl)
                                    : ode_run_stop(m, t, wstop_poll, &ws);
        if (rc == -2)
            goto refuse;
        t->wall_s = sv.prior_s + clock_now_s() - ts;
        if (rc)
            goto fail;
        check_complete(p, t);
        if (s == SOLVER_SGD)
            isgd = slot;
        if (t->status == RUN_INTERRUPTED) {
            if (ws.last == OBS_STOP_TIMEOUT)
                t->status = RUN_TIMEOUT;
            /* the ODE keeps no state: keep what finished before it, it restarts */
            if (s == SOLVER_ODE && wc->ckpt_path && slot > 0)
                (void)wsave_finished(&sv, slot);
            stopped = 1;
        }
        slot++;
    }
    if (!stopped && wc->ckpt_path)
        unlink(wc->ckpt_path); /* finished: the checkpoint has served */
    /* the mean of docs/model.md §10, mu = Tr S/sqrt(d), for every solver from its t1 (also for those
     * taken from a checkpoint, which does not store it) */
    for (int i = 0; i < res->nsolvers; i++)
        for (int k = 0; k < res->traj[i].n; k++)
            res->traj[i].rows[k].mu = sqrt((double)p->d) * res->traj[i].rows[k].trace;
    for (int i = 0; i < res->nsolvers; i++)
        summarise(p, m->t2, &res->traj[i], isgd >= 0 ? &res->traj[isgd] : NULL, &res->sum[i]);
    res->wall_s = clock_now_s() - t0;
    ckpt_free(&ck);
    model_destroy(&m);
    return 0;
refuse:
    /* a checkpoint that does not fit this task's solvers: drop it, run from the beginning */
    snprintf(wc->note, sizeof wc->note,
             "checkpoint %s does not fit the task; it starts from the beginning", wc->ckpt_path);
    unlink(wc->ckpt_path);
    ckpt_free(&ck);
    model_destroy(&m);
    worker_result_free(res);
    {
        char note[sizeof wc->note];
        memcpy(note, wc->note, sizeof note);
        const char *path = wc->ckpt_path;
        int rc = worker_run_ctl(p, res, wc);
        wc->ckpt_path = path;
        if (!wc->note[0])
            memcpy(wc->note, note, sizeof note);
        return rc;
    }
fail:
    ckpt_free(&ck);
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
    if ((p->solvers & SOLVER_ODE) && p->ode_mean == ODE_MEAN_SLAVED &&
        p->index != INDEX_UNCENTRED) {
        snprintf(buf, n,
                 "ode_mean slaved has no effect with the centred index (Phi does not depend on the "
                 "mean: it is no state of the ODE)");
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
