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
        "usage: aimsweep run SWEEP.yaml --db FILE [--set KEY=VALUE ...] [--grace S] [--time-limit S]\n"
        "                    [--commit-interval S] [--max-attempts N] [--retry-errors] [--quiet]\n"
        "       mpirun -n N aimsweep run SWEEP.yaml --db FILE ...\n\n"
        "  --db FILE         results database (created if missing; reruns resume it)\n"
        "  --set KEY=VALUE   override a parameter of the sweep file for every point (repeatable;\n"
        "                    a grid axis of that key is replaced by the one value)\n"
        "  --grace S         after SIGUSR1, running tasks may finish for S seconds (default %.0f)\n"
        "  --time-limit S    do not start a task expected to end more than S seconds from now\n"
        "                    (and none expected to end later than SLURM_JOB_END_TIME - grace)\n"
        "  --commit-interval S  commit results at least every S seconds (default %g): the most\n"
        "                    a killed job loses\n"
        "  --max-attempts N  a task left running by N dead jobs is stored as error, not rerun (default %d)\n"
        "  --retry-errors    rerun tasks whose status is error\n"
        "  --quiet           no progress on stderr\n\n"
        "  Exit status: 0 every task finished without error, %d every task finished and some\n"
        "  ended in error (aimsweep status lists them), 1 a failure of the run itself, 2 bad input.\n",
        RUN_DEFAULT_GRACE_S, RUN_BATCH_S, RUN_DEFAULT_MAX_ATTEMPTS, RUN_EXIT_SOME_ERROR);
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

static const char *const run_flags[] = {
    "db",           "set",          "grace", "time-limit", "commit-interval",
    "max-attempts", "retry-errors", "quiet", "help",       NULL};

/* Returns 0, 1 for --help, or 2 after printing the error. */
static int run_parse(int argc, char **argv, struct run_opts *o, int loud)
{
    struct cli_seen seen = {0};
    memset(o, 0, sizeof *o);
    o->grace = RUN_DEFAULT_GRACE_S;
    o->max_attempts = RUN_DEFAULT_MAX_ATTEMPTS;
    o->commit_s = RUN_BATCH_S;
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
                    !strcmp(a, "--max-attempts");
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
        } else if (!strcmp(a, "--commit-interval")) {
            if (parse_double(v, &o->commit_s) || o->commit_s < 0)
                what = "a number of seconds >= 0";
        } else if (!strcmp(a, "--max-attempts")) {
            double x;
            if (parse_double(v, &x) || x < 1 || x > 1e6 || x != (int)x)
                what = "an integer from 1 to 1000000";
            else
                o->max_attempts = (int)x;
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
    return rc;
}

/* Leaves MPI: MPI_Finalize, or MPI_Abort when other ranks may be waiting for this one (after
 * an MPI failure, or workers that do not answer). Returns the exit code (1 when finalising
 * fails on a run that had succeeded). */
static int run_end(int code, int abort_job)
{
    if (abort_job) {
        fflush(NULL);
        MPICHECK_FAILED(MPI_Abort(MPI_COMM_WORLD, code ? code : 1)); /* returns only on failure */
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
    if (MPICHECK_FAILED(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided)))
        return 1;
    if (mpicheck_errors_return(MPI_COMM_WORLD) ||
        MPICHECK_FAILED(MPI_Comm_rank(MPI_COMM_WORLD, &rank)) ||
        MPICHECK_FAILED(MPI_Comm_size(MPI_COMM_WORLD, &size)))
        return run_end(1, 1);
    sched_signals_install();

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
    if (rank == 0)
        code =
            run_prepare(&o, size, &spec, &pts, &npts, &tasks, &store, &todo, &ntodo, &old_errors);
    if (share_code(&code, &abort_job))
        goto out;

    struct run_ctx c;
    struct sched_ops ops;
    run_ctx_init(&c, &o, store, todo, spec ? spec->name : "", &ops);
    struct sched_opts so = {o.grace, 0};
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        if (o.time_limit > 0)
            so.deadline = now + o.time_limit;
        const char *end = getenv("SLURM_JOB_END_TIME");
        double e;
        /* a task should end a grace period before Slurm's end, when the stop signal comes */
        if (end && !parse_double(end, &e) && e - o.grace > now &&
            (so.deadline == 0 || e - o.grace < so.deadline))
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
        else if (store_commit(store)) {
            snprintf(c.err, sizeof c.err, "final commit failed: %s", store_errmsg(store));
            c.failed = 1;
        }
        if (c.tty && !o.quiet)
            fprintf(stderr, "\n");
        if (c.failed) {
            fprintf(
                stderr,
                "aimsweep: %s: %s; the database keeps what was committed before, rerun to resume\n",
                o.db, c.err);
            code = 1;
        } else if (mpi_failed) {
            fprintf(
                stderr,
                "aimsweep: %s: the sweep stopped on the failure reported above; what finished is committed,"
                " rerun to resume\n",
                o.db);
            code = 1;
        } else {
            if (!o.quiet)
                run_summary(&c, &stats);
            /* every task finished (nothing stopped or left) and some ended in error */
            size_t nerr = c.nstatus[TASK_ERROR] + old_errors;
            int complete =
                !stats.signal && stats.not_started == 0 && c.nstatus[TASK_INTERRUPTED] == 0;
            code = complete && nerr ? RUN_EXIT_SOME_ERROR : 0;
            if (code)
                fprintf(
                    stderr,
                    "aimsweep: %zu task%s ended in %s (aimsweep status %s lists the messages); exit status %d\n",
                    nerr, nerr == 1 ? "" : "s", task_status_name(TASK_ERROR), o.db, code);
        }
        store_close(&store);
        /* workers that do not answer, or wait for a rank 0 that left the protocol, cannot
         * finalise: everything is committed, end the job */
        abort_job = rc == -2 || mpi_failed;
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
    return run_end(code, abort_job);
}
