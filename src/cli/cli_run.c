/*
 * cli_run.c: `aimsweep run` and `aimsweep plan`.
 *
 * run: rank 0 reads the sweep file, expands the grid, opens the database, registers the sweep
 * and decides what is left to do (everything not done, diverged, ode_diverged or error); then
 * every rank enters the scheduler. Workers rebuild each task from its canonical text and run
 * worker_run; rank 0 stores results in batches (STORE_BATCH_RESULTS or STORE_BATCH_S).
 * A bad sweep file or database is reported by rank 0 before any work, exit code 2 on every
 * rank; a signal ends the run early with exit code 0 and the database resumable.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"
#include "aimsweep/run/result.h"
#include "aimsweep/harness/sched.h"
#include "aimsweep/harness/spec.h"
#include "aimsweep/harness/store.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/version.h"
#include "aimsweep/run/worker.h"

/* Commit the open batch after this many results or this many seconds, whichever first. */
#define RUN_BATCH_RESULTS 256
#define RUN_BATCH_S 1.0
/* Progress lines when stderr is not a terminal. */
#define RUN_PROGRESS_LINE_S 10.0
/* Default grace after SIGUSR1 for running tasks. */
#define RUN_DEFAULT_GRACE_S 60.0
/* A task that was running this many times when its job died is not started again (it may be
 * what kills the job) but stored as error. */
#define RUN_DEFAULT_MAX_ATTEMPTS 3

char *openblas_get_config(void); /* OpenBLAS; not in every cblas.h */

struct run_opts {
    const char *sweep, *db;
    double grace, time_limit, commit_s;
    int retry_errors, quiet, max_attempts;
};

struct run_ctx {
    struct store *store;
    const struct task *tasks; /* the tasks to run, indexed as the scheduler sees them */
    const char *name;
    size_t batch;
    double last_commit, last_line, commit_s;
    int tty, quiet, failed, final_shown;
    size_t nstatus[TASK_STATUS_COUNT];
    char err[512];
};

static void run_usage(FILE *f)
{
    fprintf(f, "usage: aimsweep run SWEEP.yaml --db FILE [--grace S] [--time-limit S] [--commit-interval S]\n"
               "                    [--max-attempts N] [--retry-errors] [--quiet]\n"
               "       mpirun -n N aimsweep run SWEEP.yaml --db FILE ...\n\n"
               "  --db FILE         results database (created if missing; reruns resume it)\n"
               "  --grace S         after SIGUSR1, running tasks may finish for S seconds (default %.0f)\n"
               "  --time-limit S    do not start a task expected to end more than S seconds from now\n"
               "                    (and none expected to end later than SLURM_JOB_END_TIME - grace)\n"
               "  --commit-interval S  commit results at least every S seconds (default %g): the most\n"
               "                    a killed job loses\n"
               "  --max-attempts N  a task left running by N dead jobs is stored as error, not rerun (default %d)\n"
               "  --retry-errors    rerun tasks whose status is error\n"
               "  --quiet           no progress on stderr\n",
            RUN_DEFAULT_GRACE_S, RUN_BATCH_S, RUN_DEFAULT_MAX_ATTEMPTS);
}

static int parse_double(const char *s, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(s, &end);
    return !*s || *end || errno || !isfinite(*x) ? -1 : 0;
}

/* Returns 0, 1 for --help, or 2 after printing the error. */
static int run_parse(int argc, char **argv, struct run_opts *o, int loud)
{
    memset(o, 0, sizeof *o);
    o->grace = RUN_DEFAULT_GRACE_S;
    o->max_attempts = RUN_DEFAULT_MAX_ATTEMPTS;
    o->commit_s = RUN_BATCH_S;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!strcmp(a, "--db") && has)
            o->db = argv[++i];
        else if (!strcmp(a, "--grace") && has) {
            if (parse_double(argv[++i], &o->grace) || o->grace < 0)
                goto bad;
        } else if (!strcmp(a, "--time-limit") && has) {
            if (parse_double(argv[++i], &o->time_limit) || o->time_limit <= 0)
                goto bad;
        } else if (!strcmp(a, "--commit-interval") && has) {
            if (parse_double(argv[++i], &o->commit_s) || o->commit_s < 0)
                goto bad;
        } else if (!strcmp(a, "--max-attempts") && has) {
            double x;
            if (parse_double(argv[++i], &x) || x < 1 || x != (int)x)
                goto bad;
            o->max_attempts = (int)x;
        } else if (!strcmp(a, "--retry-errors"))
            o->retry_errors = 1;
        else if (!strcmp(a, "--quiet"))
            o->quiet = 1;
        else if (a[0] != '-' && !o->sweep)
            o->sweep = a;
        else {
            if (loud)
                fprintf(stderr, "aimsweep run: unknown or incomplete option '%s'\n", a);
            return 2;
        }
        continue;
    bad:
        if (loud)
            fprintf(stderr, "aimsweep run: bad value '%s' for %s\n", argv[i], a);
        return 2;
    }
    if (!o->sweep || !o->db) {
        if (loud) {
            fprintf(stderr, "aimsweep run: need a sweep file and --db FILE\n");
            run_usage(stderr);
        }
        return 2;
    }
    return 0;
}

/* ---- what every computing rank does with a task ---- */

static int run_task(void *ctx, uint64_t id, const char *text, int (*stop)(void *), void *stop_ctx,
                    unsigned char **out, size_t *len)
{
    (void)ctx;
    struct params p;
    struct task_result res;
    char err[512] = "";
    if (task_parse(text, &p, err, sizeof err) == 0 && params_task_id(&p) != id)
        snprintf(err, sizeof err, "task text does not hash to its id (different aimsweep versions?)");
    if (err[0])
        return result_pack(NULL, err, out, len);
    memset(&res, 0, sizeof res);
    if (worker_run(&p, &res, stop, stop_ctx) != 0) {
        worker_result_free(&res);
        return result_pack(NULL, "out of memory in worker_run", out, len);
    }
    int rc = result_pack(&res, NULL, out, len);
    worker_result_free(&res);
    return rc;
}

/* ---- rank 0: the database side ---- */

static int maybe_commit(struct run_ctx *c, int force)
{
    double t = clock_now_s();
    if (!force && c->batch < RUN_BATCH_RESULTS && t - c->last_commit < c->commit_s)
        return 0;
    if (store_commit(c->store)) {
        snprintf(c->err, sizeof c->err, "commit failed: %s", store_errmsg(c->store));
        c->failed = 1;
        return -1;
    }
    c->batch = 0;
    c->last_commit = t;
    return 0;
}

static int on_started(void *ctx, size_t i, int rank, const char *host)
{
    struct run_ctx *c = ctx;
    if (store_begin(c->store) || store_mark_running(c->store, c->tasks[i].id, rank, host)) {
        snprintf(c->err, sizeof c->err, "cannot mark a task %s: %s", task_status_name(TASK_RUNNING),
                 store_errmsg(c->store));
        c->failed = 1;
        return -1;
    }
    return maybe_commit(c, 0);
}

static int on_finished(void *ctx, size_t i, int rank, const unsigned char *bytes, size_t len)
{
    struct run_ctx *c = ctx;
    (void)rank;
    enum task_status status = TASK_INTERRUPTED;
    if (!bytes) {
        if (store_mark_interrupted(c->store, c->tasks[i].id)) {
            snprintf(c->err, sizeof c->err, "cannot store a result: %s", store_errmsg(c->store));
            c->failed = 1;
            return -1;
        }
    } else {
        struct task_result res;
        char terr[512];
        int bad = result_unpack(bytes, len, &res, terr, sizeof terr);
        if (bad)
            snprintf(terr, sizeof terr, "malformed result bytes from rank %d", rank);
        if (store_put_result(c->store, c->tasks[i].id, bad ? NULL : &res, terr, &status, c->err, sizeof c->err)) {
            if (!bad)
                worker_result_free(&res);
            c->failed = 1;
            return -1;
        }
        if (!bad)
            worker_result_free(&res);
    }
    c->nstatus[status]++;
    c->batch++;
    return maybe_commit(c, 0);
}

static int on_returned(void *ctx, size_t i)
{
    struct run_ctx *c = ctx;
    if (store_mark_pending(c->store, c->tasks[i].id)) {
        snprintf(c->err, sizeof c->err, "cannot return a task to %s: %s", task_status_name(TASK_PENDING),
                 store_errmsg(c->store));
        c->failed = 1;
        return -1;
    }
    return 0;
}

static void fmt_dur(double s, char *buf, size_t n)
{
    if (s < 0)
        snprintf(buf, n, "?");
    else if (s < 120)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.1f min", s / 60);
    else
        snprintf(buf, n, "%.1f h", s / 3600);
}

static void on_tick(void *ctx, const struct sched_progress *pr)
{
    struct run_ctx *c = ctx;
    maybe_commit(c, 0);
    if (c->quiet)
        return;
    double t = clock_now_s();
    int last = pr->done == pr->total;
    if (last && c->final_shown)
        return;
    if (!c->tty && !last && t - c->last_line < RUN_PROGRESS_LINE_S)
        return;
    c->last_line = t;
    c->final_shown = last;
    char eta[32];
    fmt_dur(last ? 0 : pr->eta_s, eta, sizeof eta);
    fprintf(stderr, "%s[%s] %zu/%zu done, %zu running, %.2f tasks/s, ETA %s%s%s", c->tty ? "\r" : "", c->name,
            pr->done, pr->total, pr->running, pr->rate, eta, pr->stopping ? ", stopping" : "",
            c->tty ? "   " : "\n");
    fflush(stderr);
}

/* mpi must hold MPI_MAX_LIBRARY_VERSION_STRING bytes. */
static void provenance(struct store_provenance *pv, char *host, size_t hn, char *mpi, int ranks)
{
    int len = 0;
    gethostname(host, hn - 1);
    host[hn - 1] = 0;
    MPI_Get_library_version(mpi, &len);
    mpi[strcspn(mpi, "\n,")] = 0; /* first line, without the build details */
    pv->version = AIMSWEEP_VERSION;
    pv->git_commit = AIMSWEEP_GIT_COMMIT;
    pv->host = host;
    pv->compiler = AIMSWEEP_COMPILER;
    pv->blas = openblas_get_config();
    pv->mpi = mpi;
    pv->ranks = ranks;
}

/* Rank 0's preparation. Returns 0 with the work list, or the exit code (2) after printing. */
static int prepare(const struct run_opts *o, int nranks, struct sweep_spec **spec, struct params **pts, size_t *npts,
                   struct task **tasks, struct store **store, struct task **todo, size_t *ntodo)
{
    char err[1024] = "", host[256], mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    enum task_status *status = NULL;
    int *attempts = NULL, rc = 2;
    if (spec_load(o->sweep, spec, err, sizeof err) || grid_expand(*spec, pts, npts, err, sizeof err)) {
        fprintf(stderr, "aimsweep: %s\n", err);
        return 2;
    }
    size_t n = *npts ? *npts : 1;
    *tasks = calloc(n, sizeof **tasks);
    *todo = calloc(n, sizeof **todo);
    status = calloc(n, sizeof *status);
    attempts = calloc(n, sizeof *attempts);
    if (!*tasks || !*todo || !status || !attempts) {
        fprintf(stderr, "aimsweep: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < *npts; i++)
        if (task_make(&(*pts)[i], &(*tasks)[i])) {
            fprintf(stderr, "aimsweep: out of memory\n");
            goto out;
        }
    if (!(*store = store_open(o->db, err, sizeof err))) {
        fprintf(stderr, "aimsweep: %s\n", err);
        goto out;
    }
    struct store_provenance pv;
    provenance(&pv, host, sizeof host, mpi, nranks);
    if (store_add_sweep(*store, (*spec)->name, (*spec)->text, &pv, *pts, *tasks, *npts, err, sizeof err) < 0 ||
        store_task_status(*store, *tasks, *npts, status, attempts))
        goto dberr;
    /* a task that was running every time a job died may be what kills the job */
    size_t nrunning = 0, ninter = 0, npoison = 0;
    for (size_t i = 0; i < *npts; i++) {
        if (status[i] != TASK_RUNNING || attempts[i] < o->max_attempts || o->retry_errors)
            continue;
        char msg[160], hex[17];
        snprintf(msg, sizeof msg, "was running each time a job died (%d times); --retry-errors runs it again",
                 attempts[i]);
        if (store_mark_error(*store, (*tasks)[i].id, msg))
            goto dberr;
        task_id_hex((*tasks)[i].id, hex);
        fprintf(stderr, "aimsweep: task %s %s\n", hex, msg);
        status[i] = TASK_ERROR;
        npoison++;
    }
    if (npoison && store_commit(*store))
        goto dberr;
    *ntodo = 0;
    for (size_t i = 0; i < *npts; i++) {
        if (!task_status_todo(status[i], o->retry_errors))
            continue;
        nrunning += status[i] == TASK_RUNNING;
        ninter += status[i] == TASK_INTERRUPTED;
        (*todo)[(*ntodo)++] = (*tasks)[i]; /* shares the text; tasks owns it */
    }
    if (!o->quiet) {
        fprintf(stderr, "aimsweep: sweep '%s': %zu grid points, %zu already in %s, %zu to run on %d rank%s",
                (*spec)->name, *npts, *npts - *ntodo, o->db, *ntodo, nranks, nranks > 1 ? "s" : "");
        if (nrunning || ninter)
            fprintf(stderr, " (%zu left %s by an earlier job, %zu %s)", nrunning, task_status_name(TASK_RUNNING),
                    ninter, task_status_name(TASK_INTERRUPTED));
        fprintf(stderr, "\n");
    }
    rc = 0;
    goto out;
dberr:
    fprintf(stderr, "aimsweep: %s: %s\n", o->db, err[0] ? err : store_errmsg(*store));
out:
    free(status);
    free(attempts);
    return rc;
}

int cli_run(int argc, char **argv)
{
    int rank = 0, size = 1, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sched_signals_install();

    struct run_opts o;
    int code = run_parse(argc, argv, &o, rank == 0);
    if (code) {
        if (code == 1 && rank == 0)
            run_usage(stdout);
        MPI_Finalize();
        return code == 1 ? 0 : 2;
    }
    struct sweep_spec *spec = NULL;
    struct params *pts = NULL;
    struct task *tasks = NULL, *todo = NULL;
    struct sched_task *st = NULL;
    struct store *store = NULL;
    size_t npts = 0, ntodo = 0;
    if (rank == 0)
        code = prepare(&o, size, &spec, &pts, &npts, &tasks, &store, &todo, &ntodo);
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (code)
        goto out;

    struct run_ctx c;
    memset(&c, 0, sizeof c);
    c.store = store;
    c.tasks = todo;
    c.name = spec ? spec->name : "";
    c.tty = isatty(STDERR_FILENO);
    c.quiet = o.quiet;
    c.commit_s = o.commit_s;
    c.last_commit = c.last_line = clock_now_s();
    struct sched_ops ops = {run_task, on_started, on_finished, on_returned, on_tick, &c};
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
        if (end && !parse_double(end, &e) && e - o.grace > now && (so.deadline == 0 || e - o.grace < so.deadline))
            so.deadline = e - o.grace;
        st = calloc(ntodo ? ntodo : 1, sizeof *st);
        if (!st) {
            fprintf(stderr, "aimsweep: out of memory\n");
            code = 1;
        }
        for (size_t i = 0; st && i < ntodo; i++)
            st[i] = (struct sched_task){todo[i].id, todo[i].text, todo[i].cost};
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (code)
        goto out;
    struct sched_stats stats;
    int rc = sched_run(MPI_COMM_WORLD, st, ntodo, &ops, &so, &stats);
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
            fprintf(stderr, "aimsweep: %s: %s; the database keeps what was committed before, rerun to resume\n",
                    o.db, c.err);
            code = 1;
        } else {
            if (!o.quiet) {
                /* the count of each status a finished task can have, in the enum's order */
                const char *sep = "aimsweep:";
                for (int k = 0; k < TASK_STATUS_COUNT; k++)
                    if (TASK_STATUS_SOLVER & TASK_STATUS_BIT(k)) {
                        fprintf(stderr, "%s %zu %s", sep, c.nstatus[k], task_status_name((enum task_status)k));
                        sep = ",";
                    }
                fprintf(stderr, "; %zu not started", stats.not_started);
                if (stats.skipped_deadline)
                    fprintf(stderr, " (%zu would not fit in the time limit)", stats.skipped_deadline);
                if (stats.returned)
                    fprintf(stderr, " (%zu handed back unstarted)", stats.returned);
                fprintf(stderr, "; %.3f s\n", stats.elapsed_s);
                if (stats.signal)
                    fprintf(stderr, "aimsweep: stopped by signal %d; rerun the same command to resume\n",
                            stats.signal);
            }
            code = 0;
        }
        store_close(&store);
        if (rc == -2) {
            /* workers that do not answer cannot finalise: everything is committed, end the job */
            fflush(NULL);
            MPI_Abort(MPI_COMM_WORLD, code);
        }
    } else if (rc)
        code = 1;
out:
    store_close(&store);
    free(st);
    free(todo);
    for (size_t i = 0; tasks && i < npts; i++)
        task_free(&tasks[i]);
    free(tasks);
    free(pts);
    spec_destroy(&spec);
    MPI_Finalize();
    return code;
}

/* ---- plan ---- */

int cli_plan(int argc, char **argv)
{
    const char *sweep = NULL, *db = NULL;
    int ranks = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: aimsweep plan SWEEP.yaml [--db FILE] [--ranks N]\n"
                   "  grid size, estimated cost, and (with --db) what the database already holds\n");
            return 0;
        }
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            db = argv[++i];
        else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
            ranks = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !sweep)
            sweep = argv[i];
        else {
            fprintf(stderr, "aimsweep plan: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!sweep) {
        fprintf(stderr, "usage: aimsweep plan SWEEP.yaml [--db FILE] [--ranks N]\n");
        return 2;
    }
    char err[1024];
    struct sweep_spec *spec = NULL;
    struct params *pts = NULL;
    struct task *tasks = NULL;
    enum task_status *status = NULL;
    struct store *store = NULL;
    size_t n = 0;
    int code = 2;
    if (spec_load(sweep, &spec, err, sizeof err) || grid_expand(spec, &pts, &n, err, sizeof err)) {
        fprintf(stderr, "aimsweep: %s\n", err);
        goto out;
    }
    tasks = calloc(n ? n : 1, sizeof *tasks);
    status = calloc(n ? n : 1, sizeof *status);
    if (!tasks || !status)
        goto out;
    double total = 0, maxc = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        if (task_make(&pts[i], &tasks[i]))
            goto out;
        total += tasks[i].cost;
        maxc = fmax(maxc, tasks[i].cost);
        status[i] = TASK_NEW;
    }
    printf("sweep       %s (%s)\n", spec->name, sweep);
    printf("grid points %zu =", n);
    for (size_t i = 0; i < spec->ngrid; i++)
        printf("%s %zu %s", i ? " x" : "", spec->grid[i].n, spec->grid[i].key);
    printf("%s\n", spec->ngrid ? "" : " 1 (fixed values only)");
    for (size_t i = 0; i < spec->nfixed; i++)
        printf("fixed       %s = %s\n", spec->fixed[i].key, spec->fixed[i].values[0]);
    if (db) {
        if (access(db, F_OK) != 0)
            printf("database    %s does not exist yet: everything is to do\n", db);
        else if (!(store = store_open_readonly(db, err, sizeof err))) {
            fprintf(stderr, "aimsweep: %s\n", err);
            goto out;
        } else if (store_task_status(store, tasks, n, status, NULL)) {
            fprintf(stderr, "aimsweep: %s: %s\n", db, store_errmsg(store));
            goto out;
        }
    }
    size_t cnt[TASK_STATUS_COUNT] = {0}, todo = 0;
    for (size_t i = 0; i < n; i++) {
        cnt[status[i]]++;
        if (task_status_todo(status[i], 0)) {
            todo++;
            left += tasks[i].cost;
        }
    }
    printf("estimate    %.3g core-s in all, largest task %.3g s (nominal %.0e flop/s)\n", total, maxc,
           TASK_FLOPS_PER_S);
    if (store) {
        printf("database    %s:", db);
        for (int k = 0; k < TASK_STATUS_COUNT; k++)
            if (cnt[k])
                printf(" %zu %s", cnt[k], task_status_name((enum task_status)k));
        printf("\n");
    }
    printf("to run      %zu of %zu tasks, %.3g core-s", todo, n, left);
    if (ranks > 1)
        printf(", about %.3g s on %d ranks (%d workers)", fmax(left / (ranks - 1), maxc), ranks, ranks - 1);
    printf("\n");
    code = 0;
out:
    store_close(&store);
    for (size_t i = 0; tasks && i < n; i++)
        task_free(&tasks[i]);
    free(tasks);
    free(status);
    free(pts);
    spec_destroy(&spec);
    return code;
}
