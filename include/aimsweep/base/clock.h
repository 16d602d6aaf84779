/*
 * clock.h: the monotonic wall clock, in seconds, shared by the solvers' timings, the
 * scheduler and the benchmarks.
 */
#ifndef AIMSWEEP_CLOCK_H
#define AIMSWEEP_CLOCK_H

#include <time.h>

static inline double clock_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
