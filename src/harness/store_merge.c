/*
 * store_merge.c: operations on the tasks of a whole database: store_merge takes the tasks, rows
 * and runs of a part database (a run with --part) into the study's, and store_reset sends the
 * tasks a condition selects back to pending (store.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aimsweep/base/task_status.h"
#include "store_impl.h"

/* What a condition of reset may do (where_authorize): read any table of the database, call
 * functions that only compute, and nothing else; the one write allowed is the UPDATE of the
 * reset columns of tasks that store_reset wraps around it. refused names the first thing
 * refused, for the message. */
struct where_guard {
    char refused[128];
};

static int where_authorize(void *ctx, int action, const char *a, const char *b, const char *dbname,
                           const char *trigger)
{
    struct where_guard *g = ctx;
    static const char *const reset_cols[] = {"status", "attempts", "error", "rank", "host", NULL};
    const char *what = NULL;
    switch (action) {
        case SQLITE_SELECT:
        case SQLITE_READ:
        case SQLITE_RECURSIVE: return SQLITE_OK;
        case SQLITE_FUNCTION:
            if (b && !strcasecmp(b, "load_extension")) {
                what = "load_extension()";
                break;
            }
            return SQLITE_OK;
        case SQLITE_UPDATE:
            if (a && !strcmp(a, "tasks") && dbname && !strcmp(dbname, "main") && !trigger && b)
                for (int i = 0; reset_cols[i]; i++)
                    if (!strcmp(b, reset_cols[i]))
                        return SQLITE_OK;
            /* a PRAGMA table function (pragma_table_info) asks to write the schema table */
            what = a && !strcmp(a, "sqlite_master") ? "a PRAGMA or a change to the schema"
                                                    : "a change to the database";
            break;
        case SQLITE_INSERT:
        case SQLITE_DELETE: what = "a change to the database"; break;
        case SQLITE_PRAGMA: what = "a PRAGMA"; break;
        case SQLITE_ATTACH:
        case SQLITE_DETACH: what = "ATTACH or DETACH"; break;
        default: what = "a statement other than a condition"; break;
    }
    if (g && !g->refused[0])
        snprintf(g->refused, sizeof g->refused, "%s", what);
    return SQLITE_DENY;
}

/* Whether the condition keeps inside the parenthesis it is put in: its own parentheses
 * balanced outside quotes, and no comment left open (an unclosed comment would swallow the
 * closing parenthesis). Returns 1 if so. */
static int condition_closed(const char *w)
{
    int depth = 0;
    for (const char *c = w; *c; c++) {
        if (*c == '\'' || *c == '"' || *c == '`' || *c == '[') {
            char close = *c == '[' ? ']' : *c;
            const char *e = strchr(c + 1, close);
            if (!e)
                return 0;
            c = e;
        } else if (c[0] == '-' && c[1] == '-') {
            c += strcspn(c, "\n");
            if (!*c)
                return depth == 0;
        } else if (c[0] == '/' && c[1] == '*') {
            const char *e = strstr(c + 2, "*/");
            if (!e)
                return 0;
            c = e + 1;
        } else if (*c == '(')
            depth++;
        else if (*c == ')' && --depth < 0)
            return 0;
    }
    return depth == 0;
}

/* Prepares sql, one statement around the user's condition `where`, under where_authorize:
 * text after the statement, a statement that returns rows (the condition closed the
 * parenthesis around it) and anything where_authorize refuses are refused. Returns the statement
 * (the authorizer still set: clear it after the last step), or NULL with err. */
static sqlite3_stmt *prepare_condition(sqlite3 *db, const char *sql, const char *where, int ncols,
                                       struct where_guard *g, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    const char *tail = NULL;
    memset(g, 0, sizeof *g);
    sqlite3_set_authorizer(db, where_authorize, g);
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, &tail);
    if (rc != SQLITE_OK || !q) {
        if (g->refused[0])
            snprintf(err, errlen, "the condition '%s' may only read the database, not make %s",
                     where, g->refused);
        else
            snprintf(err, errlen, "the condition '%s' is not an SQL condition: %s", where,
                     q || rc != SQLITE_OK ? sqlite3_errmsg(db) : "empty");
        goto refuse;
    }
    tail += strspn(tail, " \t\r\n");
    if (*tail || sqlite3_column_count(q) != ncols || !condition_closed(where)) {
        snprintf(err, errlen,
                 "the condition '%s' is not one SQL condition (it closes a parenthesis it did not"
                 " open, or leaves a quote or comment open)",
                 where);
        goto refuse;
    }
    return q;
refuse:
    sqlite3_finalize(q);
    sqlite3_set_authorizer(db, NULL, NULL);
    return NULL;
}

/* "SQL" with the condition pasted in (a newline before its closing parenthesis, so that a
 * comment in the condition cannot swallow it), malloc'd, or NULL. */
static char *condition_sql(const char *head, const char *where, const char *end)
{
    size_t n = strlen(head) + strlen(where) + strlen(end) + 8;
    char *sql = malloc(n);
    if (sql)
        snprintf(sql, n, "%s(%s\n)%s", head, where, end);
    return sql;
}

int store_condition_check(sqlite3 *db, const char *from, const char *where, char *err,
                          size_t errlen)
{
    char head[256];
    snprintf(head, sizeof head, "SELECT 1 FROM %s WHERE ", from);
    char *sql = condition_sql(head, where, "");
    if (!sql) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct where_guard g;
    sqlite3_stmt *q = prepare_condition(db, sql, where, 1, &g, err, errlen);
    free(sql);
    sqlite3_finalize(q);
    sqlite3_set_authorizer(db, NULL, NULL);
    return q ? 0 : -1;
}

int store_reset(struct store *s, const char *where, long *count, char *err, size_t errlen)
{
    *count = 0;
    char *sql = condition_sql(
        "UPDATE tasks SET status = 'pending', attempts = 0, error = NULL, rank = NULL, host = NULL"
        " WHERE ",
        where, "");
    if (!sql) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (store_begin(s)) {
        free(sql);
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
        return -1;
    }
    struct where_guard g;
    sqlite3_stmt *q = prepare_condition(s->db, sql, where, 0, &g, err, errlen);
    free(sql);
    if (!q) {
        store_rollback(s);
        return -1;
    }
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    sqlite3_set_authorizer(s->db, NULL, NULL);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "the condition '%s' failed: %s", where, sqlite3_errmsg(s->db));
        store_rollback(s);
        return -1;
    }
    *count = sqlite3_changes(s->db);
    if (store_commit(s)) {
        snprintf(err, errlen, "%s", store_errmsg(s));
        return -1;
    }
    return 0;
}

/* The columns of tasks after sweep_id, as the merge copies them: every column of the schema
 * (schema_fmt in store_schema.c), those added by versions 3, 4, 6 and 8 too, so that a merged task's
 * columns say what its params text says. */
#define STORE_TASK_COLS                                                                              \
    "decomposition, activation, d, lr, init_scale, tokens, teacher, width, weight_decay, order_m,"   \
    " closure, tau_end, seed, status, attempts, rank, host, started_at, finished_at, wall_s, error," \
    " info_exponent, records, log_grid, recovery_threshold, ode_noise, solvers, cost, params,"       \
    " token_corr, index_kind, outputs, lr_schedule, init, init_trace, ode_mean, precision,"          \
    " sign_symmetric, kernels, ode_init"

/* The study's sweeps row that is part.sweeps row ?1: the same run (name, sweep file, start
 * time to the millisecond, build, host, command line and part), merged before. */
#define STORE_SWEEP_SAME                                                                           \
    "SELECT m.sweep_id FROM main.sweeps m JOIN part.sweeps p ON p.sweep_id = ?1"                   \
    " WHERE m.name IS p.name AND m.spec IS p.spec AND m.created_at IS p.created_at"                \
    " AND m.version IS p.version AND m.git_commit IS p.git_commit AND m.host IS p.host"            \
    " AND m.command IS p.command AND m.part IS p.part ORDER BY m.sweep_id LIMIT 1"

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
    /* every run of the part keeps its provenance under a new sweep_id, once */
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
        int64_t old = sqlite3_column_int64(q, 0), nw = 0;
        /* a run the study has already (this part merged before): the same row, mapped to it */
        sqlite3_stmt *same = NULL;
        if (sqlite3_prepare_v2(s->db, STORE_SWEEP_SAME, -1, &same, NULL) != SQLITE_OK ||
            sqlite3_bind_int64(same, 1, old) != SQLITE_OK) {
            sqlite3_finalize(same);
            sqlite3_finalize(q);
            goto dberr;
        }
        int found = sqlite3_step(same) == SQLITE_ROW;
        if (found)
            nw = sqlite3_column_int64(same, 0);
        sqlite3_finalize(same);
        if (!found &&
            store_run_stmt(
                s,
                "INSERT INTO main.sweeps(name, spec, created_at, version, git_commit, host, compiler, blas, mpi,"
                " ranks, command, part, stop_signal, stop_sender, stopped_at, kernels)"
                " SELECT name, spec, created_at, version, git_commit, host, compiler, blas, mpi, ranks, command,"
                " part, stop_signal, stop_sender, stopped_at, kernels FROM part.sweeps WHERE sweep_id = ?4",
                NULL, NULL, NULL, old)) {
            sqlite3_finalize(q);
            goto dberr;
        }
        if (!found) {
            nw = sqlite3_last_insert_rowid(s->db);
            ms->sweeps++;
        }
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
