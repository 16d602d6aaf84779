/*
 * store.c: the SQLite results database (schema and statuses in store.h).
 *
 * Opening is careful not to damage what is there: a file that is not SQLite, an SQLite file
 * of something else, or a newer schema are refused before anything is written; WAL is turned
 * on only after that. An exclusive flock on the database file keeps two runs apart (SQLite's
 * own locks are fcntl locks, which flock does not touch on Linux). An older schema is migrated
 * in one transaction per step after the lock is taken (migrate_1_2, then migrate_2_3, then
 * migrate_3_4, then migrate_4_5), so a failed migration leaves the file at the last version it reached.
 *   2 -> 3  the general index and options of docs/model.md §10-11: tasks gains token_corr,
 *           index_kind, outputs, lr_schedule, init, init_trace, ode_mean (old rows get the
 *           defaults, which is what they ran with), trajectory gains mu (old rows: sqrt(d)
 *           trace, its definition Tr S/sqrt(d)), summary gains mu_star (NULL: not recorded),
 *           and the results view names the new columns.
 *   3 -> 4  tasks gains precision (how SGD stores the student; old rows: double, which is what
 *           they ran with), and the views recovery and curves are added.
 *   4 -> 5  the status timeout and the run's provenance and stop (migrate_4_5).
 *
 * Every SQLite call whose result matters is checked: STORE_CALL (in the manner of PETSc's
 * PetscCall) turns a failed call into the function's -1 through its fail label, with the
 * call's text and SQLite's message kept for store_errmsg; a failed step does the same
 * (step_done). A failure resets and unbinds the cached statements, so that no value bound
 * for a failed write is left for the next one.
 *
 * A read-only open of a file older than version 4 gets the views recovery and curves as
 * temporary views.
 *
 * The views group a point's seeds by the task's canonical text with its seed=N entry cut out
 * (POINT_KEY_SQL), so every parameter, present or added later, separates points. Quartiles
 * interpolate linearly between order statistics (numpy's default): the q-quantile of n sorted
 * values v_0..v_{n-1} is sum_i v_i max(0, 1 - |i - q(n - 1)|), one aggregate per quantile.
 * Spreads are sample standard deviations (n - 1), NULL for one seed. A seed counts when its
 * solver finished (done, diverged, ode_diverged); errors and interruptions do not.
 */
#include "aimsweep/harness/store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a statement waits for a lock held by a reader before giving up. */
#define STORE_BUSY_TIMEOUT_MS 10000
/* How often a run looks again at a database another run holds (store_lock_wait_s). */
#define STORE_LOCK_POLL_S 0.25

/* The task's canonical text without its seed: "...;log_grid=off;seed=3;solvers=sgd;..." becomes
 * "...;log_grid=off;solvers=sgd;...". */
#define POINT_KEY_SQL                                                                              \
    "(CASE WHEN instr(t.params, ';seed=') = 0 THEN t.params"                                       \
    " WHEN instr(substr(t.params, instr(t.params, ';seed=') + 1), ';') = 0"                        \
    " THEN substr(t.params, 1, instr(t.params, ';seed=') - 1)"                                     \
    " ELSE substr(t.params, 1, instr(t.params, ';seed='))"                                         \
    " || substr(t.params, instr(t.params, ';seed=') + 1"                                           \
    " + instr(substr(t.params, instr(t.params, ';seed=') + 1), ';')) END)"

/* The columns that describe a point (all equal over its seeds). */
#define POINT_COLS_SQL                                                                             \
    "decomposition, activation, info_exponent, d, lr, init_scale, tokens, teacher, width,"         \
    " weight_decay, order_m, closure, tau_end, records, log_grid, recovery_threshold, ode_noise,"  \
    " solvers"

#define QUANTILE_SQL(v, rank, q) "sum(" v " * max(0.0, 1.0 - abs(" rank " - " q " * (n_rec - 1))))"

/* recovery: one row per point (without the seed) and solver. */
#define RECOVERY_VIEW_BODY                                                                                                                           \
    "recovery AS WITH runs AS (SELECT " POINT_KEY_SQL " AS point, t.task_id,"                                                                        \
    " t.decomposition, t.activation, t.info_exponent, t.d, t.lr, t.init_scale, t.tokens, t.teacher,"                                                 \
    " t.width, t.weight_decay, t.order_m, t.closure, t.tau_end, t.records, t.log_grid,"                                                              \
    " t.recovery_threshold, t.ode_noise, t.solvers, s.solver, s.status, s.tau_wr, s.samples_wr"                                                      \
    " FROM tasks t JOIN summary s ON s.task_id = t.task_id"                                                                                          \
    " WHERE s.status IN ('done', 'diverged', 'ode_diverged')),"                                                                                      \
    " ranked AS (SELECT *, count(samples_wr) OVER pt AS n_rec,"                                                                                      \
    " row_number() OVER (PARTITION BY point, solver ORDER BY samples_wr IS NULL, samples_wr) - 1"                                                    \
    " AS rank_n,"                                                                                                                                    \
    " row_number() OVER (PARTITION BY point, solver ORDER BY tau_wr IS NULL, tau_wr) - 1 AS rank_t"                                                  \
    " FROM runs WINDOW pt AS (PARTITION BY point, solver))"                                                                                          \
    " SELECT point, " POINT_COLS_SQL ", solver, count(*) AS seeds,"                                                                                  \
    " count(samples_wr) AS recovered,"                                                                                                               \
    " " QUANTILE_SQL(                                                                                                                                \
        "samples_wr", "rank_n",                                                                                                                      \
        "0.25") " AS n_wr_q1,"                                                                                                                       \
                " " QUANTILE_SQL(                                                                                                                    \
                    "samples_wr", "rank_n",                                                                                                          \
                    "0.5") " AS n_wr_median,"                                                                                                        \
                           " " QUANTILE_SQL(                                                                                                         \
                               "samples_wr", "rank_n",                                                                                               \
                               "0.75") " AS n_wr_q3,"                                                                                                \
                                       " " QUANTILE_SQL(                                                                                             \
                                           "tau_wr", "rank_t",                                                                                       \
                                           "0.25") " AS tau_wr_q1,"                                                                                  \
                                                   " " QUANTILE_SQL(                                                                                 \
                                                       "tau_wr", "rank_t",                                                                           \
                                                       "0.5") " AS tau_wr_median,"                                                                   \
                                                              " " QUANTILE_SQL(                                                                      \
                                                                  "tau_wr", "rank_t",                                                                \
                                                                  "0.75") " AS tau_wr_q3,"                                                           \
                                                                          " " QUANTILE_SQL(                                                          \
                                                                              "samples_wr",                                                          \
                                                                              "rank_n",                                                              \
                                                                              "0.5") " / (d * d * ln(d)) AS n_wr_per_d2lnd,"                         \
                                                                                     " avg(status IN ('diverged', 'ode_diverged')) AS frac_diverged" \
                                                                                     " FROM ranked GROUP BY point, solver;"

#define SD_SQL(x)                                                                                  \
    "sqrt(max(0.0, (sum(" x " * " x ") - sum(" x ") * sum(" x ") / count(" x "))"                  \
    " / nullif(count(" x ") - 1, 0)))"

/* curves: per point, solver and record, the mean and spread of |m|, Omega12 and the loss. */
#define CURVES_VIEW_BODY                                                                                      \
    "curves AS SELECT " POINT_KEY_SQL " AS point, t.decomposition, t.activation,"                             \
    " t.info_exponent, t.d, t.lr, t.init_scale, t.tokens, t.teacher, t.width, t.weight_decay,"                \
    " t.order_m, t.closure, t.tau_end, t.records, t.log_grid, t.recovery_threshold, t.ode_noise,"             \
    " t.solvers, r.solver, r.k, avg(r.tau) AS tau, avg(r.samples) AS samples,"                                \
    " count(r.overlap) AS seeds, avg(abs(r.overlap)) AS abs_m_mean,"                                          \
    " " SD_SQL(                                                                                               \
        "abs(r.overlap)") " AS abs_m_sd, min(abs(r.overlap)) AS abs_m_min,"                                   \
                          " max(abs(r.overlap)) AS abs_m_max, avg(r.omega12) AS omega12_mean,"                \
                          " " SD_SQL("r.omega12") " AS omega12_sd, avg(r.loss) AS loss_mean, " SD_SQL(        \
                              "r.loss") " AS loss_sd"                                                         \
                                        " FROM tasks t JOIN summary s ON s.task_id = t.task_id"               \
                                        " JOIN trajectory r ON r.task_id = s.task_id AND r.solver = s.solver" \
                                        " WHERE s.status IN ('done', 'diverged', 'ode_diverged')"             \
                                        " GROUP BY point, r.solver, r.k;"

/* Weak recovery for any threshold, from the stored trajectory (schema version 2). One row per
 * record k of each solver with the record before it (tau_prev, m_prev = |m_{k-1}|,
 * samples_prev; NULL at k = 0) and m_max_before, the largest |m| of the records before k (-1 at
 * k = 0). For a threshold th exactly one row of a run has m >= th AND m_max_before < th: the
 * first record at or above th. Its tau_wr is linear in tau on |m| between the two records,
 * tau_prev + (th - m_prev) / (m - m_prev) (tau - tau_prev), or tau at k = 0 -- what obs.c
 * stores in summary for the point's own recovery_threshold. */
#define STORE_RECOVERY_SEGMENTS_BODY                                                               \
    "recovery_segments AS SELECT task_id, solver, k,"                                              \
    " lag(tau) OVER w AS tau_prev, tau, lag(abs(overlap)) OVER w AS m_prev, abs(overlap) AS m,"    \
    " lag(samples) OVER w AS samples_prev, samples,"                                               \
    " coalesce(max(abs(overlap)) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1)"   \
    " AS m_max_before"                                                                             \
    " FROM trajectory WINDOW w AS (PARTITION BY task_id, solver ORDER BY k);"

/* The results view (created with the schema, and again by the 2 -> 3 migration). */
#define RESULTS_VIEW_SQL                                                                               \
    "CREATE VIEW results AS SELECT"                                                                    \
    " t.task_id, t.sweep_id, t.decomposition, t.activation, t.info_exponent, t.d, t.lr, t.init_scale," \
    " t.tokens, t.teacher, t.width, t.weight_decay, t.order_m, t.closure, t.tau_end, t.seed,"          \
    " t.token_corr, t.index_kind, t.outputs, t.lr_schedule, t.init, t.init_trace, t.ode_mean,"         \
    " t.status AS task_status, s.solver, s.status, s.tau_wr, s.samples_wr, s.final_overlap,"           \
    " s.final_loss, s.max_gap_to_sgd, s.diverged_at_samples, s.wall_s, s.mu_star"                      \
    " FROM tasks t JOIN summary s ON s.task_id = t.task_id;"

/* A format: its two %s are the status of a new task and the list of the statuses the database
 * may hold (task_status.h). */
static const char *const schema_fmt =
    "CREATE TABLE sweeps("
    " sweep_id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, created_at TEXT NOT NULL,"
    " version TEXT, git_commit TEXT, host TEXT, compiler TEXT, blas TEXT, mpi TEXT, ranks INTEGER,"
    " command TEXT, part TEXT, stop_signal INTEGER, stop_sender TEXT, stopped_at TEXT);"
    "CREATE TABLE tasks("
    " task_id TEXT PRIMARY KEY, sweep_id INTEGER NOT NULL REFERENCES sweeps(sweep_id),"
    " decomposition TEXT NOT NULL, activation TEXT NOT NULL, d INTEGER NOT NULL, lr REAL NOT NULL,"
    " init_scale REAL NOT NULL, tokens INTEGER NOT NULL, teacher TEXT NOT NULL, width REAL NOT NULL,"
    " weight_decay REAL NOT NULL, order_m INTEGER NOT NULL, closure TEXT NOT NULL, tau_end REAL NOT NULL,"
    " seed INTEGER NOT NULL,"
    " status TEXT NOT NULL DEFAULT '%s' CHECK (status IN"
    "  (%s)),"
    " attempts INTEGER NOT NULL DEFAULT 0, rank INTEGER, host TEXT, started_at TEXT, finished_at TEXT,"
    " wall_s REAL, error TEXT,"
    " info_exponent INTEGER, records INTEGER NOT NULL, log_grid INTEGER NOT NULL,"
    " recovery_threshold REAL NOT NULL, ode_noise INTEGER NOT NULL, solvers TEXT NOT NULL,"
    " cost REAL, params TEXT NOT NULL,"
    " token_corr REAL NOT NULL DEFAULT 0, index_kind TEXT NOT NULL DEFAULT 'centred',"
    " outputs TEXT NOT NULL DEFAULT 'offdiag', lr_schedule TEXT NOT NULL DEFAULT 'constant',"
    " init TEXT NOT NULL DEFAULT 'gaussian', init_trace REAL NOT NULL DEFAULT 0,"
    " ode_mean TEXT NOT NULL DEFAULT 'stiff', precision TEXT NOT NULL DEFAULT 'double');"
    "CREATE TABLE sweep_tasks(sweep_id INTEGER NOT NULL REFERENCES sweeps(sweep_id),"
    " task_id TEXT NOT NULL REFERENCES tasks(task_id), PRIMARY KEY (sweep_id, task_id)) WITHOUT ROWID;"
    "CREATE TABLE trajectory("
    " task_id TEXT NOT NULL REFERENCES tasks(task_id), solver TEXT NOT NULL, k INTEGER NOT NULL,"
    " tau REAL, samples INTEGER, omega11 REAL, psi11 REAL, omega12 REAL, trace REAL, overlap REAL, loss REAL,"
    " mu REAL);"
    "CREATE TABLE summary("
    " task_id TEXT NOT NULL REFERENCES tasks(task_id), solver TEXT NOT NULL, tau_wr REAL, samples_wr INTEGER,"
    " final_overlap REAL, final_loss REAL, max_gap_to_sgd REAL, status TEXT NOT NULL, wall_s REAL,"
    " diverged_at_samples INTEGER, error TEXT, mu_star REAL);"
    "CREATE UNIQUE INDEX trajectory_row ON trajectory(task_id, solver, k);"
    "CREATE UNIQUE INDEX summary_row ON summary(task_id, solver);"
    "CREATE INDEX tasks_status ON tasks(status);"
    "CREATE INDEX tasks_sweep ON tasks(sweep_id);"
    "CREATE INDEX tasks_point ON tasks(decomposition, activation, d, lr, init_scale);"
    "CREATE INDEX sweep_tasks_task ON sweep_tasks(task_id);" RESULTS_VIEW_SQL
    "CREATE VIEW " STORE_RECOVERY_SEGMENTS_BODY "CREATE VIEW " RECOVERY_VIEW_BODY
    "CREATE VIEW " CURVES_VIEW_BODY;

/* 2 -> 3 (see the top of the file). */
static const char *const migrate_2_3_sql =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE tasks ADD COLUMN token_corr REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN index_kind TEXT NOT NULL DEFAULT 'centred';"
    "ALTER TABLE tasks ADD COLUMN outputs TEXT NOT NULL DEFAULT 'offdiag';"
    "ALTER TABLE tasks ADD COLUMN lr_schedule TEXT NOT NULL DEFAULT 'constant';"
    "ALTER TABLE tasks ADD COLUMN init TEXT NOT NULL DEFAULT 'gaussian';"
    "ALTER TABLE tasks ADD COLUMN init_trace REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE tasks ADD COLUMN ode_mean TEXT NOT NULL DEFAULT 'stiff';"
    "ALTER TABLE trajectory ADD COLUMN mu REAL;"
    "UPDATE trajectory SET mu = trace * sqrt((SELECT d FROM tasks WHERE tasks.task_id = trajectory.task_id));"
    "ALTER TABLE summary ADD COLUMN mu_star REAL;"
    "DROP VIEW IF EXISTS results;" RESULTS_VIEW_SQL "PRAGMA user_version = 3; COMMIT;";

/* 3 -> 4 (see the top of the file). */
static const char *const migrate_3_4_sql =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE tasks ADD COLUMN precision TEXT NOT NULL DEFAULT 'double';"
    "CREATE VIEW " RECOVERY_VIEW_BODY "CREATE VIEW " CURVES_VIEW_BODY
    "PRAGMA user_version = 4; COMMIT;";

/* Columns that hold counts: INTEGER since schema version 2 (REAL before, with values such as
 * 28000.000000000004 computed as tau d^2 / eta). */
static const char *const integer_columns[][2] = {{"trajectory", "samples"},
                                                 {"summary", "samples_wr"},
                                                 {"summary", "diverged_at_samples"},
                                                 {NULL, NULL}};

enum {
    ST_INS_TASK,
    ST_INS_LINK,
    ST_STATUS,
    ST_RUNNING,
    ST_DEL_TRAJ,
    ST_DEL_SUM,
    ST_INS_TRAJ,
    ST_INS_SUM,
    ST_FINISH,
    ST_PENDING,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    "INSERT OR IGNORE INTO tasks(task_id, sweep_id, decomposition, activation, d, lr, init_scale, tokens,"
    " teacher, width, weight_decay, order_m, closure, tau_end, seed, info_exponent, records, log_grid,"
    " recovery_threshold, ode_noise, solvers, cost, params, token_corr, index_kind, outputs, lr_schedule,"
    " init, init_trace, ode_mean, precision)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,"
    "?26,?27,?28,?29,?30,?31)",
    "INSERT OR IGNORE INTO sweep_tasks(sweep_id, task_id) VALUES (?1, ?2)",
    "SELECT status, attempts FROM tasks WHERE task_id = ?1",
    "UPDATE tasks SET status = ?6, rank = ?2, host = ?3,"
    " started_at = ?4, finished_at = NULL, sweep_id = coalesce(?5, sweep_id) WHERE task_id = ?1",
    "DELETE FROM trajectory WHERE task_id = ?1",
    "DELETE FROM summary WHERE task_id = ?1",
    "INSERT INTO trajectory(task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss, mu)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    "INSERT INTO summary(task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd,"
    " status, wall_s, diverged_at_samples, error, mu_star) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    "UPDATE tasks SET status = ?2, finished_at = ?3, wall_s = ?4, error = ?5 WHERE task_id = ?1",
    "UPDATE tasks SET status = ?2, rank = NULL, host = NULL,"
    " started_at = NULL WHERE task_id = ?1 AND status IN (?3, ?4)",
};

struct store {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    int in_txn;
    int lock_fd;
    int readonly;
    int64_t sweep_id; /* the sweep registered by this run, or 0 */
    char err[512];    /* the last failed call and SQLite's message (store_errmsg) */
};

/* Records a failed call (its text and SQLite's message) and clears the cached statements. */
static void store_failed(struct store *s, int rc, const char *call)
{
    snprintf(s->err, sizeof s->err, "%s: %s", call,
             s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    for (int i = 0; i < ST_COUNT; i++)
        if (s->st[i]) {
            sqlite3_reset(s->st[i]);
            sqlite3_clear_bindings(s->st[i]);
        }
}

/* Runs an SQLite call that must return SQLITE_OK; otherwise records it and goes to fail. */
#define STORE_CALL(s, call)                                                                        \
    do {                                                                                           \
        int store_rc_ = (call);                                                                    \
        if (store_rc_ != SQLITE_OK) {                                                              \
            store_failed((s), store_rc_, #call);                                                   \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static void now_iso(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

sqlite3 *store_db(struct store *s) { return s->db; }
const char *store_errmsg(struct store *s)
{
    return !s || !s->db ? "no database" : s->err[0] ? s->err : sqlite3_errmsg(s->db);
}

void store_close(struct store **sp)
{
    if (!sp || !*sp)
        return;
    struct store *s = *sp;
    if (s->in_txn)
        store_commit(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->db)
        sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    free(s);
    *sp = NULL;
}

/* Reads user_version and whether the file has any schema. SQLite reads the header here, so a
 * file that is not a database fails at this point, before anything is written. */
static int inspect(struct store *s, const char *path, int *version, int *nobjects, char *err,
                   size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT (SELECT user_version FROM pragma_user_version),"
                                " (SELECT count(*) FROM sqlite_schema)",
                                -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        int ec = sqlite3_errcode(s->db);
        if (ec == SQLITE_NOTADB)
            snprintf(err, errlen, "%s: not an SQLite database (refusing to touch it)", path);
        else
            snprintf(err, errlen, "%s: cannot read database: %s", path, sqlite3_errmsg(s->db));
        sqlite3_finalize(q);
        return -1;
    }
    *version = sqlite3_column_int(q, 0);
    *nobjects = sqlite3_column_int(q, 1);
    sqlite3_finalize(q);
    if (*version > STORE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: database schema version %d is newer than this aimsweep (%d)",
                 path, *version, STORE_SCHEMA_VERSION);
        return -1;
    }
    if (*version == 0 && *nobjects > 0) {
        snprintf(
            err, errlen,
            "%s: an SQLite database, but not an aimsweep results database (refusing to touch it)",
            path);
        return -1;
    }
    return 0;
}

static int exec(struct store *s, const char *sql, char *err, size_t errlen, const char *path)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int step_done(struct store *s, sqlite3_stmt *q);

/* What each column means and its unit: the header of `aimsweep export` and the column list of
 * docs/model.md. Rows with table NULL apply to a column of that name in any table or view; the
 * parameter columns of tasks take their meaning from the parameter table (params.h). */
static const struct store_column_doc column_docs[] = {
    {"sweeps", "sweep_id", "", "one aimsweep run (1, 2, ...)"},
    {"sweeps", "name", "", "the sweep's name (its file's name: key, or the file name)"},
    {"sweeps", "spec", "", "the sweep file's text, with any --set overrides appended as comments"},
    {"sweeps", "created_at", "UTC", "when the run started (ISO 8601)"},
    {"sweeps", "version", "", "aimsweep version of the run"},
    {"sweeps", "git_commit", "", "source commit of the binary"},
    {"sweeps", "host", "", "host of rank 0"},
    {"sweeps", "compiler", "", "compiler of the binary"},
    {"sweeps", "blas", "", "OpenBLAS configuration"},
    {"sweeps", "mpi", "", "MPI library"},
    {"sweeps", "ranks", "", "MPI ranks of the run (rank 0 schedules and stores)"},
    {"sweeps", "command", "", "the command line of the run"},
    {"sweeps", "part", "",
     "I/N of a run with --part (its share of the grid), NULL for the whole grid"},
    {"sweeps", "stop_signal", "",
     "the signal that stopped the run (10 SIGUSR1, 15 SIGTERM, 2 SIGINT), NULL if none"},
    {"sweeps", "stop_sender", "", "who sent it: pid (command), uid"},
    {"sweeps", "stopped_at", "UTC", "when the stop arrived (ISO 8601)"},
    {NULL, "task_id", "",
     "16 hex digits: hash of the point's canonical parameters (same point, same id)"},
    {"tasks", "sweep_id", "",
     "the run that computed the task (the one that registered it until then)"},
    {"sweep_tasks", "sweep_id", "", "a run that asked for the task"},
    {"results", "sweep_id", "", "the run that computed the task"},
    {"tasks", "status", "",
     "pending, running, done, diverged, ode_diverged, error, interrupted, timeout"},
    {NULL, "task_status", "", "the point's status (tasks.status)"},
    {NULL, "attempts", "", "jobs that died while the task ran, without a recorded stop"},
    {NULL, "rank", "", "MPI rank that ran it last"},
    {NULL, "host", "", "host of that rank"},
    {NULL, "started_at", "UTC", "when it was handed to a rank (ISO 8601)"},
    {NULL, "finished_at", "UTC", "when its result was stored (ISO 8601)"},
    {"tasks", "wall_s", "s", "wall-clock seconds of the whole task"},
    {"tasks", "error", "", "why the task failed (status error)"},
    {NULL, "info_exponent", "",
     "information exponent: lowest k >= 1 with c_k != 0 (Hermite activations; NULL otherwise)"},
    {NULL, "cost", "s", "estimated core-seconds (cost model of task.c)"},
    {NULL, "params", "", "canonical parameter text: aimsweep single accepts every key=value"},
    {NULL, "solver", "", "sgd (online SGD), flow (population flow), ode (moment ODE)"},
    {NULL, "k", "", "record index, 0 .. records"},
    {NULL, "tau", "tau", "time tau = n eta / d^2 (n samples)"},
    {NULL, "samples", "samples",
     "samples n at tau (SGD: counted; flow, ode: tau d^2 / eta, rounded)"},
    {NULL, "omega11", "", "Omega11 = Tr(S S^T)/d"},
    {NULL, "psi11", "", "Psi11 = Tr(S^2)/d"},
    {NULL, "omega12", "", "Omega12 = Tr(S S*)/d"},
    {NULL, "trace", "", "t1 = Tr(S)/d"},
    {NULL, "overlap", "", "centred overlap m of S and S*, in [-1, 1]"},
    {NULL, "loss", "",
     "population loss Phi(Omega11, Psi11, Omega12) (and of mu under the general index)"},
    {NULL, "mu", "", "mean of the index: mu = Tr(S)/sqrt(d) = sqrt(d) trace"},
    {NULL, "mu_star", "",
     "the teacher's mean Tr(S*)/sqrt(d); NULL for rows stored before schema 3"},
    {NULL, "index_kind", "",
     "the parameter index: centred (x_a^T S x_b - C_ab Tr S)/sqrt(d) or uncentred"},
    {NULL, "tau_wr", "tau",
     "weak recovery: tau at which |m| first reaches recovery_threshold, interpolated between records; NULL: never"},
    {NULL, "samples_wr", "samples", "samples at tau_wr (interpolated, rounded); NULL: never"},
    {NULL, "final_overlap", "", "m at the last record"},
    {NULL, "final_loss", "", "Phi at the last record"},
    {NULL, "max_gap_to_sgd", "",
     "largest |Omega12 - Omega12 of sgd| over the records (NULL for sgd)"},
    {"summary", "status", "",
     "the solver's outcome: done, diverged, ode_diverged, error, interrupted"},
    {"results", "status", "",
     "the solver's outcome: done, diverged, ode_diverged, error, interrupted"},
    {NULL, "wall_s", "s", "wall-clock seconds of this solver"},
    {NULL, "diverged_at_samples", "samples",
     "samples at which the solver stopped on exploding values; NULL: it did not"},
    {NULL, "error", "", "the solver's error message"},
    {NULL, "tau_prev", "tau", "tau of record k - 1 (NULL at k = 0)"},
    {NULL, "m", "", "|m| at record k"},
    {NULL, "m_prev", "", "|m| at record k - 1 (NULL at k = 0)"},
    {NULL, "samples_prev", "samples", "samples at record k - 1 (NULL at k = 0)"},
    {NULL, "m_max_before", "", "largest |m| of the records before k (-1 at k = 0)"},
    {NULL, "point", "", "the point without its seed: canonical parameter text with seed=N cut out"},
    {NULL, "seeds", "", "seeds of the point whose solver finished (done, diverged, ode_diverged)"},
    {"recovery", "recovered", "", "seeds that reached weak recovery"},
    {"recovery", "n_wr_q1", "samples", "first quartile of samples_wr over the recovered seeds"},
    {"recovery", "n_wr_median", "samples", "median of samples_wr over the recovered seeds"},
    {"recovery", "n_wr_q3", "samples", "third quartile of samples_wr over the recovered seeds"},
    {"recovery", "tau_wr_q1", "tau", "first quartile of tau_wr over the recovered seeds"},
    {"recovery", "tau_wr_median", "tau", "median of tau_wr over the recovered seeds"},
    {"recovery", "tau_wr_q3", "tau", "third quartile of tau_wr over the recovered seeds"},
    {"recovery", "n_wr_per_d2lnd", "", "n_wr_median / (d^2 ln d)"},
    {"recovery", "frac_diverged", "", "fraction of the seeds whose solver diverged"},
    {"curves", "tau", "tau", "mean over the seeds of tau at record k"},
    {"curves", "samples", "samples", "mean over the seeds of the samples at record k"},
    {"curves", "abs_m_mean", "", "mean of |m| over the seeds at record k"},
    {"curves", "abs_m_sd", "",
     "sample standard deviation of |m| over the seeds (NULL for one seed)"},
    {"curves", "abs_m_min", "", "smallest |m| over the seeds"},
    {"curves", "abs_m_max", "", "largest |m| over the seeds"},
    {"curves", "omega12_mean", "", "mean of Omega12 over the seeds"},
    {"curves", "omega12_sd", "", "sample standard deviation of Omega12 over the seeds"},
    {"curves", "loss_mean", "", "mean of Phi over the seeds"},
    {"curves", "loss_sd", "", "sample standard deviation of Phi over the seeds"},
    {NULL, NULL, NULL, NULL}};

const struct store_column_doc *store_column_doc(const char *table, const char *column)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; column_docs[i].column; i++)
            if (!strcmp(column_docs[i].column, column) &&
                (pass ? column_docs[i].table == NULL
                      : column_docs[i].table && !strcmp(column_docs[i].table, table)))
                return &column_docs[i];
    const struct params_key_info *k = params_key_info(column);
    if (k) {
        static struct store_column_doc pd;
        pd.table = NULL;
        pd.column = k->key;
        pd.unit = !strcmp(k->key, "tau_end") ? "tau" : "";
        pd.meaning = k->help;
        return &pd;
    }
    return NULL;
}

/* crossing(th, x_prev, x, m_prev, m): x where |m| reaches th, linear between (m_prev, x_prev)
 * and (m, x); x when there is no record before (m_prev NULL) or no change of m. With a row of
 * recovery_segments it gives tau_wr (x = tau) and n_wr (x = samples) for any threshold. */
static void sql_crossing(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
    (void)argc;
    for (int i = 0; i < 5; i++)
        if (i != 1 && i != 3 && sqlite3_value_type(v[i]) == SQLITE_NULL) {
            sqlite3_result_null(ctx);
            return;
        }
    double th = sqlite3_value_double(v[0]), x = sqlite3_value_double(v[2]),
           m = sqlite3_value_double(v[4]);
    if (sqlite3_value_type(v[1]) == SQLITE_NULL || sqlite3_value_type(v[3]) == SQLITE_NULL) {
        sqlite3_result_double(ctx, x);
        return;
    }
    double x0 = sqlite3_value_double(v[1]), m0 = sqlite3_value_double(v[3]);
    sqlite3_result_double(ctx, m == m0 ? x : x0 + (th - m0) / (m - m0) * (x - x0));
}

int store_register_functions(sqlite3 *db)
{
    return sqlite3_create_function(db, "crossing", 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                   sql_crossing, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* Schema 1 -> 2, in one transaction:
 *   - the count columns become INTEGER (integer_columns): each table is rebuilt from its own
 *     CREATE text with the column's type changed, the values rounded, every column copied, its
 *     indexes remade; the views are dropped first and made again after;
 *   - summary.tau_wr and samples_wr are recomputed from the trajectory, interpolated (obs.h);
 *   - tasks.params is rewritten in shortest numbers, for the rows whose text parses and hashes to
 *     the row's task_id (every row, unless the file was edited by hand): the id is unchanged;
 *   - the view recovery_segments. */
static int migrate_1_2(struct store *s, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    char **views = NULL;
    int nviews = 0, rc = -1;
    char sql[16384];
    if (exec(s, "BEGIN IMMEDIATE", err, errlen, path))
        return -1;
    if (sqlite3_prepare_v2(s->db, "SELECT name, sql FROM sqlite_schema WHERE type = 'view'", -1, &q,
                           NULL))
        goto dberr;
    while (sqlite3_step(q) == SQLITE_ROW) {
        char **nv = realloc(views, (size_t)(nviews + 1) * sizeof *nv);
        if (!nv)
            goto oom;
        views = nv;
        if (!(views[nviews] = strdup((const char *)sqlite3_column_text(q, 1))))
            goto oom;
        nviews++;
        snprintf(sql, sizeof sql, "DROP VIEW \"%s\"", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        q = NULL;
        if (exec(s, sql, err, errlen, path))
            goto out;
        if (sqlite3_prepare_v2(s->db, "SELECT name, sql FROM sqlite_schema WHERE type = 'view'", -1,
                               &q, NULL))
            goto dberr;
    }
    sqlite3_finalize(q);
    q = NULL;
    for (int t = 0; integer_columns[t][0]; t++) {
        const char *table = integer_columns[t][0];
        if (t > 0 && !strcmp(table, integer_columns[t - 1][0]))
            continue;
        /* its CREATE text with every listed column of this table retyped */
        if (sqlite3_prepare_v2(s->db,
                               "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                               -1, &q, NULL))
            goto dberr;
        if (sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_step(q) != SQLITE_ROW)
            goto dberr;
        char create[8192], rounding[1024] = "";
        snprintf(create, sizeof create, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        q = NULL;
        for (int c = t; integer_columns[c][0] && !strcmp(integer_columns[c][0], table); c++) {
            char from[96], retyped[8192];
            snprintf(from, sizeof from, " %s REAL", integer_columns[c][1]);
            char *at = strstr(create, from);
            if (!at) {
                snprintf(err, errlen, "%s: migration to schema 2: %s.%s is not REAL as expected",
                         path, table, integer_columns[c][1]);
                goto out;
            }
            snprintf(retyped, sizeof retyped, "%.*s %s INTEGER%s", (int)(at - create), create,
                     integer_columns[c][1], at + strlen(from));
            snprintf(create, sizeof create, "%s", retyped);
            size_t used = strlen(rounding);
            snprintf(rounding + used, sizeof rounding - used, "%s%s = round(%s)", used ? ", " : "",
                     integer_columns[c][1], integer_columns[c][1]);
        }
        char *paren = strchr(create, '(');
        snprintf(sql, sizeof sql,
                 "UPDATE %s SET %s;"
                 "CREATE TABLE %s_v2 %s;"
                 "INSERT INTO %s_v2 SELECT * FROM %s;"
                 "DROP TABLE %s;"
                 "ALTER TABLE %s_v2 RENAME TO %s;"
                 "CREATE UNIQUE INDEX %s_row ON %s(task_id, solver%s);",
                 table, rounding, table, paren ? paren : "()", table, table, table, table, table,
                 table, table, !strcmp(table, "trajectory") ? ", k" : "");
        if (exec(s, sql, err, errlen, path))
            goto out;
    }
    /* the canonical text in shortest numbers, for rows whose text gives back their id */
    if (sqlite3_prepare_v2(s->db, "SELECT task_id, params FROM tasks", -1, &q, NULL) ||
        sqlite3_prepare_v2(s->db, "UPDATE tasks SET params = ?2 WHERE task_id = ?1", -1, &up, NULL))
        goto dberr;
    while (sqlite3_step(q) == SQLITE_ROW) {
        struct params p;
        char perr[256], hex[17], canon[8192];
        const char *id = (const char *)sqlite3_column_text(q, 0);
        if (task_parse((const char *)sqlite3_column_text(q, 1), &p, perr, sizeof perr))
            continue;
        task_id_hex(params_task_id(&p), hex);
        if (!id || strcmp(hex, id) != 0 ||
            params_canonical(&p, canon, sizeof canon) >= (int)sizeof canon)
            continue;
        if (sqlite3_bind_text(up, 1, id, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
            sqlite3_bind_text(up, 2, canon, -1, SQLITE_TRANSIENT) != SQLITE_OK || step_done(s, up))
            goto dberr;
    }
    for (int i = 0; i < nviews; i++) {
        snprintf(sql, sizeof sql, "%s;", views[i]);
        if (exec(s, sql, err, errlen, path))
            goto out;
    }
    /* tau_wr and samples_wr as version 2 computes them: interpolated between records */
    if (exec(
            s,
            "CREATE VIEW " STORE_RECOVERY_SEGMENTS_BODY
            "UPDATE summary SET (tau_wr, samples_wr) = (SELECT"
            " crossing(t.recovery_threshold, r.tau_prev, r.tau, r.m_prev, r.m),"
            " CAST(round(crossing(t.recovery_threshold, r.samples_prev, r.samples, r.m_prev, r.m)) AS INTEGER)"
            " FROM recovery_segments r JOIN tasks t ON t.task_id = r.task_id"
            " WHERE r.task_id = summary.task_id AND r.solver = summary.solver"
            " AND r.m >= t.recovery_threshold AND r.m_max_before < t.recovery_threshold);"
            " PRAGMA user_version = 2; COMMIT;",
            err, errlen, path))
        goto out;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
dberr:
    snprintf(err, errlen, "%s: migration to schema 2: %s", path, sqlite3_errmsg(s->db));
out:
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    for (int i = 0; i < nviews; i++)
        free(views[i]);
    free(views);
    if (rc)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Schema 3 -> 4, in one transaction (a failure leaves version 3):
 * 3 -> 4: the status timeout joins the CHECK list of tasks.status (the documented way for a
 * change that leaves the stored rows as they are: the table's SQL text in sqlite_schema is
 * edited and schema_version bumped); sweeps gains command, part, stop_signal, stop_sender and
 * stopped_at. */
static int migrate_4_5(struct store *s, char *err, size_t errlen, const char *path)
{
    {
        int sv = 0;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db, "PRAGMA schema_version", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            sv = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
        char sql[2048];
        snprintf(
            sql, sizeof sql,
            "BEGIN IMMEDIATE;"
            " ALTER TABLE sweeps ADD COLUMN command TEXT; ALTER TABLE sweeps ADD COLUMN part TEXT;"
            " ALTER TABLE sweeps ADD COLUMN stop_signal INTEGER; ALTER TABLE sweeps ADD COLUMN stop_sender TEXT;"
            " ALTER TABLE sweeps ADD COLUMN stopped_at TEXT;"
            " PRAGMA writable_schema=ON;"
            " UPDATE sqlite_schema SET sql = replace(sql, '''interrupted'')', '''interrupted'',''timeout'')')"
            "  WHERE type = 'table' AND name = 'tasks' AND instr(sql, '''timeout''') = 0;"
            " PRAGMA writable_schema=OFF; PRAGMA schema_version=%d; PRAGMA user_version=5; COMMIT;",
            sv + 2);
        if (exec(s, sql, err, errlen, path)) {
            sqlite3_exec(s->db, "PRAGMA writable_schema=OFF; ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
}

double store_lock_wait_s = STORE_LOCK_WAIT_S;

/* A closed store for path (no connection, no lock), or NULL with err. */
static struct store *store_alloc(const char *path, int readonly, char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->lock_fd = -1;
    s->readonly = readonly;
    return s;
}

/* Opens s's connection with flags, with the busy timeout, and extended result codes when
 * asked. Returns 0, or -1 with err. */
static int store_connect(struct store *s, const char *path, int flags, int extended, char *err,
                         size_t errlen)
{
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open database: %s", path,
                 s->db ? sqlite3_errmsg(s->db) : "out of memory");
        return -1;
    }
    if (sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS) != SQLITE_OK ||
        (extended && sqlite3_extended_result_codes(s->db, 1) != SQLITE_OK)) {
        snprintf(err, errlen, "%s: cannot set up the connection: %s", path, sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

struct store *store_open(const char *path, char *err, size_t errlen)
{
    struct store *s = store_alloc(path, 0, err, errlen);
    if (!s)
        return NULL;
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto fail;
    }
    {
        /* SQLite keeps -wal and -shm files beside the database: its directory must be writable. */
        char *copy = strdup(path);
        const char *dir = copy ? dirname(copy) : ".";
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/.aimsweep-probe-XXXXXX", dir);
        int fd = mkstemp(probe);
        if (fd < 0) {
            snprintf(
                err, errlen,
                "%s: cannot write in directory %s (%s); the database and its -wal file need a writable directory",
                path, dir, strerror(errno));
            free(copy);
            goto fail;
        }
        close(fd);
        unlink(probe);
        free(copy);
    }
    if (exists && access(path, R_OK | W_OK) != 0) {
        snprintf(err, errlen, "%s: cannot open for writing: %s", path, strerror(errno));
        goto fail;
    }
    if (store_connect(s, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 1,
                      err, errlen))
        goto fail;
    int version, nobj;
    if (inspect(s, path, &version, &nobj, err, errlen))
        goto fail;
    s->lock_fd = open(path, O_RDWR | O_CLOEXEC);
    if (s->lock_fd < 0) {
        snprintf(err, errlen, "%s: cannot open for locking: %s", path, strerror(errno));
        goto fail;
    }
    double waited = 0;
    while (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK &&
           waited < store_lock_wait_s) {
        if (waited == 0)
            fprintf(stderr,
                    "aimsweep: %s: in use by another run; waiting up to %.0f s for it to end\n",
                    path, store_lock_wait_s);
        usleep((useconds_t)(STORE_LOCK_POLL_S * 1e6));
        waited += STORE_LOCK_POLL_S;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            snprintf(err, errlen, "%s: another aimsweep run is using this database (waited %.0f s)",
                     path, waited);
            goto fail;
        }
        /* some network file systems have no flock: go on, unguarded, and say so */
        fprintf(stderr,
                "aimsweep: %s: cannot lock (%s); make sure no other run uses this database\n", path,
                strerror(errno));
    }
    /* synchronous=FULL: every commit reaches the disk (the WAL is fsynced) before it counts.
     * With NORMAL, commits between checkpoints lived in the page cache only, and a file system
     * that went read-only lost all of them, schema included (tests/store_fsfail.sh). A
     * scratch database may trade that for speed with AIMSWEEP_SYNC=normal. */
    const char *sync = getenv("AIMSWEEP_SYNC");
    if (sync && strcmp(sync, "full") != 0 && strcmp(sync, "normal") != 0) {
        snprintf(err, errlen, "AIMSWEEP_SYNC='%s': must be full (the default) or normal", sync);
        goto fail;
    }
    if (exec(s,
             sync && !strcmp(sync, "normal")
                 ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                 : "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
             err, errlen, path))
        goto fail;
    if (store_register_functions(s->db)) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
        goto fail;
    }
    if (version == 1 && migrate_1_2(s, path, err, errlen))
        goto fail;
    if ((version == 1 || version == 2) && exec(s, migrate_2_3_sql, err, errlen, path)) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    if (version >= 1 && version <= 3 && exec(s, migrate_3_4_sql, err, errlen, path)) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    if (version >= 1 && version <= 4 && migrate_4_5(s, err, errlen, path))
        goto fail;
    if (version == 0) {
        char states[256], schema[16384], sql[16384 + 64];
        if (task_status_sql_list(TASK_STATUS_STORED, states, sizeof states) ||
            snprintf(schema, sizeof schema, schema_fmt, task_status_name(TASK_PENDING), states) >=
                (int)sizeof schema ||
            snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s PRAGMA user_version=%d; COMMIT;", schema,
                     STORE_SCHEMA_VERSION) >= (int)sizeof sql) {
            snprintf(err, errlen, "%s: the schema does not fit its buffer", path);
            goto fail;
        }
        if (exec(s, sql, err, errlen, path)) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
    }
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
            goto fail;
        }
    return s;
fail:
    store_close(&s);
    return NULL;
}

/* "file:PATH?immutable=1" with PATH percent-escaped. Returns 0, or -1 when it does not fit. */
static int uri_file(const char *path, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (o + 4 >= n)
            return -1;
        if (*c == '%' || *c == '?' || *c == '#' || *c <= ' ' || *c >= 0x7f)
            o += (size_t)snprintf(out + o, n - o, "%%%02X", *c);
        else
            out[o++] = (char)*c;
    }
    return snprintf(out + o, n - o, "?immutable=1") >= (int)(n - o) ? -1 : 0;
}

struct store *store_open_readonly(const char *path, char *err, size_t errlen)
{
    struct store *s = store_alloc(path, 1, err, errlen);
    if (!s)
        return NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        goto fail;
    }
    if (store_connect(s, path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, 0, err, errlen))
        goto fail;
    int version, nobj;
    if (inspect(s, path, &version, &nobj, err, errlen)) {
        /* A WAL database in a directory we cannot write (a read-only share): SQLite cannot make
         * its -shm file. With no -wal file left over, the file alone is the whole database and
         * can be read as immutable. */
        char wal[4096], uri[8192];
        int ec = sqlite3_errcode(s->db);
        snprintf(wal, sizeof wal, "%s-wal", path);
        if ((ec & 0xff) != SQLITE_READONLY && (ec & 0xff) != SQLITE_CANTOPEN)
            goto fail;
        if (access(wal, F_OK) == 0 || uri_file(path, uri, sizeof uri))
            goto fail;
        sqlite3_close(s->db);
        s->db = NULL;
        if (sqlite3_open_v2(uri, &s->db,
                            SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                            NULL) != SQLITE_OK ||
            inspect(s, path, &version, &nobj, err, errlen))
            goto fail;
    }
    if (version == 0) {
        snprintf(err, errlen, "%s: not an aimsweep results database (empty)", path);
        goto fail;
    }
    /* an older database read as it is: the views it lacks as temporary ones */
    if (version < 2 && exec(s, "CREATE TEMP VIEW " STORE_RECOVERY_SEGMENTS_BODY, err, errlen, path))
        goto fail;
    if (version < 4 &&
        exec(s, "CREATE TEMP VIEW " RECOVERY_VIEW_BODY "CREATE TEMP VIEW " CURVES_VIEW_BODY, err,
             errlen, path))
        goto fail;
    if (store_register_functions(s->db))
        goto fail;
    if (exec(s, "PRAGMA query_only=ON;", err, errlen, path))
        goto fail;
    return s;
fail:
    store_close(&s);
    return NULL;
}

/* Opens (open = 1) or commits (open = 0) the batch, unless it is so already. */
static int batch(struct store *s, int open)
{
    if (s->in_txn == open)
        return 0;
    STORE_CALL(s, sqlite3_exec(s->db, open ? "BEGIN IMMEDIATE" : "COMMIT", NULL, NULL, NULL));
    s->in_txn = open;
    return 0;
fail:
    /* a commit that failed on a full disk or an I/O error may have rolled the transaction
     * back itself: then there is none left to commit or roll back */
    if (!open && sqlite3_get_autocommit(s->db))
        s->in_txn = 0;
    return -1;
}

int store_begin(struct store *s) { return batch(s, 1); }
int store_commit(struct store *s) { return batch(s, 0); }

void store_rollback(struct store *s)
{
    if (!s->in_txn)
        return;
    /* unchecked on purpose: it runs after a failure, whose message it must not replace, and a
     * failed ROLLBACK means SQLite has already rolled the transaction back itself */
    (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_txn = 0;
}

/* Steps a write to its end and makes q ready for the next one. Returns 0, or -1 recorded. */
static int step_done(struct store *s, sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    if (rc != SQLITE_DONE) {
        store_failed(s, rc, "sqlite3_step");
        return -1;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return 0;
}

int64_t store_add_sweep(struct store *s, const char *name, const char *spec_text,
                        const struct store_provenance *pv, const struct params *pts,
                        const struct task *tasks, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    char now[40], hex[17], buf[512];
    int64_t sweep_id = -1;
    now_iso(now, sizeof now);
    if (s->in_txn && store_commit(s))
        goto fail;
    if (store_begin(s))
        goto fail;
    STORE_CALL(s, sqlite3_prepare_v2(
                      s->db,
                      "INSERT INTO sweeps(name, spec, created_at, version, git_commit, host,"
                      " compiler, blas, mpi, ranks) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
                      -1, &q, NULL));
    STORE_CALL(s, sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, spec_text, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    const char *pvs[6] = {pv->version, pv->git_commit, pv->host, pv->compiler, pv->blas, pv->mpi};
    for (int i = 0; i < 6; i++)
        if (pvs[i] && *pvs[i])
            STORE_CALL(s, sqlite3_bind_text(q, 4 + i, pvs[i], -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_int(q, 10, pv->ranks));
    if (step_done(s, q))
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
        if (step_done(s, ins))
            goto fail;
        STORE_CALL(s, sqlite3_bind_int64(link, 1, sweep_id));
        STORE_CALL(s, sqlite3_bind_text(link, 2, hex, 16, SQLITE_TRANSIENT));
        if (step_done(s, link))
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
    STORE_CALL(s, sqlite3_prepare_v2(s->db, stmt_sql[ST_STATUS], -1, &q, NULL));
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
            store_failed(s, r, "sqlite3_step");
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

int store_mark_running(struct store *s, uint64_t id, int rank, const char *host)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    now_iso(now, sizeof now);
    sqlite3_stmt *q = s->st[ST_RUNNING];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_int(q, 2, rank));
    STORE_CALL(s, sqlite3_bind_text(q, 3, host, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 4, now, -1, SQLITE_TRANSIENT));
    if (s->sweep_id > 0)
        STORE_CALL(s, sqlite3_bind_int64(q, 5, s->sweep_id));
    STORE_CALL(s, sqlite3_bind_text(q, 6, task_status_name(TASK_RUNNING), -1, SQLITE_STATIC));
    return step_done(s, q);
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
    return step_done(s, q);
fail:
    return -1;
}

int store_mark_error(struct store *s, uint64_t id, const char *message)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    now_iso(now, sizeof now);
    if (!s->in_txn && store_begin(s))
        return -1;
    sqlite3_stmt *q = s->st[ST_FINISH];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(TASK_ERROR), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 5, message, -1, SQLITE_TRANSIENT));
    return step_done(s, q);
fail:
    return -1;
}

int store_mark_interrupted(struct store *s, uint64_t id)
{
    char hex[17], now[40];
    task_id_hex(id, hex);
    now_iso(now, sizeof now);
    if (!s->in_txn && store_begin(s))
        return -1;
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_TRAJ], 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(s->st[ST_DEL_SUM], 1, hex, 16, SQLITE_TRANSIENT));
    if (step_done(s, s->st[ST_DEL_TRAJ]) || step_done(s, s->st[ST_DEL_SUM]))
        return -1;
    sqlite3_stmt *q = s->st[ST_FINISH];
    STORE_CALL(s, sqlite3_bind_text(q, 1, hex, 16, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 2, task_status_name(TASK_INTERRUPTED), -1, SQLITE_STATIC));
    STORE_CALL(s, sqlite3_bind_text(q, 3, now, -1, SQLITE_TRANSIENT));
    STORE_CALL(s, sqlite3_bind_text(q, 5, "no answer from its rank before the job stopped", -1,
                                    SQLITE_STATIC));
    return step_done(s, q);
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
    now_iso(now, sizeof now);
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
    if (step_done(s, s->st[ST_DEL_TRAJ]) || step_done(s, s->st[ST_DEL_SUM]))
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
            if (step_done(s, q))
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
        if (step_done(s, q))
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
    if (step_done(s, q))
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

/* Runs one statement with up to three text parameters (NULL binds NULL) and an optional integer
 * ?4. Returns 0 or -1. */
static int run_stmt(struct store *s, const char *sql, const char *a, const char *b, const char *c,
                    int64_t n)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    const char *v[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (v[i])
            sqlite3_bind_text(q, i + 1, v[i], -1, SQLITE_TRANSIENT);
    if (sqlite3_bind_parameter_count(q) >= 4)
        sqlite3_bind_int64(q, 4, n);
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
    if (run_stmt(s, "UPDATE sweeps SET command = ?1, part = ?2 WHERE sweep_id = ?4", command, part,
                 NULL, s->sweep_id))
        return -1;
    return store_commit(s);
}

int store_note_stop(struct store *s, int sig, const char *sender)
{
    char now[40], msg[300], sigs[16];
    now_iso(now, sizeof now);
    snprintf(sigs, sizeof sigs, "%d", sig);
    snprintf(msg, sizeof msg, "stopped by signal %d from %s; rerun to resume", sig, sender);
    if (!s->in_txn && store_begin(s))
        return -1;
    if (s->sweep_id > 0 &&
        run_stmt(
            s,
            "UPDATE sweeps SET stop_signal = ?1, stop_sender = ?2, stopped_at = ?3 WHERE sweep_id = ?4",
            sigs, sender, now, s->sweep_id))
        return -1;
    if (run_stmt(s, "UPDATE tasks SET status = 'interrupted', error = ?1 WHERE status = 'running'",
                 msg, NULL, NULL, 0))
        return -1;
    return store_commit(s);
}

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

/* The columns of tasks after sweep_id, as the merge copies them. */
#define STORE_TASK_COLS                                                                              \
    "decomposition, activation, d, lr, init_scale, tokens, teacher, width, weight_decay, order_m,"   \
    " closure, tau_end, seed, status, attempts, rank, host, started_at, finished_at, wall_s, error," \
    " info_exponent, records, log_grid, recovery_threshold, ode_noise, solvers, cost, params"

int store_merge(struct store *s, const char *part, struct store_merge_stats *ms, char *err,
                size_t errlen)
{
    memset(ms, 0, sizeof *ms);
    char finished[256], sql[4096];
    if (task_status_sql_list(TASK_STATUS_FINISHED, finished, sizeof finished))
        return -1;
    if (store_commit(s))
        goto dberr;
    if (run_stmt(s, "ATTACH DATABASE ?1 AS part", part, NULL, NULL, 0))
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
        if (run_stmt(
                s,
                "INSERT INTO main.sweeps(name, spec, created_at, version, git_commit, host, compiler, blas, mpi,"
                " ranks, command, part, stop_signal, stop_sender, stopped_at)"
                " SELECT name, spec, created_at, version, git_commit, host, compiler, blas, mpi, ranks, command,"
                " part, stop_signal, stop_sender, stopped_at FROM part.sweeps WHERE sweep_id = ?4",
                NULL, NULL, NULL, old)) {
            sqlite3_finalize(q);
            goto dberr;
        }
        int64_t nw = sqlite3_last_insert_rowid(s->db);
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", (long long)old);
        snprintf(b, sizeof b, "%lld", (long long)nw);
        if (run_stmt(
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
    sqlite3_exec(s->db, "DETACH DATABASE part", NULL, NULL, NULL);
    return 0;
dberr:
    snprintf(err, errlen, "%s: merge failed: %s", part, sqlite3_errmsg(s->db));
    store_rollback(s);
    sqlite3_exec(s->db, "DETACH DATABASE part", NULL, NULL, NULL);
    return -1;
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
