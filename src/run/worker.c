/*
 * worker.c: one grid point, every requested solver, and the summary rows.
 *
 * With a checkpoint path, a task stopped on request leaves a checkpoint (ckpt.h): the
 * trajectories of the solvers that finished and the state of the one that was stopped, also
 * written every ckpt_every_s seconds of wall time while it runs. The next run of the task
 * continues from it; the file is removed when the task finishes.
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
#include "aimsweep/run/ckpt.h"

#include <unistd.h>

static void summarise(const struct params *p, const struct traj *t, const struct traj *sgd,
                      struct solver_summary *s)
{
    s->solver = t->solver;
    s->status = t->status;
    if (obs_recovery(t, p->recovery_threshold, &s->tau_wr, &s->samples_wr))
        s->tau_wr = s->samples_wr = -1;
    s->final_overlap = t->n ? t->rows[t->n - 1].overlap : NAN;
    s->final_loss = t->n ? t->rows[t->n - 1].loss : NAN;
    s->max_gap_to_sgd = -1;
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

static int wsave_save(void *ctx, const struct traj *t, const void *state, size_t len)
{
    struct wsave *w = ctx;
    struct traj trajs[SOLVER_COUNT];
    for (int i = 0; i < w->cur; i++)
        trajs[i] = w->res->traj[i];
    trajs[w->cur] = *t;
    trajs[w->cur].wall_s = w->prior_s + clock_now_s() - w->ts;
    char err[512];
    w->last = clock_now_s();
    if (ckpt_write(w->wc->ckpt_path, w->id, w->hash, trajs, w->cur + 1, state, len, err, sizeof err)) {
        snprintf(w->wc->note, sizeof w->wc->note, "%s", err);
        return -1;
    }
    w->wc->saved++;
    return 0;
}

/* A checkpoint of the first n solvers only (they finished; the next one restarts). */
static int wsave_finished(struct wsave *w, int n)
{
    char err[512];
    if (ckpt_write(w->wc->ckpt_path, w->id, w->hash, w->res->traj, n, NULL, 0, err, sizeof err)) {
        snprintf(w->wc->note, sizeof w->wc->note, "%s", err);
        return -1;
    }
    w->wc->saved++;
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
    struct wsave sv = {wc, params_task_id(p), 0, res, 0, t0, t0, 0};
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
        int rc = s == SOLVER_SGD ? sgd_run_ctl(m, t, &ctl) : s == SOLVER_FLOW ? flow_run_ctl(m, t, &ctl)
                                                                               : ode_run_stop(m, t, wstop_poll, &ws);
        if (rc == -2)
            goto refuse;
        t->wall_s = sv.prior_s + clock_now_s() - ts;
        if (rc)
            goto fail;
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
    for (int i = 0; i < res->nsolvers; i++)
        summarise(p, &res->traj[i], isgd >= 0 ? &res->traj[isgd] : NULL, &res->sum[i]);
    res->wall_s = clock_now_s() - t0;
    ckpt_free(&ck);
    model_destroy(&m);
    return 0;
refuse:
    /* a checkpoint that does not fit this task's solvers: drop it, run from the beginning */
    snprintf(wc->note, sizeof wc->note, "checkpoint %s does not fit the task; it starts from the beginning",
             wc->ckpt_path);
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
