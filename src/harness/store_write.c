/*
 * store_write.c: the rows of a run in the results database (store.h): the sweep and its tasks as
 * a run registers them, each task's status as the scheduler hands it out and gets it back, the
 * result (trajectory and summary rows, the task's status from its solvers'), the run's
 * provenance and stop, and what a run reads back (the status of its tasks, the counts of its
 * sweep, the measured costs). Writes go through the statements store.c prepares once
 * (store_stmt_sql) and STORE_CALL (store_impl.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/harness/task.h"
#include "store_impl.h"

const char *const store_stmt_sql[ST_COUNT] = {
    "INSERT OR IGNORE INTO tasks(task_id, sweep_id, decomposition, activation, d, lr, init_scale, tokens,"
    " teacher, width, weight_decay, order_m, closure, tau_end, seed, info_exponent, records, log_grid,"
    " recovery_threshold, ode_noise, solvers, cost, params, token_corr, index_kind, outputs, lr_schedule,"
    " init, init_trace, ode_mean, precision, sign_symmetric, ode_init)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,"
    "?26,?27,?28,?29,?30,?31,?32,?33)",
    "INSERT OR IGNORE INTO sweep_tasks(sweep_id, task_id) VALUES (?1, ?2)",
    "SELECT status, attempts FROM tasks WHERE task_id = ?1",
    "UPDATE tasks SET status = ?6, rank = ?2, host = ?3, kernels = ?7,"
    " started_at = ?4, finished_at = NULL, sweep_id = coalesce(?5, sweep_id) WHERE task_id = ?1",
    "DELETE FROM trajectory WHERE task_id = ?1",
    "DELETE FROM summary WHERE task_id = ?1",
    "INSERT INTO trajectory(task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss, mu)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    "INSERT INTO summary(task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd,"
    " status, wall_s, diverged_at_samples, error, mu_star) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    "UPDATE tasks SET status = ?2, finished_at = ?3, wall_s = ?4, error = ?5 WHERE task_id = ?1",
    "UPDATE tasks SET status = ?2, rank = NULL, host = NULL, kernels = NULL,"
    " started_at = NULL WHERE task_id = ?1 AND status IN (?3, ?4)",
};

int64_t store_add_sweep(struct store *s, const char *name, const char *spec_text,
                        const struct store_provenance *pv, const struct params *pts,
                        const struct task *tasks, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    char now[40], hex[17], buf[512];
    int64_t sweep_id = -1;
    store_now_iso(now, sizeof now);
    if (s->in_txn && store_commit(s))
        goto fail;
    if (store_begin(s))
        goto fail;
    STORE_CALL(
        s, sqlite3_prepare_v2(
               s->db,
               "INSERT INTO sweeps(name, spec, created_at, version, git_commit, host,"
               " compiler, blas, mpi, ranks, kernels) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
               -1, &q, NULL));
    STORE_CALL(s, sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, spec_text, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    const char *pvs[6] = {pv->version, pv->git_commit, pv->host, pv->compiler, pv->blas, pv->mpi};
    for (int i = 0; i < 6; i++)
        if (pvs[i] && *pvs[i])
            STORE_CALL(s, sqlite3_bind_text(q, 4 + i, pvs[i], -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_int(q, 10, pv->ranks));
    if (pv->kernels && *pv->kernels)
        STORE_CALL(s, sqlite3_bind_text(q, 11, pv->kernels, -1, SQLITE_TRANSIENT));
    if (store_step_done(s, q))
        goto fail;
    sweep_id = s->sweep_id = sqlite3_last_insert_rowid(s->db);
    sqlite3_stmt *ins = s->st[ST_INS_TASK], *link = s->st[ST_INS_LINK];
    for (size_t i = 0; i < n; i++) {
        const struct params *p = &pts[i];
        task_id_hex(tasks[i].id, hex);
        STORE_CALL(s, sqlite3_bind_text(ins, 1, hex, 16, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_int64(ins, 2, sweep_id));
        static const char *const textkeys[] = {"decomposition", "activation", NULL};
        for (int k = 0; textkeys[k]; k++) {
            params_get(p, textkeys[k], buf, sizeof buf);
            STORE_CALL(s, sqlite3_bind_text(ins, 3 + k, buf, -1, SQLITE_TRANSIENT));
        }
        STORE_CALL(s, sqlite3_bind_int(ins, 5, p->d));
        STORE_CALL(s, sqlite3_bind_double(ins, 6, p->lr));
        STORE_CALL(s, sqlite3_bind_double(ins, 7, p->init_scale));
        STORE_CALL(s, sqlite3_bind_int(ins, 8, p->tokens));
        params_get(p, "teacher", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 9, buf, -1, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_double(ins, 10, p->width));
        STORE_CALL(s, sqlite3_bind_double(ins, 11, p->weight_decay));
        STORE_CALL(s, sqlite3_bind_int(ins, 12, p->order_m));
        params_get(p, "closure", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 13, buf, -1, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_double(ins, 14, p->tau_end));
        STORE_CALL(s, sqlite3_bind_int64(ins, 15, (sqlite3_int64)p->seed));
        int ie = params_info_exponent(&p->activation);
        if (ie > 0)
            STORE_CALL(s, sqlite3_bind_int(ins, 16, ie));
        STORE_CALL(s, sqlite3_bind_int(ins, 17, p->records));
        STORE_CALL(s, sqlite3_bind_int(ins, 18, p->log_grid));
        STORE_CALL(s, sqlite3_bind_double(ins, 19, p->recovery_threshold));
        STORE_CALL(s, sqlite3_bind_int(ins, 20, p->ode_noise));
        params_get(p, "solvers", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 21, buf, -1, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_double(ins, 22, tasks[i].cost));
        STORE_CALL(s, sqlite3_bind_text(ins, 23, tasks[i].text, -1, SQLITE_STATIC));
        STORE_CALL(s, sqlite3_bind_double(ins, 24, p->token_corr));
        static const char *const newkeys[] = {"index", "outputs", "lr_schedule", "init", NULL};
        for (int k = 0; newkeys[k]; k++) {
            params_get(p, newkeys[k], buf, sizeof buf);
            STORE_CALL(s, sqlite3_bind_text(ins, 25 + k, buf, -1, SQLITE_TRANSIENT));
        }
        STORE_CALL(s, sqlite3_bind_double(ins, 29, p->init_trace));
        params_get(p, "ode_mean", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 30, buf, -1, SQLITE_TRANSIENT));
        params_get(p, "precision", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 31, buf, -1, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_int(ins, 32, params_act_sign_symmetric(&p->activation)));
        params_get(p, "ode_init", buf, sizeof buf);
        STORE_CALL(s, sqlite3_bind_text(ins, 33, buf, -1, SQLITE_TRANSIENT));
        if (store_step_done(s, ins))
            goto fail;
        STORE_CALL(s, sqlite3_bind_int64(link, 1, sweep_id));
        STORE_CALL(s, sqlite3_bind_text(link, 2, hex, 16, SQLITE_TRANSIENT));
        if (store_step_done(s, link))
            goto fail;
    }
    if (store_commit(s))
        goto fail;
    sqlite3_finalize(q);
    return sweep_id;
fail:
    snprintf(err, errlen, "cannot register the sweep: %s", store_errmsg(s));
    sqlite3_finalize(q);
    store_rollback(s);
    return -1;
}

int store_task_status(struct store *s, const struct task *tasks, size_t n, enum task_status *status,
                      int *attempts)
{
    sqlite3_stmt *q = NULL;
    char hex[17];
    /* the read-only commands have no cached statements */
    STORE_CALL(s, sqlite3_prepare_v2(s->db, store_stmt_sql[ST_STATUS], -1, &q, NULL));
    for (size_t i = 0; i < n; i++) {
        task_id_hex(tasks[i].id, hex);
        STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
        int r = sqlite3_step(q);
        if (attempts)
            attempts[i] = 0;
        if (r == SQLITE_ROW) {
            /* the CHECK admits only known words; anything else is not run again */
            if (task_status_parse((const char *)sqlite3_column_text(q, 0), &status[i]))
                status[i] = TASK_ERROR;
            if (attempts)
                attempts[i] = sqlite3_column_int(q, 1);
        } else if (r == SQLITE_DONE)
            status[i] = TASK_NEW;
        else {
            store_failed(s, r, NULL);
            goto fail;
        }
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    return 0;
fail:
    sqlite3_finalize(q);
    return -1;
}

int store_mark_running(struct store *s, uint64_t id, int rank, const char *host,
                       const char *kernels)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    store_now_iso(now, sizeof now);
    sqlite3_stmt *q = s->st[ST_RUNNING];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_int(q, 2, rank));
    STORE_CALL(s, sqlite3_bind_text(q, 3, host, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 4, now, -1, SQLITE_TRANSIENT));
    if (s->sweep_id > 0)
        STORE_CALL(s, sqlite3_bind_int64(q, 5, s->sweep_id));
    STORE_CALL(s, sqlite3_bind_text(q, 6, task_status_name(TASK_RUNNING), -1, SQLITE_STATIC));
    if (kernels && *kernels)
        STORE_CALL(s, sqlite3_bind_text(q, 7, kernels, -1, SQLITE_TRANSIENT));
    return store_step_done(s, q);
fail:
    return -1;
}

int store_mark_pending(struct store *s, uint64_t id)
{
    char hex[17];
    task_id_hex(id, hex);
    if (!s->in_txn && store_begin(s))
        return -1;
    sqlite3_stmt *q = s->st[ST_PENDING];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(TASK_PENDING), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, task_status_name(TASK_RUNNING), -1, SQLITE_STATIC));
    /* a task marked interrupted by a stop before it came back unstarted */
    STORE_CALL(s, sqlite3_bind_text(q, 4, task_status_name(TASK_INTERRUPTED), -1, SQLITE_STATIC));
    return store_step_done(s, q);
fail:
    return -1;
}

int store_mark_error(struct store *s, uint64_t id, const char *message)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    store_now_iso(now, sizeof now);
    if (!s->in_txn && store_begin(s))
        return -1;
    sqlite3_stmt *q = s->st[ST_FINISH];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(TASK_ERROR), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 5, message, -1, SQLITE_TRANSIENT));
    return store_step_done(s, q);
fail:
    return -1;
}

int store_mark_interrupted(struct store *s, uint64_t id)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    store_now_iso(now, sizeof now);
    if (!s->in_txn && store_begin(s))
        return -1;
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_TRAJ], 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_SUM], 1, hex, 16, SQLITE_TRANSIENT));
    if (store_step_done(s, s->st[ST_DEL_TRAJ]) || store_step_done(s, s->st[ST_DEL_SUM]))
        return -1;
    sqlite3_stmt *q = s->st[ST_FINISH];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(TASK_INTERRUPTED), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 5, "no answer from its rank before the job stopped", -1,
                                    SQLITE_STATIC));
    return store_step_done(s, q);
fail:
    return -1;
}

/* A sample count as an INTEGER, NULL when negative (none) or not finite. Returns 0, or -1
 * recorded. */
static int bind_count(struct store *s, sqlite3_stmt *q, int i, double v)
{
    STORE_CALL(s, !(v >= 0) || !isfinite(v) ? sqlite3_bind_null(q, i)
                                            : sqlite3_bind_int64(q, i, (sqlite3_int64)llround(v)));
    return 0;
fail:
    return -1;
}

/* Binds v, or NULL for the "none" value -1 (any negative). Returns 0, or -1 recorded. */
static int bind_opt(struct store *s, sqlite3_stmt *q, int i, double v)
{
    STORE_CALL(s, v < 0 ? sqlite3_bind_null(q, i) : sqlite3_bind_double(q, i, v));
    return 0;
fail:
    return -1;
}

int store_put_result(struct store *s, uint64_t id, const struct task_result *r,
                     const char *task_error, enum task_status *status_out, char *err, size_t errlen)
{
    char hex[17], now[40];
    const char *errtext = task_error && *task_error ? task_error : NULL;
    task_id_hex(id, hex);
    store_now_iso(now, sizeof now);
    /* the task's status: interrupted > timeout > error > diverged > ode_diverged > done */
    int interrupted = 0, timeout = 0, error = errtext != NULL, diverged = 0, odediv = 0;
    int ns = r ? r->nsolvers : 0;
    for (int i = 0; i < ns; i++) {
        enum run_status st = r->traj[i].status;
        interrupted |= st == RUN_INTERRUPTED;
        timeout |= st == RUN_TIMEOUT;
        error |= st == RUN_ERROR;
        diverged |= st == RUN_DIVERGED;
        odediv |= st == RUN_ODE_DIVERGED;
        if (st == RUN_ERROR && !errtext && r->traj[i].error[0])
            errtext = r->traj[i].error;
    }
    if (!r && !errtext)
        errtext = "no result";
    if (timeout && !interrupted && !errtext)
        errtext = "stopped by its wall limit (run --task-timeout); --retry-errors runs it again";
    enum task_status status = interrupted ? TASK_INTERRUPTED
                              : timeout   ? TASK_TIMEOUT
                              : error     ? TASK_ERROR
                              : diverged  ? TASK_DIVERGED
                              : odediv    ? TASK_ODE_DIVERGED
                                          : TASK_DONE;
    if (!s->in_txn && store_begin(s))
        goto fail;
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_TRAJ], 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_SUM], 1, hex, 16, SQLITE_TRANSIENT));
    if (store_step_done(s, s->st[ST_DEL_TRAJ]) || store_step_done(s, s->st[ST_DEL_SUM]))
        goto fail;
    for (int i = 0; i < ns && !interrupted && !timeout; i++) {
        const struct traj *t = &r->traj[i];
        const struct solver_summary *su = &r->sum[i];
        const char *solver = obs_solver_name(t->solver);
        sqlite3_stmt *q = s->st[ST_INS_TRAJ];
        for (int k = 0; k < t->n; k++) {
            const struct obs_row *o = &t->rows[k];
            double v[9] = {o->tau,   o->samples, o->omega11, o->psi11, o->omega12,
                           o->trace, o->overlap, o->loss,    o->mu};
            STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
            STORE_CALL(s, sqlite3_bind_text(q, 2, solver, -1, SQLITE_STATIC));
            STORE_CALL(s, sqlite3_bind_int(q, 3, k));
            for (int j = 0; j < 9; j++)
                if (j == 1 && isfinite(v[j])) /* a count: an integer */
                    STORE_CALL(s, sqlite3_bind_int64(q, 4 + j, (sqlite3_int64)llround(v[j])));
                else
                    STORE_CALL(s, sqlite3_bind_double(q, 4 + j, v[j])); /* NaN binds as NULL */
            if (store_step_done(s, q))
                goto fail;
        }
        q = s->st[ST_INS_SUM];
        STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_text(q, 2, solver, -1, SQLITE_STATIC));
        if (bind_opt(s, q, 3, su->tau_wr))
            goto fail;
        if (bind_count(s, q, 4, su->samples_wr))
            goto fail;
        STORE_CALL(s, sqlite3_bind_double(q, 5, su->final_overlap));
        STORE_CALL(s, sqlite3_bind_double(q, 6, su->final_loss));
        if (bind_opt(s, q, 7, su->max_gap_to_sgd))
            goto fail;
        STORE_CALL(s, sqlite3_bind_text(q, 8, run_status_name(t->status), -1, SQLITE_STATIC));
        STORE_CALL(s, sqlite3_bind_double(q, 9, t->wall_s));
        if (bind_count(s, q, 10, t->diverged_at_samples))
            goto fail;
        if (t->error[0])
            STORE_CALL(s, sqlite3_bind_text(q, 11, t->error, -1, SQLITE_TRANSIENT));
        STORE_CALL(s, sqlite3_bind_double(q, 12, su->mu_star));
        if (store_step_done(s, q))
            goto fail;
    }
    sqlite3_stmt *q = s->st[ST_FINISH];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(status), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    if (r)
        STORE_CALL(s, sqlite3_bind_double(q, 4, r->wall_s));
    if (errtext)
        STORE_CALL(s, sqlite3_bind_text(q, 5, errtext, -1, SQLITE_TRANSIENT));
    if (store_step_done(s, q))
        goto fail;
    if (status_out)
        *status_out = status;
    return 0;
fail:
    snprintf(err, errlen, "task %s: cannot store the result: %s", hex, store_errmsg(s));
    return -1;
}

int store_note_death(struct store *s, uint64_t id)
{
    char hex[17];
    task_id_hex(id, hex);
    if (!s->in_txn && store_begin(s))
        return -1;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "UPDATE tasks SET attempts = attempts + 1 WHERE task_id = ?1", -1,
                           &q, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(q);
    return rc;
}

int store_set_run_info(struct store *s, const char *command, const char *part)
{
    if (s->sweep_id <= 0)
        return 0;
    if (!s->in_txn && store_begin(s))
        return -1;
    if (store_run_stmt(s, "UPDATE sweeps SET command = ?1, part = ?2 WHERE sweep_id = ?4", command,
                       part, NULL, s->sweep_id))
        return -1;
    return store_commit(s);
}

int store_note_stop(struct store *s, int sig, const char *sender)
{
    char now[40], msg[300], sigs[16];
    store_now_iso(now, sizeof now);
    snprintf(sigs, sizeof sigs, "%d", sig);
    snprintf(msg, sizeof msg, "stopped by signal %d from %s; rerun to resume", sig, sender);
    if (!s->in_txn && store_begin(s))
        return -1;
    if (s->sweep_id > 0 &&
        store_run_stmt(
            s,
            "UPDATE sweeps SET stop_signal = ?1, stop_sender = ?2, stopped_at = ?3 WHERE sweep_id = ?4",
            sigs, sender, now, s->sweep_id))
        return -1;
    if (store_run_stmt(
            s, "UPDATE tasks SET status = 'interrupted', error = ?1 WHERE status = 'running'", msg,
            NULL, NULL, 0))
        return -1;
    return store_commit(s);
}

int store_sweep_counts(struct store *s, size_t counts[TASK_STATUS_COUNT])
{
    memset(counts, 0, sizeof(size_t) * TASK_STATUS_COUNT);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT t.status, count(*) FROM tasks t JOIN sweep_tasks st ON st.task_id = t.task_id"
            " WHERE st.sweep_id = ?1 GROUP BY t.status",
            -1, &q, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(q, 1, s->sweep_id);
    int r;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        enum task_status st;
        if (task_status_parse((const char *)sqlite3_column_text(q, 0), &st) == 0)
            counts[st] += (size_t)sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    return r == SQLITE_DONE ? 0 : -1;
}

int store_other_sweeps(struct store *s, const char *name, char *buf, size_t n)
{
    sqlite3_stmt *q = NULL;
    buf[0] = '\0';
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT w.name, count(DISTINCT st.task_id) FROM sweeps w JOIN sweep_tasks"
            " st ON st.sweep_id = w.sweep_id WHERE w.name != ?1 GROUP BY w.name"
            " ORDER BY min(w.sweep_id)",
            -1, &q, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    int k = 0, r;
    size_t off = 0;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        if (k < 5 && off < n)
            off += (size_t)snprintf(buf + off, n - off, "%s%s (%lld points)", k ? ", " : "",
                                    (const char *)sqlite3_column_text(q, 0),
                                    (long long)sqlite3_column_int64(q, 1));
        else if (k == 5 && off < n)
            off += (size_t)snprintf(buf + off, n - off, ", ...");
        k++;
    }
    sqlite3_finalize(q);
    return r == SQLITE_DONE ? k : -1;
}

int store_sweep_recovery(struct store *s, char solver[][8], size_t *recovered, size_t *runs,
                         int max)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT r.solver, sum(r.samples_wr IS NOT NULL), count(*) FROM summary r"
            " JOIN sweep_tasks st ON st.task_id = r.task_id WHERE st.sweep_id = ?1"
            " AND r.status IN ('done', 'diverged', 'ode_diverged') GROUP BY r.solver"
            " ORDER BY CASE r.solver WHEN 'sgd' THEN 0 WHEN 'flow' THEN 1 ELSE 2 END",
            -1, &q, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(q, 1, s->sweep_id);
    int n = 0, r;
    while ((r = sqlite3_step(q)) == SQLITE_ROW && n < max) {
        snprintf(solver[n], 8, "%s", (const char *)sqlite3_column_text(q, 0));
        recovered[n] = (size_t)sqlite3_column_int64(q, 1);
        runs[n] = (size_t)sqlite3_column_int64(q, 2);
        n++;
    }
    sqlite3_finalize(q);
    return r == SQLITE_DONE || r == SQLITE_ROW ? n : -1;
}

long store_learn_costs(struct store *s, struct cost_model *cm)
{
    sqlite3_stmt *q = NULL;
    long n = 0;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT t.params, s.solver, s.wall_s FROM summary s JOIN tasks t ON t.task_id = s.task_id"
            " WHERE s.status IN ('done', 'diverged', 'ode_diverged') AND s.wall_s > 0",
            -1, &q, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(q, 0),
                   *solver = (const char *)sqlite3_column_text(q, 1);
        struct params p;
        char err[256];
        if (!text || !solver || task_parse(text, &p, err, sizeof err))
            continue;
        int sv = !strcmp(solver, "sgd")    ? SOLVER_SGD
                 : !strcmp(solver, "flow") ? SOLVER_FLOW
                 : !strcmp(solver, "ode")  ? SOLVER_ODE
                                           : 0;
        if (sv && task_cost_learn(cm, &p, sv, sqlite3_column_double(q, 2)) == 0)
            n++;
    }
    sqlite3_finalize(q);
    return n;
}
