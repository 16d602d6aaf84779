/*
 * check.h: the test runner, the one every C test uses. CHECK (with a message) and CHECK_TRUE
 * (without) record a failure and go on; CHECK_CLOSE compares numbers; check_done prints
 * "N passed, N failed" and gives the exit code (1 if any check failed).
 */
#ifndef AIMSWEEP_CHECK_H
#define AIMSWEEP_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_pass, check_fail;

/* Counts a check; on failure prints "file:line: FAILED: cond" and returns 1 (the macros add
 * their message). */
static inline int check_record(int ok, const char *file, int line, const char *cond)
{
    if (ok) {
        check_pass++;
        return 0;
    }
    check_fail++;
    fprintf(stderr, "%s:%d: FAILED: %s", file, line, cond);
    return 1;
}

/* CHECK(cond, fmt, ...): the message says what was compared, with the values. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (check_record((cond) ? 1 : 0, __FILE__, __LINE__, #cond)) {                             \
            fputs(": ", stderr);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* CHECK_TRUE(cond): for a condition whose text says it all. */
#define CHECK_TRUE(cond)                                                                           \
    do {                                                                                           \
        if (check_record((cond) ? 1 : 0, __FILE__, __LINE__, #cond))                               \
            fputc('\n', stderr);                                                                   \
    } while (0)

/* |a - b| <= atol + rtol |b| */
#define CHECK_CLOSE(a, b, atol, rtol, what)                                                        \
    do {                                                                                           \
        double ca_ = (a), cb_ = (b);                                                               \
        CHECK(fabs(ca_ - cb_) <= (atol) + (rtol)*fabs(cb_), "%s: %.12g vs %.12g (diff %.3g)",      \
              what, ca_, cb_, fabs(ca_ - cb_));                                                    \
    } while (0)

/* 1 when a check failed, or when none ran (a section name that matched nothing checks nothing) */
static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
    if (check_pass + check_fail == 0)
        fprintf(stderr, "%s: no check ran\n", name);
    return check_fail || check_pass + check_fail == 0 ? 1 : 0;
}

#endif
