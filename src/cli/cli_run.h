/*
 * cli_run.h: what the three files of `aimsweep run` share (private to src/cli).
 *
 *   cli_run.c        the options, MPI set-up and tear-down, and the run's course on every rank
 *   cli_run_sweep.c  rank 0's preparation of the sweep (spec, grid, database, what is left to
 *                    do) and the scheduler's callbacks: the task a worker runs, and the store
 *                    side of started / finished / returned tasks with its batched commits
 *   cli_plan.c       `aimsweep plan` (no MPI)
 */
#ifndef AIMSWEEP_CLI_RUN_H
#define AIMSWEEP_CLI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/harness/sched.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"

/* Commit the open batch after this many results or this many seconds, whichever first. */
#define RUN_BATCH_RESULTS 256
#define RUN_BATCH_S 1.0
/* Progress lines when stderr is not a terminal. */
#define RUN_PROGRESS_LINE_S 10.0
/* Default grace after SIGUSR1 for running tasks. */
#define RUN_DEFAULT_GRACE_S 60.0
/* A task charged this many attempts (its rank crashed or stalled while running it: the
 * attempt rule of docs/cluster.md) is not started again but stored as error. */
#define RUN_DEFAULT_MAX_ATTEMPTS 3

/* Default interval of the checkpoints of running SGD and flow tasks. */
#define RUN_DEFAULT_CHECKPOINT_S 600.0

/* Exit codes of `aimsweep run` (README: "Exit codes"). */
enum {
    RUN_EXIT_FINISHED = 0,  /* every task of the sweep finished (done, diverged, ode_diverged) */
    RUN_EXIT_FAILED = 1,    /* the run itself failed (database write, MPI) */
    RUN_EXIT_BAD_INPUT = 2, /* bad options, sweep file or database: nothing was run */
    RUN_EXIT_ERRORS = 3,    /* every task finished, some of them with error or timeout */
    RUN_EXIT_STOPPED = 4    /* stopped by a signal or the time limit with work left: run again */
};
/* RUN_EXIT_ERRORS under its other name */
#define RUN_EXIT_SOME_ERROR RUN_EXIT_ERRORS
/* The most --set overrides one command line takes. */
#define RUN_MAX_SETS 32

struct run_opts {
    const char *sweep, *db;
    double grace, term_grace, time_limit, commit_s, end_time, task_timeout, ckpt_every, lock_wait;
    double stall_timeout; /* --stall-timeout, 0 = never */
    int retry_errors, quiet, max_attempts;
    int part_i, part_n;             /* --part i/N (1-based), 0/0 for the whole grid */
    char command[2048];             /* the command line as given */
    char ckpt_dir[768];             /* --checkpoint-dir, else DB.ckpt: checkpoints and marks */
    const char *ckpt_dir_opt;       /* --checkpoint-dir as given, or NULL */
    const char *journal;            /* --journal (wal, delete, auto), or NULL */
    const char *sets[RUN_MAX_SETS]; /* --set KEY=VALUE, in order */
    int nsets;
};

/* A line on stderr with a UTC timestamp in front ("2026-01-02T03:04:05Z aimsweep: ..."), and in
 * the run's log file when one is open (rank 0: DB.log, appended to by every run, so that what a
 * run said survives an mpirun that stops forwarding output while it is being killed). */
void run_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int run_log_open(const char *path);
void run_log_close(void);

/* Loads a sweep file and applies the --set overrides of o; the grid is not expanded. Returns
 * 0, or -1 with the message in err. Shared by run and plan. */
int run_load_spec(const char *path, const char *const *sets, int nsets, struct sweep_spec **spec,
                  char *err, size_t errlen);

/* Rank 0's state while the scheduler runs: the store, the batch, the progress line, the first
 * failure (failed, err) and the count of each status stored. */
struct run_ctx {
    struct store *store;
    const struct task *tasks; /* the tasks to run, indexed as the scheduler sees them */
    const char *name;
    size_t batch;
    double last_commit, last_line, commit_s;
    int tty, quiet, failed, final_shown, stop_noted;
    size_t nstatus[TASK_STATUS_COUNT];
    const char *ckpt_dir; /* every rank: where task checkpoints and marks live, or NULL */
    int rank;             /* every rank: its rank (the name of its mark) */
    double ckpt_every;
    size_t old_errors; /* tasks of the sweep in error from earlier runs, not rerun */
    /* the tasks of the sweep finished before this run, by status, and their number: progress
     * counts against the whole study */
    size_t before[TASK_STATUS_COUNT], nbefore;
    const char *db;
    char err[512];
};

/* The mark of the running task (cli_run_mark.c): run_mark_begin writes DIR/rank-RANK.hold with
 * the task's id before it starts (a crash of the rank adds "crash SIG"), run_mark_end removes
 * it when the task ends. run_marks_read gives the ids of the tasks whose marks say crash (and
 * the signals), at most cap; run_marks_clear removes every mark. 0, or -1 when DIR cannot be
 * read (a missing one has no marks). */
void run_mark_begin(const char *dir, int rank, const char *hex);
void run_mark_end(void);
int run_marks_read(const char *dir, uint64_t *crashed, int *sigs, size_t cap, size_t *n);
void run_marks_clear(const char *dir);

/* Rank 0's preparation: loads the sweep, expands the grid, makes the tasks, opens the database,
 * registers the sweep and picks what is left to do (todo shares the texts of tasks, which owns
 * them). Returns 0, or the exit code after printing: 2 for a sweep, grid or database that cannot
 * be used (nothing written), 1 for a write that failed or memory; the caller frees what was made
 * either way. Not collective (rank 0 alone; MPI only for the library's version string). */
int run_prepare(const struct run_opts *o, int nranks, struct sweep_spec **spec, struct params **pts,
                size_t *npts, struct task **tasks, struct store **store, struct task **todo,
                size_t *ntodo, size_t *old_errors);

/* Sets up c for a run storing into store (NULL on the other ranks) and the scheduler's
 * callbacks in ops, with c as their context. */
void run_ctx_init(struct run_ctx *c, const struct run_opts *o, struct store *store,
                  const struct task *todo, const char *name, struct sched_ops *ops);

/* Rank 0, at the end: the exit code (RUN_EXIT_*) from what is left of the sweep. */
int run_exit_code(struct run_ctx *c, const struct sched_stats *stats);

/* Rank 0, at the end: the count of each status, what was not started and why, the time, and
 * what the exit code means. */
void run_summary(const struct run_ctx *c, const struct sched_stats *stats, int code);

#endif
