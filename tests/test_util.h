/*
 * test_util.h: small helpers that several C tests share (each was written out in two of them):
 * the trace of a product of two d x d matrices, an activation from its text, and the two
 * students of a central difference along a direction.
 */
#ifndef AIMSWEEP_TESTS_TEST_UTIL_H
#define AIMSWEEP_TESTS_TEST_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/model.h"

/* Tr(A B), or Tr(A B^T) with transB, for row-major d x d matrices. */
static inline double test_trace_prod(int d, const double *A, const double *B, int transB)
{
    double t = 0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            t += A[(size_t)i * d + j] * (transB ? B[(size_t)i * d + j] : B[(size_t)j * d + i]);
    return t;
}

/* The activation written s (params_parse_act); a bad text is printed and gives a zeroed one. */
static inline struct act test_parse_act(const char *s)
{
    struct act a = {0};
    char err[256];
    if (params_parse_act(s, &a, err, sizeof err))
        fprintf(stderr, "%s\n", err);
    return a;
}

/* sp += eps (dA, dB) and sm -= eps (dA, dB) over the n entries of each factor (dB NULL when the
 * students have one factor): with sp and sm copies of one student, the two points of a central
 * difference along (dA, dB). */
static inline void test_shift_along(struct student *sp, struct student *sm, const double *dA,
                                    const double *dB, size_t n, double eps)
{
    for (size_t i = 0; i < n; i++) {
        sp->A[i] += eps * dA[i];
        sm->A[i] -= eps * dA[i];
        if (dB) {
            sp->B[i] += eps * dB[i];
            sm->B[i] -= eps * dB[i];
        }
    }
}

#endif
