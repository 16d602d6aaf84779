/*
 * sched.c: the rank-0 scheduler (see sched.h); the workers' side is in sched_worker.c.
 *
 * Protocol (rank 0 <-> worker w):
 *   w -> 0  HELLO   i64 pid, hostname (NUL-terminated), the kernels' path (kern.h, NUL-terminated)
 *   0 -> w  TASK    u64 index, u64 id, text (NUL-terminated); up to SCHED_DEPTH held at once
 *   w -> 0  RESULT  u64 index, u32 kind (bytes, lost, unstarted), f64 seconds, bytes
 *                   (each result also asks for the next task)
 *   w -> 0  BEAT    (empty: alive; from the running task's stop polls and the idle loop)
 *   0 -> w  DRAIN   (start no more held tasks: send them back unstarted)
 *   0 -> w  STOP    (stop the running task now, and drain)
 *   0 -> w  ABANDON (as STOP, to a worker taken for stalled: its tasks run elsewhere, so the
 *                   running one leaves no checkpoint)
 *   0 -> w  DONE    (nothing is held and nothing is left: leave)
 * Messages from rank 0 to a worker arrive in order, so DONE comes after everything else.
 * A stop: the signal goes into the database first (ops.tick, before any message), then DRAIN and
 * STOP go out with MPI_Isend; a worker whose send fails or is not taken within
 * SCHED_TELL_WAIT_S (a dead node: a blocking send would sit in connect() until mpirun kills rank
 * 0) is taken for lost, its tasks put back (ops.finished without bytes) and never waited for.
 * Both sides poll with MPI_Iprobe and short sleeps rather than blocking, so that a signal is
 * seen within milliseconds, an idle rank can send its heartbeat, and no rank spins a core it
 * shares with others.
 *
 * Stalls (sched.h): rank 0 keeps, per worker, when it last heard from it. Only time in which
 * rank 0 was listening counts: a gap of more than SCHED_BEAT_S in its own loop (a slow commit,
 * rank 0 itself stopped) moves every worker's last-heard time on by the gap, and silence is
 * judged when no message is waiting (or, under a steady stream, every quarter timeout). A stalled worker is retired for the rest of the run
 * (marked done, sent ABANDON and DONE without blocking): if it comes back it stops its task, hands
 * its queued one back, and leaves; rank 0 ignores what it sends. Its tasks go onto a stack that
 * next_task serves before the sorted order. Since a task is reassigned only by this route, and
 * a retired rank's results are never passed on, ops.finished sees each task at most once.
 * Every MPI call is checked (mpicheck.h; sched_run sets MPI_ERRORS_RETURN on comm): a failure
 * is reported with the call and makes sched_run return -1 on that rank.
 */
#include "aimsweep/harness/sched.h"
#include "aimsweep/base/clock.h"
#include "aimsweep/harness/mpicheck.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/model/obs.h"
#include "sched_impl.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCHED_TICK_S 0.2
/* Tasks per worker: one running and, when tasks are shorter than SCHED_QUEUE_S, the next one
 * already sent, so that a worker never waits for rank 0. */
#define SCHED_DEPTH 2
#define SCHED_QUEUE_S 1.0
#define SCHED_ETA_PARTIAL 0.9
/* How often rank 0 looks for stalled workers while nothing arrives. */
#define SCHED_STALL_SCAN_S 0.05
/* A DRAIN or STOP not sent after this long: its worker is taken for lost. A live peer takes an
 * empty message at once, whatever its load (the kernel buffers it). */
#define SCHED_TELL_WAIT_S 5.0
#define SCHED_TELL_WAIT_TEXT "5 s"

double sched_beat_s(const struct sched_opts *opts)
{
    double s = opts ? opts->stall_timeout_s : 0;
    if (!(s > 0))
        return 0;
    return s / 4 < SCHED_BEAT_S ? s / 4 : SCHED_BEAT_S;
}

static volatile sig_atomic_t got_signal, got_term, got_pid, got_uid;

/* SIGTERM and SIGINT outrank SIGUSR1: they stand, and they may come after it. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int hard = sig == SIGTERM || sig == SIGINT;
    if (!got_signal || hard) {
        got_signal = sig;
        got_pid = si ? (sig_atomic_t)si->si_pid : 0;
        got_uid = si ? (sig_atomic_t)si->si_uid : 0;
    }
    if (hard)
        got_term = sig;
}

void sched_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

int sched_signal_received(void) { return got_signal; }

void sched_signal_origin(int *pid, int *uid)
{
    *pid = got_pid;
    *uid = got_uid;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rank 0's view of the sweep. */
struct root {
    const struct sched_task *tasks;
    size_t n, *order, next;
    const struct sched_ops *ops;
    const struct sched_opts *opts;
    struct sched_stats *st;
    double t0, last_tick, stop_at, task_t0;
    double done_cost, done_wall, remaining_cost;
    size_t running;
    int stopping, stop_sent, term_seen;
    int told; /* the signal the last forced tick reported (the stop is recorded before MPI) */
    size_t *live, nlive, cap_live; /* the tasks handed out and not back, with when they went */
    double *live_t0;
    size_t *again, nagain;   /* tasks taken from stalled workers, served before order (a stack) */
    int watch;               /* stall detection on */
    int nidle;               /* workers waiting for work while others hold tasks */
    int size;                /* ranks: rank 0 and size - 1 workers (1: serial) */
    const struct wstate *ws; /* the workers (run_root), or NULL */
};

static size_t computing(const struct root *R);

/* A line for the log (ops.note, else stderr). */
static void note(struct root *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct root *R, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    if (R->ops->note)
        R->ops->note(R->ops->ctx, line);
    else
        fprintf(stderr, "aimsweep: %s\n", line);
}

static void live_add(struct root *R, size_t i)
{
    if (R->nlive < R->cap_live) {
        R->live[R->nlive] = i;
        R->live_t0[R->nlive++] = clock_now_s();
    }
}

static void live_remove(struct root *R, size_t i)
{
    for (size_t k = 0; k < R->nlive; k++)
        if (R->live[k] == i) {
            R->live[k] = R->live[--R->nlive];
            R->live_t0[k] = R->live_t0[R->nlive];
            return;
        }
}

static const struct sched_task *g_sort_tasks;
static int cmp_cost(const void *a, const void *b)
{
    double ca = g_sort_tasks[*(const size_t *)a].cost, cb = g_sort_tasks[*(const size_t *)b].cost;
    if (ca != cb)
        return ca > cb ? -1 : 1;
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b; /* stable: file order */
    return ia < ib ? -1 : ia > ib;
}

/* Seconds of wall time per unit of estimated cost, from the finished tasks. */
static double scale(const struct root *R)
{
    return R->done_cost > 0 ? R->done_wall / R->done_cost : 1.0;
}

static void progress(struct root *R, int force)
{
    double t = clock_now_s();
    if (!force && t - R->last_tick < SCHED_TICK_S)
        return;
    R->last_tick = t;
    if (!R->ops->tick)
        return;
    struct sched_progress pr = {R->n,         R->st->done + R->st->lost,
                                computing(R), R->st->skipped_deadline,
                                t - R->t0,    0,
                                -1,           R->stopping};
    if (pr.elapsed_s > 0)
        pr.rate = (double)pr.done / pr.elapsed_s;
    /* Tasks still running count for the share of their estimate they have had (at most
     * SCHED_ETA_PARTIAL of it), so that the ETA falls while a long task runs instead of growing. */
    double partial = 0, sc = scale(R);
    for (size_t k = 0; k < R->nlive; k++) {
        double c = R->tasks[R->live[k]].cost, f = c > 0 ? (t - R->live_t0[k]) / (c * sc) : 0;
        partial += c * (f < SCHED_ETA_PARTIAL ? f : SCHED_ETA_PARTIAL);
    }
    /* Until every worker has finished a task, the rate so far says little (the first ETA of a
     * one-minute sweep read 14 h): the estimate of what is left, over the workers, as plan
     * gives it. */
    int workers = R->size > 1 ? R->size - 1 : 1;
    if (R->st->done < (size_t)workers || R->done_cost <= 0)
        pr.eta_s = fmax(R->remaining_cost - partial, 0) * scale(R) / workers;
    else if (pr.elapsed_s > 0)
        pr.eta_s = (R->remaining_cost - partial) * pr.elapsed_s / (R->done_cost + partial);
    R->ops->tick(R->ops->ctx, &pr);
}

/* When running tasks are asked to stop: the grace (shorter after SIGTERM or SIGINT, also when
 * they follow SIGUSR1), and never later than SCHED_END_MARGIN_S before the job's end. */
static void check_signal(struct root *R)
{
    int sig = got_signal;
    if (!sig || (R->stopping && R->term_seen >= (got_term != 0)))
        return;
    double now = clock_now_s(), grace = R->opts->grace_s;
    if (got_term) {
        R->term_seen = 1;
        double tg = R->opts->term_grace_s > 0 ? R->opts->term_grace_s : SCHED_TERM_GRACE_S;
        /* from the parent, mpirun: it sends SIGKILL odls_base_sigkill_timeout (default 1 s) later */
        if (got_pid > 1 && got_pid == (sig_atomic_t)getppid())
            tg = 0;
        if (grace > tg)
            grace = tg;
    }
    if (R->opts->end_time > 0) {
        double left = R->opts->end_time - wall_s() - SCHED_END_MARGIN_S;
        if (grace > left)
            grace = left > 0 ? left : 0;
    }
    if (!R->stopping || now + grace < R->stop_at)
        R->stop_at = now + grace;
    R->stopping = 1;
    R->st->signal = sig;
    if (R->told != sig) {
        /* the stop goes into the database (ops.tick) before rank 0 talks to any worker: a peer
         * that died makes the talking slow, and mpirun may SIGKILL rank 0 meanwhile */
        R->told = sig;
        progress(R, 1);
    }
}

/* The next task to hand out, or SIZE_MAX. */
static size_t next_task(struct root *R)
{
    if (R->stopping)
        return (size_t)-1;
    while (R->nagain > 0 || R->next < R->n) {
        size_t i = R->nagain > 0 ? R->again[--R->nagain] : R->order[R->next++];
        if (R->opts->deadline > 0 && wall_s() + R->tasks[i].cost * scale(R) > R->opts->deadline) {
            R->st->skipped_deadline++;
            R->remaining_cost -= R->tasks[i].cost;
            continue;
        }
        return i;
    }
    return (size_t)-1;
}

static void account(struct root *R, size_t i, double wall, int lost)
{
    R->running--;
    live_remove(R, i);
    R->remaining_cost -= R->tasks[i].cost;
    if (lost)
        R->st->lost++;
    else {
        R->st->done++;
        if (wall > 0) {
            R->done_cost += R->tasks[i].cost;
            R->done_wall += wall;
        }
    }
}

/* Serial mode: the stop callback for tasks rank 0 runs itself. */
static int serial_stop(void *ctx)
{
    struct root *R = ctx;
    check_signal(R);
    progress(R, 0); /* the progress line and the recorded stop, also while a long task runs */
    if (R->stopping && clock_now_s() >= R->stop_at)
        return OBS_STOP_INTERRUPT;
    if (R->opts->task_timeout_s > 0 && clock_now_s() - R->task_t0 > R->opts->task_timeout_s)
        return OBS_STOP_TIMEOUT;
    return OBS_STOP_NONE;
}

static int run_serial(struct root *R)
{
    size_t i;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    while ((check_signal(R), i = next_task(R)) != (size_t)-1) {
        if (R->ops->started(R->ops->ctx, i, 0, host, kern_path())) {
            R->st->aborted = 1;
            return -1;
        }
        R->running++;
        live_add(R, i);
        progress(R, 1);
        unsigned char *out = NULL;
        size_t len = 0;
        double t = R->task_t0 = clock_now_s();
        int rc =
            R->ops->run(R->ops->ctx, R->tasks[i].id, R->tasks[i].text, serial_stop, R, &out, &len);
        account(R, i, clock_now_s() - t, rc != 0);
        int frc = R->ops->finished(R->ops->ctx, i, 0, rc ? NULL : out, rc ? 0 : len);
        free(out);
        if (frc) {
            R->st->aborted = 1;
            return -1;
        }
        progress(R, 1);
    }
    return 0;
}

/* Rank 0's view of one worker: the tasks it holds (running first, then queued). */
struct wstate {
    size_t held[SCHED_DEPTH];
    int n;
    int done;            /* DONE sent (or retired as stalled) */
    int idle;            /* holds nothing, waits while other workers hold tasks */
    int stalled;         /* taken for stalled: retired, what it sends is ignored */
    int revived;         /* stalled, and sent something afterwards */
    int lost;            /* could not be told to stop (lose_worker): given up */
    MPI_Request tell[2]; /* DRAIN and STOP on their way, or MPI_REQUEST_NULL */
    double tell_t;       /* when they went */
    long pid;
    double heard; /* when rank 0 last heard from it (moved on over rank 0's own gaps) */
    char host[256];
    char kernels[16]; /* its kernels' path, "" when its HELLO did not say */
};

/* The tasks being computed: one per worker that holds any (a worker's second task waits in its
 * queue), not counting workers taken for stalled or lost; serially, the one running. */
static size_t computing(const struct root *R)
{
    if (!R->ws)
        return R->running;
    size_t n = 0;
    for (int r = 1; r < R->size; r++)
        n += R->ws[r].n > 0 && !R->ws[r].stalled && !R->ws[r].lost;
    return n;
}

static void held_remove(struct wstate *w, size_t idx)
{
    for (int k = 0; k < w->n; k++)
        if (w->held[k] == idx) {
            memmove(&w->held[k], &w->held[k + 1], (size_t)(w->n - k - 1) * sizeof w->held[0]);
            w->n--;
            return;
        }
}

static void abort_sweep(struct root *R)
{
    R->st->aborted = 1;
    if (!R->stopping) {
        R->stopping = 1;
        R->stop_at = clock_now_s();
    }
}

/* The task next_task would give, or SIZE_MAX. */
static size_t peek_task(const struct root *R)
{
    if (R->nagain > 0)
        return R->again[R->nagain - 1];
    return R->next < R->n ? R->order[R->next] : (size_t)-1;
}

/* Hands worker src tasks until it holds one, or SCHED_DEPTH when tasks are short (so that
 * the next one is already there when it finishes; long tasks are never queued, which would
 * keep them from an idle worker at the end). When nothing is left for it: DONE, or, with stall
 * detection, while other workers hold tasks that may yet come back, it waits (idle). */
static int fill(MPI_Comm comm, struct root *R, struct wstate *w, int src, int *active)
{
    while (w->n < SCHED_DEPTH && !w->done) {
        if (w->n > 0) {
            size_t peek = peek_task(R);
            if (peek == (size_t)-1 || R->done_cost <= 0 ||
                R->tasks[peek].cost * scale(R) > SCHED_QUEUE_S)
                break;
        }
        size_t i = next_task(R);
        if (i == (size_t)-1)
            break;
        if (R->ops->started(R->ops->ctx, i, src, w->host, w->kernels[0] ? w->kernels : NULL)) {
            abort_sweep(R);
            break;
        }
        size_t len = strlen(R->tasks[i].text) + 1;
        unsigned char *msg = malloc(16 + len);
        if (!msg)
            return -1;
        uint64_t idx = i;
        memcpy(msg, &idx, 8);
        memcpy(msg + 8, &R->tasks[i].id, 8);
        memcpy(msg + 16, R->tasks[i].text, len);
        int bad = MPICHECK_FAILED(MPI_Send(msg, (int)(16 + len), MPI_BYTE, src, TAG_TASK, comm));
        free(msg);
        if (bad)
            return -1;
        if (w->n == 0)
            w->heard = clock_now_s(); /* its silence counts from its first task on */
        w->held[w->n++] = i;
        R->running++;
        live_add(R, i);
    }
    int was_idle = w->idle;
    w->idle = 0;
    if (w->n == 0 && !w->done) {
        if (R->watch && R->running > 0 && !R->stopping) {
            w->idle = 1;
        } else {
            MPICHECK(MPI_Send(NULL, 0, MPI_BYTE, src, TAG_DONE, comm), -1);
            w->done = 1;
            (*active)--;
        }
    }
    R->nidle += w->idle - was_idle;
    return 0;
}

/* Gives waiting workers the tasks of stalled ones, or DONE once nothing is held anywhere. */
static int release_idle(MPI_Comm comm, struct root *R, struct wstate *ws, int size, int *active)
{
    for (int r = 1; r < size && R->nidle > 0; r++)
        if (ws[r].idle && fill(comm, R, &ws[r], r, active))
            return -1;
    return 0;
}

/* Sends an empty message without waiting for it (a stalled rank may never take it in).
 * clang's MPI checker wants a wait for every request and knows nothing of MPI_Request_free
 * (standard: the send still completes); hence the NOLINT regions here and at the heartbeat. */
// NOLINTBEGIN(clang-analyzer-optin.mpi.MPI-Checker)
static int post(MPI_Comm comm, int dest, int tag)
{
    MPI_Request rq;
    MPICHECK(MPI_Isend(NULL, 0, MPI_BYTE, dest, tag, comm, &rq), -1);
    MPICHECK(MPI_Request_free(&rq), -1);
    return 0;
}
// NOLINTEND(clang-analyzer-optin.mpi.MPI-Checker)

/* Whether worker r, silent for the stall timeout at t, failed alone: every other worker on its
 * host was heard within half the timeout. A host whose workers fell silent together (or one of
 * them already taken for stalled) lost its node or its link: no task's own fault. A worker with
 * no other on its host counts as alone. */
static int stalled_alone(const struct root *R, const struct wstate *ws, int size, int r, double t)
{
    for (int k = 1; k < size; k++) {
        if (k == r || !ws[r].host[0] || strcmp(ws[k].host, ws[r].host) != 0)
            continue;
        if (ws[k].stalled || (!ws[k].done && t - ws[k].heard >= R->opts->stall_timeout_s / 2))
            return 0;
    }
    return 1;
}

/* Takes worker w out of the sweep (stalled or lost): it holds nothing, waits for nothing, and
 * counts as done. */
static void retire(struct root *R, struct wstate *w, int *active)
{
    w->n = 0;
    R->nidle -= w->idle;
    w->idle = 0;
    w->done = 1;
    (*active)--;
}

/* Retires every worker that holds tasks or has not finished and has been silent for the stall
 * timeout: its tasks go onto R->again for the others. Returns 0, or -1 on an MPI failure. */
static int stall_scan(MPI_Comm comm, struct root *R, struct wstate *ws, int size, int *active,
                      double t)
{
    double lim = R->opts->stall_timeout_s;
    for (int r = 1; r < size; r++) {
        struct wstate *w = &ws[r];
        if (w->done || t - w->heard < lim)
            continue;
        char what[96] = "while it held no task";
        if (w->n > 0) {
            char hex[17];
            snprintf(hex, sizeof hex, "%016" PRIx64, R->tasks[w->held[0]].id);
            snprintf(what, sizeof what, "while running task %s%s", hex,
                     w->n > 1 ? " (and one queued)" : "");
        }
        note(R,
             "rank %d (pid %ld on %s) has sent nothing for %.1f s %s (stall timeout %g s): "
             "taken for stalled; %s",
             r, w->pid, w->host[0] ? w->host : "?", t - w->heard, what, lim,
             w->n > 0 ? "its tasks go to the other ranks, anything it sends later is ignored"
                      : "anything it sends later is ignored");
        int alone = stalled_alone(R, ws, size, r, t);
        if (w->n > 0 && alone && R->ops->charged && R->ops->charged(R->ops->ctx, w->held[0]))
            abort_sweep(R); /* the running one: its rank failed under it */
        if (w->n > 0 && !alone)
            note(R,
                 "rank %d's node %s is silent as a whole (a node or link lost): no attempt "
                 "charged",
                 r, w->host[0] ? w->host : "?");
        for (int k = w->n - 1; k >= 0; k--) { /* the running task on top: served first */
            size_t i = w->held[k];
            R->running--;
            live_remove(R, i);
            R->again[R->nagain++] = i;
            R->st->reassigned++;
            if (R->ops->returned && R->ops->returned(R->ops->ctx, i))
                abort_sweep(R);
        }
        retire(R, w, active);
        w->stalled = 1;
        R->st->stalled++;
        if (post(comm, r, TAG_ABANDON) || post(comm, r, TAG_DONE))
            return -1;
    }
    return release_idle(comm, R, ws, size, active);
}

/* A worker rank 0 cannot reach (a failed send of DRAIN or STOP, or one not gone within
 * SCHED_TELL_WAIT_S): taken for lost, its tasks put back (ops.finished without bytes: they run
 * again next time, no attempt charged, since a node lost under a rank is no fault of its task),
 * and never waited for again. */
static void lose_worker(struct root *R, struct wstate *w, int r, int *active, const char *why)
{
    note(R, "rank %d (pid %ld on %s) %s: taken for lost, its %d task%s put back", r, w->pid,
         w->host[0] ? w->host : "?", why, w->n, w->n == 1 ? "" : "s");
    for (int k = 0; k < w->n; k++) {
        account(R, w->held[k], 0, 1);
        if (R->ops->finished(R->ops->ctx, w->held[k], r, NULL, 0))
            abort_sweep(R);
    }
    retire(R, w, active);
    w->lost = 1;
    R->st->lost_ranks++;
}

/* Posts an empty message with tag to every worker that still holds tasks, without waiting for
 * it (a peer that died would keep a blocking send in connect() for as long as mpirun lets rank
 * 0 live); tells_check follows the sends. Returns 0, or -1 on an MPI failure (reported). */
static int tell_holders(MPI_Comm comm, struct root *R, struct wstate *ws, int size, int tag,
                        int *active)
{
    for (int r = 1; r < size; r++) {
        struct wstate *w = &ws[r];
        if (w->done || w->n == 0)
            continue;
        int k = tag == TAG_STOP;
        if (MPICHECK_FAILED(MPI_Isend(NULL, 0, MPI_BYTE, r, tag, comm, &w->tell[k]))) {
            lose_worker(R, w, r, active, "cannot be sent the stop");
            continue;
        }
        w->tell_t = clock_now_s();
    }
    return 0;
}

/* The DRAIN and STOP sends still on their way: a failed one, or one still there after
 * SCHED_TELL_WAIT_S, loses its worker. */
static void tells_check(struct root *R, struct wstate *ws, int size, int *active, double t)
{
    for (int r = 1; r < size; r++) {
        struct wstate *w = &ws[r];
        for (int k = 0; k < 2; k++) {
            if (w->tell[k] == MPI_REQUEST_NULL)
                continue;
            int done = 0;
            /* a failure is this worker's, not the sweep's: no report through MPICHECK */
            int bad = MPI_Test(&w->tell[k], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS;
            if (!bad && done)
                continue;
            if (!bad && t - w->tell_t < SCHED_TELL_WAIT_S)
                continue;
            // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker): freed, see post
            (void)MPI_Request_free(&w->tell[k]);
            w->tell[k] = MPI_REQUEST_NULL;
            if (!w->done)
                lose_worker(R, w, r, active,
                            bad ? "cannot be reached (the send of the stop failed)"
                                : "has not taken the stop in " SCHED_TELL_WAIT_TEXT);
        }
    }
}

/* A message from a retired (stalled) worker: noted, never passed on. */
static void from_stalled(struct root *R, struct wstate *w, int src, int tag,
                         const unsigned char *buf, int count)
{
    if (!w->revived)
        note(R, "rank %d (pid %ld on %s), taken for stalled, answers again", src, w->pid,
             w->host[0] ? w->host : "?");
    w->revived = 1;
    if (tag != TAG_RESULT || count < RESULT_HEADER)
        return;
    uint64_t idx;
    uint32_t kind;
    memcpy(&idx, buf, 8);
    memcpy(&kind, buf + 8, 4);
    if (kind == RESULT_UNSTARTED || idx >= R->n)
        return;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, R->tasks[idx].id);
    R->st->late_ignored++;
    note(R, "late result of task %s from rank %d ignored: the task was given to another rank", hex,
         src);
}

static int run_root(MPI_Comm comm, int size, struct root *R)
{
    struct wstate *ws = calloc((size_t)size, sizeof *ws);
    unsigned char *buf = NULL;
    size_t cap = 0;
    int active = size - 1, rc = 0, drain_sent = 0;
    double idle_since = clock_now_s(), loop_t = idle_since, scan_t = idle_since;
    if (!ws)
        return -1;
    R->ws = ws;
    for (int r = 1; r < size; r++) {
        ws[r].heard = idle_since;
        ws[r].tell[0] = ws[r].tell[1] = MPI_REQUEST_NULL;
    }
    while (active > 0) {
        check_signal(R);
        progress(R, 0);
        double t = clock_now_s();
        if (t - loop_t > SCHED_BEAT_S) /* rank 0 was not listening: that is no one's silence */
            for (int r = 1; r < size; r++)
                ws[r].heard += t - loop_t;
        loop_t = t;
        if (R->stopping && !drain_sent) {
            /* queued tasks come back unstarted; running ones go on until stop_at */
            if (tell_holders(comm, R, ws, size, TAG_DRAIN, &active) ||
                release_idle(comm, R, ws, size, &active)) {
                rc = -1;
                break;
            }
            drain_sent = 1;
        }
        if (R->stopping && !R->stop_sent && t >= R->stop_at) {
            if (tell_holders(comm, R, ws, size, TAG_STOP, &active)) {
                rc = -1;
                break;
            }
            R->stop_sent = 1;
        }
        if (drain_sent)
            tells_check(R, ws, size, &active, t);
        if (active == 0)
            break;
        if (R->stop_sent && t >= R->stop_at + SCHED_STOP_WAIT_S)
            break; /* a worker that does not answer: give its tasks up */
        int flag;
        MPI_Status ms;
        if (MPICHECK_FAILED(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &ms))) {
            rc = -1;
            break;
        }
        /* Silence means something when no message is waiting; under a steady stream (many
         * ranks, tiny tasks) the scan is forced every quarter of the stall timeout (a rank 0 that
         * far behind its queue is overloaded anyway). */
        if (flag && ms.MPI_SOURCE > 0 && ms.MPI_SOURCE < size)
            ws[ms.MPI_SOURCE].heard = t; /* its message is here: not silent */
        if (R->watch && t - scan_t >= (flag ? R->opts->stall_timeout_s / 4 : SCHED_STALL_SCAN_S)) {
            scan_t = t;
            if (stall_scan(comm, R, ws, size, &active, t)) {
                rc = -1;
                break;
            }
        }
        if (!flag) {
            /* spin briefly after traffic (results come in bursts), then sleep longer */
            if (t - idle_since > SCHED_SPIN_S)
                sched_nap(t - idle_since < 0.05 ? 20e-6 : 1e-3);
            continue;
        }
        idle_since = clock_now_s();
        int count, src = ms.MPI_SOURCE;
        if (MPICHECK_FAILED(MPI_Get_count(&ms, MPI_BYTE, &count))) {
            rc = -1;
            break;
        }
        if (sched_grow(&buf, &cap, (size_t)count + 1)) {
            fprintf(stderr, "aimsweep: out of memory for a message of %d bytes\n", count);
            rc = -1;
            break;
        }
        if (MPICHECK_FAILED(
                MPI_Recv(buf, count, MPI_BYTE, src, ms.MPI_TAG, comm, MPI_STATUS_IGNORE))) {
            rc = -1;
            break;
        }
        struct wstate *w = &ws[src];
        w->heard = idle_since;
        if (w->stalled) {
            from_stalled(R, w, src, ms.MPI_TAG, buf, count);
            continue;
        }
        if (w->lost)
            continue; /* its tasks were put back */
        if (ms.MPI_TAG == TAG_HELLO && count >= 8) {
            int64_t pid;
            memcpy(&pid, buf, 8);
            w->pid = (long)pid;
            buf[count] = 0;
            snprintf(w->host, sizeof w->host, "%s", (char *)buf + 8);
            size_t hl = strlen((char *)buf + 8);
            if (8 + (int)hl + 1 < count)
                snprintf(w->kernels, sizeof w->kernels, "%s", (char *)buf + 8 + hl + 1);
        } else if (ms.MPI_TAG == TAG_RESULT && count >= RESULT_HEADER) {
            uint64_t idx;
            uint32_t kind;
            double wall;
            memcpy(&idx, buf, 8);
            memcpy(&kind, buf + 8, 4);
            memcpy(&wall, buf + 16, 8);
            int held = 0;
            for (int k = 0; k < w->n; k++)
                held |= w->held[k] == idx;
            if (!held)
                continue; /* not ours: ignore */
            held_remove(w, idx);
            if (kind == RESULT_UNSTARTED) {
                R->running--;
                live_remove(R, idx);
                R->st->returned++;
                if (R->ops->returned && R->ops->returned(R->ops->ctx, idx))
                    abort_sweep(R);
            } else {
                int lost = kind != RESULT_BYTES;
                account(R, idx, wall, lost);
                if (!R->st->aborted &&
                    R->ops->finished(R->ops->ctx, idx, src, lost ? NULL : buf + RESULT_HEADER,
                                     lost ? 0 : (size_t)count - RESULT_HEADER))
                    abort_sweep(R);
            }
            progress(R, 1);
        } else
            continue; /* a heartbeat: heard, nothing to do */
        if (fill(comm, R, w, src, &active) || release_idle(comm, R, ws, size, &active)) {
            rc = -1;
            break;
        }
    }
    for (int r = 1; r < size; r++) {
        R->st->stalled_silent += ws[r].stalled && !ws[r].revived;
        for (int k = 0; k < 2; k++)
            if (ws[r].tell[k] != MPI_REQUEST_NULL)
                // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker): freed, see post
                (void)MPI_Request_free(&ws[r].tell[k]);
    }
    if (R->nagain > 0 && !R->stopping)
        note(R, "no rank is left to run the %zu task%s of stalled ranks: %s pending", R->nagain,
             R->nagain > 1 ? "s" : "", R->nagain > 1 ? "they stay" : "it stays");
    if (active > 0) {
        /* workers that never answered: their tasks are lost; do not wait for them */
        for (int r = 1; r < size; r++)
            for (int k = 0; k < ws[r].n; k++) {
                account(R, ws[r].held[k], 0, 1);
                if (R->ops->finished(R->ops->ctx, ws[r].held[k], r, NULL, 0))
                    R->st->aborted = 1;
            }
        if (rc)
            fprintf(stderr, "aimsweep: giving up %d worker(s) after the failure above\n", active);
        else
            fprintf(stderr, "aimsweep: %d worker(s) did not stop in time; aborting them\n", active);
        rc = rc ? rc : -2;
    }
    R->ws = NULL; /* progress() after the run reads it no more */
    free(ws);
    // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker): the requests were freed above
    free(buf);
    return rc;
}

int sched_run(MPI_Comm comm, const struct sched_task *tasks, size_t n, const struct sched_ops *ops,
              const struct sched_opts *opts, struct sched_stats *stats)
{
    int rank, size;
    if (mpicheck_errors_return(comm))
        return -1;
    MPICHECK(MPI_Comm_rank(comm, &rank), -1);
    MPICHECK(MPI_Comm_size(comm, &size), -1);
    if (rank != 0)
        return sched_run_worker(comm, ops, opts);

    struct root R;
    memset(&R, 0, sizeof R);
    memset(stats, 0, sizeof *stats);
    R.tasks = tasks;
    R.n = n;
    R.ops = ops;
    R.opts = opts;
    R.st = stats;
    R.t0 = clock_now_s();
    R.order = malloc((n ? n : 1) * sizeof *R.order);
    R.cap_live = size > 1 ? (size_t)(size - 1) * SCHED_DEPTH : 1;
    R.live = malloc(R.cap_live * sizeof *R.live);
    R.live_t0 = malloc(R.cap_live * sizeof *R.live_t0);
    R.again = malloc(R.cap_live * sizeof *R.again);
    R.watch = size > 1 && opts && opts->stall_timeout_s > 0;
    R.size = size;
    if (!R.order || !R.live || !R.live_t0 || !R.again) {
        free(R.order);
        free(R.live);
        free(R.live_t0);
        free(R.again);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        R.order[i] = i;
        R.remaining_cost += tasks[i].cost;
    }
    g_sort_tasks = tasks;
    qsort(R.order, n, sizeof *R.order, cmp_cost);
    int rc = size == 1 ? run_serial(&R) : run_root(comm, size, &R);
    stats->not_started = n - stats->done - stats->lost - stats->skipped_deadline;
    stats->elapsed_s = clock_now_s() - R.t0;
    progress(&R, 1);
    free(R.order);
    free(R.live);
    free(R.live_t0);
    free(R.again);
    return rc == 0 && !stats->aborted ? 0 : rc == -2 ? -2 : -1;
}
