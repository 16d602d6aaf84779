/*
 * sched.h: the scheduler. Rank 0 hands tasks to worker ranks as they ask for work, largest
 * estimated cost first, and gets back each result as opaque bytes. It moves task records
 * (id, text, cost) and bytes only: what a task means is the callbacks' business.
 *
 * A worker holds at most two tasks: the one it runs and, when tasks are short, the next
 * one, so that it never waits for rank 0. With one rank, rank 0 runs the tasks itself (serial
 * mode). Signals: SIGUSR1, SIGTERM and SIGINT (sched_signals_install on every rank) make rank 0
 * stop handing out work; held tasks that have not started come back (ops.returned); running
 * tasks get opts.grace_s seconds (at most SCHED_TERM_GRACE_S after SIGTERM or SIGINT, also when
 * one follows SIGUSR1, and never past the job's end less SCHED_END_MARGIN_S) to finish, then are
 * asked to stop through their stop callback; their results still come back (interrupted), and
 * sched_run returns normally. A task that runs longer than opts.task_timeout_s is asked to
 * stop with OBS_STOP_TIMEOUT.
 *
 * Stalled ranks: a worker's running task sends rank 0 a heartbeat from its stop callback (the
 * solvers poll it every few milliseconds) at most every sched_beat_s(opts) seconds. A worker
 * that holds tasks and has sent nothing for opts.stall_timeout_s seconds of rank 0's listening
 * (SIGSTOP, a hung kernel call, a dead network link) is taken for stalled: its tasks go back to
 * the front of the queue for the other ranks (ops.returned is told), it is sent STOP and DONE,
 * and everything it sends afterwards (a late result) is ignored and reported (ops.note), so
 * that ops.finished sees each task once. Idle workers wait until no task is held anywhere,
 * so that a stalled rank's tasks always find a rank to rerun them. A stalled rank that never
 * answers again cannot finalise: sched_stats.stalled_silent says so, and the caller ends the
 * job with MPI_Abort.
 */
#ifndef AIMSWEEP_SCHED_H
#define AIMSWEEP_SCHED_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Grace after SIGTERM: Slurm sends SIGKILL KillWait (default 30 s) after it. */
#define SCHED_TERM_GRACE_S 10.0
/* The stop request goes out at least this long before the job's end (sched_opts.end_time):
 * time for the last results, their commit and MPI_Finalize. */
#define SCHED_END_MARGIN_S 15.0
/* After the stop request, how long rank 0 still waits for results before giving up on them. */
#define SCHED_STOP_WAIT_S 30.0
/* Default of sched_opts.stall_timeout_s: far longer than any stretch in which a healthy task
 * does not poll its stop callback (measured, on a loaded machine: 21 s between two flow steps of
 * softmax with T = 16, 6 s building an untied order-6 moment system, 4 s building a d = 2000
 * model). */
#define SCHED_STALL_TIMEOUT_S 600.0
/* A running task's heartbeat interval, at most; a quarter of the stall timeout when that is
 * shorter (sched_beat_s). */
#define SCHED_BEAT_S 1.0

struct sched_task {
    uint64_t id;
    const char *text;
    double cost; /* estimated seconds (any consistent unit; rescaled by measured wall times) */
};

struct sched_progress {
    size_t total, done, running, skipped;
    double elapsed_s, rate, eta_s;
    int stopping;
};

struct sched_ops {
    /* Every rank that computes (workers, or rank 0 alone): runs one task, returning its bytes
     * in *out (malloc'd, freed by the scheduler). stop(stop_ctx) != 0 asks it to stop early.
     * Returns 0, or -1 when no bytes could be made at all (the task then counts as lost). */
    int (*run)(void *ctx, uint64_t id, const char *text, int (*stop)(void *), void *stop_ctx,
               unsigned char **out, size_t *len);
    /* Rank 0 only: task `index` was handed to `rank` on `host`, whose kernels' path (kern.h) is
     * `kernels` (NULL: not known). Nonzero return aborts. */
    int (*started)(void *ctx, size_t index, int rank, const char *host, const char *kernels);
    /* Rank 0 only: bytes of task `index` (NULL, 0 when the task was lost: never finished).
     * Nonzero return aborts the sweep (running tasks are stopped, nothing more handed out). */
    int (*finished)(void *ctx, size_t index, int rank, const unsigned char *bytes, size_t len);
    /* Rank 0 only: task `index` was handed out but given back unstarted (the sweep is
     * stopping); it has to run another time. May be NULL. Nonzero return aborts. */
    int (*returned)(void *ctx, size_t index);
    /* Rank 0 only, often (about every 0.2 s and after every result): progress. */
    void (*tick)(void *ctx, const struct sched_progress *pr);
    /* Rank 0 only: an event worth a line in the log (a stalled rank, a late result ignored).
     * May be NULL (then the line goes to stderr). */
    void (*note)(void *ctx, const char *line);
    void *ctx;
    /* Rank 0 only: the rank running task `index` was taken for stalled while the other ranks of
     * its host still answer: the task is charged an attempt (its own rank failed while running
     * it; docs/cluster.md). A host silent as a whole charges nothing. May be NULL. Nonzero
     * return aborts. */
    int (*charged)(void *ctx, size_t index);
};

struct sched_opts {
    double grace_s;  /* after SIGUSR1: how long running tasks may go on */
    double deadline; /* wall-clock end (seconds since the epoch), 0 = none: no task is started
                        whose scaled estimate would end after it */
    double end_time; /* the job's end (seconds since the epoch), 0 = unknown: the grace after a
                        signal never runs past end_time - SCHED_END_MARGIN_S */
    double task_timeout_s;  /* a task running longer is stopped (its stop callback answers
                              OBS_STOP_TIMEOUT), 0 = no limit; every rank reads it */
    double term_grace_s;    /* the grace after SIGTERM or SIGINT, at most; 0 = SCHED_TERM_GRACE_S */
    double stall_timeout_s; /* a worker holding tasks and silent this long is stalled (see
                               above), 0 = never; every rank reads it (the heartbeat) */
};

/* The heartbeat interval of a running task under opts (0: none). Not collective. */
double sched_beat_s(const struct sched_opts *opts);

struct sched_stats {
    size_t done, lost, not_started, skipped_deadline, returned;
    size_t stalled;        /* workers taken for stalled */
    size_t reassigned;     /* tasks taken from stalled workers and queued again */
    size_t late_ignored;   /* results that came from stalled workers, ignored */
    size_t stalled_silent; /* stalled workers that never answered again: the job must end
                              with MPI_Abort (they cannot finalise) */
    size_t lost_ranks;     /* workers that could not be told to stop (a dead peer): their tasks
                              were put back; the job must end with MPI_Abort */
    int signal;            /* the signal that stopped the sweep, or 0 */
    int aborted;           /* a callback asked to abort */
    double elapsed_s;
};

/* Installs SIGUSR1 and SIGTERM handlers that only set a flag. Call on every rank (a rank
 * without them would die of SIGUSR1, the default action). Not collective. */
void sched_signals_install(void);

/* The signal that counts so far (SIGTERM or SIGINT over SIGUSR1) or 0. */
int sched_signal_received(void);
/* Who sent it (siginfo: the sending process and its user; 0, 0 from the kernel or unknown). */
void sched_signal_origin(int *pid, int *uid);

/* Collective over comm. Rank 0 passes the tasks (others pass NULL, 0 and are ignored) and
 * gets stats; every rank returns 0, or -1 on an MPI failure (reported on stderr with the
 * failed call, mpicheck.h) or an abort (stats->aborted); rank 0 returns -2 when workers did
 * not answer within SCHED_STOP_WAIT_S of a stop. After -2, or -1 on rank 0 without
 * stats->aborted, the held tasks were passed to ops.finished as lost and the workers may still
 * wait: the caller should end the job with MPI_Abort. Sets MPI_ERRORS_RETURN on comm, so that
 * MPI failures come back as codes. */
int sched_run(MPI_Comm comm, const struct sched_task *tasks, size_t n, const struct sched_ops *ops,
              const struct sched_opts *opts, struct sched_stats *stats);

#endif
