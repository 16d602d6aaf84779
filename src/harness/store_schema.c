/*
 * store_schema.c: the shape of the results database (the tables and statuses are documented in
 * store.h): the schema a new file gets, its views, what every column means (store_column_doc),
 * the SQL function crossing(), and the migrations that bring an older file to the current
 * version, one transaction per step (migrate_1_2, then migrate_2_3_sql, migrate_3_4_sql,
 * migrate_4_5, migrate_5_6 and migrate_to_8), so that a failed migration leaves the file at
 * the last version it reached:
 *   2 -> 3  the general index and options of docs/model.md §10-11: tasks gains token_corr,
 *           index_kind, outputs, lr_schedule, init, init_trace, ode_mean (old rows get the
 *           defaults, which is what they ran with), trajectory gains mu (old rows: sqrt(d)
 *           trace, its definition Tr S/sqrt(d)), summary gains mu_star (NULL: not recorded),
 *           and the results view names the new columns.
 *   3 -> 4  tasks gains precision (how SGD stores the student; old rows: double, which is what
 *           they ran with), and the views recovery and curves are added.
 *   4 -> 5  the status timeout and the run's provenance and stop (migrate_4_5).
 *   5 -> 6  weak recovery with the sign for activations that are not even (migrate_5_6).
 *   6 -> 7  the kernels' path (kern.h) in the open: sweeps and tasks gain kernels, the path of
 *           rank 0 and of the rank that ran the task (old rows: NULL, not recorded)
 *           (migrate_6_7_sql).
 *   7 -> 8  the signed overlap in the curves view, and the tasks of the earlier goe_mean teacher
 *           renamed (migrate_to_8).
 *
 * A read-only open of an older file gets the views of the current version as temporary views,
 * summary among them (store_schema_temp_views); it renames nothing.
 *
 * The views group a point's seeds by the task's canonical text with its seed=N entry cut out
 * (POINT_KEY_SQL), so every parameter, present or added later, separates points. Quartiles
 * interpolate linearly between order statistics (numpy's default): the q-quantile of n sorted
 * values v_0..v_{n-1} is sum_i v_i max(0, 1 - |i - q(n - 1)|), one aggregate per quantile.
 * Spreads are sample standard deviations (n - 1), NULL for one seed. A seed counts when its
 * solver finished (done, diverged, ode_diverged); errors and interruptions do not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/harness/task.h"
#include "store_impl.h"

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

/* The overlap weak recovery reads from trajectory row r of task t (docs/model.md §8): m itself
 * when the task's activation makes the sign identifiable (SIGN = 0), |m| when the loss cannot
 * tell S from -S (SIGN = 1) or the parity is not known (NULL: the rule before version 6). SIGN
 * is an SQL expression for the task's parity: t.sign_symmetric (version 6), NULL (the views as
 * the migrations to versions 2 and 4 made them), act_sign_symmetric(t.activation) (temporary
 * views of an older file opened read-only). */
#define WR_OVERLAP_SQL(sign, r)                                                                    \
    "CASE WHEN " sign " = 0 THEN " r ".overlap ELSE abs(" r ".overlap) END"

/* recovery: one row per point (without the seed) and solver. anti_recovered counts the seeds of a
 * sign-identifiable activation whose m reached -recovery_threshold and never +recovery_threshold
 * (the student learned -S*). */
#define RECOVERY_VIEW_BODY(sign)                                                                                                                      \
    "recovery AS WITH runs AS (SELECT " POINT_KEY_SQL " AS point, t.task_id,"                                                                         \
    " t.decomposition, t.activation, t.info_exponent, t.d, t.lr, t.init_scale, t.tokens, t.teacher,"                                                  \
    " t.width, t.weight_decay, t.order_m, t.closure, t.tau_end, t.records, t.log_grid,"                                                               \
    " t.recovery_threshold, t.ode_noise, t.solvers, s.solver, s.status, s.tau_wr, s.samples_wr,"                                                      \
    " (" sign " = 0 AND s.samples_wr IS NULL AND (SELECT min(r.overlap) FROM trajectory r"                                                            \
    " WHERE r.task_id = s.task_id AND r.solver = s.solver) <= -t.recovery_threshold) AS anti"                                                         \
    " FROM tasks t JOIN summary s ON s.task_id = t.task_id"                                                                                           \
    " WHERE s.status IN ('done', 'diverged', 'ode_diverged')),"                                                                                       \
    " ranked AS (SELECT *, count(samples_wr) OVER pt AS n_rec,"                                                                                       \
    " row_number() OVER (PARTITION BY point, solver ORDER BY samples_wr IS NULL, samples_wr) - 1"                                                     \
    " AS rank_n,"                                                                                                                                     \
    " row_number() OVER (PARTITION BY point, solver ORDER BY tau_wr IS NULL, tau_wr) - 1 AS rank_t"                                                   \
    " FROM runs WINDOW pt AS (PARTITION BY point, solver))"                                                                                           \
    " SELECT point, " POINT_COLS_SQL ", solver, count(*) AS seeds,"                                                                                   \
    " count(samples_wr) AS recovered,"                                                                                                                \
    " " QUANTILE_SQL(                                                                                                                                 \
        "samples_wr", "rank_n",                                                                                                                       \
        "0.25") " AS n_wr_q1,"                                                                                                                        \
                " " QUANTILE_SQL(                                                                                                                     \
                    "samples_wr", "rank_n",                                                                                                           \
                    "0.5") " AS n_wr_median,"                                                                                                         \
                           " " QUANTILE_SQL(                                                                                                          \
                               "samples_wr", "rank_n",                                                                                                \
                               "0.75") " AS n_wr_q3,"                                                                                                 \
                                       " " QUANTILE_SQL(                                                                                              \
                                           "tau_wr", "rank_t",                                                                                        \
                                           "0.25") " AS tau_wr_q1,"                                                                                   \
                                                   " " QUANTILE_SQL(                                                                                  \
                                                       "tau_wr", "rank_t",                                                                            \
                                                       "0.5") " AS tau_wr_median,"                                                                    \
                                                              " " QUANTILE_SQL(                                                                       \
                                                                  "tau_wr", "rank_t",                                                                 \
                                                                  "0.75") " AS tau_wr_q3,"                                                            \
                                                                          " " QUANTILE_SQL(                                                           \
                                                                              "samples_wr",                                                           \
                                                                              "rank_n",                                                               \
                                                                              "0.5") " / (d * d * ln(d)) AS n_wr_per_d2lnd,"                          \
                                                                                     " avg(status IN ('diverged', 'ode_diverged')) AS frac_diverged," \
                                                                                     " coalesce(sum(anti), 0) AS anti_recovered"                      \
                                                                                     " FROM ranked GROUP BY point, solver;"

#define SD_SQL(x)                                                                                  \
    "sqrt(max(0.0, (sum(" x " * " x ") - sum(" x ") * sum(" x ") / count(" x "))"                  \
    " / nullif(count(" x ") - 1, 0)))"

/* curves: per point, solver and record, the mean and spread of |m|, of the signed m (version 8),
 * of Omega12 and of the loss. */
#define CURVES_VIEW_BODY                                                                                                       \
    "curves AS SELECT " POINT_KEY_SQL " AS point, t.decomposition, t.activation,"                                              \
    " t.info_exponent, t.d, t.lr, t.init_scale, t.tokens, t.teacher, t.width, t.weight_decay,"                                 \
    " t.order_m, t.closure, t.tau_end, t.records, t.log_grid, t.recovery_threshold, t.ode_noise,"                              \
    " t.solvers, r.solver, r.k, avg(r.tau) AS tau, avg(r.samples) AS samples,"                                                 \
    " count(r.overlap) AS seeds, avg(abs(r.overlap)) AS abs_m_mean,"                                                           \
    " " SD_SQL(                                                                                                                \
        "abs(r.overlap)") " AS abs_m_sd, min(abs(r.overlap)) AS abs_m_min,"                                                    \
                          " max(abs(r.overlap)) AS abs_m_max, avg(r.overlap) AS m_mean,"                                       \
                          " " SD_SQL(                                                                                          \
                              "r.overlap") " AS m_sd, min(r.overlap) AS m_min,"                                                \
                                           " max(r.overlap) AS m_max, avg(r.omega12) AS omega12_mean,"                         \
                                           " " SD_SQL("r.omega12") " AS omega12_sd, avg(r.loss) AS loss_mean, " SD_SQL(        \
                                               "r.loss") " AS loss_sd"                                                         \
                                                         " FROM tasks t JOIN summary s ON s.task_id = t.task_id"               \
                                                         " JOIN trajectory r ON r.task_id = s.task_id AND r.solver = s.solver" \
                                                         " WHERE s.status IN ('done', 'diverged', 'ode_diverged')"             \
                                                         " GROUP BY point, r.solver, r.k;"

/* Weak recovery for any threshold, from the stored trajectory (schema version 2; the signed
 * overlap since version 6). One row per record k of each solver with the record before it
 * (tau_prev, m_prev, samples_prev; NULL at k = 0) and m_max_before, the largest m of the records
 * before k (-1 at k = 0), where m is the overlap weak recovery reads (WR_OVERLAP_SQL: signed, or
 * |m| for a sign-symmetric activation). For a threshold th exactly one row of a run has m >= th
 * AND m_max_before < th: the first record at or above th. Its tau_wr is linear in tau on m
 * between the two records, tau_prev + (th - m_prev) / (m - m_prev) (tau - tau_prev), or tau at
 * k = 0 -- what obs.c stores in summary for the point's own recovery_threshold. */
#define STORE_RECOVERY_SEGMENTS_BODY(sign)                                                         \
    "recovery_segments AS SELECT task_id, solver, k,"                                              \
    " lag(tau) OVER w AS tau_prev, tau, lag(m) OVER w AS m_prev, m,"                               \
    " lag(samples) OVER w AS samples_prev, samples,"                                               \
    " coalesce(max(m) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1)"              \
    " AS m_max_before"                                                                             \
    " FROM (SELECT r.task_id, r.solver, r.k, r.tau, r.samples, " WR_OVERLAP_SQL(                   \
        sign, "r") " AS m"                                                                         \
                   " FROM trajectory r JOIN tasks t ON t.task_id = r.task_id)"                     \
                   " WINDOW w AS (PARTITION BY task_id, solver ORDER BY k);"

/* The results view (created with the schema, and again by the 2 -> 3 migration). */
#define RESULTS_VIEW_SQL                                                                               \
    "CREATE VIEW results AS SELECT"                                                                    \
    " t.task_id, t.sweep_id, t.decomposition, t.activation, t.info_exponent, t.d, t.lr, t.init_scale," \
    " t.tokens, t.teacher, t.width, t.weight_decay, t.order_m, t.closure, t.tau_end, t.seed,"          \
    " t.token_corr, t.index_kind, t.outputs, t.lr_schedule, t.init, t.init_trace, t.ode_mean,"         \
    " t.status AS task_status, s.solver, s.status, s.tau_wr, s.samples_wr, s.final_overlap,"           \
    " s.final_loss, s.max_gap_to_sgd, s.diverged_at_samples, s.wall_s, s.mu_star"                      \
    " FROM tasks t JOIN summary s ON s.task_id = t.task_id;"

/* The parity of a task's activation in the views of version 6: its column. */
#define WR_SIGN_V6 "t.sign_symmetric"

/* A format: its two %s are the status of a new task and the list of the statuses the database
 * may hold (task_status.h). */
static const char *const schema_fmt =
    "CREATE TABLE sweeps("
    " sweep_id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, created_at TEXT NOT NULL,"
    " version TEXT, git_commit TEXT, host TEXT, compiler TEXT, blas TEXT, mpi TEXT, ranks INTEGER,"
    " command TEXT, part TEXT, stop_signal INTEGER, stop_sender TEXT, stopped_at TEXT, kernels TEXT);"
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
    " ode_mean TEXT NOT NULL DEFAULT 'stiff', precision TEXT NOT NULL DEFAULT 'double',"
    " sign_symmetric INTEGER, kernels TEXT, ode_init TEXT NOT NULL DEFAULT 'matched');"
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
    "CREATE VIEW " STORE_RECOVERY_SEGMENTS_BODY(WR_SIGN_V6) "CREATE VIEW " RECOVERY_VIEW_BODY(
        WR_SIGN_V6) "CREATE VIEW " CURVES_VIEW_BODY;

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
    "CREATE VIEW " RECOVERY_VIEW_BODY("NULL") "CREATE VIEW " CURVES_VIEW_BODY
                                              "PRAGMA user_version = 4; COMMIT;";

/* 6 -> 7 (see the top of the file): the kernels' path of each run and task, NULL before. */
static const char *const migrate_6_7_sql =
    "BEGIN IMMEDIATE; ALTER TABLE sweeps ADD COLUMN kernels TEXT;"
    " ALTER TABLE tasks ADD COLUMN kernels TEXT; PRAGMA user_version = 7; COMMIT;";

/* Columns that hold counts: INTEGER since schema version 2 (REAL before, with values such as
 * 28000.000000000004 computed as tau d^2 / eta). */
static const char *const integer_columns[][2] = {{"trajectory", "samples"},
                                                 {"summary", "samples_wr"},
                                                 {"summary", "diverged_at_samples"},
                                                 {NULL, NULL}};

int store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen, const char *path)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int store_schema_inspect(sqlite3 *db, const char *path, int *version, int *nobjects, char *err,
                         size_t errlen)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT user_version FROM pragma_user_version),"
                                " (SELECT count(*) FROM sqlite_schema)",
                                -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        int ec = sqlite3_errcode(db);
        if (ec == SQLITE_NOTADB)
            snprintf(err, errlen, "%s: not an SQLite database (refusing to touch it)", path);
        else
            snprintf(err, errlen, "%s: cannot read database: %s", path, sqlite3_errmsg(db));
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
    {"sweeps", "kernels", "",
     "the kernels' path of rank 0: portable, avx2 or avx512 (docs/building.md); NULL before schema 7"},
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
    {NULL, "attempts", "", "times the task's own rank crashed or stalled while running it"},
    {NULL, "rank", "", "MPI rank that ran it last"},
    {NULL, "host", "", "host of that rank"},
    {"tasks", "kernels", "",
     "the kernels' path of that rank: portable, avx2 or avx512 (docs/building.md); NULL before "
     "schema 7"},
    {NULL, "started_at", "UTC", "when it was handed to a rank (ISO 8601)"},
    {NULL, "finished_at", "UTC", "when its result was stored (ISO 8601)"},
    {"tasks", "wall_s", "s", "wall-clock seconds of the whole task"},
    {"tasks", "error", "", "why the task failed (status error)"},
    {NULL, "info_exponent", "",
     "information exponent: lowest k >= 1 with c_k != 0 of a Hermite series at a standard Gaussian argument (NULL for relu, tanh, erf, softmax)"},
    {NULL, "cost", "s", "estimated core-seconds (cost model of task.c)"},
    {NULL, "params", "", "canonical parameter text: aimsweep single accepts every key=value"},
    {NULL, "solver", "", "sgd (online SGD), flow (population flow), ode (moment ODE)"},
    {NULL, "k", "", "record index, 0 .. records"},
    {NULL, "tau", "tau", "time tau = n eta / d^2 (n samples)"},
    {NULL, "samples", "samples",
     "samples n at tau (SGD: counted; flow, ode: tau d^2 / eta rounded, or n(tau) of lr_schedule two_phase)"},
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
     "weak recovery: tau at which m (|m| where sign_symmetric) first reaches recovery_threshold, interpolated between records; NULL: never"},
    {NULL, "sign_symmetric", "",
     "1: even activation, the loss cannot tell S from -S, weak recovery on |m|; 0: the sign is identifiable, weak recovery on m; NULL: unknown (|m|)"},
    {NULL, "samples_wr", "samples", "samples at tau_wr (interpolated, rounded); NULL: never"},
    {NULL, "final_overlap", "", "m at the last record"},
    {NULL, "final_loss", "", "Phi at the last record"},
    {NULL, "max_gap_to_sgd", "",
     "largest |Omega12 - Omega12 of sgd| over the records (NULL for sgd)"},
    {"summary", "status", "",
     "the solver's outcome: done, diverged, ode_diverged, error (an interrupted or timed-out task has no summary rows)"},
    {"results", "status", "",
     "the solver's outcome: done, diverged, ode_diverged, error (an interrupted or timed-out task has no summary rows)"},
    {NULL, "wall_s", "s", "wall-clock seconds of this solver"},
    {NULL, "diverged_at_samples", "samples",
     "samples at which the solver stopped on exploding values; NULL: it did not"},
    {NULL, "error", "", "the solver's error message"},
    {NULL, "tau_prev", "tau", "tau of record k - 1 (NULL at k = 0)"},
    {NULL, "m", "", "the overlap weak recovery reads at record k: m, or |m| where sign_symmetric"},
    {NULL, "m_prev", "", "that overlap at record k - 1 (NULL at k = 0)"},
    {NULL, "samples_prev", "samples", "samples at record k - 1 (NULL at k = 0)"},
    {NULL, "m_max_before", "", "largest such overlap of the records before k (-1 at k = 0)"},
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
    {"recovery", "anti_recovered", "",
     "seeds of a sign-identifiable activation whose m reached -recovery_threshold and never +recovery_threshold"},
    {"curves", "tau", "tau", "mean over the seeds of tau at record k"},
    {"curves", "samples", "samples", "mean over the seeds of the samples at record k"},
    {"curves", "abs_m_mean", "", "mean of |m| over the seeds at record k"},
    {"curves", "abs_m_sd", "",
     "sample standard deviation of |m| over the seeds (NULL for one seed)"},
    {"curves", "abs_m_min", "", "smallest |m| over the seeds"},
    {"curves", "abs_m_max", "", "largest |m| over the seeds"},
    {"curves", "m_mean", "", "mean of the signed m over the seeds at record k"},
    {"curves", "m_sd", "", "sample standard deviation of m over the seeds (NULL for one seed)"},
    {"curves", "m_min", "", "smallest m over the seeds"},
    {"curves", "m_max", "", "largest m over the seeds"},
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

/* crossing(th, x_prev, x, m_prev, m): x where the overlap reaches th, linear between (m_prev,
 * x_prev) and (m, x); x when there is no record before (m_prev NULL) or no change of m. It takes
 * the overlap as given: with a row of recovery_segments, whose m is signed or |m| by the task's
 * parity (WR_OVERLAP_SQL, version 6), it gives tau_wr (x = tau) and n_wr (x = samples) for any
 * threshold, by the rule of docs/model.md §8. */
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

/* act_sign_symmetric(activation): params_act_sign_symmetric of the activation text (1: even, the
 * loss cannot tell S from -S; 0: the sign is identifiable), NULL for a text that does not parse.
 * What tasks.sign_symmetric holds since version 6, for the temporary views of older files. */
static void sql_act_sign_symmetric(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
    (void)argc;
    struct act a;
    char perr[256];
    const char *text = (const char *)sqlite3_value_text(v[0]);
    if (!text || params_parse_act(text, &a, perr, sizeof perr))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int(ctx, params_act_sign_symmetric(&a));
}

int store_register_functions(sqlite3 *db)
{
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    return sqlite3_create_function(db, "crossing", 5, flags, NULL, sql_crossing, NULL, NULL) ==
                       SQLITE_OK &&
                   sqlite3_create_function(db, "act_sign_symmetric", 1, flags, NULL,
                                           sql_act_sign_symmetric, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* Steps q to its end and makes it ready for the next row; -1 when the step fails. */
static int step_reset(sqlite3_stmt *q)
{
    if (sqlite3_step(q) != SQLITE_DONE)
        return -1;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return 0;
}

/* The end of a migration step with two statements: both finalised, and the transaction rolled
 * back when the step failed (rc != 0). Returns rc. */
static int step_end(sqlite3 *db, int rc, sqlite3_stmt *q, sqlite3_stmt *up)
{
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    if (rc)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Schema 1 -> 2, in one transaction:
 *   - the count columns become INTEGER (integer_columns): each table is rebuilt from its own
 *     CREATE text with the column's type changed, the values rounded, every column copied, its
 *     indexes remade; the views are dropped first and made again after;
 *   - summary.tau_wr and samples_wr are recomputed from the trajectory, interpolated (obs.h);
 *   - tasks.params is rewritten in shortest numbers, for the rows whose text parses and hashes to
 *     the row's task_id (every row, unless the file was edited by hand): the id is unchanged;
 *   - the view recovery_segments. */
static int migrate_1_2(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    char **views = NULL;
    int nviews = 0, rc = -1;
    char sql[16384];
    if (store_exec(db, "BEGIN IMMEDIATE", err, errlen, path))
        return -1;
    if (sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_schema WHERE type = 'view'", -1, &q,
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
        if (store_exec(db, sql, err, errlen, path))
            goto out;
        if (sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_schema WHERE type = 'view'", -1,
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
        if (sqlite3_prepare_v2(db,
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
        if (store_exec(db, sql, err, errlen, path))
            goto out;
    }
    /* the canonical text in shortest numbers, for rows whose text gives back their id */
    if (sqlite3_prepare_v2(db, "SELECT task_id, params FROM tasks", -1, &q, NULL) ||
        sqlite3_prepare_v2(db, "UPDATE tasks SET params = ?2 WHERE task_id = ?1", -1, &up, NULL))
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
            sqlite3_bind_text(up, 2, canon, -1, SQLITE_TRANSIENT) != SQLITE_OK || step_reset(up))
            goto dberr;
    }
    for (int i = 0; i < nviews; i++) {
        snprintf(sql, sizeof sql, "%s;", views[i]);
        if (store_exec(db, sql, err, errlen, path))
            goto out;
    }
    /* tau_wr and samples_wr as version 2 computes them: interpolated between records */
    if (store_exec(
            db,
            "CREATE VIEW " STORE_RECOVERY_SEGMENTS_BODY(
                "NULL") "UPDATE summary SET (tau_wr, samples_wr) = (SELECT"
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
    snprintf(err, errlen, "%s: migration to schema 2: %s", path, sqlite3_errmsg(db));
out:
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    for (int i = 0; i < nviews; i++)
        free(views[i]);
    free(views);
    if (rc)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Schema 4 -> 5, in one transaction (a failure leaves version 4): the status timeout joins the
 * CHECK list of tasks.status (the documented way for a change that leaves the stored rows as
 * they are: the table's SQL text in sqlite_schema is edited and schema_version bumped); sweeps
 * gains command, part, stop_signal, stop_sender and stopped_at. */
static int migrate_4_5(sqlite3 *db, char *err, size_t errlen, const char *path)
{
    {
        int sv = 0;
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "PRAGMA schema_version", -1, &q, NULL) == SQLITE_OK &&
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
        if (store_exec(db, sql, err, errlen, path)) {
            sqlite3_exec(db, "PRAGMA writable_schema=OFF; ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
}

/* The signed weak recovery of version 6 (docs/model.md §8) from the stored trajectories, per run
 * of a sign-identifiable task (tasks.sign_symmetric = 0), into the temporary table wr6(task_id,
 * solver, tau_wr, samples_wr): what obs_recovery gives for the same records, except that samples
 * interpolate between the stored (rounded) counts, so samples_wr can differ by one for the flow
 * and the ODE, whose counts tau d^2 / eta are not integers in memory. */
#define WR6_TABLE_SQL                                                                              \
    "CREATE TEMP TABLE wr6 AS SELECT r.task_id, r.solver,"                                         \
    " crossing(t.recovery_threshold, r.tau_prev, r.tau, r.m_prev, r.m) AS tau_wr,"                 \
    " CAST(round(crossing(t.recovery_threshold, r.samples_prev, r.samples, r.m_prev, r.m))"        \
    " AS INTEGER) AS samples_wr"                                                                   \
    " FROM recovery_segments r JOIN tasks t ON t.task_id = r.task_id WHERE t.sign_symmetric = 0"   \
    " AND r.m >= t.recovery_threshold AND r.m_max_before < t.recovery_threshold;"                  \
    "CREATE UNIQUE INDEX temp.wr6_row ON wr6(task_id, solver);"

/* Schema 5 -> 6, in one transaction (a failure leaves version 5): weak recovery reads the signed
 * overlap for activations whose sign is identifiable (docs/model.md §8).
 *   - tasks gains sign_symmetric, set from each distinct activation text as the current parser
 *     reads it (params_act_sign_symmetric); a text that does not parse (only a hand-edited file
 *     has one) keeps NULL, and its rows keep the |m| rule and their values;
 *   - the views recovery_segments and recovery are made again (signed m; anti_recovered);
 *   - summary.tau_wr and samples_wr of every sign-identifiable run are recomputed from its stored
 *     trajectory (every record a solver produced is stored with its summary, in one
 *     transaction, so the trajectory holds what obs_recovery saw). A run whose signed m never
 *     reaches the threshold gets NULL. A run with no trajectory rows gets NULL as well: with
 *     |m| never reaching the threshold it was NULL already, and a value without the records
 *     behind it cannot say whether m or -m crossed, so it is not kept as a recovery. Even
 *     activations keep their rows as they are (the rule did not change for them). */
static int migrate_5_6(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    int rc = -1;
    if (store_exec(db,
                   "BEGIN IMMEDIATE; ALTER TABLE tasks ADD COLUMN sign_symmetric INTEGER;"
                   " DROP VIEW IF EXISTS recovery_segments; DROP VIEW IF EXISTS recovery;",
                   err, errlen, path))
        goto out;
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT activation FROM tasks", -1, &q, NULL) ||
        sqlite3_prepare_v2(db, "UPDATE tasks SET sign_symmetric = ?1 WHERE activation = ?2", -1,
                           &up, NULL))
        goto dberr;
    while (sqlite3_step(q) == SQLITE_ROW) {
        struct act a;
        char perr[256];
        const char *text = (const char *)sqlite3_column_text(q, 0);
        if (!text || params_parse_act(text, &a, perr, sizeof perr))
            continue;
        if (sqlite3_bind_int(up, 1, params_act_sign_symmetric(&a)) != SQLITE_OK ||
            sqlite3_bind_text(up, 2, text, -1, SQLITE_TRANSIENT) != SQLITE_OK || step_reset(up))
            goto dberr;
    }
    if (store_exec(db,
                   "CREATE VIEW " STORE_RECOVERY_SEGMENTS_BODY(
                       WR_SIGN_V6) "CREATE VIEW " RECOVERY_VIEW_BODY(WR_SIGN_V6) WR6_TABLE_SQL
                   "UPDATE summary SET (tau_wr, samples_wr) = (SELECT w.tau_wr, w.samples_wr FROM"
                   " wr6 w WHERE w.task_id = summary.task_id AND w.solver = summary.solver)"
                   " WHERE task_id IN (SELECT task_id FROM tasks WHERE sign_symmetric = 0);"
                   " DROP TABLE temp.wr6; PRAGMA user_version = 6; COMMIT;",
                   err, errlen, path))
        goto out;
    rc = 0;
    goto out;
dberr:
    snprintf(err, errlen, "%s: migration to schema 6: %s", path, sqlite3_errmsg(db));
out:
    if (step_end(db, rc, q, up))
        sqlite3_exec(db, "DROP TABLE IF EXISTS temp.wr6", NULL, NULL, NULL);
    return rc;
}

/* Schema 6 (or 7) -> 8, in one transaction (a failure leaves the version it started from):
 *   - tasks gains ode_init (old rows: matched, what they ran with);
 *   - the curves view is made again with the signed overlap beside |m| (m_mean, m_sd, m_min,
 *     m_max): an odd activation's sign is identifiable and its figures draw m;
 *   - the tasks of teacher goe_mean(m) made by the earlier definition, whose goe part kept its
 *     own trace (mu* = m + O(sqrt(2/d)); since version 8 mu* = m exactly, and such a task's id is
 *     hashed from another text, params.c), are renamed goe_mean_v1(m) in tasks.teacher and
 *     tasks.params, so that the views, which group seeds by that text, never pool them with the
 *     new teacher's seeds. A task is of the earlier definition when its text parses and does not
 *     hash to its stored id (a text that does not parse is left alone). The new name does not
 *     parse: such a task cannot be run again (a pending one fails with the parser's message),
 *     which is right, since this build no longer makes its teacher. */
static int migrate_to_8(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    int rc = -1;
    if (store_exec(db,
                   "BEGIN IMMEDIATE; ALTER TABLE tasks ADD COLUMN ode_init TEXT NOT NULL DEFAULT"
                   " 'matched'; DROP VIEW IF EXISTS curves; CREATE VIEW " CURVES_VIEW_BODY,
                   err, errlen, path))
        goto out;
    if (sqlite3_prepare_v2(db,
                           "SELECT task_id, params FROM tasks WHERE teacher LIKE 'goe_mean(%'"
                           " AND instr(params, ';teacher=goe_mean(') > 0",
                           -1, &q, NULL) ||
        sqlite3_prepare_v2(
            db,
            "UPDATE tasks SET teacher = 'goe_mean_v1(' || substr(teacher, 10),"
            " params = replace(params, ';teacher=goe_mean(', ';teacher=goe_mean_v1(')"
            " WHERE task_id = ?1",
            -1, &up, NULL))
        goto dberr;
    while (sqlite3_step(q) == SQLITE_ROW) {
        struct params p;
        char perr[256], hex[17];
        const char *id = (const char *)sqlite3_column_text(q, 0);
        if (!id || task_parse((const char *)sqlite3_column_text(q, 1), &p, perr, sizeof perr))
            continue;
        task_id_hex(params_task_id(&p), hex);
        if (!strcmp(hex, id))
            continue; /* already the teacher of version 8 */
        if (sqlite3_bind_text(up, 1, id, -1, SQLITE_TRANSIENT) != SQLITE_OK || step_reset(up))
            goto dberr;
    }
    if (store_exec(db, "PRAGMA user_version = 8; COMMIT;", err, errlen, path))
        goto out;
    rc = 0;
    goto out;
dberr:
    snprintf(err, errlen, "%s: migration to schema 8: %s", path, sqlite3_errmsg(db));
out:
    step_end(db, rc, q, up);
    return rc;
}

static int schema_update_steps(sqlite3 *db, int version, const char *path, char *err, size_t errlen)
{
    if (version == 1 && migrate_1_2(db, path, err, errlen))
        return -1;
    if ((version == 1 || version == 2) && store_exec(db, migrate_2_3_sql, err, errlen, path)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (version >= 1 && version <= 3 && store_exec(db, migrate_3_4_sql, err, errlen, path)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (version >= 1 && version <= 4 && migrate_4_5(db, err, errlen, path))
        return -1;
    if (version >= 1 && version <= 5 && migrate_5_6(db, path, err, errlen))
        return -1;
    if (version >= 1 && version <= 6 && store_exec(db, migrate_6_7_sql, err, errlen, path)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (version >= 1 && version <= 7 && migrate_to_8(db, path, err, errlen))
        return -1;
    if (version == 0) {
        char states[256], schema[16384], sql[16384 + 64];
        if (task_status_sql_list(TASK_STATUS_STORED, states, sizeof states) ||
            snprintf(schema, sizeof schema, schema_fmt, task_status_name(TASK_PENDING), states) >=
                (int)sizeof schema ||
            snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s PRAGMA user_version=%d; COMMIT;", schema,
                     STORE_SCHEMA_VERSION) >= (int)sizeof sql) {
            snprintf(err, errlen, "%s: the schema does not fit its buffer", path);
            return -1;
        }
        if (store_exec(db, sql, err, errlen, path)) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
}

int store_schema_update(sqlite3 *db, int version, const char *path, char *err, size_t errlen)
{
    if (!schema_update_steps(db, version, path, err, errlen))
        return 0;
    /* A step that finds what it adds already there: the file's user_version is older than its
     * schema (set by hand, or by another program). Said as such, not as SQLite's "duplicate
     * column name" of the step. */
    if (strstr(err, "duplicate column name") || strstr(err, "already exists")) {
        char sq[256];
        const char *col = strstr(err, "duplicate column name: ");
        if (col)
            snprintf(sq, sizeof sq, "the column %s", col + strlen("duplicate column name: "));
        else
            snprintf(sq, sizeof sq, "%s", strrchr(err, ':') ? strrchr(err, ':') + 2 : err);
        snprintf(err, errlen,
                 "%s: the file says it is of schema version %d (its PRAGMA user_version), but it"
                 " already has what a later version adds (%s): its user_version was changed by hand"
                 " or by another program. If the file is otherwise whole, set user_version to the"
                 " version of its columns (sqlite3 %s 'PRAGMA user_version = %d' when it has every"
                 " column of docs/model.md), or use a backup",
                 path, version, sq, path, STORE_SCHEMA_VERSION);
    }
    return -1;
}

int store_schema_temp_views(sqlite3 *db, int version, const char *path, char *err, size_t errlen)
{
    /* An older file read as it is: the views with the signed rule of version 6, through the SQL
     * function act_sign_symmetric() (store_register_functions) in place of the column; summary
     * is shadowed by a temporary view of the same name whose tau_wr and samples_wr are
     * recomputed the way migrate_5_6 recomputes them (queries that name summary, results or
     * recovery see the values of version 6; main.summary holds the stored ones). */
    if (version >= STORE_SCHEMA_VERSION) /* 7 changed no view; 8 the curves */
        return 0;
#define WR_SIGN_OLD "act_sign_symmetric(t.activation)"
    if (store_exec(db, "CREATE TEMP VIEW " STORE_RECOVERY_SEGMENTS_BODY(WR_SIGN_OLD), err, errlen,
                   path))
        return -1;
    char sql[4096];
    snprintf(sql, sizeof sql,
             "CREATE TEMP VIEW summary AS SELECT s.task_id, s.solver,"
             " CASE WHEN " WR_SIGN_OLD " = 0 THEN w.tau_wr ELSE s.tau_wr END AS tau_wr,"
             " CASE WHEN " WR_SIGN_OLD " = 0 THEN w.samples_wr ELSE s.samples_wr END AS samples_wr,"
             " s.final_overlap, s.final_loss, s.max_gap_to_sgd, s.status, s.wall_s,"
             " s.diverged_at_samples, s.error%s"
             " FROM main.summary s JOIN main.tasks t ON t.task_id = s.task_id"
             " LEFT JOIN (SELECT r.task_id, r.solver,"
             " crossing(t.recovery_threshold, r.tau_prev, r.tau, r.m_prev, r.m) AS tau_wr,"
             " CAST(round(crossing(t.recovery_threshold, r.samples_prev, r.samples, r.m_prev,"
             " r.m)) AS INTEGER) AS samples_wr FROM temp.recovery_segments r"
             " JOIN main.tasks t ON t.task_id = r.task_id"
             " WHERE r.m >= t.recovery_threshold AND r.m_max_before < t.recovery_threshold) w"
             " ON w.task_id = s.task_id AND w.solver = s.solver;",
             version >= 3 ? ", s.mu_star" : "");
    if (store_exec(db, sql, err, errlen, path))
        return -1;
    static const char results[] = RESULTS_VIEW_SQL; /* "CREATE VIEW results AS ..." */
    if (version >= 3 && (snprintf(sql, sizeof sql, "CREATE TEMP VIEW%s",
                                  results + strlen("CREATE VIEW")) >= (int)sizeof sql ||
                         store_exec(db, sql, err, errlen, path)))
        return -1;
    if (version < 3 && /* the results view of versions 1 and 2, on the temporary summary */
        store_exec(db,
                   "CREATE TEMP VIEW results AS SELECT t.task_id, t.sweep_id, t.decomposition,"
                   " t.activation, t.info_exponent, t.d, t.lr, t.init_scale, t.tokens, t.teacher,"
                   " t.width, t.weight_decay, t.order_m, t.closure, t.tau_end, t.seed,"
                   " t.status AS task_status, s.solver, s.status, s.tau_wr, s.samples_wr,"
                   " s.final_overlap, s.final_loss, s.max_gap_to_sgd, s.diverged_at_samples,"
                   " s.wall_s FROM main.tasks t JOIN summary s ON s.task_id = t.task_id;",
                   err, errlen, path))
        return -1;
    if (store_exec(db,
                   "CREATE TEMP VIEW " RECOVERY_VIEW_BODY(
                       WR_SIGN_OLD) "CREATE TEMP VIEW " CURVES_VIEW_BODY,
                   err, errlen, path))
        return -1;
#undef WR_SIGN_OLD
    return 0;
}
