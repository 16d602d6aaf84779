/*
 * store_merge.c: operations on the tasks of a whole database: store_merge takes the tasks, rows
 * and runs of a part database (a run with --part) into the study's, and store_reset sends the
 * tasks a condition selects back to pending (store.h).
 */
#include <stdio.h>
#include <string.h>

#include "aimsweep/base/task_status.h"
#include "store_impl.h"

int store_reset(struct store *s, const char *where, long *count, char *err, size_t errlen)
{
    char sql[8192];
    *count = 0;
    if (snprintf(
            sql, sizeof sql,
            "UPDATE tasks SET status = 'pending', attempts = 0, error = NULL, rank = NULL, host = NULL"
            " WHERE (%s)",
            where) >= (int)sizeof sql) {
        snprintf(err, errlen, "condition too long");
        return -1;
    }
    if (store_begin(s)) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
        return -1;
    }
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "bad condition '%s': %s", where, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        store_rollback(s);
        return -1;
    }
    *count = sqlite3_changes(s->db);
    if (store_commit(s)) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

/* The columns of tasks after sweep_id, as the merge copies them: every column of the schema
 * (schema_fmt in store_schema.c), those added by versions 3, 4 and 6 too, so that a merged task's
 * columns say what its params text says. */
#define STORE_TASK_COLS                                                                              \
    "decomposition, activation, d, lr, init_scale, tokens, teacher, width, weight_decay, order_m,"   \
    " closure, tau_end, seed, status, attempts, rank, host, started_at, finished_at, wall_s, error," \
    " info_exponent, records, log_grid, recovery_threshold, ode_noise, solvers, cost, params,"       \
    " token_corr, index_kind, outputs, lr_schedule, init, init_trace, ode_mean, precision,"          \
    " sign_symmetric, kernels"

int store_merge(struct store *s, const char *part, struct store_merge_stats *ms, char *err,
                size_t errlen)
{
    memset(ms, 0, sizeof *ms);
    char finished[256], sql[4096];
    if (task_status_sql_list(TASK_STATUS_FINISHED, finished, sizeof finished))
        return -1;
    if (store_commit(s))
        goto dberr;
    if (store_run_stmt(s, "ATTACH DATABASE ?1 AS part", part, NULL, NULL, 0))
        goto dberr;
    /* the part must be an aimsweep database of this schema version (store_open migrated it) */
    sqlite3_stmt *q = NULL;
    int pv = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA part.user_version", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        pv = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (pv != STORE_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "%s: schema version %d, expected %d (open it with this aimsweep first)", part, pv,
                 STORE_SCHEMA_VERSION);
        sqlite3_exec(s->db, "DETACH DATABASE part", NULL, NULL, NULL);
        return -1;
    }
    if (store_begin(s))
        goto dberr;
    /* every run of the part keeps its provenance under a new sweep_id */
    const char *steps[] = {
        "CREATE TEMP TABLE IF NOT EXISTS merge_map(old INTEGER PRIMARY KEY, new INTEGER NOT NULL)",
        "DELETE FROM merge_map", NULL};
    for (int i = 0; steps[i]; i++)
        if (sqlite3_exec(s->db, steps[i], NULL, NULL, NULL) != SQLITE_OK)
            goto dberr;
    if (sqlite3_prepare_v2(s->db, "SELECT sweep_id FROM part.sweeps ORDER BY sweep_id", -1, &q,
                           NULL) != SQLITE_OK)
        goto dberr;
    while (sqlite3_step(q) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(q, 0);
        if (store_run_stmt(
                s,
                "INSERT INTO main.sweeps(name, spec, created_at, version, git_commit, host, compiler, blas, mpi,"
                " ranks, command, part, stop_signal, stop_sender, stopped_at, kernels)"
                " SELECT name, spec, created_at, version, git_commit, host, compiler, blas, mpi, ranks, command,"
                " part, stop_signal, stop_sender, stopped_at, kernels FROM part.sweeps WHERE sweep_id = ?4",
                NULL, NULL, NULL, old)) {
            sqlite3_finalize(q);
            goto dberr;
        }
        int64_t nw = sqlite3_last_insert_rowid(s->db);
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", (long long)old);
        snprintf(b, sizeof b, "%lld", (long long)nw);
        if (store_run_stmt(
                s,
                "INSERT INTO merge_map(old, new) VALUES (CAST(?1 AS INTEGER), CAST(?2 AS INTEGER))",
                a, b, NULL, 0)) {
            sqlite3_finalize(q);
            goto dberr;
        }
        ms->sweeps++;
    }
    sqlite3_finalize(q);
    /* which tasks to take: those the study lacks, and finished ones newer than the study's */
    snprintf(sql, sizeof sql,
             "CREATE TEMP TABLE IF NOT EXISTS merge_take(task_id TEXT PRIMARY KEY, fresh INTEGER);"
             "DELETE FROM merge_take;"
             "INSERT INTO merge_take SELECT p.task_id, m.task_id IS NULL FROM part.tasks p"
             " LEFT JOIN main.tasks m ON m.task_id = p.task_id"
             " WHERE m.task_id IS NULL OR (p.status IN (%s) AND (m.status NOT IN (%s)"
             "  OR coalesce(p.finished_at, '') > coalesce(m.finished_at, '')));",
             finished, finished);
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        goto dberr;
    const char *copy[] = {
        "DELETE FROM main.trajectory WHERE task_id IN (SELECT task_id FROM merge_take WHERE NOT fresh)",
        "DELETE FROM main.summary WHERE task_id IN (SELECT task_id FROM merge_take WHERE NOT fresh)",
        /* replaced in place (sweep_tasks and the rows refer to the task) */
        "UPDATE main.tasks SET (sweep_id, " STORE_TASK_COLS
        ") = (SELECT (SELECT new FROM merge_map WHERE old ="
        " p.sweep_id), " STORE_TASK_COLS " FROM part.tasks p WHERE p.task_id = main.tasks.task_id)"
        " WHERE task_id IN (SELECT task_id FROM merge_take WHERE NOT fresh)",
        "INSERT INTO main.tasks(task_id, sweep_id, " STORE_TASK_COLS ")"
        " SELECT p.task_id, (SELECT new FROM merge_map WHERE old = p.sweep_id), " STORE_TASK_COLS
        " FROM part.tasks p WHERE p.task_id IN (SELECT task_id FROM merge_take WHERE fresh)",
        "INSERT INTO main.trajectory SELECT * FROM part.trajectory WHERE task_id IN (SELECT task_id FROM merge_take)",
        "INSERT INTO main.summary SELECT * FROM part.summary WHERE task_id IN (SELECT task_id FROM merge_take)",
        "INSERT OR IGNORE INTO main.sweep_tasks(sweep_id, task_id)"
        " SELECT (SELECT new FROM merge_map WHERE old = st.sweep_id), st.task_id FROM part.sweep_tasks st",
        NULL};
    for (int i = 0; copy[i]; i++)
        if (sqlite3_exec(s->db, copy[i], NULL, NULL, NULL) != SQLITE_OK)
            goto dberr;
    if (sqlite3_prepare_v2(s->db, "SELECT sum(fresh), sum(NOT fresh) FROM merge_take", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        ms->added = sqlite3_column_int64(q, 0);
        ms->replaced = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM part.tasks", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        ms->kept = sqlite3_column_int64(q, 0) - ms->added - ms->replaced;
    sqlite3_finalize(q);
    if (store_commit(s))
        goto dberr;
    /* merged; a part left attached would refuse the next merge's ATTACH, so say so */
    if (sqlite3_exec(s->db, "DETACH DATABASE part", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: merged, but cannot detach it: %s", part, sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
dberr:
    snprintf(err, errlen, "%s: merge failed: %s", part, sqlite3_errmsg(s->db));
    store_rollback(s);
    sqlite3_exec(s->db, "DETACH DATABASE part", NULL, NULL, NULL);
    return -1;
}
