/*
 * kern.c: the kernels' path, chosen once at the first call from AIMSWEEP_KERNELS or the CPU
 * (kern.h), the public names of the kernels forwarded to that path's table (kern_isa.h), and the
 * paired layout's index, which every path shares. Built at the baseline like the rest of the
 * binary: no AVX2 or AVX-512 code here.
 */
#include "aimsweep/model/kern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern_isa.h"

static const struct kern_ops *const kern_paths[] = {&kern_ops_portable, &kern_ops_avx2,
                                                    &kern_ops_avx512};
enum { KERN_PATHS = sizeof kern_paths / sizeof kern_paths[0] };

static const struct kern_ops *kern_chosen;

/* 1 when this CPU runs path i: its build's instruction set (x86-64-v3, x86-64-v4), as far as
 * the compiler emits from it, each with the operating system's support for its registers (the
 * CPU's features as the compiler's run-time library reads them). */
static int kern_cpu_has(int i)
{
    __builtin_cpu_init();
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    return i == 0 ? 1 : i == 1 ? v3 : v4;
}

int kern_path_runs(const char *name)
{
    for (int i = 0; i < KERN_PATHS; i++)
        if (!strcmp(name, kern_paths[i]->name))
            return kern_cpu_has(i);
    return -1;
}

int kern_choose(char *err, size_t errlen)
{
    const char *want = getenv("AIMSWEEP_KERNELS");
    if (want && *want) {
        int runs = kern_path_runs(want);
        if (runs < 0) {
            snprintf(err, errlen,
                     "AIMSWEEP_KERNELS=%s: not a path of the kernels (portable, avx2 or avx512)",
                     want);
            return KERN_UNKNOWN;
        }
        if (!runs) {
            snprintf(
                err, errlen,
                "AIMSWEEP_KERNELS=%s: this CPU lacks the instructions of that path (it runs %s); "
                "unset AIMSWEEP_KERNELS to take the best path this CPU has",
                want,
                kern_cpu_has(2)   ? "avx512"
                : kern_cpu_has(1) ? "avx2"
                                  : "portable");
            return KERN_LACKING;
        }
        return kern_use(want);
    }
    for (int i = KERN_PATHS - 1; i >= 0 && !kern_chosen; i--)
        if (kern_cpu_has(i))
            kern_chosen = kern_paths[i];
    return 0;
}

int kern_use(const char *name)
{
    int runs = kern_path_runs(name);
    if (runs != 1)
        return runs < 0 ? KERN_UNKNOWN : KERN_LACKING;
    for (int i = 0; i < KERN_PATHS; i++)
        if (!strcmp(name, kern_paths[i]->name))
            kern_chosen = kern_paths[i];
    return 0;
}

const struct kern_ops *kern_ops(void)
{
    if (!kern_chosen) {
        char err[256];
        if (kern_choose(err, sizeof err)) {
            fprintf(stderr, "aimsweep: %s\n", err);
            exit(2);
        }
    }
    return kern_chosen;
}

const char *kern_path(void) { return kern_ops()->name; }

#define KERN_FORWARD_VOID(name, params, args)                                                      \
    void kern_##name params { kern_ops()->name args; }
#define KERN_FORWARD_VALUE(type, name, params, args)                                               \
    type kern_##name params { return kern_ops()->name args; }
KERN_OPS_VOID(KERN_FORWARD_VOID)
KERN_OPS_VALUE(KERN_FORWARD_VALUE)

/* The paired layout (kern.h): rows 2p and 2p + 1 share the block of 2m entries at 2p m, four
 * columns of one row then the same four of the other, and the last m % 4 columns of row 2p,
 * then those of row 2p + 1; a last odd row stays as it is. */
size_t kern_paired_index(int n, int m, int i, int j)
{
    if (i >= (n & ~1))
        return (size_t)i * m + j;
    size_t base = (size_t)(i & ~1) * m;
    int q = m & ~3, h = i & 1;
    if (j < q)
        return base + 2 * (size_t)(j & ~3) + 4 * (size_t)h + (size_t)(j & 3);
    return base + 2 * (size_t)q + (size_t)h * (size_t)(m - q) + (size_t)(j - q);
}

void kern_paired_pack(const double *A, double *P, int n, int m)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            P[kern_paired_index(n, m, i, j)] = A[(size_t)i * m + j];
}

void kern_paired_unpack(const double *P, double *A, int n, int m)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            A[(size_t)i * m + j] = P[kern_paired_index(n, m, i, j)];
}

void kern_interleave2(const double *Y, int m, double *YY)
{
    int q = m & ~3;
    for (int j = 0; j < q; j += 4) /* four columns of each token at a time: two vector moves */
        for (int l = 0; l < 4; l++) {
            YY[2 * j + l] = Y[j + l];
            YY[2 * j + 4 + l] = Y[m + j + l];
        }
}
