/*
 * cli_run_sweep.c: the sweep side of `aimsweep run`: rank 0's preparation and the scheduler's
 * callbacks.
 *
 * Preparation (rank 0 only): read the sweep file, expand the grid, open the database, register
 * the sweep with its provenance, and decide what is left to do (every task whose status is
 * still to do, task_status_todo); a task left running by RUN_DEFAULT_MAX_ATTEMPTS dead jobs is
 * stored as error instead. Workers rebuild each task from its canonical text and run
 * worker_run (run_task); rank 0 stores results in batches (RUN_BATCH_RESULTS or
 * RUN_BATCH_S), so a killed job loses at most the open batch.
 */
#include <dirent.h>
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/harness/grid.h"
#include "aimsweep/harness/mpicheck.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/run/result.h"
#include "aimsweep/run/worker.h"
#include "aimsweep/version.h"
#include "cli_run.h"

char *openblas_get_config(void); /* OpenBLAS; not in every cblas.h */

/* ---- what every computing rank does with a task ---- */

static FILE *run_log_file;

int run_log_open(const char *path)
{
    if (run_log_file)
        fclose(run_log_file);
    run_log_file = fopen(path, "a");
    return run_log_file ? 0 : -1;
}

void run_log_close(void)
{
    if (run_log_file)
        fclose(run_log_file);
    run_log_file = NULL;
}

void run_log(const char *fmt, ...)
{
    char stamp[32], line[2048];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_list ap;
    va_start(ap, fmt);
    /* clang 14's analyzer takes ap for uninitialised here, after va_start (as in spec_axis.c) */
    vsnprintf(line, sizeof line, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    fprintf(stderr, "%s aimsweep: %s\n", stamp, line);
    fflush(stderr);
    if (run_log_file) {
        fprintf(run_log_file, "%s [%ld] %s\n", stamp, (long)getpid(), line);
        fflush(run_log_file);
    }
}

static int run_task(void *ctx, uint64_t id, const char *text, int (*stop)(void *), void *stop_ctx,
                    unsigned char **out, size_t *len)
{
    struct run_ctx *c = ctx;
    struct params p;
    struct task_result res;
    char err[512] = "", path[4200], hex[17];
    if (task_parse(text, &p, err, sizeof err) == 0 && params_task_id(&p) != id)
        snprintf(err, sizeof err,
                 "task text does not hash to its id (different aimsweep versions?)");
    if (err[0])
        return result_pack(NULL, err, out, len);
    memset(&res, 0, sizeof res);
    struct worker_ctl wc;
    memset(&wc, 0, sizeof wc);
    wc.stop = stop;
    wc.stop_ctx = stop_ctx;
    task_id_hex(id, hex);
    if (c->ckpt_dir &&
        snprintf(path, sizeof path, "%s/%s.ckpt", c->ckpt_dir, hex) < (int)sizeof path) {
        wc.ckpt_path = path;
        wc.ckpt_every_s = c->ckpt_every;
    }
    run_mark_begin(c->ckpt_dir, c->rank, hex);
    int wrc = worker_run_ctl(&p, &res, &wc);
    run_mark_end();
    if (wrc != 0) {
        worker_result_free(&res);
        return result_pack(NULL, "out of memory in worker_run", out, len);
    }
    if (wc.note[0])
        run_log("task %s: %s", hex, wc.note);
    if (wc.resumed)
        run_log("task %s: continued from its checkpoint", hex);
    int rc = result_pack(&res, NULL, out, len);
    worker_result_free(&res);
    return rc;
}

/* Who sent the signal: "pid N (command), uid U", or "the kernel or an unknown sender". */
static void signal_sender(char *buf, size_t n)
{
    int pid, uid;
    sched_signal_origin(&pid, &uid);
    if (pid <= 0) {
        snprintf(buf, n, "the kernel or an unknown sender");
        return;
    }
    char path[64], comm[64] = "?";
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    snprintf(buf, n, "pid %d (%s%s), uid %d", pid, comm,
             pid == (int)getppid() ? ", the parent process" : "", uid);
}

/* ---- rank 0: the database side ---- */

/* Records a storage failure. The first one is the cause: what follows it (a commit with no
 * transaction left, a statement on a read-only file) is its consequence, so it never
 * overwrites the first message. Returns -1. */
static int run_fail(struct run_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!c->failed)
        vsnprintf(c->err, sizeof c->err, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    c->failed = 1;
    return -1;
}

static int maybe_commit(struct run_ctx *c, int force)
{
    double t = clock_now_s();
    if (c->failed)
        return -1;
    if (!force && c->batch < RUN_BATCH_RESULTS && t - c->last_commit < c->commit_s)
        return 0;
    if (store_commit(c->store))
        return run_fail(c, "commit failed: %s", store_errmsg(c->store));
    c->batch = 0;
    c->last_commit = t;
    return 0;
}

static int on_started(void *ctx, size_t i, int rank, const char *host, const char *kernels)
{
    struct run_ctx *c = ctx;
    if (c->failed)
        return -1;
    if (store_begin(c->store) ||
        store_mark_running(c->store, c->tasks[i].id, rank, host, kernels)) {
        return run_fail(c, "cannot mark a task %s: %s", task_status_name(TASK_RUNNING),
                        store_errmsg(c->store));
    }
    return maybe_commit(c, 0);
}

static int on_finished(void *ctx, size_t i, int rank, const unsigned char *bytes, size_t len)
{
    struct run_ctx *c = ctx;
    (void)rank;
    enum task_status status = TASK_INTERRUPTED;
    if (c->failed)
        return -1;
    if (!bytes) {
        if (store_mark_interrupted(c->store, c->tasks[i].id))
            return run_fail(c, "cannot store a result: %s", store_errmsg(c->store));
    } else {
        struct task_result res;
        char terr[512], serr[512];
        int bad = result_unpack(bytes, len, &res, terr, sizeof terr);
        if (bad)
            snprintf(terr, sizeof terr, "malformed result bytes from rank %d", rank);
        if (store_put_result(c->store, c->tasks[i].id, bad ? NULL : &res, terr, &status, serr,
                             sizeof serr)) {
            if (!bad)
                worker_result_free(&res);
            return run_fail(c, "%s", serr);
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
    if (c->failed)
        return -1;
    if (store_mark_pending(c->store, c->tasks[i].id)) {
        return run_fail(c, "cannot return a task to %s: %s", task_status_name(TASK_PENDING),
                        store_errmsg(c->store));
    }
    return 0;
}

static int on_charged(void *ctx, size_t i)
{
    struct run_ctx *c = ctx;
    if (c->failed)
        return -1;
    if (store_note_death(c->store, c->tasks[i].id))
        return run_fail(c, "cannot charge an attempt: %s", store_errmsg(c->store));
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
    int sig = sched_signal_received();
    if (sig && c->stop_noted != sig) {
        /* at once, so that a job killed during the grace leaves no task running */
        char who[160];
        signal_sender(who, sizeof who);
        if (!c->quiet)
            run_log(
                "%s received from %s: no new tasks; running ones may finish until the grace ends",
                strsignal(sig), who);
        if (maybe_commit(c, 1) == 0 && store_note_stop(c->store, sig, who))
            run_fail(c, "cannot record the stop: %s", store_errmsg(c->store));
        /* a job that is draining may be killed next: the log into the file now */
        else if (!c->failed && store_checkpoint(c->store, 1))
            run_fail(c, "cannot write the results into the database file: %s",
                     store_errmsg(c->store));
        c->stop_noted = sig;
    }
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
    char eta[32], counts[256];
    fmt_dur(last ? 0 : pr->eta_s, eta, sizeof eta);
    /* finished tasks of the whole study by status ("9 done, 2 diverged, 1 error"), those of
     * earlier runs included: an error never counts as done */
    size_t off = 0;
    counts[0] = 0;
    for (int k = 0; k < TASK_STATUS_COUNT && off < sizeof counts; k++) {
        size_t nk = c->nstatus[k] + c->before[k];
        if ((TASK_STATUS_SOLVER & TASK_STATUS_BIT(k)) && (nk || k == TASK_DONE))
            off += (size_t)snprintf(counts + off, sizeof counts - off, "%s%zu %s", off ? ", " : "",
                                    nk, task_status_name((enum task_status)k));
    }
    size_t done = pr->done + c->nbefore, total = pr->total + c->nbefore;
    if (c->tty)
        fprintf(stderr, "\r[%s] %zu/%zu finished (%s), %zu running, %.2f tasks/s, ETA %s%s   ",
                c->name, done, total, counts, pr->running, pr->rate, eta,
                pr->stopping ? ", stopping" : "");
    else
        run_log("[%s] %zu/%zu finished (%s), %zu running, %.2f tasks/s, ETA %s%s", c->name, done,
                total, counts, pr->running, pr->rate, eta, pr->stopping ? ", stopping" : "");
    fflush(stderr);
}

/* The scheduler's events (stalled ranks, late results): always logged, --quiet or not. */
static void on_note(void *ctx, const char *line)
{
    (void)ctx;
    run_log("%s", line);
}

/* mpi must hold MPI_MAX_LIBRARY_VERSION_STRING bytes. */
static void provenance(struct store_provenance *pv, char *host, size_t hn, char *mpi, int ranks)
{
    int len = 0;
    gethostname(host, hn - 1);
    host[hn - 1] = 0;
    if (MPICHECK_FAILED(MPI_Get_library_version(mpi, &len)))
        snprintf(mpi, MPI_MAX_LIBRARY_VERSION_STRING, "unknown");
    mpi[strcspn(mpi, "\n,")] = 0; /* first line, without the build details */
    pv->version = AIMSWEEP_VERSION;
    pv->git_commit = AIMSWEEP_GIT_COMMIT;
    pv->host = host;
    pv->compiler = AIMSWEEP_COMPILER;
    pv->blas = openblas_get_config();
    pv->mpi = mpi;
    pv->ranks = ranks;
    pv->kernels = kern_path();
}

int run_load_spec(const char *path, const char *const *sets, int nsets, struct sweep_spec **spec,
                  char *err, size_t errlen)
{
    if (spec_load(path, spec, err, errlen))
        return -1;
    for (int i = 0; i < nsets; i++)
        if (spec_override(*spec, sets[i], err, errlen)) {
            spec_destroy(spec);
            return -1;
        }
    return 0;
}

int run_prepare(const struct run_opts *o, int nranks, struct sweep_spec **spec, struct params **pts,
                size_t *npts, struct task **tasks, struct store **store, struct task **todo,
                size_t *ntodo, size_t *old_errors)
{
    char err[4096] = "", host[256], mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    enum task_status *status = NULL;
    int *attempts = NULL, rc = 2;
    *old_errors = 0;
    if (run_load_spec(o->sweep, o->sets, o->nsets, spec, err, sizeof err) ||
        grid_expand(*spec, pts, npts, err, sizeof err)) {
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
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < *npts; i++)
        if (task_make(&(*pts)[i], &(*tasks)[i])) {
            fprintf(stderr, "aimsweep: out of memory\n");
            rc = 1;
            goto out;
        }
    if (o->part_n > 1) {
        /* this part's share: the tasks whose id is i - 1 modulo N (ids are hashes: even shares) */
        size_t k = 0, all = *npts;
        for (size_t i = 0; i < all; i++) {
            if ((*tasks)[i].id % (uint64_t)o->part_n == (uint64_t)(o->part_i - 1)) {
                struct task t = (*tasks)[i];
                struct params q = (*pts)[i];
                (*tasks)[i] = (*tasks)[k];
                (*pts)[i] = (*pts)[k];
                (*tasks)[k] = t;
                (*pts)[k] = q;
                k++;
            }
        }
        for (size_t i = k; i < all; i++)
            task_free(&(*tasks)[i]);
        *npts = k;
        if (!o->quiet)
            run_log("part %d/%d: %zu of the %zu grid points", o->part_i, o->part_n, k, all);
    }
    if (!(*store = store_open(o->db, err, sizeof err))) {
        fprintf(stderr, "aimsweep: %s\n", err);
        goto out;
    }
    if (!o->quiet)
        run_log("database %s: journal %s", o->db, store_journal(*store));
    char others[512];
    if (!o->quiet && store_other_sweeps(*store, (*spec)->name, others, sizeof others) > 0)
        run_log("note: %s also holds other sweeps: %s; this sweep's points go beside them (a "
                "point they share is run once)",
                o->db, others);
    /* the cost model corrected by what this database has measured so far */
    struct cost_model cm = {0};
    long learned = store_learn_costs(*store, &cm);
    if (learned > 0) {
        for (size_t i = 0; i < *npts; i++)
            (*tasks)[i].cost = task_cost_learned(&cm, &(*pts)[i]);
        if (!o->quiet)
            run_log("cost model: corrected by %ld finished solver runs of %s", learned, o->db);
    }
    task_cost_model_free(&cm);
    struct store_provenance pv;
    provenance(&pv, host, sizeof host, mpi, nranks);
    if (store_add_sweep(*store, (*spec)->name, (*spec)->text, &pv, *pts, *tasks, *npts, err,
                        sizeof err) < 0 ||
        store_task_status(*store, *tasks, *npts, status, attempts))
        goto dberr;
    if (store_set_run_info(*store, o->command, NULL))
        goto dberr;
    if (o->part_n > 1) {
        char part[32];
        snprintf(part, sizeof part, "%d/%d", o->part_i, o->part_n);
        if (store_set_run_info(*store, o->command, part))
            goto dberr;
    }
    if (mkdir(o->ckpt_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, sizeof err, "cannot make the checkpoint directory %.700s: %s", o->ckpt_dir,
                 strerror(errno));
        goto dberr;
    }
    /* half-written checkpoints of killed jobs (NAME.ckpt.tmp.PID): no run writes here but ours */
    DIR *dir = opendir(o->ckpt_dir);
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (strstr(e->d_name, ".ckpt.tmp.")) {
            char path[1200];
            snprintf(path, sizeof path, "%.700s/%.400s", o->ckpt_dir, e->d_name);
            unlink(path);
        }
    if (dir)
        closedir(dir);
    /* The attempt rule (docs/cluster.md): a task left running by a job that died is rerun
     * uncharged (the job was stopped or killed from outside, or a node was lost); a task whose
     * rank crashed while running it (its mark says so) is charged one attempt. A task charged
     * --max-attempts times (crashes, stalls) is stored as error instead of run again. */
    size_t nrunning = 0, ninter = 0, npoison = 0, nmarks = 0;
    uint64_t crashed[256];
    int sigs[256];
    if (run_marks_read(o->ckpt_dir, crashed, sigs, 256, &nmarks))
        run_log("cannot read the marks in %s: %s", o->ckpt_dir, strerror(errno));
    for (size_t m = 0; m < nmarks; m++) {
        char hex[17];
        task_id_hex(crashed[m], hex);
        if (store_note_death(*store, crashed[m]))
            goto dberr;
        run_log("task %s crashed its rank (signal %d, %s) in an earlier run: one attempt charged",
                hex, sigs[m], strsignal(sigs[m]));
        for (size_t i = 0; i < *npts; i++)
            attempts[i] += (*tasks)[i].id == crashed[m];
    }
    for (size_t i = 0; i < *npts; i++) {
        if (!task_status_todo(status[i], 0) || attempts[i] < o->max_attempts || o->retry_errors)
            continue;
        char msg[200], hex[17];
        snprintf(msg, sizeof msg,
                 "its rank crashed or stalled while running it %d times; --retry-errors runs it "
                 "again",
                 attempts[i]);
        if (store_mark_error(*store, (*tasks)[i].id, msg))
            goto dberr;
        task_id_hex((*tasks)[i].id, hex);
        run_log("task %s: %s", hex, msg);
        status[i] = TASK_ERROR;
        npoison++;
    }
    if (store_commit(*store))
        goto dberr;
    run_marks_clear(o->ckpt_dir); /* charged and committed */
    *ntodo = 0;
    for (size_t i = 0; i < *npts; i++) {
        if (!task_status_todo(status[i], o->retry_errors)) {
            *old_errors += status[i] == TASK_ERROR;
            continue;
        }
        nrunning += status[i] == TASK_RUNNING;
        ninter += status[i] == TASK_INTERRUPTED;
        (*todo)[(*ntodo)++] = (*tasks)[i]; /* shares the text; tasks owns it */
    }
    if (!o->quiet) {
        char more[160] = "";
        if (nrunning || ninter)
            snprintf(more, sizeof more, " (%zu left %s by a job that died, %zu %s)", nrunning,
                     task_status_name(TASK_RUNNING), ninter, task_status_name(TASK_INTERRUPTED));
        char olde[128] = "";
        if (*old_errors)
            snprintf(olde, sizeof olde,
                     "; %zu in %s from earlier runs (--retry-errors reruns them)", *old_errors,
                     task_status_name(TASK_ERROR));
        run_log("sweep '%s': %zu grid points, %zu already in %s, %zu to run on %d rank%s%s%s",
                (*spec)->name, *npts, *npts - *ntodo, o->db, *ntodo, nranks, nranks > 1 ? "s" : "",
                more, olde);
    }
    rc = 0;
    goto out;
dberr: /* a write that failed (disk full, I/O): the run failed, exit 1, as one later */
    rc = 1;
    fprintf(stderr, "aimsweep: %s: %s\n", o->db, err[0] ? err : store_errmsg(*store));
out:
    free(status);
    free(attempts);
    return rc;
}

void run_ctx_init(struct run_ctx *c, const struct run_opts *o, struct store *store,
                  const struct task *todo, const char *name, struct sched_ops *ops)
{
    memset(c, 0, sizeof *c);
    c->store = store;
    c->tasks = todo;
    c->name = name;
    c->tty = isatty(STDERR_FILENO);
    c->quiet = o->quiet;
    c->commit_s = o->commit_s;
    c->last_commit = c->last_line = clock_now_s();
    c->ckpt_dir = o->ckpt_dir;
    c->ckpt_every = o->ckpt_every;
    c->db = o->db;
    size_t n[TASK_STATUS_COUNT];
    if (store && store_sweep_counts(store, n) == 0)
        for (int k = 0; k < TASK_STATUS_COUNT; k++)
            if (!task_status_todo((enum task_status)k, o->retry_errors)) {
                c->before[k] = n[k];
                c->nbefore += n[k];
            }
    *ops = (struct sched_ops){run_task, on_started, on_finished, on_returned,
                              on_tick,  on_note,    c,           on_charged};
}

int run_exit_code(struct run_ctx *c, const struct sched_stats *stats)
{
    size_t n[TASK_STATUS_COUNT];
    if (store_sweep_counts(c->store, n)) {
        snprintf(c->err, sizeof c->err, "cannot count the statuses: %s", store_errmsg(c->store));
        return RUN_EXIT_FAILED;
    }
    size_t left = 0;
    for (int k = 0; k < TASK_STATUS_COUNT; k++)
        if (task_status_todo((enum task_status)k, 0))
            left += n[k];
    if (left > 0)
        return RUN_EXIT_STOPPED; /* a signal, the time limit, or tasks lost with their rank */
    (void)stats;
    return n[TASK_ERROR] + n[TASK_TIMEOUT] > 0 ? RUN_EXIT_ERRORS : RUN_EXIT_FINISHED;
}

void run_summary(const struct run_ctx *c, const struct sched_stats *stats, int code)
{
    /* the count of each status a finished task can have, in the enum's order */
    char line[1024];
    size_t o = 0;
    for (int k = 0; k < TASK_STATUS_COUNT; k++)
        if (TASK_STATUS_SOLVER & TASK_STATUS_BIT(k))
            o += (size_t)snprintf(line + o, sizeof line - o, "%s%zu %s", o ? ", " : "",
                                  c->nstatus[k], task_status_name((enum task_status)k));
    o += (size_t)snprintf(line + o, sizeof line - o, "; %zu not started", stats->not_started);
    if (stats->skipped_deadline)
        o += (size_t)snprintf(line + o, sizeof line - o, " (%zu would not fit in the time limit)",
                              stats->skipped_deadline);
    if (stats->returned)
        o += (size_t)snprintf(line + o, sizeof line - o, " (%zu handed back unstarted)",
                              stats->returned);
    if (stats->stalled)
        o += (size_t)snprintf(line + o, sizeof line - o,
                              "; %zu stalled rank%s, %zu task%s rerun elsewhere, %zu late "
                              "result%s ignored",
                              stats->stalled, stats->stalled > 1 ? "s" : "", stats->reassigned,
                              stats->reassigned == 1 ? "" : "s", stats->late_ignored,
                              stats->late_ignored == 1 ? "" : "s");
    snprintf(line + o, sizeof line - o, "; %.3f s", stats->elapsed_s);
    run_log("%s", line);
    if (stats->signal)
        run_log("stopped by signal %d (%s); rerun the same command to resume", stats->signal,
                strsignal(stats->signal));
    static const char *const meaning[] = {
        [RUN_EXIT_FINISHED] = "every task of the sweep is finished",
        [RUN_EXIT_FAILED] = "the run failed",
        [RUN_EXIT_BAD_INPUT] = "bad input",
        [RUN_EXIT_ERRORS] =
            "every task is finished, some with error or timeout (see status; --retry-errors)",
        [RUN_EXIT_STOPPED] = "stopped with work left: run the same command again"};
    run_log("exit code %d: %s", code, meaning[code]);
    /* weak recovery as the view recovery counts it, and what to do next */
    char solver[3][8];
    size_t rec[3], runs[3];
    int ns = store_sweep_recovery(c->store, solver, rec, runs, 3);
    o = 0;
    line[0] = '\0';
    for (int k = 0; k < ns; k++)
        o += (size_t)snprintf(line + o, sizeof line - o, "%s%s %zu of %zu", k ? ", " : "",
                              solver[k], rec[k], runs[k]);
    if (ns > 0)
        run_log("weak recovery (finished runs that reached it, as the view recovery counts): %s",
                line);
    if (code == RUN_EXIT_FINISHED || code == RUN_EXIT_ERRORS)
        run_log("next: aimsweep status %s; aimsweep query %s \"SELECT * FROM recovery\"; "
                "aimsweep figures %s --out figs; aimsweep report %s --out report",
                c->db, c->db, c->db, c->db);
}
