/*
 * store.h: the results database (SQLite). Only rank 0 ever opens it.
 *
 * Schema (version STORE_SCHEMA_VERSION, kept in PRAGMA user_version; created whole, with its
 * indexes, when the file is new; older versions migrated by store_open, see store.c):
 *   sweeps(sweep_id, name, spec, created_at, version, git_commit, host, compiler, blas, mpi, ranks,
 *          command, part, stop_signal, stop_sender, stopped_at,       (these five: version 4)
 *          kernels)                                                    (version 7)
 *   tasks(task_id PRIMARY KEY, sweep_id, decomposition, activation, d, lr, init_scale, tokens,
 *         teacher, width, weight_decay, order_m, closure, tau_end, seed, status, attempts, rank,
 *         host, started_at, finished_at, wall_s, error,
 *         info_exponent, records, log_grid, recovery_threshold, ode_noise, solvers, cost, params,
 *         token_corr, index_kind, outputs, lr_schedule, init, init_trace, ode_mean, precision,
 *         sign_symmetric,                                              (version 6)
 *         kernels)                                                     (version 7)
 *   sweep_tasks(sweep_id, task_id)      which sweeps asked for which task
 *   trajectory(task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss, mu)
 *   summary(task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd,
 *           status, wall_s, diverged_at_samples, error, mu_star)
 *   view results = tasks JOIN summary (one row per task and solver)
 *   view recovery_segments: each record with the one before it, for tau_wr at any threshold
 *        (with the SQL function crossing(), store_register_functions)
 *   view recovery = per point without the seed (`point`: the canonical text without seed=N)
 *        and solver: seeds, recovered, n_wr_q1/median/q3, tau_wr_q1/median/q3 over the
 *        recovered seeds, n_wr_per_d2lnd (median n_wr / (d^2 ln d)), frac_diverged
 *   view curves = per point, solver and record k: tau, samples, seeds, abs_m_mean/sd/min/max,
 *        m_mean/sd/min/max (the signed m, version 8), omega12_mean/sd, loss_mean/sd over the seeds
 * Version 7: sweeps.kernels and tasks.kernels, the kernels' path (kern.h: portable, avx2, avx512)
 * of rank 0 and of the rank that ran the task; NULL in rows written before.
 * Version 8: the signed m in curves, and the tasks of the goe_mean
 * teacher before its own trace was removed renamed goe_mean_v1 (store_schema.c, migrate_to_8).
 * Version 6: weak recovery on the signed overlap for activations whose sign is identifiable
 * (tasks.sign_symmetric = 0; docs/model.md §8): recovery_segments' m is signed for them, the
 * recovery view counts anti_recovered, and the migration recomputes their tau_wr, samples_wr
 * (store_schema.c, migrate_5_6); a read-only open of an older file shows the same values through
 * temporary views (summary, results, recovery, recovery_segments, curves).
 * Version 4: the views recovery and curves (store.c; read-only opens of older files get them
 * as temporary views).
 * Version 2: sample counts (trajectory.samples, summary.samples_wr, diverged_at_samples) are
 * INTEGER, tau_wr/samples_wr interpolated between records, the view recovery_segments; a
 * version-1 file is migrated by store_open (store.c, migrate_1_2), and read as it is, with the
 * view as a temporary one, by store_open_readonly. What every column means: store_column_doc,
 * and docs/model.md §12.
 *
 * Every `aimsweep run` adds one sweeps row with its provenance (version, commit, host,
 * compiler, BLAS, MPI, ranks, kernels); sweep_tasks links it to every task it asked for, and
 * tasks.sweep_id names the run that computed the task (the one that registered it until then).
 * task_id is the 16-hex-digit id of task.h; `params` is the task's canonical text, enough to
 * rebuild it. Task status (tasks.status) is enum task_status (task_status.h, which says what
 * each means; its CHECK list is derived from it): pending, running (a task whose rank crashed or
 * stalled under it --max-attempts times becomes error), done, diverged, ode_diverged, error (message in
 * error), interrupted, timeout (version 4). summary.status is the same vocabulary per solver
 * (done, diverged, ode_diverged, error, interrupted, timeout: run_status_name). Writes are batched: a result replaces whatever rows its task had, in the same
 * transaction, so no row is ever duplicated and a killed job loses at most the open batch.
 */
#ifndef AIMSWEEP_STORE_H
#define AIMSWEEP_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/run/worker.h"

#define STORE_SCHEMA_VERSION 8
/* store_open waits this long (default) for the lock of a run that is ending (a killed job's
 * orphaned ranks hold it for a few seconds) before it refuses. */
#define STORE_LOCK_WAIT_S 30.0
extern double store_lock_wait_s;

struct store;

/* The journal mode a database at path gets (store_journal.c): "wal" on a local file system,
 * "delete" (the rollback journal) on a network one (NFS, Lustre, GPFS, ...: statfs's f_type),
 * or what store_journal_override (when set) or else AIMSWEEP_JOURNAL says (wal, delete, auto).
 * why gets a line for the log. NULL, with why saying so, for an override that is none of
 * these. */
extern const char *store_journal_override;
const char *store_journal_mode(const char *path, char *why, size_t n);
/* The name of a network file system by its statfs magic, or NULL. */
const char *store_fs_network(unsigned long magic);

struct store_provenance {
    const char *version, *git_commit, *host, *compiler, *blas, *mpi;
    int ranks;
    const char *kernels; /* the kernels' path of rank 0 (kern.h), NULL: not known */
};

/* Opens (creating if needed) a database for a run: checks it is an aimsweep database of a
 * known version, creates the schema on a new file, sets the journal mode (store_journal_mode), and takes an exclusive lock
 * so that two runs never share a file. Returns NULL with a one-line message in err. */
struct store *store_open(const char *path, char *err, size_t errlen);

/* Opens an existing database read-only (query, status, export, plan). NULL with err on
 * failure; a file that does not exist is an error, never created. */
struct store *store_open_readonly(const char *path, char *err, size_t errlen);

/* Copies what the write-ahead log holds into the database file itself: truncate = 0 is a
 * passive checkpoint (what no reader still needs, without waiting), truncate = 1 also empties
 * the -wal file (waiting for readers up to the busy timeout; passive when they stay). A batch
 * still open is committed first. Without it, a run of small results never reached SQLite's own
 * automatic checkpoint (1000 pages), and losing the -wal file lost every result and the schema.
 * A writing store makes a passive checkpoint after a commit once STORE_CHECKPOINT_COMMITS
 * commits or STORE_CHECKPOINT_S seconds (AIMSWEEP_CHECKPOINT_S) have passed since the last;
 * a run makes a truncating one when it drains and at its end. No-op when the journal is not a
 * WAL. Returns 0, or -1 (store_errmsg). */
#define STORE_CHECKPOINT_S 10.0
#define STORE_CHECKPOINT_COMMITS 64
int store_checkpoint(struct store *s, int truncate);

/* Checks the file with SQLite's PRAGMA quick_check (every page and record well formed: what
 * integrity_check does but the comparison of indexes with their tables), for at most budget_s
 * seconds (0: no limit). store_open runs it on every file it opens that has a schema (run,
 * merge, reset) and refuses a damaged one; status and query warn. Returns 0 for a whole file,
 * 1 for a damaged one with msg saying what to do (.recover, a backup), 2 when the budget ran
 * out first (msg says so), -1 when the check could not run (msg). Measured on a 1.09 GB
 * database: 3.7 s with the file in the page cache, 28-30 s read from disk; hence the budgets. */
#define STORE_QUICK_CHECK_ERRORS "10"
#define STORE_QUICK_CHECK_S 10.0
int store_quick_check(struct store *s, const char *path, double budget_s, char *msg, size_t n);
/* The budget: AIMSWEEP_QUICK_CHECK_S when set (0: no limit), else dflt. */
double store_check_budget_s(double dflt);

/* 1 when the database holds no sweeps and no tasks (a study just created), else 0. */
int store_is_empty(struct store *s);

/* Commits any open batch, finalises, closes. Accepts NULL; sets *s = NULL. */
void store_close(struct store **s);

/* The connection, for read-only commands that run their own SQL. */
sqlite3 *store_db(struct store *s);

/* Registers a sweep and its tasks (existing tasks are kept as they are). One transaction.
 * pts[i] and tasks[i] describe the same point. Returns the new sweep_id, or -1 with err. */
int64_t store_add_sweep(struct store *s, const char *name, const char *spec_text,
                        const struct store_provenance *pv, const struct params *pts,
                        const struct task *tasks, size_t n, char *err, size_t errlen);

/* For each task, its status in the database (TASK_NEW when absent) through status[i], and how
 * often it was handed to a rank through attempts[i] (attempts may be NULL). Which of them still
 * have to run: task_status_todo. Returns 0 or -1. */
int store_task_status(struct store *s, const struct task *tasks, size_t n, enum task_status *status,
                      int *attempts);

/* Batches: begin opens a transaction if none is open; commit commits it if open. */
int store_begin(struct store *s);
int store_commit(struct store *s);
/* Drops the open batch (after a failed write, so that no half-written result is kept). */
void store_rollback(struct store *s);

/* In the open batch: the task is handed to a rank, on host, whose kernels' path is kernels
 * (NULL: not known). */
int store_mark_running(struct store *s, uint64_t id, int rank, const char *host,
                       const char *kernels);

/* In the open batch: stores a result (r may be NULL when task_error says why), replacing the
 * task's earlier rows, and sets the task's status from its solvers. Interrupted tasks keep no
 * rows. Returns 0 or -1 with err. The status written is returned through status_out. */
int store_put_result(struct store *s, uint64_t id, const struct task_result *r,
                     const char *task_error, enum task_status *status_out, char *err,
                     size_t errlen);

/* In the open batch: the task failed without a result (e.g. it was running each time a job
 * died); status error with the message. */
int store_mark_error(struct store *s, uint64_t id, const char *message);

/* In the open batch: the task was handed out but given back unstarted: pending again, the
 * attempt not counted. */
int store_mark_pending(struct store *s, uint64_t id);

/* In the open batch: the task never came back (its rank stopped answering); it is rerun by
 * the next run. */
int store_mark_interrupted(struct store *s, uint64_t id);

/* In the open batch: the task's own rank failed while running it (it crashed, its mark says so,
 * or it stalled): one more attempt counted (docs/cluster.md, the attempt rule). */
int store_note_death(struct store *s, uint64_t id);

/* Commits at once: this run was stopped by signal sig from sender (recorded in its sweeps row),
 * and every task still running is marked interrupted, so that a job killed during the grace
 * period leaves none running (a task that still finishes replaces the mark with its result). */
int store_note_stop(struct store *s, int sig, const char *sender);

/* Commits: the command line and the part (i/N, or NULL) of this run, in its sweeps row. */
int store_set_run_info(struct store *s, const char *command, const char *part);

/* Puts the tasks matching the SQL condition `where` (over the columns of tasks) back to pending
 * with no attempts; their rows stay until a new result replaces them. *count: how many. Returns
 * 0, or -1 with err (a bad condition changes nothing). The condition is compiled as one
 * statement under an authorizer: it may read any table (subqueries) and call functions that
 * compute, but text after the statement, writes other than the reset itself, PRAGMA, ATTACH and
 * load_extension are refused before anything runs. */
int store_reset(struct store *s, const char *where, long *count, char *err, size_t errlen);

/* Checks that `where` is one SQL condition over `from` (e.g. "tasks t") that only reads the
 * database: the same rules as store_reset's condition (one statement, no writes, PRAGMA, ATTACH
 * or load_extension). Returns 0, or -1 with SQLite's message or what was refused in err. */
int store_condition_check(sqlite3 *db, const char *from, const char *where, char *err,
                          size_t errlen);

/* Merges the database at path `part` (same schema version, not in use) into s: every sweeps row
 * of the part is copied with its provenance under a new id (a row the study has already, the
 * same run merged before, is not copied again: merging a part twice changes nothing), tasks the study lacks are added
 * with their rows, and a task finished in the part replaces the study's when the study's is not
 * finished or finished earlier (finished_at); no row is ever duplicated. One transaction. */
struct store_merge_stats {
    long sweeps, added, replaced, kept;
};
int store_merge(struct store *s, const char *part, struct store_merge_stats *ms, char *err,
                size_t errlen);

/* The count of each status over the tasks this run's sweep asked for. Returns 0 or -1. */
int store_sweep_counts(struct store *s, size_t counts[TASK_STATUS_COUNT]);

/* The sweeps of another name the database holds, as "fig1 (72 points), fig2 (30 points)" in
 * buf (at most five named). Returns how many such names there are, 0, or -1. */
int store_other_sweeps(struct store *s, const char *name, char *buf, size_t n);

/* Weak recovery over this run's sweep, per solver (as the view recovery counts it): of the
 * finished runs (done, diverged, ode_diverged), those that reached it (samples_wr not NULL).
 * Fills up to max solvers in order (sgd, flow, ode) and returns how many, or -1. */
int store_sweep_recovery(struct store *s, char solver[][8], size_t *recovered, size_t *runs,
                         int max);

/* Feeds the cost model with every finished solver run of the database (summary.wall_s).
 * Returns how many, or -1. */
long store_learn_costs(struct store *s, struct cost_model *cm);
/* Registers the SQL function crossing(th, x_prev, x, m_prev, m) on a connection (every
 * connection store.c opens has it): with a row of the view recovery_segments, tau_wr and n_wr
 * for any threshold th. Returns 0 or -1. */
int store_register_functions(sqlite3 *db);

/* The meaning and unit of a column of a table or view ("" when it has no unit), or NULL. A
 * parameter column's meaning is its line of the parameter table. The pointer is valid until the
 * next call. */
struct store_column_doc {
    const char *table, *column, *unit, *meaning;
};
const struct store_column_doc *store_column_doc(const char *table, const char *column);

/* The journal mode store_open chose and why, for the log ("" for a read-only store). */
const char *store_journal(const struct store *s);

/* The last SQLite message. */
const char *store_errmsg(struct store *s);

#endif
