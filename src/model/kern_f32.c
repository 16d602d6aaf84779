/*
 * kern_f32.c: the inner loops of the SGD step in single precision (kern.h, precision single).
 *
 * The same two loops as kern.c on float rows: M_i <- M_i - sum_a C[a n + i] X_a, then the
 * projections M_i . Y_b with the new row. The rows, the tokens and the teacher's factor are
 * float, which halves the bytes a step moves; the update is done in float (the stored value is
 * float whatever the arithmetic), the coefficients C come in double and are rounded once per row.
 *
 * Where the sums are done. The projections are sums of m products of floats. The portable
 * loops add every product in double. The vector kernel multiplies and adds in float over blocks
 * of columns, each float partial sum (one lane of one accumulator) taking KERN_F32_TERMS = q
 * products, and adds each block's partial sums into a double total. A float partial sum of q
 * products carries a rounding error of at most q u (u = 2^-24, to first order) of the sum of the
 * magnitudes of its terms, and the double total adds nothing at this scale; so the error of a
 * projection is at most q u sum_j |M_ij Y_bj| at any row length, about q times the rounding of
 * the inputs themselves (each float entry is within u of the double it replaces), where a float
 * accumulation over the whole row would grow with m. q = 16 keeps the folds (two conversions
 * and a horizontal sum per partial sum) a small part of the work.
 *
 * The vector kernel: two rows at a time as in kern.c (each load of x0, x1 serves both rows),
 * with eight float accumulators (two per dot product) so that consecutive multiply-adds never
 * wait for each other; sixteen registers with the four broadcast coefficients and the two
 * tokens. The teacher's rows ride along as in kern.c (one accumulator per sum).
 *
 * With AVX-512 (a build for a machine that has it) the two passes of the step run on 16 lanes,
 * each lane taking the products of an 8-lane lane in the same order, so that the results are
 * the AVX2 kernels' bit for bit (tests/test_kern_f32.c holds both to one scalar statement of
 * that order). The two-sum pair pass has, per sum, partial sums over columns 16c + l and
 * 16c + 8 + l: one 16-lane register over 16 columns of the row is both, unshuffled. The
 * one-sum passes (the look-ahead's) add one product per eight columns into each lane: there a
 * register holds the same eight columns of two rows (one insert per load, two 8-lane stores),
 * four pairs of rows at a time, and likewise two teacher rows against each repeated token.
 * Measured in cache (a 400 x 400 matrix, the pass alone against this file built without
 * AVX-512, a one-off timing) the two-sum pass takes 0.7 of the AVX2 kernel's time and the
 * one-sum pass 0.9; at 800 x 800, where both stream from the last-level cache, 0.83 and 1.0.
 * The insert is what the one-sum pass pays for keeping the rows row-major.
 *
 * The portable loops and the dispatch to the kernels are kern_generic.h, shared with kern.c;
 * this file holds what is particular to float: the row dot product and the vector kernels.
 * These look like kern.c's but are other algorithms (the float partial sums folded into double
 * every KERN_F32_TERMS products, the last columns in one masked step), so the two are written
 * apart on purpose.
 */
#include "aimsweep/model/kern.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KERN_F32_VECTOR 1
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define KERN_F32_512 1
#else
#define KERN_F32_512 0
#endif
#else
#define KERN_F32_VECTOR 0
#define KERN_F32_512 0
#endif

/* Row pairs of F per call of project_rowpairs_order_f32 with AVX-512 (four rows: sixteen
 * independent sums); the output buffer of kern_project_fused_order_f32 is sized by it in any
 * build. */
#define KERN_F32_FPAIRS 2

/* Products per float partial sum before it goes into the double total. The kernels with two
 * partial sums per dot product over eight lanes fold every 16 KERN_F32_TERMS columns, those
 * with one every 8 KERN_F32_TERMS. */
#define KERN_F32_TERMS 16

double kern_dot_f32(const float *restrict a, const float *restrict b, size_t m)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t j = 0; j < m; j++)
        s += (double)a[j] * b[j];
    return s;
}

#if KERN_F32_VECTOR

/* The mask of the first n < 8 lanes: the vector kernels take their last columns in one masked
 * step (masked-off lanes load as zero and are not stored), which costs less than a loop over
 * them at the row lengths where it matters. */
static inline __m256i lanes_ps(int n)
{
    static const int32_t ramp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_loadu_si256((const __m256i *)ramp));
}

/* acc + the eight float lanes of v, pairwise in double (the fold of a block's partial sums). */
static inline __m256d fold_ps(__m256d acc, __m256 v)
{
    __m256d w = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    return _mm256_add_pd(acc, w);
}

static inline double hsum_pd(__m256d v)
{
    __m128d lo = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

/* One row over eight columns: r <- r - A x0 - B x1, s0 += r y0, s1 += r y1. */
#define KERN_ROW8(r, A, B, X0, X1, y0p, y1p, s0, s1)                                               \
    do {                                                                                           \
        __m256 v_ = _mm256_fnmadd_ps(A, X0, _mm256_loadu_ps(r));                                   \
        v_ = _mm256_fnmadd_ps(B, X1, v_);                                                          \
        _mm256_storeu_ps(r, v_);                                                                   \
        (s0) = _mm256_fmadd_ps(v_, _mm256_loadu_ps(y0p), (s0));                                    \
        (s1) = _mm256_fmadd_ps(v_, _mm256_loadu_ps(y1p), (s1));                                    \
    } while (0)

#if !KERN_F32_512
/* Two rows r0, r1 with coefficients (a0, b0), (a1, b1); out = r0.y0, r0.y1, r1.y0, r1.y1. */
static inline void update_project_pair_f32(float *r0, float *r1, int m, float a0, float b0,
                                           float a1, float b1, const float *x0, const float *x1,
                                           const float *y0, const float *y1, double out[4])
{
    const __m256 A0 = _mm256_set1_ps(a0), B0 = _mm256_set1_ps(b0);
    const __m256 A1 = _mm256_set1_ps(a1), B1 = _mm256_set1_ps(b1);
    __m256d o00 = _mm256_setzero_pd(), o01 = o00, o10 = o00, o11 = o00;
    int j = 0;
    while (j + 16 <= m) {
        int end = j + 16 * KERN_F32_TERMS <= m ? j + 16 * KERN_F32_TERMS : m - (m - j) % 16;
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
        __m256 t00 = s00, t01 = s00, t10 = s00, t11 = s00;
        for (; j < end; j += 16) {
            __m256 X0 = _mm256_loadu_ps(x0 + j), X1 = _mm256_loadu_ps(x1 + j);
            KERN_ROW8(r0 + j, A0, B0, X0, X1, y0 + j, y1 + j, s00, s01);
            KERN_ROW8(r1 + j, A1, B1, X0, X1, y0 + j, y1 + j, s10, s11);
            X0 = _mm256_loadu_ps(x0 + j + 8);
            X1 = _mm256_loadu_ps(x1 + j + 8);
            KERN_ROW8(r0 + j + 8, A0, B0, X0, X1, y0 + j + 8, y1 + j + 8, t00, t01);
            KERN_ROW8(r1 + j + 8, A1, B1, X0, X1, y0 + j + 8, y1 + j + 8, t10, t11);
        }
        o00 = fold_ps(fold_ps(o00, s00), t00);
        o01 = fold_ps(fold_ps(o01, s01), t01);
        o10 = fold_ps(fold_ps(o10, s10), t10);
        o11 = fold_ps(fold_ps(o11, s11), t11);
    }
    if (j + 8 <= m) {
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
        __m256 X0 = _mm256_loadu_ps(x0 + j), X1 = _mm256_loadu_ps(x1 + j);
        KERN_ROW8(r0 + j, A0, B0, X0, X1, y0 + j, y1 + j, s00, s01);
        KERN_ROW8(r1 + j, A1, B1, X0, X1, y0 + j, y1 + j, s10, s11);
        o00 = fold_ps(o00, s00);
        o01 = fold_ps(o01, s01);
        o10 = fold_ps(o10, s10);
        o11 = fold_ps(o11, s11);
        j += 8;
    }
    /* The last m % 8 columns, masked. update_project_pair_f_f32 has the same update of its last
     * columns: as one inline helper the two kernels compiled to other code (registers and
     * scheduling), so the lines stand twice. */
    if (j < m) {
        __m256i k = lanes_ps(m - j);
        __m256 X0 = _mm256_maskload_ps(x0 + j, k), X1 = _mm256_maskload_ps(x1 + j, k);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        __m256 v =
            _mm256_fnmadd_ps(B0, X1, _mm256_fnmadd_ps(A0, X0, _mm256_maskload_ps(r0 + j, k)));
        __m256 u =
            _mm256_fnmadd_ps(B1, X1, _mm256_fnmadd_ps(A1, X0, _mm256_maskload_ps(r1 + j, k)));
        _mm256_maskstore_ps(r0 + j, k, v);
        _mm256_maskstore_ps(r1 + j, k, u);
        o00 = fold_ps(o00, _mm256_mul_ps(v, Y0));
        o01 = fold_ps(o01, _mm256_mul_ps(v, Y1));
        o10 = fold_ps(o10, _mm256_mul_ps(u, Y0));
        o11 = fold_ps(o11, _mm256_mul_ps(u, Y1));
    }
    out[0] = hsum_pd(o00);
    out[1] = hsum_pd(o01);
    out[2] = hsum_pd(o10);
    out[3] = hsum_pd(o11);
}

#else

/* The 16-lane helpers: two rows' same eight columns in one register (row a low, row b high),
 * eight columns repeated in both halves, and the halves back as 8-lane registers. */
static inline __m512 rows2_ps(const float *a, const float *b)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(a)), _mm256_loadu_ps(b), 1);
}

static inline __m512 bcast8_ps(const float *a)
{
    return _mm512_broadcast_f32x8(_mm256_loadu_ps(a));
}

static inline __m512 set2_ps(float a, float b)
{
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

static inline __m256 lo8_ps(__m512 v) { return _mm512_castps512_ps256(v); }

static inline __m256 hi8_ps(__m512 v) { return _mm512_extractf32x8_ps(v, 1); }

/* update_project_pair_f32 of the 8-lane build, bit for bit, on 16 lanes: there each sum keeps
 * two partial sums, s over columns 16c + l and t over 16c + 8 + l (lane l, in the order of c);
 * one 16-lane register over columns 16c .. 16c + 15 holds s in its low half and t in its high
 * half, with the same products in the same order, and folds as s then t. The last columns are
 * the 8-lane code's. */
static inline void update_project_pair_f32(float *r0, float *r1, int m, float a0, float b0,
                                           float a1, float b1, const float *x0, const float *x1,
                                           const float *y0, const float *y1, double out[4])
{
    const __m256 A0 = _mm256_set1_ps(a0), B0 = _mm256_set1_ps(b0);
    const __m256 A1 = _mm256_set1_ps(a1), B1 = _mm256_set1_ps(b1);
    const __m512 WA0 = _mm512_set1_ps(a0), WB0 = _mm512_set1_ps(b0);
    const __m512 WA1 = _mm512_set1_ps(a1), WB1 = _mm512_set1_ps(b1);
    __m256d o00 = _mm256_setzero_pd(), o01 = o00, o10 = o00, o11 = o00;
    int j = 0;
    while (j + 16 <= m) {
        int end = j + 16 * KERN_F32_TERMS <= m ? j + 16 * KERN_F32_TERMS : m - (m - j) % 16;
        __m512 s00 = _mm512_setzero_ps(), s01 = s00, s10 = s00, s11 = s00; /* [s | t] */
        for (; j < end; j += 16) {
            __m512 X0 = _mm512_loadu_ps(x0 + j), X1 = _mm512_loadu_ps(x1 + j);
            __m512 Y0 = _mm512_loadu_ps(y0 + j), Y1 = _mm512_loadu_ps(y1 + j);
            __m512 v = _mm512_fnmadd_ps(WA0, X0, _mm512_loadu_ps(r0 + j));
            __m512 u = _mm512_fnmadd_ps(WA1, X0, _mm512_loadu_ps(r1 + j));
            v = _mm512_fnmadd_ps(WB0, X1, v);
            u = _mm512_fnmadd_ps(WB1, X1, u);
            _mm512_storeu_ps(r0 + j, v);
            _mm512_storeu_ps(r1 + j, u);
            s00 = _mm512_fmadd_ps(v, Y0, s00);
            s01 = _mm512_fmadd_ps(v, Y1, s01);
            s10 = _mm512_fmadd_ps(u, Y0, s10);
            s11 = _mm512_fmadd_ps(u, Y1, s11);
        }
        o00 = fold_ps(fold_ps(o00, lo8_ps(s00)), hi8_ps(s00));
        o01 = fold_ps(fold_ps(o01, lo8_ps(s01)), hi8_ps(s01));
        o10 = fold_ps(fold_ps(o10, lo8_ps(s10)), hi8_ps(s10));
        o11 = fold_ps(fold_ps(o11, lo8_ps(s11)), hi8_ps(s11));
    }
    if (j + 8 <= m) {
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
        __m256 X0 = _mm256_loadu_ps(x0 + j), X1 = _mm256_loadu_ps(x1 + j);
        KERN_ROW8(r0 + j, A0, B0, X0, X1, y0 + j, y1 + j, s00, s01);
        KERN_ROW8(r1 + j, A1, B1, X0, X1, y0 + j, y1 + j, s10, s11);
        o00 = fold_ps(o00, s00);
        o01 = fold_ps(o01, s01);
        o10 = fold_ps(o10, s10);
        o11 = fold_ps(o11, s11);
        j += 8;
    }
    if (j < m) { /* the last m % 8 columns, masked, as in the 8-lane kernel */
        __m256i k = lanes_ps(m - j);
        __m256 X0 = _mm256_maskload_ps(x0 + j, k), X1 = _mm256_maskload_ps(x1 + j, k);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        __m256 v =
            _mm256_fnmadd_ps(B0, X1, _mm256_fnmadd_ps(A0, X0, _mm256_maskload_ps(r0 + j, k)));
        __m256 u =
            _mm256_fnmadd_ps(B1, X1, _mm256_fnmadd_ps(A1, X0, _mm256_maskload_ps(r1 + j, k)));
        _mm256_maskstore_ps(r0 + j, k, v);
        _mm256_maskstore_ps(r1 + j, k, u);
        o00 = fold_ps(o00, _mm256_mul_ps(v, Y0));
        o01 = fold_ps(o01, _mm256_mul_ps(v, Y1));
        o10 = fold_ps(o10, _mm256_mul_ps(u, Y0));
        o11 = fold_ps(o11, _mm256_mul_ps(u, Y1));
    }
    out[0] = hsum_pd(o00);
    out[1] = hsum_pd(o01);
    out[2] = hsum_pd(o10);
    out[3] = hsum_pd(o11);
}

#endif

/* Two rows f0, f1: out = f0.y0, f0.y1, f1.y0, f1.y1 (two partial sums each, per block). */
static inline void project_pair_f32(const float *f0, const float *f1, int m, const float *y0,
                                    const float *y1, double out[4])
{
    __m256d o00 = _mm256_setzero_pd(), o01 = o00, o10 = o00, o11 = o00;
    int j = 0;
    while (j + 16 <= m) {
        int end = j + 16 * KERN_F32_TERMS <= m ? j + 16 * KERN_F32_TERMS : m - (m - j) % 16;
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
        __m256 t00 = s00, t01 = s00, t10 = s00, t11 = s00;
        for (; j < end; j += 16) {
            __m256 Y0 = _mm256_loadu_ps(y0 + j), Y1 = _mm256_loadu_ps(y1 + j);
            __m256 F0 = _mm256_loadu_ps(f0 + j), F1 = _mm256_loadu_ps(f1 + j);
            s00 = _mm256_fmadd_ps(F0, Y0, s00);
            s01 = _mm256_fmadd_ps(F0, Y1, s01);
            s10 = _mm256_fmadd_ps(F1, Y0, s10);
            s11 = _mm256_fmadd_ps(F1, Y1, s11);
            Y0 = _mm256_loadu_ps(y0 + j + 8);
            Y1 = _mm256_loadu_ps(y1 + j + 8);
            F0 = _mm256_loadu_ps(f0 + j + 8);
            F1 = _mm256_loadu_ps(f1 + j + 8);
            t00 = _mm256_fmadd_ps(F0, Y0, t00);
            t01 = _mm256_fmadd_ps(F0, Y1, t01);
            t10 = _mm256_fmadd_ps(F1, Y0, t10);
            t11 = _mm256_fmadd_ps(F1, Y1, t11);
        }
        o00 = fold_ps(fold_ps(o00, s00), t00);
        o01 = fold_ps(fold_ps(o01, s01), t01);
        o10 = fold_ps(fold_ps(o10, s10), t10);
        o11 = fold_ps(fold_ps(o11, s11), t11);
    }
    if (j + 8 <= m) {
        __m256 Y0 = _mm256_loadu_ps(y0 + j), Y1 = _mm256_loadu_ps(y1 + j);
        __m256 F0 = _mm256_loadu_ps(f0 + j), F1 = _mm256_loadu_ps(f1 + j);
        o00 = fold_ps(o00, _mm256_mul_ps(F0, Y0));
        o01 = fold_ps(o01, _mm256_mul_ps(F0, Y1));
        o10 = fold_ps(o10, _mm256_mul_ps(F1, Y0));
        o11 = fold_ps(o11, _mm256_mul_ps(F1, Y1));
        j += 8;
    }
    if (j < m) { /* the last m % 8 columns, masked */
        __m256i k = lanes_ps(m - j);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        __m256 F0 = _mm256_maskload_ps(f0 + j, k), F1 = _mm256_maskload_ps(f1 + j, k);
        o00 = fold_ps(o00, _mm256_mul_ps(F0, Y0));
        o01 = fold_ps(o01, _mm256_mul_ps(F0, Y1));
        o10 = fold_ps(o10, _mm256_mul_ps(F1, Y0));
        o11 = fold_ps(o11, _mm256_mul_ps(F1, Y1));
    }
    out[0] = hsum_pd(o00);
    out[1] = hsum_pd(o01);
    out[2] = hsum_pd(o10);
    out[3] = hsum_pd(o11);
}

/* update_project_pair_f32 together with one row f of another matrix projected on y0, y1:
 * out = r0.y0, r0.y1, r1.y0, r1.y1, f.y0, f.y1 (one accumulator per sum, per block). With f
 * NULL (the look-ahead's pass, below) only the first four, each by the same operations. */
static inline void update_project_pair_f_f32(float *r0, float *r1, const float *f, int m, float a0,
                                             float b0, float a1, float b1, const float *x0,
                                             const float *x1, const float *y0, const float *y1,
                                             double out[6])
{
    const __m256 A0 = _mm256_set1_ps(a0), B0 = _mm256_set1_ps(b0);
    const __m256 A1 = _mm256_set1_ps(a1), B1 = _mm256_set1_ps(b1);
    __m256d o[6];
    for (int q = 0; q < 6; q++)
        o[q] = _mm256_setzero_pd();
    int j = 0;
    while (j + 8 <= m) {
        int end = j + 8 * KERN_F32_TERMS <= m ? j + 8 * KERN_F32_TERMS : m - (m - j) % 8;
        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, g0 = s00, g1 = s00;
        for (; j < end; j += 8) {
            __m256 X0 = _mm256_loadu_ps(x0 + j), X1 = _mm256_loadu_ps(x1 + j);
            __m256 Y0 = _mm256_loadu_ps(y0 + j), Y1 = _mm256_loadu_ps(y1 + j);
            __m256 v = _mm256_fnmadd_ps(A0, X0, _mm256_loadu_ps(r0 + j));
            __m256 u = _mm256_fnmadd_ps(A1, X0, _mm256_loadu_ps(r1 + j));
            v = _mm256_fnmadd_ps(B0, X1, v);
            u = _mm256_fnmadd_ps(B1, X1, u);
            _mm256_storeu_ps(r0 + j, v);
            _mm256_storeu_ps(r1 + j, u);
            s00 = _mm256_fmadd_ps(v, Y0, s00);
            s01 = _mm256_fmadd_ps(v, Y1, s01);
            s10 = _mm256_fmadd_ps(u, Y0, s10);
            s11 = _mm256_fmadd_ps(u, Y1, s11);
            if (f) {
                __m256 F = _mm256_loadu_ps(f + j);
                g0 = _mm256_fmadd_ps(F, Y0, g0);
                g1 = _mm256_fmadd_ps(F, Y1, g1);
            }
        }
        o[0] = fold_ps(o[0], s00);
        o[1] = fold_ps(o[1], s01);
        o[2] = fold_ps(o[2], s10);
        o[3] = fold_ps(o[3], s11);
        o[4] = fold_ps(o[4], g0);
        o[5] = fold_ps(o[5], g1);
    }
    /* The last m % 8 columns, masked: the update as in update_project_pair_f32 (written twice on
     * purpose, see there), then the teacher's row. */
    if (j < m) {
        __m256i k = lanes_ps(m - j);
        __m256 X0 = _mm256_maskload_ps(x0 + j, k), X1 = _mm256_maskload_ps(x1 + j, k);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        __m256 v =
            _mm256_fnmadd_ps(B0, X1, _mm256_fnmadd_ps(A0, X0, _mm256_maskload_ps(r0 + j, k)));
        __m256 u =
            _mm256_fnmadd_ps(B1, X1, _mm256_fnmadd_ps(A1, X0, _mm256_maskload_ps(r1 + j, k)));
        _mm256_maskstore_ps(r0 + j, k, v);
        _mm256_maskstore_ps(r1 + j, k, u);
        o[0] = fold_ps(o[0], _mm256_mul_ps(v, Y0));
        o[1] = fold_ps(o[1], _mm256_mul_ps(v, Y1));
        o[2] = fold_ps(o[2], _mm256_mul_ps(u, Y0));
        o[3] = fold_ps(o[3], _mm256_mul_ps(u, Y1));
        if (f) {
            __m256 F = _mm256_maskload_ps(f + j, k);
            o[4] = fold_ps(o[4], _mm256_mul_ps(F, Y0));
            o[5] = fold_ps(o[5], _mm256_mul_ps(F, Y1));
        }
    }
    for (int q = 0; q < (f ? 6 : 4); q++)
        out[q] = hsum_pd(o[q]);
}

#endif

#define KERN_T float
#define KERN_NAME(x) x##_f32
#define KERN_PORTABLE(x) x##_f32_portable
#define KERN_WIDE(x) ((double)(x))
#define KERN_DOT(a, b, m) kern_dot_f32(a, b, (size_t)(m))
#define KERN_HAVE_VECTOR KERN_F32_VECTOR
#include "kern_generic.h"

/* The look-ahead of precision single (sgd.c's next_sample): the pass of
 * kern_update_project_fused_f32 without its teacher rows, and those rows for several samples in
 * one read of F, each sum made exactly as update_project_pair_f_f32 makes it. */
#if KERN_F32_VECTOR

#if !KERN_F32_512

/* update_project_pair_f_f32 without f on two pairs of rows at once, r[0..3] with coefficients a[q], b[q]
 * (out[2q], out[2q + 1] = r_q . y0, r_q . y1): each row and each sum takes the same operations
 * in the same order as there; eight independent sums keep the multiply-adds from waiting for
 * each other. */
static inline void update_project_quad_nf_f32(float *const r[4], int m, const float a[4],
                                              const float b[4], const float *x0, const float *x1,
                                              const float *y0, const float *y1, double out[8])
{
    __m256 A[4], B[4];
    __m256d o[8];
    for (int q = 0; q < 4; q++) {
        A[q] = _mm256_set1_ps(a[q]);
        B[q] = _mm256_set1_ps(b[q]);
    }
    for (int q = 0; q < 8; q++)
        o[q] = _mm256_setzero_pd();
    int j = 0;
    while (j + 8 <= m) {
        int end = j + 8 * KERN_F32_TERMS <= m ? j + 8 * KERN_F32_TERMS : m - (m - j) % 8;
        __m256 s[8];
        for (int q = 0; q < 8; q++)
            s[q] = _mm256_setzero_ps();
        for (; j < end; j += 8) {
            __m256 X0 = _mm256_loadu_ps(x0 + j), X1 = _mm256_loadu_ps(x1 + j);
            __m256 Y0 = _mm256_loadu_ps(y0 + j), Y1 = _mm256_loadu_ps(y1 + j);
            for (int q = 0; q < 4; q++) {
                __m256 v = _mm256_fnmadd_ps(A[q], X0, _mm256_loadu_ps(r[q] + j));
                v = _mm256_fnmadd_ps(B[q], X1, v);
                _mm256_storeu_ps(r[q] + j, v);
                s[2 * q] = _mm256_fmadd_ps(v, Y0, s[2 * q]);
                s[2 * q + 1] = _mm256_fmadd_ps(v, Y1, s[2 * q + 1]);
            }
        }
        for (int q = 0; q < 8; q++)
            o[q] = fold_ps(o[q], s[q]);
    }
    if (j < m) { /* the last m % 8 columns, masked, as in update_project_pair_f_f32 */
        __m256i k = lanes_ps(m - j);
        __m256 X0 = _mm256_maskload_ps(x0 + j, k), X1 = _mm256_maskload_ps(x1 + j, k);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        for (int q = 0; q < 4; q++) {
            __m256 v = _mm256_fnmadd_ps(
                B[q], X1, _mm256_fnmadd_ps(A[q], X0, _mm256_maskload_ps(r[q] + j, k)));
            _mm256_maskstore_ps(r[q] + j, k, v);
            o[2 * q] = fold_ps(o[2 * q], _mm256_mul_ps(v, Y0));
            o[2 * q + 1] = fold_ps(o[2 * q + 1], _mm256_mul_ps(v, Y1));
        }
    }
    for (int q = 0; q < 8; q++)
        out[q] = hsum_pd(o[q]);
}

#endif

#if KERN_F32_512

/* Pairs of rows per call of update_project_pairs_nf_f32 (eight rows: sixteen independent sums). */
#define KERN_F32_PAIRS 4

/* update_project_pair_f_f32 without f on np <= KERN_F32_PAIRS pairs of rows at once, bit for
 * bit, on 16 lanes: rows 2p and 2p + 1 from r (row stride m) share one register, the same eight
 * columns of each in its two halves, so that each lane takes the products of the 8-lane kernel's
 * lane in the same order (one multiply-add per eight columns), with the coefficients a[q], b[q]
 * of row q. out[4p .. 4p + 3] = r_2p . y0, r_2p . y1, r_2p+1 . y0, r_2p+1 . y1. The last m % 8
 * columns are the 8-lane code's, row by row. */
static inline __attribute__((always_inline)) void
update_project_pairs_nf_f32(float *r, int np, int m, const float *a, const float *b,
                            const float *x0, const float *x1, const float *y0, const float *y1,
                            double *out)
{
    __m512 A[KERN_F32_PAIRS], B[KERN_F32_PAIRS];
    __m256d o[4 * KERN_F32_PAIRS];
    for (int p = 0; p < np; p++) {
        A[p] = set2_ps(a[2 * p], a[2 * p + 1]);
        B[p] = set2_ps(b[2 * p], b[2 * p + 1]);
    }
    for (int q = 0; q < 4 * np; q++)
        o[q] = _mm256_setzero_pd();
    int j = 0;
    while (j + 8 <= m) {
        int end = j + 8 * KERN_F32_TERMS <= m ? j + 8 * KERN_F32_TERMS : m - (m - j) % 8;
        __m512 s[2 * KERN_F32_PAIRS]; /* s[2p + c]: [row 2p | row 2p + 1] . y_c */
        for (int q = 0; q < 2 * np; q++)
            s[q] = _mm512_setzero_ps();
        for (; j < end; j += 8) {
            __m512 X0 = bcast8_ps(x0 + j), X1 = bcast8_ps(x1 + j);
            __m512 Y0 = bcast8_ps(y0 + j), Y1 = bcast8_ps(y1 + j);
            for (int p = 0; p < np; p++) {
                float *u = r + (size_t)2 * p * m + j;
                __m512 v = _mm512_fnmadd_ps(A[p], X0, rows2_ps(u, u + m));
                v = _mm512_fnmadd_ps(B[p], X1, v);
                _mm256_storeu_ps(u, lo8_ps(v));
                _mm256_storeu_ps(u + m, hi8_ps(v));
                s[2 * p] = _mm512_fmadd_ps(v, Y0, s[2 * p]);
                s[2 * p + 1] = _mm512_fmadd_ps(v, Y1, s[2 * p + 1]);
            }
        }
        for (int p = 0; p < np; p++) {
            o[4 * p] = fold_ps(o[4 * p], lo8_ps(s[2 * p]));
            o[4 * p + 1] = fold_ps(o[4 * p + 1], lo8_ps(s[2 * p + 1]));
            o[4 * p + 2] = fold_ps(o[4 * p + 2], hi8_ps(s[2 * p]));
            o[4 * p + 3] = fold_ps(o[4 * p + 3], hi8_ps(s[2 * p + 1]));
        }
    }
    if (j < m) { /* the last m % 8 columns, masked, as in update_project_pair_f_f32 */
        __m256i k = lanes_ps(m - j);
        __m256 X0 = _mm256_maskload_ps(x0 + j, k), X1 = _mm256_maskload_ps(x1 + j, k);
        __m256 Y0 = _mm256_maskload_ps(y0 + j, k), Y1 = _mm256_maskload_ps(y1 + j, k);
        for (int q = 0; q < 2 * np; q++) {
            float *u = r + (size_t)q * m + j;
            __m256 v = _mm256_fnmadd_ps(
                _mm256_set1_ps(b[q]), X1,
                _mm256_fnmadd_ps(_mm256_set1_ps(a[q]), X0, _mm256_maskload_ps(u, k)));
            _mm256_maskstore_ps(u, k, v);
            o[2 * q] = fold_ps(o[2 * q], _mm256_mul_ps(v, Y0));
            o[2 * q + 1] = fold_ps(o[2 * q + 1], _mm256_mul_ps(v, Y1));
        }
    }
    for (int q = 0; q < 4 * np; q++)
        out[q] = hsum_pd(o[q]);
}

/* np pairs of rows of M from row i through update_project_pairs_nf_f32, their sums into O. */
static inline __attribute__((always_inline)) void ahead_pairs_f32(float *M, int n, int m,
                                                                  const double *C, const float *X,
                                                                  const float *Y, double *O, int i,
                                                                  int np)
{
    float a[2 * KERN_F32_PAIRS], b[2 * KERN_F32_PAIRS];
    double out[4 * KERN_F32_PAIRS];
    for (int q = 0; q < 2 * np; q++) {
        a[q] = (float)C[i + q];
        b[q] = (float)C[n + i + q];
    }
    update_project_pairs_nf_f32(M + (size_t)i * m, np, m, a, b, X, X + m, Y, Y + m, out);
    for (int p = 0; p < np; p++)
        put_pair_f32(O, n, i + 2 * p, out + 4 * p);
}

#endif

/* The sums g0, g1 of update_project_pair_f_f32 for row f and up to four samples at once (ns of
 * them, y[2u] and y[2u + 1] the tokens of sample u; unused entries repeat sample 0): out[2u],
 * out[2u + 1] = f . y[2u], f . y[2u + 1]. One load of f serves the eight products. */
static void project_row_order_f32(const float *f, int m, const float *const y[8], double out[8])
{
    __m256d o[8];
    for (int q = 0; q < 8; q++)
        o[q] = _mm256_setzero_pd();
    int j = 0;
    while (j + 8 <= m) {
        int end = j + 8 * KERN_F32_TERMS <= m ? j + 8 * KERN_F32_TERMS : m - (m - j) % 8;
        __m256 g[8];
        for (int q = 0; q < 8; q++)
            g[q] = _mm256_setzero_ps();
        for (; j < end; j += 8) {
            __m256 F = _mm256_loadu_ps(f + j);
            for (int q = 0; q < 8; q++)
                g[q] = _mm256_fmadd_ps(F, _mm256_loadu_ps(y[q] + j), g[q]);
        }
        for (int q = 0; q < 8; q++)
            o[q] = fold_ps(o[q], g[q]);
    }
    if (j < m) {
        __m256i k = lanes_ps(m - j);
        __m256 F = _mm256_maskload_ps(f + j, k);
        for (int q = 0; q < 8; q++)
            o[q] = fold_ps(o[q], _mm256_mul_ps(F, _mm256_maskload_ps(y[q] + j, k)));
    }
    for (int q = 0; q < 8; q++)
        out[q] = hsum_pd(o[q]);
}

#if KERN_F32_512

/* project_row_order_f32 for np <= KERN_F32_FPAIRS pairs of rows at once (rows 2p and 2p + 1 from
 * f, row stride m), bit for bit, on 16 lanes: one register holds the same eight columns of a pair
 * of rows, each token is repeated in both halves, so each lane adds the 8-lane kernel's products
 * in its order. Two pairs share each load of a token (twelve loads for sixteen multiply-adds,
 * where one pair took ten for eight). out[8 h + q] = row h . y[q], h < 2 np. */
static inline __attribute__((always_inline)) void
project_rowpairs_order_f32(const float *f, int np, int m, const float *const y[8], double *out)
{
    __m256d o[16 * KERN_F32_FPAIRS]; /* o[16 p + q] row 2p, o[16 p + 8 + q] row 2p + 1 */
    for (int q = 0; q < 16 * np; q++)
        o[q] = _mm256_setzero_pd();
    int j = 0;
    while (j + 8 <= m) {
        int end = j + 8 * KERN_F32_TERMS <= m ? j + 8 * KERN_F32_TERMS : m - (m - j) % 8;
        __m512 g[8 * KERN_F32_FPAIRS];
        for (int q = 0; q < 8 * np; q++)
            g[q] = _mm512_setzero_ps();
        for (; j < end; j += 8) {
            __m512 F[KERN_F32_FPAIRS];
            for (int p = 0; p < np; p++)
                F[p] = rows2_ps(f + (size_t)2 * p * m + j, f + (size_t)(2 * p + 1) * m + j);
            for (int q = 0; q < 8; q++) {
                __m512 Y = bcast8_ps(y[q] + j);
                for (int p = 0; p < np; p++)
                    g[8 * p + q] = _mm512_fmadd_ps(F[p], Y, g[8 * p + q]);
            }
        }
        for (int p = 0; p < np; p++)
            for (int q = 0; q < 8; q++) {
                o[16 * p + q] = fold_ps(o[16 * p + q], lo8_ps(g[8 * p + q]));
                o[16 * p + 8 + q] = fold_ps(o[16 * p + 8 + q], hi8_ps(g[8 * p + q]));
            }
    }
    if (j < m) { /* the last m % 8 columns, masked, as in project_row_order_f32 */
        __m256i k = lanes_ps(m - j);
        for (int h = 0; h < 2 * np; h++) {
            __m256 F = _mm256_maskload_ps(f + (size_t)h * m + j, k);
            for (int q = 0; q < 8; q++)
                o[8 * h + q] =
                    fold_ps(o[8 * h + q], _mm256_mul_ps(F, _mm256_maskload_ps(y[q] + j, k)));
        }
    }
    for (int q = 0; q < 16 * np; q++)
        out[q] = hsum_pd(o[q]);
}

#endif

#endif

int kern_update_project_ahead_f32(float *M, int n, int m, int T, const double *C, const float *X,
                                  const float *Y, double *O, int nf)
{
    int pairs = n / 2, done = T != 2 ? 0 : nf < pairs ? nf : pairs;
#if KERN_F32_512
    int p = 0;
    for (; p + KERN_F32_PAIRS <= done; p += KERN_F32_PAIRS)
        ahead_pairs_f32(M, n, m, C, X, Y, O, 2 * p, KERN_F32_PAIRS);
    for (; p + 2 <= done; p += 2)
        ahead_pairs_f32(M, n, m, C, X, Y, O, 2 * p, 2);
    if (p < done)
        ahead_pairs_f32(M, n, m, C, X, Y, O, 2 * p, 1);
    update_project_from_f32(M, n, m, T, C, X, Y, O, 2 * done);
#elif KERN_F32_VECTOR
    int p = 0;
    for (; p + 2 <= done; p += 2) { /* two pairs at a time, each row as in the loop below */
        int i = 2 * p;
        double out[8];
        float *r[4] = {M + (size_t)i * m, M + (size_t)(i + 1) * m, M + (size_t)(i + 2) * m,
                       M + (size_t)(i + 3) * m};
        float a[4] = {(float)C[i], (float)C[i + 1], (float)C[i + 2], (float)C[i + 3]};
        float b[4] = {(float)C[n + i], (float)C[n + i + 1], (float)C[n + i + 2],
                      (float)C[n + i + 3]};
        update_project_quad_nf_f32(r, m, a, b, X, X + m, Y, Y + m, out);
        double o0[4] = {out[0], out[1], out[2], out[3]}, o1[4] = {out[4], out[5], out[6], out[7]};
        put_pair_f32(O, n, i, o0);
        put_pair_f32(O, n, i + 2, o1);
    }
    for (; p < done; p++) {
        int i = 2 * p;
        double out[6];
        float *r0 = M + (size_t)i * m;
        update_project_pair_f_f32(r0, r0 + m, NULL, m, (float)C[i], (float)C[n + i],
                                  (float)C[i + 1], (float)C[n + i + 1], X, X + m, Y, Y + m, out);
        put_pair_f32(O, n, i, out);
    }
    update_project_from_f32(M, n, m, T, C, X, Y, O, 2 * done);
#else
    kern_update_project_f32_portable(M, n, m, T, C, X, Y, O);
#endif
    return done;
}

int kern_project_fused_order_f32(const float *F, int nf, int m, int K, const float *Y, size_t ldy,
                                 double *Z, size_t ldzs, int ldz)
{
#if KERN_F32_VECTOR
    /* four or two rows at a time through the 16-lane kernel where there is one, the last odd
     * row (or every row) through the 8-lane one */
    int step = KERN_F32_512 ? 2 * KERN_F32_FPAIRS : 1;
    for (int p = 0; p < nf; p += step)
        for (int s0 = 0; s0 < K; s0 += 4) {
            int ns = K - s0 < 4 ? K - s0 : 4, rows = nf - p < step ? nf - p : step;
            const float *y[8];
            double out[2 * KERN_F32_FPAIRS * 8];
            for (int u = 0; u < 4; u++) {
                y[2 * u] = Y + (size_t)(s0 + (u < ns ? u : 0)) * ldy;
                y[2 * u + 1] = y[2 * u] + m;
            }
#if KERN_F32_512
            if (rows == 2 * KERN_F32_FPAIRS)
                project_rowpairs_order_f32(F + (size_t)p * m, KERN_F32_FPAIRS, m, y, out);
            else if (rows >= 2)
                project_rowpairs_order_f32(F + (size_t)p * m, 1, m, y, out);
            if (rows & 1)
#endif /* (without AVX-512 step is 1, so rows is 1: every row takes the 8-lane kernel) */
                project_row_order_f32(F + (size_t)(p + rows - 1) * m, m, y, out + 8 * (rows - 1));
            for (int h = 0; h < rows; h++)
                for (int u = 0; u < ns; u++) {
                    double *z = Z + (size_t)(s0 + u) * ldzs;
                    z[p + h] = out[8 * h + 2 * u];
                    z[ldz + p + h] = out[8 * h + 2 * u + 1];
                }
        }
    return 0;
#else
    (void)F, (void)nf, (void)m, (void)K, (void)Y, (void)ldy, (void)Z, (void)ldzs, (void)ldz;
    return -1;
#endif
}
