/*
 * sched_impl.h: what the scheduler's two sides share (sched.c, rank 0; sched_worker.c, the
 * workers): the message tags and the RESULT header of the protocol described in sched.c, the
 * polling constant, and two small helpers. Private to src/harness.
 */
#ifndef AIMSWEEP_SCHED_IMPL_H
#define AIMSWEEP_SCHED_IMPL_H

#include "aimsweep/harness/sched.h"

#include <stdlib.h>
#include <time.h>

enum { TAG_HELLO = 11, TAG_TASK, TAG_RESULT, TAG_DRAIN, TAG_STOP, TAG_DONE, TAG_BEAT, TAG_ABANDON };

/* RESULT: u64 index, u32 kind, u32 unused, f64 seconds the task ran, then the bytes. */
enum { RESULT_BYTES = 0, RESULT_LOST = 1, RESULT_UNSTARTED = 2 };
#define RESULT_HEADER 24

/* After a message, rank 0 polls without sleeping this long. */
#define SCHED_SPIN_S 0.002

/* Makes *buf hold at least need bytes. Returns 0, or -1 (buf unchanged) when out of memory. */
static inline int sched_grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    unsigned char *nb = realloc(*buf, need);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

/* Sleeps s seconds (a signal may cut it short). */
static inline void sched_nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* The worker side of sched_run (sched_worker.c): runs tasks from rank 0 until DONE. Returns 0,
 * or -1 on an MPI failure (reported). */
int sched_run_worker(MPI_Comm comm, const struct sched_ops *ops, const struct sched_opts *opts);

#endif
