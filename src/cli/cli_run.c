/*
 * cli_run.c: `aimsweep run`: the options, MPI, and the run's course on every rank.
 *
 * Rank 0 prepares the sweep (cli_run_sweep.c) and says whether there is work; then every rank
 * enters the scheduler with the callbacks of cli_run_sweep.c. A bad sweep file or database is
 * reported by rank 0 before any work, exit code 2 on every rank; a signal ends the run early
 * with exit code 0 and the database resumable. The deadline is --time-limit from now, or a
 * grace period before SLURM_JOB_END_TIME, whichever comes first.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/text.h"
#include "aimsweep/cli/args.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/mpicheck.h"
#include "cli_run.h"

static void run_usage(FILE *f)
{
    fprintf(
        f,
        "usage: aimsweep run SWEEP.yaml --db FILE [--set KEY=VALUE ...] [--grace S] [--term-grace S]\n"
        "                    [--time-limit S] [--end-time T] [--task-timeout S] [--stall-timeout S]\n"
        "                    [--checkpoint-interval S] [--checkpoint-dir DIR] [--journal MODE]\n"
        "                    [--part I/N] [--lock-wait S] [--commit-interval S] [--max-attempts N]\n"
        "                    [--retry-errors] [--quiet]\n"
        "       mpirun -n N aimsweep run SWEEP.yaml --db FILE ...\n\n"
        "  --db FILE         results database (created if missing; reruns resume it)\n"
        "  --set KEY=VALUE   override a parameter of the sweep file for every point (repeatable;\n"
        "                    a grid axis of that key is replaced by the one value)\n"
        "  --grace S         after SIGUSR1, running tasks may finish for S seconds (default %.0f;\n"
        "                    never past the job's end)\n"
        "  --term-grace S    the grace after SIGTERM or SIGINT, at most (default %.0f; Slurm kills\n"
        "                    KillWait seconds after its SIGTERM)\n"
        "  --time-limit S    do not start a task expected to end more than S seconds from now\n"
        "  --end-time T      the job ends at T (seconds since 1970; default SLURM_JOB_END_TIME):\n"
        "                    no task starts that is expected to end after T - grace, and the\n"
        "                    grace after a signal ends %.0f s before T\n"
        "  --task-timeout S  stop a task that has run S seconds: status timeout\n"
        "  --stall-timeout S a worker rank silent for S seconds (no heartbeat: stopped, hung) is\n"
        "                    taken for stalled: its tasks run on other ranks, its late results are\n"
        "                    ignored (default %.0f; 0 = never)\n"
        "  --checkpoint-interval S  SGD and flow tasks save their state every S seconds of wall\n"
        "                    time and when stopped, in the checkpoint directory (default %.0f; 0 = only\n"
        "                    when stopped)\n"
        "  --checkpoint-dir DIR  where checkpoints and the ranks' marks of running tasks go\n"
        "                    (default FILE.ckpt; every node must see it; one run per directory)\n"
        "  --journal MODE    the database's journal: wal, delete (the rollback journal) or auto\n"
        "                    (default, also AIMSWEEP_JOURNAL: wal on a local file system, delete\n"
        "                    on NFS, Lustre, GPFS and other network ones; docs/cluster.md)\n"
        "  --part I/N        run only the I-th of N shares of the grid (by task id; I = 1..N)\n"
        "  --lock-wait S     wait up to S seconds for a run that still holds the database (default %.0f)\n"
        "  --commit-interval S  commit results at least every S seconds (default %g): the most\n"
        "                    a killed job loses\n"
        "  --max-attempts N  a task whose own rank crashed or stalled under it N times is stored as\n"
        "                    error, not rerun (default %d); a job stopped or killed from outside, or\n"
        "                    a node lost, charges no task (docs/cluster.md)\n"
        "  --retry-errors    rerun tasks whose status is error or timeout\n"
        "  --quiet           no progress on stderr\n\n"
        "  Exit status: 0 every task finished, %d every task finished and some with error or timeout\n"
        "  (aimsweep status lists them), %d stopped with work left (a signal or the time limit: run\n"
        "  again), 1 a failure of the run itself, 2 bad input.\n",
        RUN_DEFAULT_GRACE_S, SCHED_TERM_GRACE_S, SCHED_END_MARGIN_S, SCHED_STALL_TIMEOUT_S,
        RUN_DEFAULT_CHECKPOINT_S, STORE_LOCK_WAIT_S, RUN_BATCH_S, RUN_DEFAULT_MAX_ATTEMPTS,
        RUN_EXIT_ERRORS, RUN_EXIT_STOPPED);
}

static int parse_double(const char *s, double *x)
{
    char *end;
    if (!s)
        return -1;
    errno = 0;
    *x = strtod(s, &end);
    return !*s || *end || errno || !isfinite(*x) ? -1 : 0;
}

static const char *const run_flags[] = {"db",
                                        "set",
                                        "grace",
                                        "term-grace",
                                        "time-limit",
                                        "end-time",
                                        "task-timeout",
                                        "stall-timeout",
                                        "checkpoint-interval",
                                        "part",
                                        "lock-wait",
                                        "commit-interval",
                                        "checkpoint-dir",
                                        "journal",
                                        "max-attempts",
                                        "retry-errors",
                                        "quiet",
                                        "help",
                                        NULL};

/* "I/N" with 1 <= I <= N into *i, *n. Returns 0, or -1. */
static int parse_part(const char *s, int *i, int *n)
{
    char *end;
    if (!s)
        return -1;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/' || errno)
        return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || errno || b < 1 || b > 1000000 || a < 1 || a > b)
        return -1;
    *i = (int)a;
    *n = (int)b;
    return 0;
}

/* Returns 0, 1 for --help, or 2 after printing the error. */
static int run_parse(int argc, char **argv, struct run_opts *o, int loud)
{
    struct cli_seen seen = {0};
    memset(o, 0, sizeof *o);
    o->grace = RUN_DEFAULT_GRACE_S;
    o->max_attempts = RUN_DEFAULT_MAX_ATTEMPTS;
    o->commit_s = RUN_BATCH_S;
    o->ckpt_every = RUN_DEFAULT_CHECKPOINT_S;
    o->term_grace = SCHED_TERM_GRACE_S;
    o->lock_wait = STORE_LOCK_WAIT_S;
    o->stall_timeout = SCHED_STALL_TIMEOUT_S;
    size_t cl = 0;
    for (int i = 0; i < argc && cl + 2 < sizeof o->command; i++)
        cl += (size_t)snprintf(o->command + cl, sizeof o->command - cl, "%s%s",
                               i ? " " : "aimsweep ", argv[i]);
    cli_args_silence(!loud); /* only rank 0 speaks */
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *what = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rc = 1;
            break;
        }
        if (cli_nonempty("run", "argument", a)) {
            rc = 2;
            break;
        }
        if (a[0] != '-') {
            if (o->sweep) {
                cli_say("aimsweep run: a second sweep file '%s' (after '%s'); one sweep per run\n",
                        a, o->sweep);
                rc = 2;
            } else
                o->sweep = a;
            continue;
        }
        const char *name = a + 2;
        int takes = !strcmp(a, "--db") || !strcmp(a, "--set") || !strcmp(a, "--grace") ||
                    !strcmp(a, "--time-limit") || !strcmp(a, "--commit-interval") ||
                    !strcmp(a, "--max-attempts") || !strcmp(a, "--term-grace") ||
                    !strcmp(a, "--end-time") || !strcmp(a, "--task-timeout") ||
                    !strcmp(a, "--stall-timeout") || !strcmp(a, "--checkpoint-interval") ||
                    !strcmp(a, "--part") || !strcmp(a, "--lock-wait") ||
                    !strcmp(a, "--checkpoint-dir") || !strcmp(a, "--journal");
        if (!takes && strcmp(a, "--retry-errors") != 0 && strcmp(a, "--quiet") != 0) {
            rc = cli_unknown("run", a, run_flags);
            break;
        }
        if (strcmp(a, "--set") != 0 && cli_once(&seen, "run", name)) {
            rc = 2;
            break;
        }
        if (takes && (!v || cli_nonempty("run", "value", v) || !strncmp(v, "--", 2))) {
            if (!v || !strncmp(v, "--", 2))
                cli_say("aimsweep run: %s needs a value\n", a);
            rc = 2;
            break;
        }
        if (takes)
            i++;
        if (!strcmp(a, "--db"))
            o->db = v;
        else if (!strcmp(a, "--set")) {
            if (o->nsets == RUN_MAX_SETS) {
                cli_say("aimsweep run: more than %d --set overrides\n", RUN_MAX_SETS);
                rc = 2;
            } else
                o->sets[o->nsets++] = v;
        } else if (!strcmp(a, "--grace")) {
            if (parse_double(v, &o->grace) || o->grace < 0)
                what = "a number of seconds >= 0";
        } else if (!strcmp(a, "--time-limit")) {
            if (parse_double(v, &o->time_limit) || o->time_limit <= 0)
                what = "a number of seconds > 0";
        } else if (!strcmp(a, "--term-grace")) {
            if (parse_double(v, &o->term_grace) || o->term_grace < 0)
                what = "a number of seconds >= 0";
        } else if (!strcmp(a, "--end-time")) {
            if (parse_double(v, &o->end_time) || o->end_time <= 0)
                what = "seconds since 1970 (date +%s), > 0";
        } else if (!strcmp(a, "--task-timeout")) {
            if (parse_double(v, &o->task_timeout) || o->task_timeout <= 0)
                what = "a number of seconds > 0";
        } else if (!strcmp(a, "--stall-timeout")) {
            if (parse_double(v, &o->stall_timeout) || o->stall_timeout < 0)
                what = "a number of seconds >= 0 (0: never)";
        } else if (!strcmp(a, "--checkpoint-interval")) {
            if (parse_double(v, &o->ckpt_every) || o->ckpt_every < 0)
                what = "a number of seconds >= 0 (0: only when stopped)";
        } else if (!strcmp(a, "--lock-wait")) {
            if (parse_double(v, &o->lock_wait) || o->lock_wait < 0)
                what = "a number of seconds >= 0";
        } else if (!strcmp(a, "--part")) {
            if (parse_part(v, &o->part_i, &o->part_n))
                what = "I/N with 1 <= I <= N, e.g. 2/8";
        } else if (!strcmp(a, "--commit-interval")) {
            if (parse_double(v, &o->commit_s) || o->commit_s < 0)
                what = "a number of seconds >= 0";
        } else if (!strcmp(a, "--max-attempts")) {
            double x;
            if (parse_double(v, &x) || x < 1 || x > 1e6 || x != (int)x)
                what = "an integer from 1 to 1000000";
            else
                o->max_attempts = (int)x;
        } else if (!strcmp(a, "--checkpoint-dir")) {
            o->ckpt_dir_opt = v;
        } else if (!strcmp(a, "--journal")) {
            if (!v || (strcmp(v, "wal") != 0 && strcmp(v, "delete") != 0 && strcmp(v, "auto") != 0))
                what = "wal, delete or auto";
            else
                o->journal = v;
        } else if (!strcmp(a, "--retry-errors"))
            o->retry_errors = 1;
        else if (!strcmp(a, "--quiet"))
            o->quiet = 1;
        if (what) {
            cli_say("aimsweep run: %s '%s': must be %s\n", a, v, what);
            rc = 2;
        }
    }
    if (!rc && (!o->sweep || !o->db)) {
        cli_say("aimsweep run: need %s\n", !o->sweep && !o->db ? "a sweep file and --db FILE"
                                           : !o->sweep         ? "a sweep file"
                                                       : "--db FILE (the results database)");
        if (loud)
            run_usage(stderr);
        rc = 2;
    }
    cli_args_silence(0);
    if (rc)
        return rc;
    const char *jenv = getenv("AIMSWEEP_JOURNAL");
    if (!o->journal && jenv && *jenv && strcmp(jenv, "wal") != 0 && strcmp(jenv, "delete") != 0 &&
        strcmp(jenv, "auto") != 0) {
        if (loud)
            fprintf(stderr, "aimsweep run: AIMSWEEP_JOURNAL='%s': must be wal, delete or auto\n",
                    jenv);
        return 2;
    }
    const char *end = getenv("SLURM_JOB_END_TIME");
    double e;
    if (o->end_time == 0 && end && !parse_double(end, &e) && e > 0)
        o->end_time = e;
    int cn = o->ckpt_dir_opt ? snprintf(o->ckpt_dir, sizeof o->ckpt_dir, "%s", o->ckpt_dir_opt)
                             : snprintf(o->ckpt_dir, sizeof o->ckpt_dir, "%s.ckpt", o->db);
    if (cn >= (int)sizeof o->ckpt_dir) {
        if (loud)
            fprintf(stderr, "aimsweep run: %s path too long\n",
                    o->ckpt_dir_opt ? "--checkpoint-dir" : "database");
        return 2;
    }
    return 0;
}

/* Rank 0: the options in force, for the log. */
static void log_options(const struct run_opts *o, int nranks)
{
    char part[32] = "all", end[64] = "none", tl[32] = "none", tt[32] = "none", sl[32] = "never";
    if (o->part_n)
        snprintf(part, sizeof part, "%d/%d", o->part_i, o->part_n);
    if (o->end_time > 0) {
        time_t t = (time_t)o->end_time;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(end, sizeof end, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    if (o->time_limit > 0)
        snprintf(tl, sizeof tl, "%.0f s", o->time_limit);
    if (o->task_timeout > 0)
        snprintf(tt, sizeof tt, "%.0f s", o->task_timeout);
    if (o->stall_timeout > 0)
        snprintf(sl, sizeof sl, "%g s", o->stall_timeout);
    run_log("%s", o->command);
    run_log(
        "options: ranks %d, part %s, grace %.0f s (%.0f s after SIGTERM), time limit %s, job end %s, task timeout %s, stall "
        "timeout %s, checkpoints every %.0f s in %s, max attempts %d, retry errors %s, commit every %g s, lock wait %.0f s",
        nranks, part, o->grace, o->term_grace, tl, end, tt, sl, o->ckpt_every, o->ckpt_dir,
        o->max_attempts, o->retry_errors ? "yes" : "no", o->commit_s, o->lock_wait);
}

/* How run_end leaves when it cannot finalise. */
enum {
    RUN_END_FINALIZE = 0,
    RUN_END_ABORT = 1,    /* other ranks may wait for this one: a failure (code 0 becomes 1) */
    RUN_END_ABORT_AS = 2, /* a stalled rank cannot finalise: abort, the code stands (also 0) */
};

/* Leaves MPI: MPI_Finalize, or MPI_Abort when other ranks may be waiting for this one (after
 * an MPI failure, or workers that do not answer) or cannot finalise (stalled ranks). Returns
 * the exit code (1 when finalising fails on a run that had succeeded). */
static int run_end(int code, int abort_job)
{
    if (abort_job) {
        fflush(NULL);
        if (abort_job == RUN_END_ABORT && code == 0)
            code = 1;
        MPICHECK_FAILED(MPI_Abort(MPI_COMM_WORLD, code)); /* returns only on failure */
        return code ? code : 1;
    }
    if (MPICHECK_FAILED(MPI_Finalize()) && code == 0)
        code = 1;
    return code;
}

/* Collective: every rank gets rank 0's *code. Returns *code, which a failed broadcast makes 1
 * (with *abort_job set: the ranks no longer agree). */
static int share_code(int *code, int *abort_job)
{
    if (MPICHECK_FAILED(MPI_Bcast(code, 1, MPI_INT, 0, MPI_COMM_WORLD))) {
        *code = 1;
        *abort_job = 1;
    }
    return *code;
}

int cli_run(int argc, char **argv)
{
    int rank = 0, size = 1, provided;
    /* Before MPI_Init, which takes a second or more on a loaded node: a SIGUSR1 that mpirun
     * forwards meanwhile (Slurm's time-limit signal can come at the job's start) would otherwise
     * end the rank by its default action. The flag it sets is acted on once the sweep runs. */
    sched_signals_install();
    if (MPICHECK_FAILED(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided)))
        return 1;
    if (mpicheck_errors_return(MPI_COMM_WORLD) ||
        MPICHECK_FAILED(MPI_Comm_rank(MPI_COMM_WORLD, &rank)) ||
        MPICHECK_FAILED(MPI_Comm_size(MPI_COMM_WORLD, &size)))
        return run_end(1, 1);
    sched_signals_install(); /* again, in case MPI's start-up set handlers of its own */

    struct run_opts o;
    int code = run_parse(argc, argv, &o, rank == 0), abort_job = 0;
    if (code) {
        if (code == 1 && rank == 0)
            run_usage(stdout);
        return run_end(code == 1 ? 0 : 2, 0);
    }
    struct sweep_spec *spec = NULL;
    struct params *pts = NULL;
    struct task *tasks = NULL, *todo = NULL;
    struct sched_task *st = NULL;
    struct store *store = NULL;
    size_t npts = 0, ntodo = 0, old_errors = 0;
    store_lock_wait_s = o.lock_wait;
    store_journal_override = o.journal;
    if (rank == 0) {
        char logpath[4200];
        snprintf(logpath, sizeof logpath, "%s.log", o.db);
        int new_log = access(logpath, F_OK) != 0;
        run_log_open(logpath); /* best effort: a directory we cannot write fails later, clearly */
        if (!o.quiet)
            log_options(&o, size);
        code =
            run_prepare(&o, size, &spec, &pts, &npts, &tasks, &store, &todo, &ntodo, &old_errors);
        if (code == RUN_EXIT_BAD_INPUT && new_log) {
            /* refused before anything ran (a file that is not a database, a bad sweep): leave
             * no log beside a database this run never used */
            run_log_close();
            unlink(logpath);
        }
    }
    if (share_code(&code, &abort_job))
        goto out;

    struct run_ctx c;
    struct sched_ops ops;
    run_ctx_init(&c, &o, store, todo, spec ? spec->name : "", &ops);
    c.rank = rank;
    struct sched_opts so = {o.grace, 0, o.end_time, o.task_timeout, o.term_grace, o.stall_timeout};
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        if (o.time_limit > 0)
            so.deadline = now + o.time_limit;
        /* a task should end a grace period before the job's end, when the stop signal comes */
        double e = o.end_time;
        if (e > 0 && e - o.grace > now && (so.deadline == 0 || e - o.grace < so.deadline))
            so.deadline = e - o.grace;
        st = calloc(ntodo ? ntodo : 1, sizeof *st);
        if (!st) {
            fprintf(stderr, "aimsweep: out of memory\n");
            code = 1;
        }
        for (size_t i = 0; st && i < ntodo; i++)
            st[i] = (struct sched_task){todo[i].id, todo[i].text, todo[i].cost};
    }
    if (share_code(&code, &abort_job))
        goto out;
    struct sched_stats stats;
    memset(&stats, 0, sizeof stats);
    int rc = sched_run(MPI_COMM_WORLD, st, ntodo, &ops, &so, &stats);
    /* an MPI failure (reported by the scheduler), not an abort asked for by a callback */
    int mpi_failed = rc == -1 && !stats.aborted;
    if (rank == 0) {
        if (c.failed)
            store_rollback(store); /* the batch may hold half a result */
        else if (store_commit(store) || store_checkpoint(store, 1)) {
            snprintf(c.err, sizeof c.err, "final commit failed: %s", store_errmsg(store));
            c.failed = 1;
        }
        if (c.tty && !o.quiet)
            fprintf(stderr, "\n");
        if (c.failed) {
            run_log("%s: %s; the database keeps what was committed before, rerun to resume", o.db,
                    c.err);
            code = RUN_EXIT_FAILED;
        } else if (mpi_failed) {
            run_log(
                "%s: the sweep stopped on the failure reported above; what finished is committed, rerun to resume",
                o.db);
            code = RUN_EXIT_FAILED;
        } else {
            code = run_exit_code(&c, &stats);
            if (!o.quiet)
                run_summary(&c, &stats, code);
        }
        store_close(&store);
        if (!o.ckpt_dir_opt)
            rmdir(o.ckpt_dir); /* only when empty: no task left a checkpoint */
        /* workers that do not answer, or wait for a rank 0 that left the protocol, cannot
         * finalise: everything is committed, end the job */
        abort_job = rc == -2 || mpi_failed ? RUN_END_ABORT : 0;
        if (!abort_job && stats.stalled_silent + stats.lost_ranks > 0) {
            /* their work is done elsewhere (or pending): the exit code says what is left */
            size_t nq = stats.stalled_silent + stats.lost_ranks;
            run_log("%zu rank%s stalled and never answered again, or lost, cannot finish MPI: "
                    "ending the job with MPI_Abort, exit code %d",
                    nq, nq > 1 ? "s" : "", code);
            abort_job = RUN_END_ABORT_AS;
        }
    } else if (rc) {
        code = 1;
        abort_job = 1; /* rank 0 would wait for this worker's results */
    }
out:
    store_close(&store);
    free(st);
    free(todo);
    for (size_t i = 0; tasks && i < npts; i++)
        task_free(&tasks[i]);
    free(tasks);
    free(pts);
    spec_destroy(&spec);
    run_log_close();
    return run_end(code, abort_job);
}
