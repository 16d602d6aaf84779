/*
 * kern.h: the two inner loops of the SGD step (sgd.c), over the rows of a row-major matrix.
 *
 * Every decomposition's step is a rank-T correction of its parameters followed by the
 * projections of the next sample onto the corrected parameters (sgd.c). Stored so that the
 * correction runs along rows (S for direct, W^T, (U + V)^T and (U - V)^T otherwise), both
 * reduce to kern_update_project; the teacher's index of a sample needs only kern_project.
 * A row is read once and written once, and its dot products stay in registers.
 *
 * Three builds of the kernels are in every binary, one per path: portable (plain C loops, the
 * baseline x86-64-v2), avx2 (hand-scheduled AVX2 and FMA kernels for T = 2) and avx512 (8- and
 * 16-lane kernels, the double step on the paired layout below). One path is chosen once, at the
 * first call: the one AIMSWEEP_KERNELS names, else the widest this CPU runs; every function
 * below is that path's (kern_isa.h). The paths differ only in the order of the sums (and the
 * Gaussian batches in the last bits of their normals): double's are the same on avx2 and
 * avx512 (the paired kernel's are the AVX2 kernel's bit for bit) but for kern_dot3's, single's
 * too (tests/test_kern_f32.c), the portable loops' are other orders (docs/building.md states the
 * bound between the paths' trajectories, tests/test_paths.c holds them to it).
 */
#ifndef AIMSWEEP_KERN_H
#define AIMSWEEP_KERN_H

#include <stddef.h>

/* The path of the kernels: AIMSWEEP_KERNELS when set (portable, avx2 or avx512), else the widest
 * this CPU runs. kern_choose makes the choice (the first kernel called makes it otherwise, and
 * exits with status 2 and the message of kern_choose on an error); it returns 0, or
 * KERN_UNKNOWN for a name that is no path and KERN_LACKING for a path this CPU lacks, with a
 * message in err. kern_path() names the chosen path; kern_path_runs(name) is 1 when this CPU runs
 * that path, 0 when it lacks it, -1 for a name that is no path. */
enum { KERN_UNKNOWN = 1, KERN_LACKING = 2 };
int kern_choose(char *err, size_t errlen);
const char *kern_path(void);
int kern_path_runs(const char *name);
/* For tests that compare the paths in one process: from here on the path `name` (0, or
 * KERN_UNKNOWN, KERN_LACKING as kern_choose). A state made on one path (an SGD state keeps the
 * layout of its path's kernels) must not step on another: switch between states only. */
int kern_use(const char *name);

/* For each row i of the n x m matrix M: M_i <- M_i - sum_a C[a n + i] X_a, then
 * O[b n + i] = M_i . Y_b with the new row (a, b < T; X and Y are T x m, C and O are T x n). */
void kern_update_project(double *M, int n, int m, int T, const double *C, const double *X,
                         const double *Y, double *O);
/* kern_update_project, and for T = 2 also the projections of the first rows of F (nf x m)
 * on Y, one alongside each pair of rows of M: Z[b ldz + p] = F_p . Y_b for p < min(nf, n/2).
 * Returns the number of rows of F projected (0 unless T = 2); the caller projects the rest. */
int kern_update_project_fused(double *M, int n, int m, int T, const double *C, const double *X,
                              const double *Y, double *O, const double *F, int nf, double *Z,
                              int ldz);
/* The paired layout of an n x m matrix, for the AVX-512 kernel (the stored matrices in double):
 * rows 2p and 2p + 1 share their 2m entries at 2p m, four columns of row 2p, the same four of row
 * 2p + 1, and so on, then the last m % 4 columns of row 2p and those of row 2p + 1; an odd last
 * row stays in place. One 8-lane vector then holds the same four columns of both rows, which is
 * what lets the 8-lane kernel add every product in the four-lane kernel's order. The index of
 * entry (i, j), and the whole matrix from and to row-major A (P and A apart). */
size_t kern_paired_index(int n, int m, int i, int j);
void kern_paired_pack(const double *A, double *P, int n, int m);
void kern_paired_unpack(const double *P, double *A, int n, int m);
/* 1 when the path runs kern_update_project_fused_paired for T tokens (AVX-512 and T = 2). */
int kern_paired(int T);
/* kern_update_project_fused on M in the paired layout, with results bit for bit those of
 * kern_update_project_fused on the same matrix row-major. Returns what that returns, or -1 (M
 * untouched) when kern_paired(T) is 0. With F NULL the rows of M are the same and no row of F
 * is projected (Z untouched): the teacher rows then come from kern_project_fused_order. */
int kern_update_project_fused_paired(double *M, int n, int m, int T, const double *C,
                                     const double *X, const double *Y, double *O, const double *F,
                                     int nf, double *Z, int ldz);
/* Two SGD steps' corrections in one pass over M in the paired layout (T = 2; sgd_two.c), and
 * the projections of two samples on the result: for each row i,
 *   M_i <- M_i - C1[i] X1_0 - C1[n + i] X1_1,  then M_ii += dg (when dg != 0; needs n = m),
 *   M_i <- M_i - C2[i] X2_0 - C2[n + i] X2_1,  then O[b n + i] = M_i . Y_b, O2[b n + i] = M_i . Y2_b,
 * each correction's two multiply-adds as kern_update_project_fused_paired makes them, so that M
 * ends bit for bit as that kernel leaves it after the first correction, dg, and the second. C1
 * or C2 NULL skips that correction, Y2 NULL the second projections, Y NULL all of them (then
 * only the rows are written); each projection is summed the same way whichever corrections
 * came with it (so a projection alone, C1 = C2 = NULL, gives the pass's sums bit for bit).
 * Returns 0, or -1 (M untouched) when kern_paired(2) is 0 or dg != 0 with n != m. */
int kern_update2_project2_paired(double *M, int n, int m, const double *C1, const double *X1,
                                 double dg, const double *C2, const double *X2, const double *Y,
                                 const double *Y2, double *O, double *O2);
/* The same on a block of a paired matrix: `rows` rows (even, unless ld = m) of m columns (the
 * first a multiple of 4 columns into the pairs' spans) starting at M, the next pair of rows
 * 2 ld entries on, the tokens' rows ldx apart, C's and O's rows ldc apart; dg goes on the
 * block's own diagonal, entries (i, i) for i < rows (rows <= m). The block's entries and sums
 * are those the call over a matrix of that block alone makes, bit for bit. */
int kern_update2_project2_paired_ld(double *M, int rows, int m, size_t ld, int ldx, int ldc,
                                    const double *C1, const double *X1, double dg, const double *C2,
                                    const double *X2, const double *Y, const double *Y2, double *O,
                                    double *O2);
/* The first m & ~3 columns of the two tokens Y (2 x m) interleaved four at a time, as the rows
 * of a pair in the paired layout: YY (2 (m & ~3) entries) for kern_project_fused_order. */
void kern_interleave2(const double *Y, int m, double *YY);
/* The teacher rows of kern_update_project_fused_paired for K samples at once, bit for bit:
 * Z_s[b ldz + p] = F_p . Y_s,b (p < nf, b < 2) with Y_s = Y + s ldy (2 x m), YY_s = YY + s ldyy
 * (kern_interleave2 of Y_s), Z_s = Z + s ldzs. Reading F once for K samples instead of once per
 * sample. Returns 0, or -1 (nothing written) when kern_paired(2) is 0. */
int kern_project_fused_order(const double *F, int nf, int m, int K, const double *Y, size_t ldy,
                             const double *YY, size_t ldyy, double *Z, size_t ldzs, int ldz);
/* O[b ldo + i] = M_i . Y_b for each row i of the n x m matrix M (b < T, ldo >= n). */
void kern_project(const double *M, int n, int m, int T, const double *Y, double *O, int ldo);

/* a . b over n entries with four partial sums, folded as (s0 + s1) + (s2 + s3): the Hermite and
 * Mehler sums of phi_mehler.c and noise.c (inline, so each keeps its own compiled loop). */
static inline double kern_dot4(const double *restrict a, const double *restrict b, int n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* a . b over m entries, with independent partial sums (for the step's short dot products). */
double kern_dot(const double *a, const double *b, int m);
/* The SGD step's elementwise loops around the kernels, in the path's vectors, the same bits on
 * every path: y += a x, y = x / c (y may be x), v *= s, over n entries. */
void kern_axpy(double *y, const double *x, double a, size_t n);
void kern_div(double *y, const double *x, double c, size_t n);
void kern_scal(double *v, double s, size_t n);
/* sum_j a_j b_j c_j over m entries, in the path's order (not the same on avx2 and avx512). */
double kern_dot3(const double *a, const double *b, const double *c, int m);

/* The portable loops, of the path (compiled with its flags) (the reference in tests). */
void kern_update_project_portable(double *M, int n, int m, int T, const double *C, const double *X,
                                  const double *Y, double *O);
void kern_project_portable(const double *M, int n, int m, int T, const double *Y, double *O,
                           int ldo);

/* The same loops in single precision (kern_f32_body.h, precision single): M, X, Y and F float, the
 * coefficients C in double (rounded to float per row), the projections O and Z summed in double
 * (in float over 32 products at a time in the vector kernel; kern_f32_body.h bounds the error). */
void kern_update_project_f32(float *M, int n, int m, int T, const double *C, const float *X,
                             const float *Y, double *O);
int kern_update_project_fused_f32(float *M, int n, int m, int T, const double *C, const float *X,
                                  const float *Y, double *O, const float *F, int nf, double *Z,
                                  int ldz);
void kern_project_f32(const float *M, int n, int m, int T, const float *Y, double *O, int ldo);
/* The look-ahead of precision single (T = 2): kern_update_project_fused_f32 with the same rows
 * of M and projections O, bit for bit, but no row of F read (returns the rows it would have
 * projected); and those teacher rows for K samples in one read of F, Z_s[b ldz + p] = F_p . Y_s,b
 * (p < nf, b < 2, Y_s = Y + s ldy, Z_s = Z + s ldzs), each sum made as the vector pass makes it.
 * kern_project_fused_order_f32 returns 0, or -1 (nothing written) when kern_vector() is 0. */
int kern_update_project_ahead_f32(float *M, int n, int m, int T, const double *C, const float *X,
                                  const float *Y, double *O, int nf);
int kern_project_fused_order_f32(const float *F, int nf, int m, int K, const float *Y, size_t ldy,
                                 double *Z, size_t ldzs, int ldz);
/* Two SGD steps' corrections in one pass over M (precision single, T = 2), as
 * kern_update2_project2_paired does in double: each entry takes the correction C1 along X1 (when
 * C1), then, on the diagonal (n = m), direct's term dg (added in double and rounded, as the
 * one-step path adds it), then C2 along X2 (when C2), each as two one-step passes of
 * kern_update_project_f32 would give it, bit for bit; then O = M' Y (when Y) and O2 = M' Y2
 * (when Y2, Y given), T x n each, every sum made as kern_update_project_ahead_f32 makes it. The
 * cases: both corrections and both projections, the second correction and both projections
 * (these two with or without dg), the first correction alone, the projection Y alone. Returns
 * 0, or -1 (M untouched) for another case or on a path with no float vector kernels
 * (kern_vector() == 0). */
int kern_update2_project2_f32(float *M, int n, int m, const double *C1, const float *X1, double dg,
                              const double *C2, const float *X2, const float *Y, const float *Y2,
                              double *O, double *O2);
/* The same on a block: `rows` rows of m columns starting at M, ld apart, the tokens' rows ldx
 * apart, C's and O's rows ldc apart (kern_update2_project2_paired_ld's block, row-major). */
int kern_update2_project2_f32_ld(float *M, int rows, int m, size_t ld, int ldx, int ldc,
                                 const double *C1, const float *X1, double dg, const double *C2,
                                 const float *X2, const float *Y, const float *Y2, double *O,
                                 double *O2);
/* kern_update2_project2_f32_ld on a block of rows <= 32 rows kept column by column: entry
 * (r, j) at B[j rows + r] (sgd_sym.c's bands of direct's K, sgd_two.c's of tied's and untied's
 * float matrices). The entries end bit for bit as that kernel leaves them; each projection is
 * summed in the order of the columns, 128 products at a time in float (kern_f32_body.h's
 * KERN_F32_BAND_TERMS) and those sums in double, alike on every path with float vector
 * kernels. The same cases; returns 0, or -1 (B untouched) for another case, rows > 32, or a
 * path without float vector kernels. */
int kern_band2_project2_f32(float *B, int rows, int m, int ldx, int ldc, const double *C1,
                            const float *X1, double dg, const double *C2, const float *X2,
                            const float *Y, const float *Y2, double *O, double *O2);
/* a . b over m float entries, every product added in double. */
double kern_dot_f32(const float *a, const float *b, size_t m);
void kern_update_project_f32_portable(float *M, int n, int m, int T, const double *C,
                                      const float *X, const float *Y, double *O);
void kern_project_f32_portable(const float *M, int n, int m, int T, const float *Y, double *O,
                               int ldo);

/* 2 on the avx512 path (which has the AVX2 kernels too), 1 on the avx2 path, 0 on the portable. */
int kern_vector(void);

/* n rounds of kern_fma_chains() independent vector multiply-adds (16, or 12 with AVX2) in the
 * widest vectors of the path, in float (single = 1) or double: the machine's multiply-add rate,
 * timed by the caller. Sets *fmas to the scalar multiply-adds done; returns the sum over the
 * chains of the first lane of each, chain q having run a <- 0.9999 a + c (c = 1e-6 in float,
 * 1e-9 in double) n times from a = q (for the caller to keep, so that the loop is not removed). */
double kern_fma_burst(int single, long n, double *fmas);
int kern_fma_chains(void);
/* The same with the first `loads` chains (0, 2, ..., kern_fma_chains()) adding a vector of ones
 * loaded from the first-level cache each round instead of c from a register, and with `stores`
 * 2 two of the chains stored and two lines asked for ahead each round (0: neither): the
 * multiply-add rate of a loop that loads and stores, as the step's kernels do. NAN for any other
 * count. The sum is the same whatever `stores`. */
double kern_fma_loads(int single, int loads, int stores, long n, double *fmas);

#endif
