/*
 * paths.h: a test run on one path of the kernels (kern.h). tests/CMakeLists.txt registers the
 * tests that exercise the kernels once more per path, with AIMSWEEP_KERNELS naming it and
 * AIMSWEEP_TEST_PATHS=1; test_path_start() at the start of main then exits with 77 (ctest's
 * skip) when this CPU lacks the path, or when the path is the one the plain run of the test
 * already takes (the widest this CPU runs), and says which path runs otherwise.
 */
#ifndef AIMSWEEP_TEST_PATHS_H
#define AIMSWEEP_TEST_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/kern.h"

#define TEST_PATH_SKIP 77

static inline void test_path_start(void)
{
    const char *want = getenv("AIMSWEEP_KERNELS");
    const char *per_path = getenv("AIMSWEEP_TEST_PATHS");
    if (!want || !per_path || strcmp(per_path, "1") != 0)
        return;
    if (kern_path_runs(want) != 1) {
        printf("skipped: this CPU lacks the kernels' path %s\n", want);
        exit(TEST_PATH_SKIP);
    }
    const char *widest = kern_path_runs("avx512") == 1 ? "avx512"
                         : kern_path_runs("avx2") == 1 ? "avx2"
                                                       : "portable";
    if (!strcmp(want, widest)) {
        printf("skipped: %s is this CPU's widest path, which the plain run of the test takes\n",
               want);
        exit(TEST_PATH_SKIP);
    }
    printf("kernels: %s\n", kern_path());
}

#endif
