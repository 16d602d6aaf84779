/*
 * check.h: the test runner. CHECK records a failure and goes on; a test program exits 1 if
 * any check failed and prints "N passed, N failed".
 */
#ifndef AIMSWEEP_CHECK_H
#define AIMSWEEP_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_pass, check_fail;

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (cond) {                                                                              \
            check_pass++;                                                                        \
        } else {                                                                                 \
            check_fail++;                                                                        \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                 \
        }                                                                                        \
    } while (0)

/* |a - b| <= atol + rtol |b| */
#define CHECK_CLOSE(a, b, atol, rtol, what)                                                      \
    do {                                                                                         \
        double ca_ = (a), cb_ = (b);                                                             \
        CHECK(fabs(ca_ - cb_) <= (atol) + (rtol)*fabs(cb_), "%s: %.12g vs %.12g (diff %.3g)",    \
              what, ca_, cb_, fabs(ca_ - cb_));                                                  \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
    return check_fail ? 1 : 0;
}

#endif
