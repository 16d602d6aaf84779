/*
 * kern_isa.h: the table of what one instruction set's build of the kernels provides, for the
 * choice made once at start (kern.c).
 *
 * The kernels (kern_f64_body.h, kern_f32_body.h) and the Gaussian generator's batch
 * (rng_batch.h) are compiled once per path, each in a file of its own built with that path's
 * flags (src/model/CMakeLists.txt): kern_portable.c and rng_portable.c at the baseline
 * (x86-64-v2), kern_avx2.c and rng_avx2.c for AVX2 and FMA (x86-64-v3), kern_avx512.c and
 * rng_avx512.c for AVX-512 (x86-64-v4). Each defines its functions under the public names of
 * kern.h and rng.h with the path's suffix (kern_isa_names.h) and one struct kern_ops of them; the
 * rest of the binary, built at the baseline, calls the public names, which kern.c and rng.c
 * forward to the chosen table. No other file holds AVX2 or AVX-512 code (tests/isa_check.sh).
 */
#ifndef AIMSWEEP_KERN_ISA_H
#define AIMSWEEP_KERN_ISA_H

#include <stddef.h>
#include <stdint.h>

struct rng;

// NOLINTBEGIN(bugprone-macro-parentheses): lists of declarations, names and types as arguments
/* The kernels of kern.h that return nothing: X(name, parameters, arguments), the public name
 * kern_##name. */
#define KERN_OPS_VOID(X)                                                                           \
    X(update_project,                                                                              \
      (double *M, int n, int m, int T, const double *C, const double *X, const double *Y,          \
       double *O),                                                                                 \
      (M, n, m, T, C, X, Y, O))                                                                    \
    X(project, (const double *M, int n, int m, int T, const double *Y, double *O, int ldo),        \
      (M, n, m, T, Y, O, ldo))                                                                     \
    X(update_project_portable,                                                                     \
      (double *M, int n, int m, int T, const double *C, const double *X, const double *Y,          \
       double *O),                                                                                 \
      (M, n, m, T, C, X, Y, O))                                                                    \
    X(project_portable,                                                                            \
      (const double *M, int n, int m, int T, const double *Y, double *O, int ldo),                 \
      (M, n, m, T, Y, O, ldo))                                                                     \
    X(update_project_f32,                                                                          \
      (float *M, int n, int m, int T, const double *C, const float *X, const float *Y, double *O), \
      (M, n, m, T, C, X, Y, O))                                                                    \
    X(project_f32, (const float *M, int n, int m, int T, const float *Y, double *O, int ldo),      \
      (M, n, m, T, Y, O, ldo))                                                                     \
    X(update_project_f32_portable,                                                                 \
      (float *M, int n, int m, int T, const double *C, const float *X, const float *Y, double *O), \
      (M, n, m, T, C, X, Y, O))                                                                    \
    X(project_f32_portable,                                                                        \
      (const float *M, int n, int m, int T, const float *Y, double *O, int ldo),                   \
      (M, n, m, T, Y, O, ldo))                                                                     \
    X(axpy, (double *y, const double *x, double a, size_t n), (y, x, a, n))                        \
    X(div, (double *y, const double *x, double c, size_t n), (y, x, c, n))                         \
    X(scal, (double *v, double s, size_t n), (v, s, n))

/* The kernels of kern.h that return a value: X(type, name, parameters, arguments). */
#define KERN_OPS_VALUE(X)                                                                          \
    X(int, vector, (void), ())                                                                     \
    X(int, paired, (int T), (T))                                                                   \
    X(double, dot, (const double *a, const double *b, int m), (a, b, m))                           \
    X(double, dot3, (const double *a, const double *b, const double *c, int m), (a, b, c, m))      \
    X(double, dot_f32, (const float *a, const float *b, size_t m), (a, b, m))                      \
    X(int, update_project_fused,                                                                   \
      (double *M, int n, int m, int T, const double *C, const double *X, const double *Y,          \
       double *O, const double *F, int nf, double *Z, int ldz),                                    \
      (M, n, m, T, C, X, Y, O, F, nf, Z, ldz))                                                     \
    X(int, update_project_fused_paired,                                                            \
      (double *M, int n, int m, int T, const double *C, const double *X, const double *Y,          \
       double *O, const double *F, int nf, double *Z, int ldz),                                    \
      (M, n, m, T, C, X, Y, O, F, nf, Z, ldz))                                                     \
    X(int, update2_project2_paired,                                                                \
      (double *M, int n, int m, const double *C1, const double *X1, double dg, const double *C2,   \
       const double *X2, const double *Y, const double *Y2, double *O, double *O2),                \
      (M, n, m, C1, X1, dg, C2, X2, Y, Y2, O, O2))                                                 \
    X(int, update2_project2_paired_ld,                                                             \
      (double *M, int rows, int m, size_t ld, int ldx, int ldc, const double *C1,                  \
       const double *X1, double dg, const double *C2, const double *X2, const double *Y,           \
       const double *Y2, double *O, double *O2),                                                   \
      (M, rows, m, ld, ldx, ldc, C1, X1, dg, C2, X2, Y, Y2, O, O2))                                \
    X(int, project_fused_order,                                                                    \
      (const double *F, int nf, int m, int K, const double *Y, size_t ldy, const double *YY,       \
       size_t ldyy, double *Z, size_t ldzs, int ldz),                                              \
      (F, nf, m, K, Y, ldy, YY, ldyy, Z, ldzs, ldz))                                               \
    X(int, update_project_fused_f32,                                                               \
      (float *M, int n, int m, int T, const double *C, const float *X, const float *Y, double *O,  \
       const float *F, int nf, double *Z, int ldz),                                                \
      (M, n, m, T, C, X, Y, O, F, nf, Z, ldz))                                                     \
    X(int, update_project_ahead_f32,                                                               \
      (float *M, int n, int m, int T, const double *C, const float *X, const float *Y, double *O,  \
       int nf),                                                                                    \
      (M, n, m, T, C, X, Y, O, nf))                                                                \
    X(int, project_fused_order_f32,                                                                \
      (const float *F, int nf, int m, int K, const float *Y, size_t ldy, double *Z, size_t ldzs,   \
       int ldz),                                                                                   \
      (F, nf, m, K, Y, ldy, Z, ldzs, ldz))                                                         \
    X(int, update2_project2_f32,                                                                   \
      (float *M, int n, int m, const double *C1, const float *X1, double dg, const double *C2,     \
       const float *X2, const float *Y, const float *Y2, double *O, double *O2),                   \
      (M, n, m, C1, X1, dg, C2, X2, Y, Y2, O, O2))                                                 \
    X(int, update2_project2_f32_ld,                                                                \
      (float *M, int rows, int m, size_t ld, int ldx, int ldc, const double *C1, const float *X1,  \
       double dg, const double *C2, const float *X2, const float *Y, const float *Y2, double *O,   \
       double *O2),                                                                                \
      (M, rows, m, ld, ldx, ldc, C1, X1, dg, C2, X2, Y, Y2, O, O2))                                \
    X(int, band2_project2_f32,                                                                     \
      (float *B, int rows, int m, int ldx, int ldc, const double *C1, const float *X1, double dg,  \
       const double *C2, const float *X2, const float *Y, const float *Y2, double *O, double *O2), \
      (B, rows, m, ldx, ldc, C1, X1, dg, C2, X2, Y, Y2, O, O2))                                    \
    X(double, fma_burst, (int single, long n, double *fmas), (single, n, fmas))                    \
    X(int, fma_chains, (void), ())                                                                 \
    X(double, fma_loads, (int single, int loads, int stores, long n, double *fmas),                \
      (single, loads, stores, n, fmas))

#define KERN_OP_FIELD_VOID(name, params, args) void(*name) params;
#define KERN_OP_FIELD_VALUE(type, name, params, args) type(*name) params;
// NOLINTEND(bugprone-macro-parentheses)

/* One path's kernels and Gaussian batch (rng.c: the words of nb Philox blocks, the normals of
 * nb blocks). */
struct kern_ops {
    const char *name; /* portable, avx2 or avx512: what AIMSWEEP_KERNELS takes */
    KERN_OPS_VOID(KERN_OP_FIELD_VOID)
    KERN_OPS_VALUE(KERN_OP_FIELD_VALUE)
    void (*rng_words)(struct rng *g, uint32_t *w, int nb);
    void (*rng_batch)(struct rng *g, double *o, int nb);
};

extern const struct kern_ops kern_ops_portable, kern_ops_avx2, kern_ops_avx512;

/* The chosen path's table (chosen from AIMSWEEP_KERNELS or the CPU at the first call, kern.c). */
const struct kern_ops *kern_ops(void);

/* The Gaussian batch of each path (rng_portable.c, rng_avx2.c, rng_avx512.c). */
#define KERN_RNG_DECLARE(suffix)                                                                   \
    void rng_words_##suffix(struct rng *g, uint32_t *w, int nb);                                   \
    void rng_batch_##suffix(struct rng *g, double *o, int nb);
KERN_RNG_DECLARE(plain)
KERN_RNG_DECLARE(avx2)
KERN_RNG_DECLARE(avx512)

/* In a path's file, after KERN_ISA(x) is defined: its table of the suffixed functions. */
#define KERN_OP_INIT_VOID(name, params, args) .name = kern_##name,
#define KERN_OP_INIT_VALUE(type, name, params, args) .name = kern_##name,

#endif
