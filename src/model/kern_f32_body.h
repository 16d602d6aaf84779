/*
 * kern_f32_body.h: the inner loops of the SGD step in single precision (kern.h, precision single),
 * compiled once per path of the run-time dispatch with kern_f64_body.h (kern_isa.h). Not a header.
 *
 * The same two loops as kern_f64_body.h on float rows: M_i <- M_i - sum_a C[a n + i] X_a, then the
 * projections M_i . Y_b with the new row. The rows, the tokens and the teacher's factor are
 * float, which halves the bytes a step moves; the update is done in float (the stored value is
 * float whatever the arithmetic), the coefficients C come in double and are rounded once per row.
 *
 * Where the sums are done. The projections are sums of m products of floats. The portable
 * loops add every product in double. The vector kernels multiply and add in float over blocks
 * of columns, each float partial sum (one lane of one accumulator) taking KERN_F32_TERMS = q
 * products, and add each block's partial sums into a double total. A float partial sum of q
 * products carries a rounding error of at most q u (u = 2^-24, to first order) of the sum of the
 * magnitudes of its terms, and the double total adds nothing at this scale; so the error of a
 * projection is at most q u sum_j |M_ij Y_bj| at any row length, about q times the rounding of
 * the inputs themselves (each float entry is within u of the double it replaces), where a float
 * accumulation over the whole row would grow with m.
 *
 * One order for every sum of the T = 2 passes (the step's pass, the look-ahead's pass, the two-step
 * pass and the teacher's rows, update_project_rows_f32): two float partial sums of eight lanes per
 * sum, over columns 16c + l and 16c + 8 + l, folded every 16 q columns into a total of eight double
 * lanes (one conversion and one addition per partial sum), the lanes added at the end. An 8-lane
 * register per partial sum with AVX2; with AVX-512 (the AVX-512 path) one 16-lane
 * register over 16 columns of a row is both partial sums, unshuffled, and the total is one 8-lane
 * double register: the two builds add the same products in the same order, bit for bit
 * (tests/test_kern_f32_body.h holds both to one scalar statement of that order). AVX2 takes two rows at
 * a time (sixteen registers: eight accumulators, the two tokens x, the four coefficients), AVX-512
 * four in the look-ahead's pass (each load of x0, x1, y0, y1 serves four rows) and two teacher rows
 * against the tokens of four samples. Two kinds of sums are made otherwise: the two-step pass
 * over bands kept column by column (kern_band2_project2_f32, a row a lane, below), and a teacher
 * row of whole 16-column steps and at most 512 columns (short_row_f32), whose lanes are added in
 * float by the same tree and the sum converted once. The folds were the kernels' most expensive
 * part when the
 * total had four double lanes (two conversions and three additions per partial sum, the halves of a
 * 16-lane register extracted twice) and the look-ahead's sums one partial sum of eight lanes (there
 * two rows shared a 16-lane register: an insert per load, two stores per register): the step in
 * single at d = 400 took 1.3 times as long.
 *
 * The portable loops and the dispatch to the kernels are kern_generic.h, shared with kern_f64_body.h;
 * this file holds what is particular to float: the row dot product and the vector kernels.
 * These look like kern_f64_body.h's but are other algorithms (the float partial sums folded into double
 * every KERN_F32_TERMS products, the last columns in one masked step), so the two are written
 * apart on purpose.
 */
#ifndef KERN_ISA
#error "kern_f32_body.h is included by kern_portable.c, kern_avx2.c and kern_avx512.c only"
#endif
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

/* A token loaded once per block of columns stays in a register for every row that uses it. Left
 * to itself GCC folds each use into its multiply-add as a memory operand, so a token serving two
 * rows was loaded twice: the two-step pass made 18 loads and two prefetches per 16 multiply-adds,
 * and with two 512-bit loads a cycle (Zen 5) the loads, not the arithmetic, bounded it (0.6 of
 * the multiply-add rate at d = 400). The empty asm makes the value a register the compiler cannot
 * see into; it changes no arithmetic. */
#define IN_REGISTER(x) __asm__("" : "+v"(x))

/* Products per float partial sum before it goes into the double total: every sum folds its two
 * partial sums (over columns 16c + l and 16c + 8 + l) every 16 KERN_F32_TERMS columns. A fold is
 * a conversion and an addition per partial sum beside the q multiply-adds that made it, on the
 * same units; with q = 32 instead of 16 (bench/compare.sh, three rounds) the step in single was
 * 1.06-1.08x as fast at d = 400 and 1.03-1.07x at 800 for the three decompositions (1.00-1.01x
 * at 1600, where the bytes bound it), and q = 64 gained 0-3% more. The bound q u sum |M Y| of a
 * projection's error doubles; against the double run on the same samples single stays some 1e-5
 * of the seed-to-seed spread (analysis/precision/results.md). */
#define KERN_F32_TERMS 32

/* The width of the spans of columns in which the teacher's projections and the two-step pass
 * over long rows take their rows (one fold, 512 columns): the eight tokens' span, 16 KB, stays
 * in the first-level cache while the rows stream past it. A span ends where a fold does, so each
 * sum is made as in one span over the row, bit for bit. */
#define KERN_F32_SPAN (16 * KERN_F32_TERMS)

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

/* (v0 + v2) + (v1 + v3) */
static inline double hsum_pd(__m256d v)
{
    __m128d lo = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

/* The double total of a sum of the T = 2 kernels, eight lanes, lane l taking the float partial
 * sums of lane l in turn (acc_add); acc_sum adds lane l + 4 to lane l, then (0 + 2) + (1 + 3).
 * One 8-lane register with AVX-512, two 4-lane ones without: the same additions. */
#if KERN_F32_512
typedef __m512d kacc;

static inline kacc acc_zero(void) { return _mm512_setzero_pd(); }

static inline kacc acc_add(kacc o, __m256 v) { return _mm512_add_pd(o, _mm512_cvtps_pd(v)); }

static inline double acc_sum(kacc o)
{
    return hsum_pd(_mm256_add_pd(_mm512_castpd512_pd256(o), _mm512_extractf64x4_pd(o, 1)));
}

/* A 16-lane float partial sum over columns 16c + l into the total: its low half, then its high
 * half, as the 8-lane kernels add their partial sums s, then t. */
static inline kacc acc_fold16(kacc o, __m512 s)
{
    return acc_add(acc_add(o, _mm512_castps512_ps256(s)), _mm512_extractf32x8_ps(s, 1));
}
#else
typedef struct {
    __m256d lo, hi;
} kacc;

static inline kacc acc_zero(void) { return (kacc){_mm256_setzero_pd(), _mm256_setzero_pd()}; }

static inline kacc acc_add(kacc o, __m256 v)
{
    o.lo = _mm256_add_pd(o.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    o.hi = _mm256_add_pd(o.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    return o;
}

static inline double acc_sum(kacc o) { return hsum_pd(_mm256_add_pd(o.lo, o.hi)); }
#endif

/* The 8-column step after the blocks and the masked last m % 8 columns of one row r from column
 * j, with the update first where w is r (w <- r - a x0 - b x1; w NULL: r as it is): each product
 * into its sum's total o[q] (token y[q]) as an 8-lane partial sum of one term. */
static inline void row_tail_f32(const float *r, float *w, int m, int j, float a, float b,
                                const float *x0, const float *x1, const float *const *y, int ny,
                                kacc *o)
{
    const __m256 A = _mm256_set1_ps(a), B = _mm256_set1_ps(b);
    if (j + 8 <= m) {
        __m256 v = _mm256_loadu_ps(r + j);
        if (w) {
            v = _mm256_fnmadd_ps(B, _mm256_loadu_ps(x1 + j),
                                 _mm256_fnmadd_ps(A, _mm256_loadu_ps(x0 + j), v));
            _mm256_storeu_ps(w + j, v);
        }
        for (int q = 0; q < ny; q++)
            o[q] =
                acc_add(o[q], _mm256_fmadd_ps(v, _mm256_loadu_ps(y[q] + j), _mm256_setzero_ps()));
        j += 8;
    }
    if (j < m) {
        __m256i k = lanes_ps(m - j);
        __m256 v = _mm256_maskload_ps(r + j, k);
        if (w) {
            v = _mm256_fnmadd_ps(B, _mm256_maskload_ps(x1 + j, k),
                                 _mm256_fnmadd_ps(A, _mm256_maskload_ps(x0 + j, k), v));
            _mm256_maskstore_ps(w + j, k, v);
        }
        for (int q = 0; q < ny; q++)
            o[q] = acc_add(o[q], _mm256_mul_ps(v, _mm256_maskload_ps(y[q] + j, k)));
    }
}

/* Rows of the pass, nr at a time (row h at r + h m, coefficients a[h], b[h]): each entry
 * v = r - a x0 - b x1 (two rounded multiply-adds), stored, and out[2h + c] = row h . y_c, each
 * sum two float partial sums, s over columns 16c + l and t over 16c + 8 + l (lane l, in the
 * order of c), folded s then t into the sum's total every 16 KERN_F32_TERMS columns, then one
 * 8-column step, then the last m % 8 columns (row_tail_f32). With AVX-512 one 16-lane register
 * over 16 columns is s in its low half and t in its high half, unshuffled, so both builds add
 * the same products in the same order. nr <= KERN_F32_ROWS. */
#define KERN_F32_ROWS (KERN_F32_512 ? 4 : 2)

static inline __attribute__((always_inline)) void
update_project_rows_f32(float *r, int nr, int m, const float *a, const float *b, const float *x0,
                        const float *x1, const float *y0, const float *y1, double *out)
{
    const float *y[2] = {y0, y1};
    kacc o[2 * KERN_F32_ROWS];
    for (int q = 0; q < 2 * nr; q++)
        o[q] = acc_zero();
    int j = 0;
    while (j + 16 <= m) {
        int end = j + 16 * KERN_F32_TERMS <= m ? j + 16 * KERN_F32_TERMS : m - (m - j) % 16;
#if KERN_F32_512
        __m512 A[KERN_F32_ROWS], B[KERN_F32_ROWS], s[2 * KERN_F32_ROWS]; /* [s | t] */
        for (int h = 0; h < nr; h++) {
            A[h] = _mm512_set1_ps(a[h]);
            B[h] = _mm512_set1_ps(b[h]);
            s[2 * h] = s[2 * h + 1] = _mm512_setzero_ps();
        }
        for (; j < end; j += 16) {
            __m512 X0 = _mm512_loadu_ps(x0 + j), X1 = _mm512_loadu_ps(x1 + j);
            __m512 Y0 = _mm512_loadu_ps(y0 + j), Y1 = _mm512_loadu_ps(y1 + j);
            IN_REGISTER(X0);
            IN_REGISTER(X1);
            IN_REGISTER(Y0);
            IN_REGISTER(Y1);
            for (int h = 0; h < nr; h++) {
                float *u = r + (size_t)h * m + j;
                __m512 v = _mm512_fnmadd_ps(A[h], X0, _mm512_loadu_ps(u));
                v = _mm512_fnmadd_ps(B[h], X1, v);
                _mm512_storeu_ps(u, v);
                s[2 * h] = _mm512_fmadd_ps(v, Y0, s[2 * h]);
                s[2 * h + 1] = _mm512_fmadd_ps(v, Y1, s[2 * h + 1]);
            }
        }
        for (int q = 0; q < 2 * nr; q++)
            o[q] = acc_fold16(o[q], s[q]);
#else
        __m256 A[KERN_F32_ROWS], B[KERN_F32_ROWS], s[2 * KERN_F32_ROWS], t[2 * KERN_F32_ROWS];
        for (int h = 0; h < nr; h++) {
            A[h] = _mm256_set1_ps(a[h]);
            B[h] = _mm256_set1_ps(b[h]);
            s[2 * h] = s[2 * h + 1] = t[2 * h] = t[2 * h + 1] = _mm256_setzero_ps();
        }
        for (; j < end; j += 16)
            for (int half = 0; half < 2; half++) {
                int c = j + 8 * half;
                __m256 X0 = _mm256_loadu_ps(x0 + c), X1 = _mm256_loadu_ps(x1 + c);
                __m256 *acc = half ? t : s;
                for (int h = 0; h < nr; h++) {
                    float *u = r + (size_t)h * m + c;
                    __m256 v = _mm256_fnmadd_ps(A[h], X0, _mm256_loadu_ps(u));
                    v = _mm256_fnmadd_ps(B[h], X1, v);
                    _mm256_storeu_ps(u, v);
                    acc[2 * h] = _mm256_fmadd_ps(v, _mm256_loadu_ps(y0 + c), acc[2 * h]);
                    acc[2 * h + 1] = _mm256_fmadd_ps(v, _mm256_loadu_ps(y1 + c), acc[2 * h + 1]);
                }
            }
        for (int q = 0; q < 2 * nr; q++)
            o[q] = acc_add(acc_add(o[q], s[q]), t[q]);
#endif
    }
    for (int h = 0; h < nr; h++)
        row_tail_f32(r + (size_t)h * m, r + (size_t)h * m, m, j, a[h], b[h], x0, x1, y, 2,
                     o + 2 * h);
    for (int q = 0; q < 2 * nr; q++)
        out[q] = acc_sum(o[q]);
}

/* Two rows r0 = r, r1 = r + m of the pass (kern_generic.h's pair; r1 is always r0 + m there):
 * out = r0.y0, r0.y1, r1.y0, r1.y1. */
static inline void update_project_pair_f32(float *r0, float *r1, int m, float a0, float b0,
                                           float a1, float b1, const float *x0, const float *x1,
                                           const float *y0, const float *y1, double out[4])
{
    const float a[2] = {a0, a1}, b[2] = {b0, b1};
    (void)r1;
    update_project_rows_f32(r0, 2, m, a, b, x0, x1, y0, y1, out);
}

/* acc + the eight float lanes of v, pairwise in double (the fold of kern_project_f32's sums). */
static inline __m256d fold_ps(__m256d acc, __m256 v)
{
    __m256d w = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    return _mm256_add_pd(acc, w);
}

/* Two rows f0, f1 (kern_project_f32, the resync's projections): out = f0.y0, f0.y1, f1.y0,
 * f1.y1 (two partial sums each, per block). */
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

/* The teacher's rows in the pass's order without the update: nr rows of f (row stride m)
 * against ny tokens y[q], out[ny h + q] = row h . y[q], each sum made as update_project_rows_f32
 * makes it. nr ny <= KERN_F32_SUMS. */
#define KERN_F32_SUMS 16

/* Columns j0 to j1 of the blocks of project_rows_f32 into the totals o (j0 a multiple of
 * 16 KERN_F32_TERMS, and so is j1 unless it is m): the sums of the whole row, span after span,
 * are the sums of one span from 0 to m. With AVX-512 the loop asks for the next nr rows at the
 * same columns, which the teacher's projections (kern_project_fused_order_f32) take next: tied
 * and untied in single 1.02-1.04x at d = 800-1600 and 1.12-1.37x at 3200, where the factor
 * comes from memory (bench/compare.sh, three rounds; the same in the double kernel gained
 * nothing). */
static inline __attribute__((always_inline)) void project_rows_span_f32(const float *f, int nr,
                                                                        int m, int j0, int j1,
                                                                        const float *const *y,
                                                                        int ny, kacc *o)
{
    int j = j0;
    while (j + 16 <= j1) {
        int end = j + 16 * KERN_F32_TERMS <= j1 ? j + 16 * KERN_F32_TERMS : j1 - (j1 - j) % 16;
#if KERN_F32_512
        __m512 s[KERN_F32_SUMS]; /* [s | t] of row h and token q at ny h + q */
        for (int q = 0; q < nr * ny; q++)
            s[q] = _mm512_setzero_ps();
        for (; j < end; j += 16) {
            __m512 F[KERN_F32_SUMS];
            for (int h = 0; h < nr; h++) /* the next rows, the same columns */
                _mm_prefetch((const char *)(f + (size_t)(h + nr) * m + j), _MM_HINT_T0);
            for (int h = 0; h < nr; h++)
                F[h] = _mm512_loadu_ps(f + (size_t)h * m + j);
            for (int q = 0; q < ny; q++) {
                __m512 Y = _mm512_loadu_ps(y[q] + j);
                IN_REGISTER(Y);
                for (int h = 0; h < nr; h++)
                    s[ny * h + q] = _mm512_fmadd_ps(F[h], Y, s[ny * h + q]);
            }
        }
        for (int q = 0; q < nr * ny; q++)
            o[q] = acc_fold16(o[q], s[q]);
#else
        __m256 s[KERN_F32_SUMS], t[KERN_F32_SUMS];
        for (int q = 0; q < nr * ny; q++)
            s[q] = t[q] = _mm256_setzero_ps();
        for (; j < end; j += 16)
            for (int half = 0; half < 2; half++) {
                int c = j + 8 * half;
                __m256 F[KERN_F32_SUMS], *acc = half ? t : s;
                for (int h = 0; h < nr; h++)
                    F[h] = _mm256_loadu_ps(f + (size_t)h * m + c);
                for (int q = 0; q < ny; q++) {
                    __m256 Y = _mm256_loadu_ps(y[q] + c);
                    for (int h = 0; h < nr; h++)
                        acc[ny * h + q] = _mm256_fmadd_ps(F[h], Y, acc[ny * h + q]);
                }
            }
        for (int q = 0; q < nr * ny; q++)
            o[q] = acc_add(acc_add(o[q], s[q]), t[q]);
#endif
    }
}

/* A teacher row is short when it is whole 16-column steps, at most 16 KERN_F32_TERMS of them
 * (one float partial sum per lane, no fold): d = 16, 32, ..., 512. Its sums do not go lane by
 * lane into a double total: each sum's 16 lanes a_l (the 8-lane kernels' s_l = a_l and
 * t_l = a_{l+8}) are added in float, p_l = a_l + a_{l+8}, r_l = p_l + p_{l+4}, then
 * (r_0 + r_2) + (r_1 + r_3) (the tree of acc_sum, in float), and that is the sum, in double.
 * The fold and the double tree were 5 and 2.5 floating-point instructions a sum beside the
 * 25 multiply-adds of a row at d = 400, and the float tree of sixteen sums at once is 2.8 a sum
 * (finish_tree2_f32): the teacher's projections at d = 400 in a standalone loop 1.15x as fast
 * (best of six: 13.5 against 15.6 us for 200 rows and eight samples). The four additions put
 * each sum's error bound at (q + 4) u sum |F Y|, q = m/16 <= KERN_F32_TERMS. */
static inline int short_row_f32(int m) { return m % 16 == 0 && m <= 16 * KERN_F32_TERMS; }

static inline double tree_f32(const float a[16])
{
    float p[8], r[4];
    for (int l = 0; l < 8; l++)
        p[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; l++)
        r[l] = p[l] + p[l + 4];
    return (double)((r[0] + r[2]) + (r[1] + r[3]));
}

/* out[q] = f . y[q] over a short row (short_row_f32), q < ny <= 4, each sum as above. */
static inline void short_rows_f32(const float *f, int m, const float *const *y, int ny, double *out)
{
    float a[16];
#if KERN_F32_512
    __m512 s[4];
    for (int q = 0; q < ny; q++)
        s[q] = _mm512_setzero_ps();
    for (int j = 0; j < m; j += 16) {
        __m512 F = _mm512_loadu_ps(f + j);
        for (int q = 0; q < ny; q++)
            s[q] = _mm512_fmadd_ps(F, _mm512_loadu_ps(y[q] + j), s[q]);
    }
    for (int q = 0; q < ny; q++) {
        _mm512_storeu_ps(a, s[q]);
        out[q] = tree_f32(a);
    }
#else
    __m256 s[4], t[4];
    for (int q = 0; q < ny; q++)
        s[q] = t[q] = _mm256_setzero_ps();
    for (int j = 0; j < m; j += 16) {
        __m256 F0 = _mm256_loadu_ps(f + j), F1 = _mm256_loadu_ps(f + j + 8);
        for (int q = 0; q < ny; q++) {
            s[q] = _mm256_fmadd_ps(F0, _mm256_loadu_ps(y[q] + j), s[q]);
            t[q] = _mm256_fmadd_ps(F1, _mm256_loadu_ps(y[q] + j + 8), t[q]);
        }
    }
    for (int q = 0; q < ny; q++) {
        _mm256_storeu_ps(a, s[q]);
        _mm256_storeu_ps(a + 8, t[q]);
        out[q] = tree_f32(a);
    }
#endif
}

static inline __attribute__((always_inline)) void
project_rows_f32(const float *f, int nr, int m, const float *const *y, int ny, double *out)
{
    if (short_row_f32(m) && ny <= 4) {
        for (int h = 0; h < nr; h++)
            short_rows_f32(f + (size_t)h * m, m, y, ny, out + ny * h);
        return;
    }
    kacc o[KERN_F32_SUMS];
    for (int q = 0; q < nr * ny; q++)
        o[q] = acc_zero();
    project_rows_span_f32(f, nr, m, 0, m, y, ny, o);
    for (int h = 0; h < nr; h++)
        row_tail_f32(f + (size_t)h * m, NULL, m, m - m % 16, 0, 0, NULL, NULL, y, ny, o + ny * h);
    for (int q = 0; q < nr * ny; q++)
        out[q] = acc_sum(o[q]);
}

/* update_project_pair_f32 together with one row f of another matrix projected on y0, y1: out =
 * r0.y0, r0.y1, r1.y0, r1.y1, f.y0, f.y1, every sum in the pass's order. f's row is read in a
 * pass of its own after the pair: with the vector kernels and T = 2 a run in single precision
 * always takes the look-ahead below, so this is the statement of the order the look-ahead keeps
 * (kern_update_project_fused_f32), not a path a run takes. */
static inline void update_project_pair_f_f32(float *r0, float *r1, const float *f, int m, float a0,
                                             float b0, float a1, float b1, const float *x0,
                                             const float *x1, const float *y0, const float *y1,
                                             double out[6])
{
    const float *y[2] = {y0, y1};
    update_project_pair_f32(r0, r1, m, a0, b0, a1, b1, x0, x1, y0, y1, out);
    project_rows_f32(f, 1, m, y, 2, out + 4);
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
 * kern_update_project_fused_f32 without its teacher rows, which kern_project_fused_order_f32
 * makes for several samples in one read of F, each sum as update_project_pair_f_f32 makes it.
 * With AVX-512 four rows at a time, so that each load of a token serves four rows. */
int kern_update_project_ahead_f32(float *M, int n, int m, int T, const double *C, const float *X,
                                  const float *Y, double *O, int nf)
{
    int pairs = n / 2, done = T != 2 ? 0 : nf < pairs ? nf : pairs;
#if KERN_F32_VECTOR
    int i = 0;
#if KERN_F32_512
    if (T == 2)
        for (; i + KERN_F32_ROWS <= n; i += KERN_F32_ROWS) {
            float a[KERN_F32_ROWS], b[KERN_F32_ROWS];
            double out[2 * KERN_F32_ROWS];
            for (int h = 0; h < KERN_F32_ROWS; h++) {
                a[h] = (float)C[i + h];
                b[h] = (float)C[n + i + h];
            }
            update_project_rows_f32(M + (size_t)i * m, KERN_F32_ROWS, m, a, b, X, X + m, Y, Y + m,
                                    out);
            for (int h = 0; h < KERN_F32_ROWS; h += 2)
                put_pair_f32(O, n, i + h, out + 2 * h);
        }
#endif
    update_project_from_f32(M, n, m, T, C, X, Y, O, i);
#else
    kern_update_project_f32_portable(M, n, m, T, C, X, Y, O);
#endif
    return done;
}

#if KERN_F32_VECTOR
/* The two tokens of each of the ns samples from s0 (sample u at Y + u ldy, its tokens m apart)
 * for kern_project_fused_order_f32, y[2 u + b], up to nsamp samples: the missing ones repeat the
 * first, and their sums are not stored. */
static inline void sample_tokens(const float *Y, size_t ldy, int m, int s0, int ns, int nsamp,
                                 const float **y)
{
    for (int u = 0; u < nsamp; u++) {
        y[2 * u] = Y + (size_t)(s0 + (u < ns ? u : 0)) * ldy;
        y[2 * u + 1] = y[2 * u] + m;
    }
}
#endif

#if KERN_F32_512
/* The sixteen sums of two short rows against eight tokens (acc[8 r + q], row r, token
 * q = 2 u + b of sample u), each as tree_f32 makes it, into z[u ldzs + b ldz + i + r] for u < ns
 * (and r < nr): the same additions, sixteen sums a register. Sum k of the tree is in lane
 * 4 (k mod 4) + k/4; the lanes are then put in the order of the stores, the two rows of each
 * token side by side. */
static inline void finish_tree2_f32(const __m512 acc[16], int ns, int nr, double *Z, size_t ldzs,
                                    int ldz, int i)
{
    __m512 a[8], b[4], c[2];
    for (int k = 0; k < 8; k++) /* p of sums 2k (lanes 0-7) and 2k + 1 (8-15) */
        a[k] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * k], acc[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(acc[2 * k], acc[2 * k + 1], 0xee));
    for (int k = 0; k < 4; k++) /* r of sums 4k .. 4k + 3, four lanes each */
        b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; k++) /* r_0 + r_2, r_1 + r_3 of sums 8k + j and 8k + 4 + j, lanes 4j.. */
        c[k] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * k], b[2 * k + 1], 0x44),
                             _mm512_shuffle_ps(b[2 * k], b[2 * k + 1], 0xee));
    __m512 e =
        _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xdd));
    /* lane 2q + r: sum 8 r + q, at 4 (q mod 4) + 2 r + q/4 */
    e = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15), e);
    double t[16];
    _mm512_storeu_pd(t, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    _mm512_storeu_pd(t + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    for (int q = 0; q < 2 * ns; q++) {
        double *z = Z + (size_t)(q / 2) * ldzs + (size_t)(q % 2) * ldz + i;
        if (nr == 2)
            _mm_storeu_pd(z, _mm_loadu_pd(t + 2 * q));
        else
            *z = t[2 * q];
    }
}

/* kern_project_fused_order_f32 where a row has at most 16 KERN_F32_TERMS columns, so that each
 * sum is one float partial sum of 16 lanes: the sixteen partial sums of two rows against the
 * tokens of four samples finished (short rows: the float tree, finish_tree2_f32; others: folded
 * once, the last m % 16 columns, the double tree) and stored as soon as their rows are done,
 * instead of kept in an array of totals through the spans of longer rows (zeroed, then loaded
 * and stored once a span) and finished one at a time; the rows eight at a time, without asking
 * for the next ones ahead. With the fold and the double tree this was at d = 400 (200 rows,
 * eight samples) 1.11x as fast as the spans' way (best of twelve runs: 77 against 70 G
 * multiply-adds a second). */
static void project_short_f32(const float *F, int nf, int m, int K, const float *Y, size_t ldy,
                              double *Z, size_t ldzs, int ldz)
{
    enum { SSTEP = 4, RBLOCK = 8 }; /* eight rows and four samples' tokens: 26 KB at m = 400 */
    for (int p0 = 0; p0 < nf; p0 += RBLOCK)
        for (int s0 = 0; s0 < K; s0 += SSTEP) {
            int ns = K - s0 < SSTEP ? K - s0 : SSTEP, nb = nf - p0 < RBLOCK ? nf - p0 : RBLOCK;
            const float *y[2 * SSTEP];
            sample_tokens(Y, ldy, m, s0, ns, SSTEP, y);
            for (int h = 0; h < nb; h += 2) {
                int nr = nb - h >= 2 ? 2 : 1, j = 0, end = m - m % 16;
                const float *f = F + (size_t)(p0 + h) * m;
                __m512 acc[2 * 2 * SSTEP]; /* row r, token q at 2 SSTEP r + q */
                for (int q = 0; q < 2 * 2 * SSTEP; q++)
                    acc[q] = _mm512_setzero_ps();
                if (nr == 2)
                    for (; j < end; j += 16) {
                        __m512 F0 = _mm512_loadu_ps(f + j), F1 = _mm512_loadu_ps(f + m + j);
                        for (int q = 0; q < 2 * SSTEP; q++) {
                            __m512 Yq = _mm512_loadu_ps(y[q] + j);
                            IN_REGISTER(Yq);
                            acc[q] = _mm512_fmadd_ps(F0, Yq, acc[q]);
                            acc[2 * SSTEP + q] = _mm512_fmadd_ps(F1, Yq, acc[2 * SSTEP + q]);
                        }
                    }
                else
                    for (; j < end; j += 16) {
                        __m512 F0 = _mm512_loadu_ps(f + j);
                        for (int q = 0; q < 2 * SSTEP; q++)
                            acc[q] = _mm512_fmadd_ps(F0, _mm512_loadu_ps(y[q] + j), acc[q]);
                    }
                if (end == m) { /* a short row (short_row_f32); a lone row's partner is zero */
                    finish_tree2_f32(acc, ns, nr, Z + (size_t)s0 * ldzs, ldzs, ldz, p0 + h);
                    continue;
                }
                for (int r = 0; r < nr; r++) {
                    kacc o[2 * SSTEP];
                    for (int q = 0; q < 2 * SSTEP; q++)
                        o[q] = acc_fold16(acc_zero(), acc[2 * SSTEP * r + q]);
                    row_tail_f32(f + (size_t)r * m, NULL, m, end, 0, 0, NULL, NULL, y, 2 * SSTEP,
                                 o);
                    for (int u = 0; u < ns; u++) {
                        double *z = Z + (size_t)(s0 + u) * ldzs;
                        z[p0 + h + r] = acc_sum(o[2 * u]);
                        z[ldz + p0 + h + r] = acc_sum(o[2 * u + 1]);
                    }
                }
            }
        }
}
#endif

int kern_project_fused_order_f32(const float *F, int nf, int m, int K, const float *Y, size_t ldy,
                                 double *Z, size_t ldzs, int ldz)
{
#if KERN_F32_VECTOR
    /* rows of F against the tokens of several samples per read: two rows and four samples with
     * AVX-512, one row and two samples with AVX2 (the registers each has); the tokens of missing
     * samples repeat the first one's, and their sums are not stored. The rows go RBLOCK at a
     * time in spans of KERN_F32_SPAN columns: eight tokens of 1600 floats do not fit in the
     * first-level cache, and every load of a token came from the second level (tied at d = 1600
     * took 1.2 times as long a step). */
    enum {
        RSTEP = KERN_F32_512 ? 2 : 1,
        SSTEP = KERN_F32_512 ? 4 : 2,
        RBLOCK = 32,
        SPAN = KERN_F32_SPAN
    };
#if KERN_F32_512
    if (m <= 16 * KERN_F32_TERMS) { /* short rows: one fold, the totals in registers */
        project_short_f32(F, nf, m, K, Y, ldy, Z, ldzs, ldz);
        return 0;
    }
#else
    if (short_row_f32(m)) { /* a row against the tokens of two samples, each sum's float tree */
        for (int p = 0; p < nf; p++)
            for (int s0 = 0; s0 < K; s0 += SSTEP) {
                int ns = K - s0 < SSTEP ? K - s0 : SSTEP;
                const float *y[2 * SSTEP];
                double z[2 * SSTEP];
                sample_tokens(Y, ldy, m, s0, ns, SSTEP, y);
                short_rows_f32(F + (size_t)p * m, m, y, 2 * SSTEP, z);
                for (int u = 0; u < ns; u++) {
                    Z[(size_t)(s0 + u) * ldzs + p] = z[2 * u];
                    Z[(size_t)(s0 + u) * ldzs + ldz + p] = z[2 * u + 1];
                }
            }
        return 0;
    }
#endif
    for (int p0 = 0; p0 < nf; p0 += RBLOCK)
        for (int s0 = 0; s0 < K; s0 += SSTEP) {
            int ns = K - s0 < SSTEP ? K - s0 : SSTEP, nb = nf - p0 < RBLOCK ? nf - p0 : RBLOCK;
            const float *y[2 * SSTEP];
            kacc o[RBLOCK * 2 * SSTEP];
            sample_tokens(Y, ldy, m, s0, ns, SSTEP, y);
            for (int q = 0; q < nb * 2 * SSTEP; q++)
                o[q] = acc_zero();
            for (int j0 = 0; j0 < m; j0 += SPAN) {
                int j1 = m - j0 > SPAN ? j0 + SPAN : m;
                for (int h = 0; h < nb; h += RSTEP) {
                    const float *f = F + (size_t)(p0 + h) * m;
                    if (nb - h >= RSTEP)
                        project_rows_span_f32(f, RSTEP, m, j0, j1, y, 2 * SSTEP, o + 2 * SSTEP * h);
                    else
                        project_rows_span_f32(f, 1, m, j0, j1, y, 2 * SSTEP, o + 2 * SSTEP * h);
                }
            }
            for (int h = 0; h < nb; h++) {
                kacc *oh = o + 2 * SSTEP * h;
                row_tail_f32(F + (size_t)(p0 + h) * m, NULL, m, m - m % 16, 0, 0, NULL, NULL, y,
                             2 * SSTEP, oh);
                for (int u = 0; u < ns; u++) {
                    double *z = Z + (size_t)(s0 + u) * ldzs;
                    z[p0 + h] = acc_sum(oh[2 * u]);
                    z[ldz + p0 + h] = acc_sum(oh[2 * u + 1]);
                }
            }
        }
    return 0;
#else
    (void)F, (void)nf, (void)m, (void)K, (void)Y, (void)ldy, (void)Z, (void)ldzs, (void)ldz;
    return -1;
#endif
}

#if KERN_F32_VECTOR
/* A float entry plus direct's diagonal term dg as the one-step path adds it: in double, then
 * rounded (sgd_scale_and_diag). */
static inline void plus_diag_f32(float *e, double dg) { *e = (float)(*e + dg); }

/* Entry k of the block v plus dg, as plus_diag_f32 adds it, in the registers: the half of v
 * that holds entry k widened to double (exactly), dg added to lane k, and the half rounded back,
 * so that the other entries come back as they were. A store of v, the scalar addition and a
 * load of v again stalled the store-to-load forwarding at every diagonal entry: direct's
 * two-step pass in single took 1.04 times as long at d = 400. */
#if KERN_F32_512
static inline __m512 diag_f32(__m512 v, int k, double dg)
{
    const int hi = k >= 8;
    __m512d w = _mm512_cvtps_pd(hi ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v));
    w = _mm512_mask_add_pd(w, (__mmask8)(1u << (k & 7)), w, _mm512_set1_pd(dg));
    const __m256 h = _mm512_cvtpd_ps(w);
    return hi ? _mm512_insertf32x8(v, h, 1) : _mm512_insertf32x8(v, h, 0);
}
#else
static inline __m256 diag8_f32(__m256 v, int k, double dg)
{
    const __m256d lane = _mm256_castsi256_pd(
        _mm256_cmpeq_epi64(_mm256_set_epi64x(3, 2, 1, 0), _mm256_set1_epi64x(k & 3)));
    const int hi = k >= 4;
    const __m256d w = _mm256_cvtps_pd(hi ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
    const __m128 h =
        _mm256_cvtpd_ps(_mm256_blendv_pd(w, _mm256_add_pd(w, _mm256_set1_pd(dg)), lane));
    return hi ? _mm256_insertf128_ps(v, h, 1) : _mm256_insertf128_ps(v, h, 0);
}
#endif

/* Rows longer than KERN_F32_LONG columns go through the two-step pass KERN_F32_BLOCK pairs at a
 * time in spans of KERN_F32_SPAN columns, each pair's totals kept between spans: its eight tokens
 * (two corrections' and the projections' of two samples) are 8 d floats, 51 KB at d = 1600, more
 * than the first-level cache, and each of the eight loads of the inner loop then came from the
 * second level (400 rows of 1600 took 1.34 times as long an entry as rows of 800 with the rows
 * themselves in the first level). Against the pass without spans (bench/compare.sh, three rounds):
 * tied and untied in single 1.20-1.26x at d = 1600 and 1.11-1.16x at 3200 (when they took this
 * pass; they now keep their rows in bands column by column, sgd_two.c, and direct's whole S takes
 * it); spans of 256 or 1024 columns gained less, blocks of 8 or 32 pairs the same, and spans at
 * d = 800 (tokens of 25 KB) lost 8-13%. */
#define KERN_F32_LONG 1024
#define KERN_F32_BLOCK 16

/* The two-step pass (kern_update2_project2_f32) on nr <= 2 rows r, r + m, over columns j0 to j1
 * (j0 a multiple of 16 KERN_F32_TERMS, and so is j1 unless it is m; the last m % 16 columns are
 * update2_finish_f32's): each entry takes the first correction (a1, b1 along x10, x11; when c1),
 * then the second (a2, b2 along x20, x21; when c2), each as update_project_rows_f32 makes it,
 * and is stored; its products with the ny tokens y[q] go into the totals o[ny h + q], each sum
 * made as update_project_rows_f32 makes its sums, so that spans one after the other make the
 * sums of one span over the row.
 * With AVX-512 the loop asks for the next pair's rows, at the same columns, into the
 * first-level cache (a pair's pass ahead). Against the loop without it (bench/compare.sh,
 * three and four rounds): tied and untied in single 1.09-1.18x at d = 800, 1.22-1.40x at 3200,
 * 1.01-1.04x at 400, but 0.92-0.97x at 1600; one or four pairs ahead did no better at 1600
 * and less elsewhere, and the next pair's first row alone gained half as much. Where it reads
 * past the last row it asks for what it does not use: a prefetch does not fault. */
static inline __attribute__((always_inline)) void
update2_span_f32(const int c1, const int c2, const int ny, const int hasdg, float *r, int nr,
                 size_t ld, int j0, int j1, const float *a1, const float *b1, const float *a2,
                 const float *b2, const float *x10, const float *x11, const float *x20,
                 const float *x21, const float *const *y, double dg, int dcol, kacc *o)
{
    int j = j0;
    while (j + 16 <= j1) {
        int end = j + 16 * KERN_F32_TERMS <= j1 ? j + 16 * KERN_F32_TERMS : j1 - (j1 - j) % 16;
#if KERN_F32_512
        __m512 A1[2], B1[2], A2[2], B2[2], s[8]; /* [s | t] of row h and token q at ny h + q */
        for (int h = 0; h < nr; h++) {
            A1[h] = _mm512_set1_ps(c1 ? a1[h] : 0);
            B1[h] = _mm512_set1_ps(c1 ? b1[h] : 0);
            A2[h] = _mm512_set1_ps(c2 ? a2[h] : 0);
            B2[h] = _mm512_set1_ps(c2 ? b2[h] : 0);
        }
        for (int q = 0; q < ny * nr; q++)
            s[q] = _mm512_setzero_ps();
        for (; j < end; j += 16) {
            __m512 v[2];
            for (int h = 0; h < nr; h++) /* the next pair's rows, the same columns */
                _mm_prefetch((const char *)(r + (size_t)(h + 2) * ld + j), _MM_HINT_T0);
            for (int h = 0; h < nr; h++)
                v[h] = _mm512_loadu_ps(r + (size_t)h * ld + j);
            if (c1) {
                __m512 X0 = _mm512_loadu_ps(x10 + j), X1 = _mm512_loadu_ps(x11 + j);
                IN_REGISTER(X0);
                IN_REGISTER(X1);
                for (int h = 0; h < nr; h++)
                    v[h] = _mm512_fnmadd_ps(B1[h], X1, _mm512_fnmadd_ps(A1[h], X0, v[h]));
            }
            if (hasdg && j == (dcol & ~15))
                for (int h = 0; h < nr; h++)
                    v[h] = diag_f32(v[h], dcol + h - j, dg);
            if (c2) {
                __m512 X0 = _mm512_loadu_ps(x20 + j), X1 = _mm512_loadu_ps(x21 + j);
                IN_REGISTER(X0);
                IN_REGISTER(X1);
                for (int h = 0; h < nr; h++)
                    v[h] = _mm512_fnmadd_ps(B2[h], X1, _mm512_fnmadd_ps(A2[h], X0, v[h]));
            }
            if (c1 || c2)
                for (int h = 0; h < nr; h++)
                    _mm512_storeu_ps(r + (size_t)h * ld + j, v[h]);
            for (int q = 0; q < ny; q++) {
                __m512 Y = _mm512_loadu_ps(y[q] + j);
                IN_REGISTER(Y);
                for (int h = 0; h < nr; h++)
                    s[ny * h + q] = _mm512_fmadd_ps(v[h], Y, s[ny * h + q]);
            }
        }
        for (int q = 0; q < ny * nr; q++)
            o[q] = acc_fold16(o[q], s[q]);
#else
        __m256 A1[2], B1[2], A2[2], B2[2], s[8], t[8];
        for (int h = 0; h < nr; h++) {
            A1[h] = _mm256_set1_ps(c1 ? a1[h] : 0);
            B1[h] = _mm256_set1_ps(c1 ? b1[h] : 0);
            A2[h] = _mm256_set1_ps(c2 ? a2[h] : 0);
            B2[h] = _mm256_set1_ps(c2 ? b2[h] : 0);
        }
        for (int q = 0; q < ny * nr; q++)
            s[q] = t[q] = _mm256_setzero_ps();
        for (; j < end; j += 16)
            for (int half = 0; half < 2; half++) {
                int c = j + 8 * half;
                __m256 v[2], *acc = half ? t : s;
                for (int h = 0; h < nr; h++)
                    v[h] = _mm256_loadu_ps(r + (size_t)h * ld + c);
                if (c1) {
                    const __m256 X0 = _mm256_loadu_ps(x10 + c), X1 = _mm256_loadu_ps(x11 + c);
                    for (int h = 0; h < nr; h++)
                        v[h] = _mm256_fnmadd_ps(B1[h], X1, _mm256_fnmadd_ps(A1[h], X0, v[h]));
                }
                if (hasdg && c == (dcol & ~7))
                    for (int h = 0; h < nr; h++)
                        v[h] = diag8_f32(v[h], dcol + h - c, dg);
                if (c2) {
                    const __m256 X0 = _mm256_loadu_ps(x20 + c), X1 = _mm256_loadu_ps(x21 + c);
                    for (int h = 0; h < nr; h++)
                        v[h] = _mm256_fnmadd_ps(B2[h], X1, _mm256_fnmadd_ps(A2[h], X0, v[h]));
                }
                if (c1 || c2)
                    for (int h = 0; h < nr; h++)
                        _mm256_storeu_ps(r + (size_t)h * ld + c, v[h]);
                for (int q = 0; q < ny; q++) {
                    const __m256 Y = _mm256_loadu_ps(y[q] + c);
                    for (int h = 0; h < nr; h++)
                        acc[ny * h + q] = _mm256_fmadd_ps(v[h], Y, acc[ny * h + q]);
                }
            }
        for (int q = 0; q < ny * nr; q++)
            o[q] = acc_add(acc_add(o[q], s[q]), t[q]);
#endif
    }
}

/* The last m % 16 columns of the rows (as the one-step pass takes them) and the sums out of
 * their totals o. */
static inline __attribute__((always_inline)) void
update2_finish_f32(const int c1, const int c2, const int ny, const int hasdg, float *r, int nr,
                   int m, size_t ld, const float *a1, const float *b1, const float *a2,
                   const float *b2, const float *x10, const float *x11, const float *x20,
                   const float *x21, const float *const *y, double dg, int dcol, kacc *o,
                   double *out)
{
    int j = m - m % 16;
    for (int h = 0; h < nr; h++) {
        float *row = r + (size_t)h * ld;
        if (c1)
            row_tail_f32(row, row, m, j, a1[h], b1[h], x10, x11, y, 0, o);
        if (hasdg && dcol + h >= j)
            plus_diag_f32(row + dcol + h, dg);
        row_tail_f32(row, c2 ? row : NULL, m, j, c2 ? a2[h] : 0, c2 ? b2[h] : 0, x20, x21, y, ny,
                     o + ny * h);
    }
    for (int q = 0; q < ny * nr; q++)
        out[q] = acc_sum(o[q]);
}

/* The whole pass for the flags: rows two at a time, an odd last row as the portable loop of the
 * one-step pass takes it (update_project_portable_ld_f32). */
static inline __attribute__((always_inline)) void
update2_pass_f32(const int c1, const int c2, const int ny, const int hasdg, float *M, int rows,
                 int m, size_t ld, int ldx, int n, const double *C1, const float *X1, double dg,
                 const double *C2, const float *X2, const float *Y, const float *Y2, double *O,
                 double *O2)
{
    const float *y[4] = {Y, Y ? Y + ldx : NULL, Y2, Y2 ? Y2 + ldx : NULL};
    /* KERN_F32_BLOCK pairs at a time, over spans of KERN_F32_SPAN columns when the rows are long */
    const int span = m > KERN_F32_LONG ? KERN_F32_SPAN : m;
    int i = 0;
    for (; i + 2 <= rows; i += 2 * KERN_F32_BLOCK) {
        int np = (rows - i) / 2 < KERN_F32_BLOCK ? (rows - i) / 2 : KERN_F32_BLOCK;
        float a1[KERN_F32_BLOCK][2] = {{0}}, b1[KERN_F32_BLOCK][2] = {{0}},
              a2[KERN_F32_BLOCK][2] = {{0}}, b2[KERN_F32_BLOCK][2] = {{0}};
        kacc o[KERN_F32_BLOCK][8];
        for (int p = 0; p < np; p++) {
            for (int h = 0; h < 2; h++) {
                int r = i + 2 * p + h;
                if (c1) {
                    a1[p][h] = (float)C1[r];
                    b1[p][h] = (float)C1[n + r];
                }
                if (c2) {
                    a2[p][h] = (float)C2[r];
                    b2[p][h] = (float)C2[n + r];
                }
            }
            for (int q = 0; q < 2 * ny; q++)
                o[p][q] = acc_zero();
        }
        for (int j0 = 0; j0 < m; j0 += span) {
            int j1 = m - j0 > span ? j0 + span : m;
            for (int p = 0; p < np; p++)
                update2_span_f32(c1, c2, ny, hasdg, M + (size_t)(i + 2 * p) * ld, 2, ld, j0, j1,
                                 a1[p], b1[p], a2[p], b2[p], X1, X1 + ldx, X2, X2 + ldx, y, dg,
                                 i + 2 * p, o[p]);
        }
        for (int p = 0; p < np; p++) {
            int r = i + 2 * p;
            double out[8];
            update2_finish_f32(c1, c2, ny, hasdg, M + (size_t)r * ld, 2, m, ld, a1[p], b1[p], a2[p],
                               b2[p], X1, X1 + ldx, X2, X2 + ldx, y, dg, r, o[p], out);
            for (int h = 0; h < 2 && ny; h++) {
                O[r + h] = out[ny * h];
                O[n + r + h] = out[ny * h + 1];
                if (ny == 4) {
                    O2[r + h] = out[ny * h + 2];
                    O2[n + r + h] = out[ny * h + 3];
                }
            }
        }
    }
    i = rows - rows % 2;
    if (i < rows) {
        float *row = M + (size_t)i * ld;
        for (int a = 0; c1 && a < 2; a++) {
            float c = (float)C1[(size_t)a * n + i];
            const float *xa = X1 + (size_t)a * ldx;
            for (int j = 0; j < m; j++)
                row[j] -= c * xa[j];
        }
        if (hasdg)
            plus_diag_f32(row + i, dg);
        for (int a = 0; c2 && a < 2; a++) {
            float c = (float)C2[(size_t)a * n + i];
            const float *xa = X2 + (size_t)a * ldx;
            for (int j = 0; j < m; j++)
                row[j] -= c * xa[j];
        }
        for (int q = 0; q < ny; q++)
            (q < 2 ? O : O2)[(size_t)(q & 1) * n + i] = kern_dot_f32(row, y[q], (size_t)m);
    }
}
#endif

#if KERN_F32_VECTOR
/* The two-step passes' cases (C1, C2, ny, dg in scope), each with its flags constant so that it
 * compiles to its own loop: pass(c1, c2, ny, hasdg, ...), rc 0, or -1 for another case. */
#define KERN_F32_TWO_STEP_CASES(rc, pass, ...)                                                     \
    do {                                                                                           \
        (rc) = 0;                                                                                  \
        if (C1 && C2 && ny == 4 && dg != 0)                                                        \
            pass(1, 1, 4, 1, __VA_ARGS__);                                                         \
        else if (!C1 && C2 && ny == 4 && dg != 0)                                                  \
            pass(0, 1, 4, 1, __VA_ARGS__);                                                         \
        else if (C1 && C2 && ny == 4)                                                              \
            pass(1, 1, 4, 0, __VA_ARGS__);                                                         \
        else if (!C1 && C2 && ny == 4)                                                             \
            pass(0, 1, 4, 0, __VA_ARGS__);                                                         \
        else if (C1 && !C2 && ny == 0)                                                             \
            pass(1, 0, 0, 0, __VA_ARGS__);                                                         \
        else if (!C1 && !C2 && ny == 2)                                                            \
            pass(0, 0, 2, 0, __VA_ARGS__);                                                         \
        else                                                                                       \
            (rc) = -1;                                                                             \
    } while (0)
#endif

int kern_update2_project2_f32_ld(float *M, int rows, int m, size_t ld, int ldx, int ldc,
                                 const double *C1, const float *X1, double dg, const double *C2,
                                 const float *X2, const float *Y, const float *Y2, double *O,
                                 double *O2)
{
#if KERN_F32_VECTOR
    int ny = Y ? (Y2 ? 4 : 2) : 0;
    if (dg != 0 && (rows > m || !C2 || ny != 4))
        return -1;
    int rc;
    KERN_F32_TWO_STEP_CASES(rc, update2_pass_f32, M, rows, m, ld, ldx, ldc, C1, X1, dg, C2, X2, Y,
                            Y2, O, O2);
    return rc;
#else
    (void)M, (void)rows, (void)m, (void)ld, (void)ldx, (void)ldc, (void)C1, (void)X1, (void)dg,
        (void)C2, (void)X2, (void)Y, (void)Y2, (void)O, (void)O2;
    return -1;
#endif
}

int kern_update2_project2_f32(float *M, int n, int m, const double *C1, const float *X1, double dg,
                              const double *C2, const float *X2, const float *Y, const float *Y2,
                              double *O, double *O2)
{
    if (dg != 0 && n != m)
        return -1;
    return kern_update2_project2_f32_ld(M, n, m, (size_t)m, m, n, C1, X1, dg, C2, X2, Y, Y2, O, O2);
}

/* The two-step pass on a block of `rows` <= 32 rows kept column by column (sgd_sym.c's bands of
 * direct's K in precision single, and sgd_two.c's of tied's and untied's float matrices): entry
 * (r, j) at B[j rows + r]. A vector holds one column of
 * KERN_F32_BAND_LANES rows, so each lane is one row and its projections need no sums across
 * lanes: the rows of the row-major pass are half as long as d on average in direct's bands, and
 * there each pair of rows cost about 17 ns besides its loop over the columns (the folds, the
 * sums across lanes, the start of its chain of multiply-adds), a third of the pass at d = 400.
 * Each entry takes what it takes in kern_update2_project2_f32_ld (the corrections' multiply-adds
 * in the same order, dg in double and rounded), so the block's entries are that kernel's bit for
 * bit; each projection is one float partial sum per KERN_F32_BAND_TERMS = q_b columns, in the
 * order of the columns, added into its double total (error q_b u sum |M Y| as above). The sums
 * are made lane by lane, so the 16-lane and the 8-lane kernels make them alike.
 *
 * A row of the row-major kernels folds once per 16 KERN_F32_TERMS = 512 columns (each of its
 * 16 lanes takes 32 of them); a row here, one lane, folded once per 32 columns, 16 times as
 * often: a conversion and an addition for each half of each of the eight partial sums per 32
 * columns, 9% of the samples of the pass at d = 400. With q_b = 128 the folds are a quarter of
 * that, and a standalone loop of direct's 13 bands at d = 400 took 0.96 of the time (best of five
 * runs: 7.20 against 7.49 us), for a bound four times the row-major kernels'. */
#define KERN_F32_BAND_TERMS 128
#if KERN_F32_VECTOR
#if KERN_F32_512
#define KERN_F32_BAND_LANES 16
#define KERN_F32_BAND_VECS 2 /* 32 rows a loop: eight chains of multiply-adds per token pair */
#else
#define KERN_F32_BAND_LANES 8
#define KERN_F32_BAND_VECS 1 /* sixteen registers */
#endif

/* Rows r0 to r0 + nv lanes (those past `rows` masked off when `part`) over every column. */
static inline __attribute__((always_inline)) void
band_group_f32(const int c1, const int c2, const int ny, const int hasdg, const int nv,
               const int part, float *B, int rows, int m, int r0, const float *cf, const float *x10,
               const float *x11, const float *x20, const float *x21, const float *const *y,
               double dg, double *tot)
{
    enum { L = KERN_F32_BAND_LANES };
    const int live = rows - r0 < nv * L ? rows - r0 : nv * L;
#if KERN_F32_512
    typedef __m512 vec;
    __mmask16 mk[2];
    for (int v = 0; v < nv; v++) {
        int n = live - v * L < 0 ? 0 : live - v * L > L ? L : live - v * L;
        mk[v] = (__mmask16)((1u << n) - 1);
    }
#define BV_LOAD(p, v) (part ? _mm512_maskz_loadu_ps(mk[v], p) : _mm512_loadu_ps(p))
#define BV_STORE(p, v, x) (part ? _mm512_mask_storeu_ps(p, mk[v], x) : _mm512_storeu_ps(p, x))
#define BV_SET1(a) _mm512_set1_ps(a)
#define BV_FNMADD(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define BV_FMADD(a, b, c) _mm512_fmadd_ps(a, b, c)
#define BV_ZERO() _mm512_setzero_ps()
#define BV_COEF(p) _mm512_loadu_ps(p)
#define BV_DIAG(x, k) diag_f32(x, k, dg)
#else
    typedef __m256 vec;
    __m256i mk[1];
    mk[0] = lanes_ps(live);
#define BV_LOAD(p, v) (part ? _mm256_maskload_ps(p, mk[v]) : _mm256_loadu_ps(p))
#define BV_STORE(p, v, x)                                                                          \
    do {                                                                                           \
        if (part)                                                                                  \
            _mm256_maskstore_ps(p, mk[v], x);                                                      \
        else                                                                                       \
            _mm256_storeu_ps(p, x);                                                                \
    } while (0)
#define BV_SET1(a) _mm256_set1_ps(a)
#define BV_FNMADD(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define BV_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define BV_ZERO() _mm256_setzero_ps()
#define BV_COEF(p) _mm256_loadu_ps(p)
#define BV_DIAG(x, k) diag8_f32(x, k, dg)
#endif
    vec A1[KERN_F32_BAND_VECS], B1[KERN_F32_BAND_VECS], A2[KERN_F32_BAND_VECS],
        B2[KERN_F32_BAND_VECS];
    for (int v = 0; v < nv; v++) { /* cf: a1, b1, a2, b2 of the block's rows, 48 apart */
        A1[v] = BV_COEF(cf + r0 + v * L);
        B1[v] = BV_COEF(cf + 48 + r0 + v * L);
        A2[v] = BV_COEF(cf + 96 + r0 + v * L);
        B2[v] = BV_COEF(cf + 144 + r0 + v * L);
    }
    for (int j0 = 0; j0 < m; j0 += KERN_F32_BAND_TERMS) {
        int j1 = m - j0 < KERN_F32_BAND_TERMS ? m : j0 + KERN_F32_BAND_TERMS;
        vec s[4 * KERN_F32_BAND_VECS];
        for (int q = 0; q < ny * nv; q++)
            s[q] = BV_ZERO();
        for (int j = j0; j < j1; j++) {
            float *c = B + (size_t)j * rows + r0;
            for (int v = 0; v < nv; v++) /* eight columns ahead */
                _mm_prefetch((const char *)(c + 8 * (size_t)rows + v * L), _MM_HINT_T0);
            vec u[KERN_F32_BAND_VECS];
            for (int v = 0; v < nv; v++)
                u[v] = BV_LOAD(c + v * L, v);
            if (c1) {
                const vec X0 = BV_SET1(x10[j]), X1 = BV_SET1(x11[j]);
                for (int v = 0; v < nv; v++)
                    u[v] = BV_FNMADD(B1[v], X1, BV_FNMADD(A1[v], X0, u[v]));
            }
            if (hasdg)
                for (int v = 0; v < nv; v++)
                    if (j >= r0 + v * L && j < r0 + (v + 1) * L)
                        u[v] = BV_DIAG(u[v], j - r0 - v * L);
            if (c2) {
                const vec X0 = BV_SET1(x20[j]), X1 = BV_SET1(x21[j]);
                for (int v = 0; v < nv; v++)
                    u[v] = BV_FNMADD(B2[v], X1, BV_FNMADD(A2[v], X0, u[v]));
            }
            if (c1 || c2)
                for (int v = 0; v < nv; v++)
                    BV_STORE(c + v * L, v, u[v]);
            for (int q = 0; q < ny; q++) {
                const vec Y = BV_SET1(y[q][j]);
                for (int v = 0; v < nv; v++)
                    s[q * nv + v] = BV_FMADD(u[v], Y, s[q * nv + v]);
            }
        }
        for (int q = 0; q < ny; q++) /* each lane's partial sum into its row's total */
            for (int v = 0; v < nv; v++) {
                double *t = tot + q * 48 + r0 + v * L;
#if KERN_F32_512
                const __m512 x = s[q * nv + v];
                _mm512_storeu_pd(t, _mm512_add_pd(_mm512_loadu_pd(t),
                                                  _mm512_cvtps_pd(_mm512_castps512_ps256(x))));
                _mm512_storeu_pd(t + 8,
                                 _mm512_add_pd(_mm512_loadu_pd(t + 8),
                                               _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1))));
#else
                const __m256 x = s[q * nv + v];
                _mm256_storeu_pd(t, _mm256_add_pd(_mm256_loadu_pd(t),
                                                  _mm256_cvtps_pd(_mm256_castps256_ps128(x))));
                _mm256_storeu_pd(t + 4,
                                 _mm256_add_pd(_mm256_loadu_pd(t + 4),
                                               _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))));
#endif
            }
    }
#undef BV_LOAD
#undef BV_STORE
#undef BV_SET1
#undef BV_FNMADD
#undef BV_FMADD
#undef BV_ZERO
#undef BV_COEF
#undef BV_DIAG
}

static inline __attribute__((always_inline)) void
band_pass_f32(const int c1, const int c2, const int ny, const int hasdg, float *B, int rows, int m,
              int ldx, int ldc, const double *C1, const float *X1, double dg, const double *C2,
              const float *X2, const float *Y, const float *Y2, double *O, double *O2)
{
    enum { L = KERN_F32_BAND_LANES, G = KERN_F32_BAND_LANES * KERN_F32_BAND_VECS };
    /* the coefficients in float (rounded once per row, as the row-major pass does), zero past
     * the rows; the totals of the projections, 48 apart */
    float cf[4 * 48] = {0};
    double tot[4 * 48] = {0};
    for (int r = 0; r < rows; r++) {
        if (c1) {
            cf[r] = (float)C1[r];
            cf[48 + r] = (float)C1[ldc + r];
        }
        if (c2) {
            cf[96 + r] = (float)C2[r];
            cf[144 + r] = (float)C2[ldc + r];
        }
    }
    const float *y[4] = {Y, Y ? Y + ldx : NULL, Y2, Y2 ? Y2 + ldx : NULL};
    const float *x10 = X1, *x11 = X1 ? X1 + ldx : NULL, *x20 = X2, *x21 = X2 ? X2 + ldx : NULL;
#define BAND_ARGS B, rows, m, r0, cf, x10, x11, x20, x21, y, dg, tot
    int r0 = 0;
    for (; r0 + G <= rows; r0 += G)
        band_group_f32(c1, c2, ny, hasdg, KERN_F32_BAND_VECS, 0, BAND_ARGS);
    for (; r0 + L <= rows; r0 += L)
        band_group_f32(c1, c2, ny, hasdg, 1, 0, BAND_ARGS);
    if (r0 < rows)
        band_group_f32(c1, c2, ny, hasdg, 1, 1, BAND_ARGS);
#undef BAND_ARGS
    for (int r = 0; r < rows && ny; r++) {
        O[r] = tot[r];
        O[ldc + r] = tot[48 + r];
        if (ny == 4) {
            O2[r] = tot[96 + r];
            O2[ldc + r] = tot[144 + r];
        }
    }
}
#endif

int kern_band2_project2_f32(float *B, int rows, int m, int ldx, int ldc, const double *C1,
                            const float *X1, double dg, const double *C2, const float *X2,
                            const float *Y, const float *Y2, double *O, double *O2)
{
#if KERN_F32_VECTOR
    int ny = Y ? (Y2 ? 4 : 2) : 0;
    if (rows < 0 || rows > 32 || (dg != 0 && (rows > m || !C2 || ny != 4)))
        return -1;
    int rc;
    KERN_F32_TWO_STEP_CASES(rc, band_pass_f32, B, rows, m, ldx, ldc, C1, X1, dg, C2, X2, Y, Y2, O,
                            O2);
    return rc;
#else
    (void)B, (void)rows, (void)m, (void)ldx, (void)ldc, (void)C1, (void)X1, (void)dg, (void)C2,
        (void)X2, (void)Y, (void)Y2, (void)O, (void)O2;
    return -1;
#endif
}
