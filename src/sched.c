/*
 * sched.c: the rank-0 scheduler (see sched.h).
 *
 * Protocol (rank 0 <-> worker w):
 *   w -> 0  HELLO   hostname
 *   0 -> w  TASK    u64 index, u64 id, text (NUL-terminated)
 *   w -> 0  RESULT  u64 index, bytes           (also asks for the next task)
 *   0 -> w  STOP    (stop the running task now; ignored when idle)
 *   0 -> w  DONE    (no more work: leave)
 * Rank 0 polls with MPI_Iprobe and short sleeps rather than blocking, so that a signal is
 * seen within milliseconds and rank 0 does not spin a core it shares with workers.
 */
#include "aimsweep/sched.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_HELLO = 11, TAG_TASK, TAG_RESULT, TAG_STOP, TAG_DONE };

#define SCHED_TICK_S 0.2
/* After a message, rank 0 polls without sleeping this long. */
#define SCHED_SPIN_S 0.002

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    if (!got_signal || sig == SIGTERM)
        got_signal = sig;
}

void sched_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int sched_signal_received(void) { return got_signal; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Rank 0's view of the sweep. */
struct root {
    const struct sched_task *tasks;
    size_t n, *order, next;
    const struct sched_ops *ops;
    const struct sched_opts *opts;
    struct sched_stats *st;
    double t0, last_tick, stop_at;
    double done_cost, done_wall, remaining_cost;
    size_t running;
    int stopping, stop_sent;
};

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
static double scale(const struct root *R) { return R->done_cost > 0 ? R->done_wall / R->done_cost : 1.0; }

static void progress(struct root *R, int force)
{
    double t = now_s();
    if (!force && t - R->last_tick < SCHED_TICK_S)
        return;
    R->last_tick = t;
    if (!R->ops->tick)
        return;
    struct sched_progress pr = {R->n, R->st->done + R->st->lost, R->running, R->st->skipped_deadline, t - R->t0, 0, -1,
                                R->stopping};
    if (pr.elapsed_s > 0)
        pr.rate = (double)pr.done / pr.elapsed_s;
    if (R->done_cost > 0 && pr.elapsed_s > 0)
        pr.eta_s = R->remaining_cost * pr.elapsed_s / R->done_cost;
    R->ops->tick(R->ops->ctx, &pr);
}

static void check_signal(struct root *R)
{
    int sig = got_signal;
    if (!sig || R->stopping)
        return;
    R->stopping = 1;
    R->st->signal = sig;
    double grace = R->opts->grace_s;
    if (sig == SIGTERM && grace > SCHED_TERM_GRACE_S)
        grace = SCHED_TERM_GRACE_S;
    R->stop_at = now_s() + grace;
}

/* The next task to hand out, or SIZE_MAX. */
static size_t next_task(struct root *R)
{
    if (R->stopping)
        return (size_t)-1;
    while (R->next < R->n) {
        size_t i = R->order[R->next++];
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
    return R->stopping && now_s() >= R->stop_at;
}

static int run_serial(struct root *R)
{
    size_t i;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    while ((check_signal(R), i = next_task(R)) != (size_t)-1) {
        if (R->ops->started(R->ops->ctx, i, 0, host)) {
            R->st->aborted = 1;
            return -1;
        }
        R->running++;
        progress(R, 1);
        unsigned char *out = NULL;
        size_t len = 0;
        double t = now_s();
        int rc = R->ops->run(R->ops->ctx, R->tasks[i].id, R->tasks[i].text, serial_stop, R, &out, &len);
        account(R, i, now_s() - t, rc != 0);
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

static int run_root(MPI_Comm comm, int size, struct root *R)
{
    size_t *busy = malloc((size_t)size * sizeof *busy);
    double *since = malloc((size_t)size * sizeof *since);
    char (*hosts)[256] = calloc((size_t)size, sizeof *hosts);
    unsigned char *buf = NULL;
    size_t cap = 0;
    int active = size - 1, rc = 0;
    double idle_since = now_s();
    if (!busy || !since || !hosts) {
        rc = -1;
        goto out;
    }
    for (int r = 0; r < size; r++)
        busy[r] = (size_t)-1;
    while (active > 0) {
        check_signal(R);
        progress(R, 0);
        double t = now_s();
        if (R->stopping && !R->stop_sent && t >= R->stop_at) {
            for (int r = 1; r < size; r++)
                if (busy[r] != (size_t)-1)
                    MPI_Send(NULL, 0, MPI_BYTE, r, TAG_STOP, comm);
            R->stop_sent = 1;
        }
        if (R->stop_sent && t >= R->stop_at + SCHED_STOP_WAIT_S)
            break; /* a worker that does not answer: give its task up */
        int flag;
        MPI_Status ms;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &ms);
        if (!flag) {
            /* spin briefly after traffic (results come in bursts), then sleep longer */
            if (t - idle_since > SCHED_SPIN_S)
                nap(t - idle_since < 0.05 ? 20e-6 : 1e-3);
            continue;
        }
        idle_since = now_s();
        int count, src = ms.MPI_SOURCE;
        MPI_Get_count(&ms, MPI_BYTE, &count);
        if ((size_t)count + 1 > cap) {
            unsigned char *nb = realloc(buf, (size_t)count + 1);
            if (!nb) {
                rc = -1;
                break;
            }
            buf = nb;
            cap = (size_t)count + 1;
        }
        MPI_Recv(buf, count, MPI_BYTE, src, ms.MPI_TAG, comm, MPI_STATUS_IGNORE);
        if (ms.MPI_TAG == TAG_HELLO) {
            buf[count] = 0;
            snprintf(hosts[src], sizeof hosts[src], "%s", (char *)buf);
        } else if (ms.MPI_TAG == TAG_RESULT && count >= 8) {
            uint64_t idx;
            memcpy(&idx, buf, 8);
            if (idx < R->n && busy[src] == idx) {
                busy[src] = (size_t)-1;
                account(R, idx, now_s() - since[src], count == 8);
                if (!R->st->aborted && R->ops->finished(R->ops->ctx, idx, src, count > 8 ? buf + 8 : NULL,
                                                        (size_t)count - 8)) {
                    R->st->aborted = 1;
                    R->stopping = 1;
                    R->stop_at = now_s();
                }
            }
            progress(R, 1);
        } else
            continue;
        size_t i = next_task(R);
        if (i == (size_t)-1) {
            MPI_Send(NULL, 0, MPI_BYTE, src, TAG_DONE, comm);
            active--;
            continue;
        }
        size_t len = strlen(R->tasks[i].text) + 1;
        unsigned char *msg = malloc(16 + len);
        if (!msg) {
            rc = -1;
            break;
        }
        uint64_t idx = i;
        memcpy(msg, &idx, 8);
        memcpy(msg + 8, &R->tasks[i].id, 8);
        memcpy(msg + 16, R->tasks[i].text, len);
        if (R->ops->started(R->ops->ctx, i, src, hosts[src])) {
            R->st->aborted = 1;
            R->stopping = 1;
            R->stop_at = now_s();
            free(msg);
            MPI_Send(NULL, 0, MPI_BYTE, src, TAG_DONE, comm);
            active--;
            continue;
        }
        MPI_Send(msg, (int)(16 + len), MPI_BYTE, src, TAG_TASK, comm);
        free(msg);
        busy[src] = i;
        since[src] = now_s();
        R->running++;
    }
    if (active > 0) {
        /* workers that never answered: their tasks are lost; do not wait for them */
        for (int r = 1; r < size; r++)
            if (busy[r] != (size_t)-1) {
                account(R, busy[r], 0, 1);
                if (R->ops->finished(R->ops->ctx, busy[r], r, NULL, 0))
                    R->st->aborted = 1;
            }
        fprintf(stderr, "aimsweep: %d worker(s) did not stop in time; aborting them\n", active);
        rc = -2;
    }
out:
    free(busy);
    free(since);
    free(hosts);
    free(buf);
    return rc;
}

/* Worker side: the stop callback polls for STOP from rank 0. */
static int worker_stop(void *ctx)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    int flag;
    MPI_Iprobe(0, TAG_STOP, comm, &flag, MPI_STATUS_IGNORE);
    if (flag)
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, comm, MPI_STATUS_IGNORE);
    return flag;
}

static int run_worker(MPI_Comm comm, const struct sched_ops *ops)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    MPI_Send(host, (int)strlen(host) + 1, MPI_BYTE, 0, TAG_HELLO, comm);
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        MPI_Status ms;
        int count;
        MPI_Probe(0, MPI_ANY_TAG, comm, &ms);
        MPI_Get_count(&ms, MPI_BYTE, &count);
        if ((size_t)count + 1 > cap) {
            unsigned char *nb = realloc(buf, (size_t)count + 1);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
            cap = (size_t)count + 1;
        }
        MPI_Recv(buf, count, MPI_BYTE, 0, ms.MPI_TAG, comm, MPI_STATUS_IGNORE);
        if (ms.MPI_TAG == TAG_DONE)
            break;
        if (ms.MPI_TAG != TAG_TASK || count < 17)
            continue; /* a stale STOP */
        buf[count] = 0;
        uint64_t idx, id;
        memcpy(&idx, buf, 8);
        memcpy(&id, buf + 8, 8);
        unsigned char *out = NULL;
        size_t len = 0;
        MPI_Comm c = comm;
        int rc = ops->run(ops->ctx, id, (const char *)buf + 16, worker_stop, &c, &out, &len);
        if (rc)
            len = 0;
        unsigned char *msg = malloc(8 + len);
        if (!msg) {
            free(out);
            free(buf);
            return -1;
        }
        memcpy(msg, &idx, 8);
        if (len)
            memcpy(msg + 8, out, len);
        free(out);
        MPI_Send(msg, (int)(8 + len), MPI_BYTE, 0, TAG_RESULT, comm);
        free(msg);
    }
    free(buf);
    return 0;
}

int sched_run(MPI_Comm comm, const struct sched_task *tasks, size_t n, const struct sched_ops *ops,
              const struct sched_opts *opts, struct sched_stats *stats)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank != 0)
        return run_worker(comm, ops);

    struct root R;
    memset(&R, 0, sizeof R);
    memset(stats, 0, sizeof *stats);
    R.tasks = tasks;
    R.n = n;
    R.ops = ops;
    R.opts = opts;
    R.st = stats;
    R.t0 = now_s();
    R.order = malloc((n ? n : 1) * sizeof *R.order);
    if (!R.order)
        return -1;
    for (size_t i = 0; i < n; i++) {
        R.order[i] = i;
        R.remaining_cost += tasks[i].cost;
    }
    g_sort_tasks = tasks;
    qsort(R.order, n, sizeof *R.order, cmp_cost);
    int rc = size == 1 ? run_serial(&R) : run_root(comm, size, &R);
    stats->not_started = n - stats->done - stats->lost - stats->skipped_deadline;
    stats->elapsed_s = now_s() - R.t0;
    progress(&R, 1);
    free(R.order);
    return rc == 0 && !stats->aborted ? 0 : rc == -2 ? -2 : -1;
}
