/*
 * sched_worker.c: the worker side of the scheduler (sched.h; the protocol is described in
 * sched.c). A worker says HELLO with its pid and host, then takes TASKs from rank 0 and runs each
 * through ops->run, sending a RESULT (bytes, lost or unstarted) that also asks for the next one.
 * The running task's stop callback sends the heartbeat and takes in DRAIN, STOP and ABANDON;
 * between tasks the idle loop does the same. Nothing here blocks in MPI except the sends of
 * HELLO and RESULT, so a signal or rank 0's message is seen within milliseconds. Every MPI call
 * is checked (mpicheck.h).
 */
#include "aimsweep/base/clock.h"
#include "aimsweep/harness/mpicheck.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/model/obs.h"
#include "sched_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct sched_worker {
    MPI_Comm comm;
    int draining, stop, abandon;
    int failed; /* an MPI call failed (reported): leave */
    double task_t0, timeout_s;
    double beat_s, last_beat; /* heartbeat interval (0: none), when the last went */
    MPI_Request beat;         /* the last heartbeat, MPI_REQUEST_NULL once completed */
};

/* Sends a heartbeat when one is due and the last one has gone (never waits: a rank 0 that is
 * slow to take them in must not stop the task). Returns 0, or -1 on an MPI failure. The
 * checker takes the MPI_Test that completes the last request for none (see post). */
// NOLINTBEGIN(clang-analyzer-optin.mpi.MPI-Checker)
static int beat(struct sched_worker *W)
{
    if (W->beat_s <= 0)
        return 0;
    double t = clock_now_s();
    if (t - W->last_beat < W->beat_s)
        return 0;
    if (W->beat != MPI_REQUEST_NULL) {
        int done;
        if (MPICHECK_FAILED(MPI_Test(&W->beat, &done, MPI_STATUS_IGNORE)))
            goto fail;
        if (!done)
            return 0;
    }
    if (MPICHECK_FAILED(MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_BEAT, W->comm, &W->beat)))
        goto fail;
    W->last_beat = t;
    return 0;
fail:
    W->failed = 1;
    return -1;
}
// NOLINTEND(clang-analyzer-optin.mpi.MPI-Checker)

/* Takes in any DRAIN or STOP rank 0 has sent (a tag-specific probe finds them even behind
 * queued tasks). Returns 0, or -1 on an MPI failure (reported; W->failed set). */
static int sched_worker_poll(struct sched_worker *W)
{
    int flag;
    if (MPICHECK_FAILED(MPI_Iprobe(0, TAG_STOP, W->comm, &flag, MPI_STATUS_IGNORE)))
        goto fail;
    if (flag) {
        if (MPICHECK_FAILED(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_STOP, W->comm, MPI_STATUS_IGNORE)))
            goto fail;
        W->stop = W->draining = 1;
    }
    if (MPICHECK_FAILED(MPI_Iprobe(0, TAG_ABANDON, W->comm, &flag, MPI_STATUS_IGNORE)))
        goto fail;
    if (flag) {
        if (MPICHECK_FAILED(
                MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_ABANDON, W->comm, MPI_STATUS_IGNORE)))
            goto fail;
        W->abandon = W->stop = W->draining = 1;
    }
    if (MPICHECK_FAILED(MPI_Iprobe(0, TAG_DRAIN, W->comm, &flag, MPI_STATUS_IGNORE)))
        goto fail;
    if (flag) {
        if (MPICHECK_FAILED(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DRAIN, W->comm, MPI_STATUS_IGNORE)))
            goto fail;
        W->draining = 1;
    }
    return 0;
fail:
    W->failed = 1;
    return -1;
}

/* The running task's stop callback: the heartbeat; stop when asked to, or when MPI failed (the
 * result could not be sent anyway). */
static int sched_worker_stop(void *ctx)
{
    struct sched_worker *W = ctx;
    if (beat(W) || sched_worker_poll(W) || W->stop)
        return W->abandon ? OBS_STOP_ABANDON : OBS_STOP_INTERRUPT;
    if (W->timeout_s > 0 && clock_now_s() - W->task_t0 > W->timeout_s)
        return OBS_STOP_TIMEOUT;
    return OBS_STOP_NONE;
}

static int send_result(struct sched_worker *W, uint64_t idx, uint32_t kind, double wall,
                       const unsigned char *bytes, size_t len)
{
    unsigned char *msg = malloc(RESULT_HEADER + len);
    if (!msg)
        return -1;
    memset(msg, 0, RESULT_HEADER);
    memcpy(msg, &idx, 8);
    memcpy(msg + 8, &kind, 4);
    memcpy(msg + 16, &wall, 8);
    if (len)
        memcpy(msg + RESULT_HEADER, bytes, len);
    int bad = MPICHECK_FAILED(
        MPI_Send(msg, (int)(RESULT_HEADER + len), MPI_BYTE, 0, TAG_RESULT, W->comm));
    free(msg);
    return bad ? -1 : 0;
}

int sched_run_worker(MPI_Comm comm, const struct sched_ops *ops, const struct sched_opts *opts)
{
    struct sched_worker W = {comm,
                             0,
                             0,
                             0,
                             0,
                             0,
                             opts ? opts->task_timeout_s : 0,
                             sched_beat_s(opts),
                             clock_now_s(),
                             MPI_REQUEST_NULL};
    unsigned char hello[8 + 256 + 16] = {0};
    int64_t pid = (int64_t)getpid();
    memcpy(hello, &pid, 8);
    gethostname((char *)hello + 8, 255);
    int hl = (int)strlen((char *)hello + 8) + 1; /* the host, then the kernels' path */
    snprintf((char *)hello + 8 + hl, 16, "%s", kern_path());
    MPICHECK(MPI_Send(hello, 8 + hl + (int)strlen((char *)hello + 8 + hl) + 1, MPI_BYTE, 0,
                      TAG_HELLO, comm),
             -1);
    unsigned char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    double quiet_since = clock_now_s();
    for (;;) {
        MPI_Status ms;
        int count, flag;
        /* wait for rank 0 without blocking in MPI, so that the heartbeat goes on */
        if (MPICHECK_FAILED(MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, &ms)) || beat(&W)) {
            rc = -1;
            break;
        }
        if (!flag) {
            double t = clock_now_s();
            if (t - quiet_since > SCHED_SPIN_S)
                sched_nap(t - quiet_since < 0.05 ? 20e-6 : 1e-3);
            continue;
        }
        if (MPICHECK_FAILED(MPI_Get_count(&ms, MPI_BYTE, &count)) ||
            sched_grow(&buf, &cap, (size_t)count + 1) ||
            MPICHECK_FAILED(
                MPI_Recv(buf, count, MPI_BYTE, 0, ms.MPI_TAG, comm, MPI_STATUS_IGNORE))) {
            rc = -1;
            break;
        }
        quiet_since = clock_now_s();
        if (ms.MPI_TAG == TAG_DONE)
            break;
        if (ms.MPI_TAG == TAG_STOP || ms.MPI_TAG == TAG_ABANDON)
            W.stop = W.draining = 1;
        W.abandon |= ms.MPI_TAG == TAG_ABANDON;
        if (ms.MPI_TAG == TAG_DRAIN)
            W.draining = 1;
        if (ms.MPI_TAG != TAG_TASK || count < 17)
            continue;
        buf[count] = 0;
        uint64_t idx, id;
        memcpy(&idx, buf, 8);
        memcpy(&id, buf + 8, 8);
        if (sched_worker_poll(&W)) {
            rc = -1;
            break;
        }
        if (W.draining) {
            if (send_result(&W, idx, RESULT_UNSTARTED, 0, NULL, 0)) {
                rc = -1;
                break;
            }
            continue;
        }
        unsigned char *out = NULL;
        size_t len = 0;
        double t = W.task_t0 = clock_now_s();
        int r = ops->run(ops->ctx, id, (const char *)buf + 16, sched_worker_stop, &W, &out, &len);
        int e = send_result(&W, idx, r ? RESULT_LOST : RESULT_BYTES, clock_now_s() - t, out,
                            r ? 0 : len);
        free(out);
        quiet_since = clock_now_s();
        if (e || W.failed) {
            rc = -1;
            break;
        }
    }
    // NOLINTBEGIN(clang-analyzer-optin.mpi.MPI-Checker): freed, not waited for (see post)
    if (W.beat != MPI_REQUEST_NULL)
        MPICHECK_FAILED(MPI_Request_free(&W.beat)); /* a 0-byte send: it completes on its own */
    free(buf);
    // NOLINTEND(clang-analyzer-optin.mpi.MPI-Checker)
    return rc;
}
