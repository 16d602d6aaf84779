/*
 * kern_f64_body.h: the inner loops of the SGD step in double precision (kern.h), compiled once per
 * path of the run-time dispatch by kern_portable.c, kern_avx2.c and kern_avx512.c (kern_isa.h):
 * each build takes the code its flags allow (#if __AVX2__, __AVX512F__ below). Not a header.
 *
 * Why the vector kernel is written by hand: the update-and-project loop does four multiply-adds
 * per element, and compiled from plain C it is bound by loads and by the latency of its
 * one-vector accumulators (measured at about half the machine's multiply-add rate on Zen 3).
 * The kernel below takes two rows at a time, so that each load of x0, x1 serves both rows and
 * each row is touched once, and keeps two partial sums per dot product (eight accumulators),
 * so that consecutive multiply-adds into one sum never wait for each other. That is sixteen
 * vector registers, all AVX2 has; y0 and y1 are read as memory operands.
 *
 * With AVX-512 (the path kern_avx512.c builds) the SGD step runs an 8-lane kernel on the
 * paired layout of kern.h instead, with results bit for bit the AVX2 kernel's. The fused pass
 * at T = 2 (two rows and a row of the teacher's factor) keeps one accumulator per sum, so each
 * of its sums is a chain of one multiply-add per four columns: with two 512-bit (or three
 * 256-bit) multiply-add units that chain's latency, not the arithmetic, bounds the AVX2 kernel.
 * A register holding four columns of row 2p and the same four of row 2p + 1 gives each lane
 * the same products in the same order as the four-lane kernel (lane q of row 2p's sum adds
 * columns 4c + q in the order of c, lane 4 + q row 2p + 1's), so the sums are that kernel's
 * to the bit, with half the instructions and no shuffles of the rows; two blocks per loop
 * make the chains of one hide the latency of the other's. The rows are stored that way
 * (kern_paired_index), so that the vectors load without shuffles. Measured at d = 400 (where
 * the 3.2 MB of a step stream from the second-level cache): the pass takes about 0.85 of the
 * AVX2 kernel's time; the two chains of update_project_pair map to the two halves of one
 * register the same way (paired_pair).
 *
 * The portable loops and the dispatch to the kernels are kern_generic.h, which kern_f32_body.h
 * includes for float: this file holds what is particular to double, the row dot product and the
 * vector kernels. The float kernels (kern_f32_body.h) look like these but are other algorithms (their
 * partial sums are folded into double every KERN_F32_TERMS products, their tails masked), so the
 * two are written apart on purpose.
 */
#ifndef KERN_ISA
#error "kern_f64_body.h is included by kern_portable.c, kern_avx2.c and kern_avx512.c only"
#endif
#include "aimsweep/model/kern.h"

#include <math.h>
#include <stddef.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KERN_VECTOR 1
#if defined(__AVX512F__)
#define KERN_AVX512 1
#else
#define KERN_AVX512 0
#endif
#else
#define KERN_AVX512 0
#define KERN_VECTOR 0
#endif

int kern_vector(void) { return KERN_AVX512 ? 2 : KERN_VECTOR; }

/* The portable loops: for T = 2 two rows at a time (x0, x1, y0, y1 loaded once for both, four
 * independent sums); otherwise one row, with KERN_LANES partial sums per dot product. */
#define KERN_LANES 8

double kern_dot(const double *restrict a, const double *restrict b, int m)
{
    double s[KERN_LANES] = {0}, t = 0;
    int j = 0;
    for (; j + KERN_LANES <= m; j += KERN_LANES)
        for (int q = 0; q < KERN_LANES; q++)
            s[q] += a[j + q] * b[j + q];
    for (int q = 0; q < KERN_LANES; q++)
        t += s[q];
    for (; j < m; j++)
        t += a[j] * b[j];
    return t;
}

/* a . (b c) over m entries (sgd.c's teacher index, a the teacher's signs), vectorized as the
 * path's compiler flags allow: on the avx512 path the order of the -march=native builds before the
 * paths (bit for bit), on avx2 and portable other orders (measured: the avx2 and avx512 sums agree
 * bit for bit at 30 of the lengths 0-299, all below 6 among them). */
double kern_dot3(const double *restrict a, const double *restrict b, const double *restrict c,
                 int m)
{
    double t = 0;
#pragma omp simd simdlen(8) reduction(+ : t)
    for (int j = 0; j < m; j++)
        t += a[j] * b[j] * c[j];
    return t;
}

/* The step's elementwise loops (kern.h), vectorized as wide as the path allows; each entry is one
 * correctly rounded operation (a product and a sum apart), so every path gives the same bits. */
void kern_axpy(double *restrict y, const double *restrict x, double a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

void kern_div(double *y, const double *x, double c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] / c;
}

void kern_scal(double *v, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] *= s;
}

/* The portable loops of kern_generic.h (below) that take the vector kernels' last columns. */
static void update_project_rows2(double *restrict r0, double *restrict r1, int m, double a0,
                                 double b0, double a1, double b1, const double *restrict x0,
                                 const double *restrict x1, const double *restrict y0,
                                 const double *restrict y1, double out[4]);
static void project_rows2(const double *restrict f0, const double *restrict f1, int m,
                          const double *restrict y0, const double *restrict y1, double out[4]);

#if KERN_VECTOR

static inline double hsum(__m256d v)
{
    __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

/* One step of one row over four columns: r <- r - A x0 - B x1, s0 += r y0, s1 += r y1. */
#define KERN_ROW4(r, A, B, X0, X1, y0p, y1p, s0, s1)                                               \
    do {                                                                                           \
        __m256d v_ = _mm256_fnmadd_pd(A, X0, _mm256_loadu_pd(r));                                  \
        v_ = _mm256_fnmadd_pd(B, X1, v_);                                                          \
        _mm256_storeu_pd(r, v_);                                                                   \
        (s0) = _mm256_fmadd_pd(v_, _mm256_loadu_pd(y0p), (s0));                                    \
        (s1) = _mm256_fmadd_pd(v_, _mm256_loadu_pd(y1p), (s1));                                    \
    } while (0)

/* Two rows r0, r1 with coefficients (a0, b0), (a1, b1); out = r0.y0, r0.y1, r1.y0, r1.y1. */
static inline void update_project_pair(double *r0, double *r1, int m, double a0, double b0,
                                       double a1, double b1, const double *x0, const double *x1,
                                       const double *y0, const double *y1, double out[4])
{
    const __m256d A0 = _mm256_set1_pd(a0), B0 = _mm256_set1_pd(b0);
    const __m256d A1 = _mm256_set1_pd(a1), B1 = _mm256_set1_pd(b1);
    __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00;
    __m256d t00 = s00, t01 = s00, t10 = s00, t11 = s00;
    int j = 0;
    for (; j + 8 <= m; j += 8) {
        __m256d X0 = _mm256_loadu_pd(x0 + j), X1 = _mm256_loadu_pd(x1 + j);
        KERN_ROW4(r0 + j, A0, B0, X0, X1, y0 + j, y1 + j, s00, s01);
        KERN_ROW4(r1 + j, A1, B1, X0, X1, y0 + j, y1 + j, s10, s11);
        X0 = _mm256_loadu_pd(x0 + j + 4);
        X1 = _mm256_loadu_pd(x1 + j + 4);
        KERN_ROW4(r0 + j + 4, A0, B0, X0, X1, y0 + j + 4, y1 + j + 4, t00, t01);
        KERN_ROW4(r1 + j + 4, A1, B1, X0, X1, y0 + j + 4, y1 + j + 4, t10, t11);
    }
    if (j + 4 <= m) {
        __m256d X0 = _mm256_loadu_pd(x0 + j), X1 = _mm256_loadu_pd(x1 + j);
        KERN_ROW4(r0 + j, A0, B0, X0, X1, y0 + j, y1 + j, s00, s01);
        KERN_ROW4(r1 + j, A1, B1, X0, X1, y0 + j, y1 + j, s10, s11);
        j += 4;
    }
    double tail[4] = {0, 0, 0, 0}; /* the last m % 4 columns, by the portable loop */
    if (j < m)
        update_project_rows2(r0 + j, r1 + j, m - j, a0, b0, a1, b1, x0 + j, x1 + j, y0 + j, y1 + j,
                             tail);
    out[0] = tail[0] + hsum(_mm256_add_pd(s00, t00));
    out[1] = tail[1] + hsum(_mm256_add_pd(s01, t01));
    out[2] = tail[2] + hsum(_mm256_add_pd(s10, t10));
    out[3] = tail[3] + hsum(_mm256_add_pd(s11, t11));
}

/* Two rows f0, f1: out = f0.y0, f0.y1, f1.y0, f1.y1 (two partial sums each). */
static inline void project_pair(const double *f0, const double *f1, int m, const double *y0,
                                const double *y1, double out[4])
{
    __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00;
    __m256d t00 = s00, t01 = s00, t10 = s00, t11 = s00;
    int j = 0;
    for (; j + 8 <= m; j += 8) {
        __m256d Y0 = _mm256_loadu_pd(y0 + j), Y1 = _mm256_loadu_pd(y1 + j);
        __m256d F0 = _mm256_loadu_pd(f0 + j), F1 = _mm256_loadu_pd(f1 + j);
        s00 = _mm256_fmadd_pd(F0, Y0, s00);
        s01 = _mm256_fmadd_pd(F0, Y1, s01);
        s10 = _mm256_fmadd_pd(F1, Y0, s10);
        s11 = _mm256_fmadd_pd(F1, Y1, s11);
        Y0 = _mm256_loadu_pd(y0 + j + 4);
        Y1 = _mm256_loadu_pd(y1 + j + 4);
        F0 = _mm256_loadu_pd(f0 + j + 4);
        F1 = _mm256_loadu_pd(f1 + j + 4);
        t00 = _mm256_fmadd_pd(F0, Y0, t00);
        t01 = _mm256_fmadd_pd(F0, Y1, t01);
        t10 = _mm256_fmadd_pd(F1, Y0, t10);
        t11 = _mm256_fmadd_pd(F1, Y1, t11);
    }
    double tail[4] = {0, 0, 0, 0}; /* the last m % 8 columns, by the portable loop */
    if (j < m)
        project_rows2(f0 + j, f1 + j, m - j, y0 + j, y1 + j, tail);
    out[0] = tail[0] + hsum(_mm256_add_pd(s00, t00));
    out[1] = tail[1] + hsum(_mm256_add_pd(s01, t01));
    out[2] = tail[2] + hsum(_mm256_add_pd(s10, t10));
    out[3] = tail[3] + hsum(_mm256_add_pd(s11, t11));
}

/* update_project_pair together with one row f of another matrix projected on y0, y1:
 * out = r0.y0, r0.y1, r1.y0, r1.y1, f.y0, f.y1. Loading y0 and y1 once for both jobs saves a
 * third of the loads of doing them apart; there is no register left for partial sums, so one
 * accumulator per sum (the chain is no longer the bound with five multiply-adds a step). */
static inline void update_project_pair_f(double *r0, double *r1, const double *f, int m, double a0,
                                         double b0, double a1, double b1, const double *x0,
                                         const double *x1, const double *y0, const double *y1,
                                         double out[6])
{
    const __m256d A0 = _mm256_set1_pd(a0), B0 = _mm256_set1_pd(b0);
    const __m256d A1 = _mm256_set1_pd(a1), B1 = _mm256_set1_pd(b1);
    __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00, g0 = s00, g1 = s00;
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        __m256d X0 = _mm256_loadu_pd(x0 + j), X1 = _mm256_loadu_pd(x1 + j);
        __m256d Y0 = _mm256_loadu_pd(y0 + j), Y1 = _mm256_loadu_pd(y1 + j);
        __m256d v = _mm256_fnmadd_pd(A0, X0, _mm256_loadu_pd(r0 + j));
        __m256d u = _mm256_fnmadd_pd(A1, X0, _mm256_loadu_pd(r1 + j));
        v = _mm256_fnmadd_pd(B0, X1, v);
        u = _mm256_fnmadd_pd(B1, X1, u);
        _mm256_storeu_pd(r0 + j, v);
        _mm256_storeu_pd(r1 + j, u);
        s00 = _mm256_fmadd_pd(v, Y0, s00);
        s01 = _mm256_fmadd_pd(v, Y1, s01);
        s10 = _mm256_fmadd_pd(u, Y0, s10);
        s11 = _mm256_fmadd_pd(u, Y1, s11);
        __m256d F = _mm256_loadu_pd(f + j);
        g0 = _mm256_fmadd_pd(F, Y0, g0);
        g1 = _mm256_fmadd_pd(F, Y1, g1);
    }
    double tail[6] = {0, 0, 0, 0, 0, 0}; /* the last m % 4 columns, by the portable loops */
    if (j < m) {
        update_project_rows2(r0 + j, r1 + j, m - j, a0, b0, a1, b1, x0 + j, x1 + j, y0 + j, y1 + j,
                             tail);
        tail[4] = kern_dot(f + j, y0 + j, m - j);
        tail[5] = kern_dot(f + j, y1 + j, m - j);
    }
    out[0] = tail[0] + hsum(s00);
    out[1] = tail[1] + hsum(s01);
    out[2] = tail[2] + hsum(s10);
    out[3] = tail[3] + hsum(s11);
    out[4] = tail[4] + hsum(g0);
    out[5] = tail[5] + hsum(g1);
}

#if KERN_AVX512

/* [a[0..3] | a[0..3]] */
static inline __m512d bcast4(const double *a) { return _mm512_broadcast_f64x4(_mm256_loadu_pd(a)); }

/* [a[0..3] | b[0..3]] */
static inline __m512d pack2(const double *a, const double *b)
{
    return _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(a)), _mm256_loadu_pd(b), 1);
}

/* [a x4 | b x4] */
static inline __m512d set2(double a, double b)
{
    return _mm512_insertf64x4(_mm512_set1_pd(a), _mm256_set1_pd(b), 1);
}

static inline __m256d lo4(__m512d v) { return _mm512_castpd512_pd256(v); }
static inline __m256d hi4(__m512d v) { return _mm512_extractf64x4_pd(v, 1); }

/* The end of a paired block's pass from column j: the last m % 4 columns by the portable loops,
 * then the lanes' sums [s00 | s10], [s01 | s11], [g0 | g1] added to theirs, in that order. */
static inline void paired_finish(int wf, double *blk, const double *f, int m, int j, double a0,
                                 double b0, double a1, double b1, const double *x0,
                                 const double *x1, const double *y0, const double *y1, __m512d s0,
                                 __m512d s1, __m512d g, double out[6])
{
    double tail[6] = {0, 0, 0, 0, 0, 0};
    if (j < m) {
        int t = m - j;
        update_project_rows2(blk + 2 * j, blk + 2 * j + t, t, a0, b0, a1, b1, x0 + j, x1 + j,
                             y0 + j, y1 + j, tail);
        if (wf) {
            tail[4] = kern_dot(f + j, y0 + j, t);
            tail[5] = kern_dot(f + j, y1 + j, t);
        }
    }
    out[0] = tail[0] + hsum(lo4(s0));
    out[1] = tail[1] + hsum(lo4(s1));
    out[2] = tail[2] + hsum(hi4(s0));
    out[3] = tail[3] + hsum(hi4(s1));
    out[4] = tail[4] + hsum(lo4(g));
    out[5] = tail[5] + hsum(hi4(g));
}

/* update_project_pair_f on one block of the paired layout (kern.h): each vector holds four
 * columns of both rows, [row 0 | row 1], so that lane q of a sum adds the products of the
 * columns 4c + q in the order of c, as each lane of the four-lane kernel does, and every result
 * is that kernel's bit for bit, from half the multiply-adds and no shuffles of the rows. */
static inline void paired_pair_f(int wf, double *blk, const double *f, int m, double a0, double b0,
                                 double a1, double b1, const double *x0, const double *x1,
                                 const double *y0, const double *y1, double out[6])
{
    const __m512d A = set2(a0, a1), B = set2(b0, b1);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, g = s0; /* [s00 | s10], [s01 | s11], [g0 | g1] */
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        double *v_ = blk + 2 * j;
        __m512d v = _mm512_fnmadd_pd(A, bcast4(x0 + j), _mm512_loadu_pd(v_));
        v = _mm512_fnmadd_pd(B, bcast4(x1 + j), v);
        _mm512_storeu_pd(v_, v);
        s0 = _mm512_fmadd_pd(v, bcast4(y0 + j), s0);
        s1 = _mm512_fmadd_pd(v, bcast4(y1 + j), s1);
        if (wf)
            g = _mm512_fmadd_pd(bcast4(f + j), pack2(y0 + j, y1 + j), g);
    }
    paired_finish(wf, blk, f, m, j, a0, b0, a1, b1, x0, x1, y0, y1, s0, s1, g, out);
}

/* paired_pair_f on two blocks at once, each with its own row of F: every sum keeps its order,
 * and the two blocks' sums are independent chains, so that the multiply-adds of one block run
 * while those of the other wait for their latency (one block's sums alone are bound by it). */
static inline void paired_quad_f(int wf, double *blk0, double *blk1, const double *f0,
                                 const double *f1, int m, const double c0[4], const double c1[4],
                                 const double *x0, const double *x1, const double *y0,
                                 const double *y1, double out0[6], double out1[6])
{
    const __m512d A0 = set2(c0[0], c0[2]), B0 = set2(c0[1], c0[3]);
    const __m512d A1 = set2(c1[0], c1[2]), B1 = set2(c1[1], c1[3]);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, g = s0, t0 = s0, t1 = s0, h = s0;
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        const __m512d X0 = bcast4(x0 + j), X1 = bcast4(x1 + j), Y0 = bcast4(y0 + j),
                      Y1 = bcast4(y1 + j), YY = pack2(y0 + j, y1 + j);
        double *v_ = blk0 + 2 * j, *u_ = blk1 + 2 * j;
        __m512d v = _mm512_fnmadd_pd(A0, X0, _mm512_loadu_pd(v_));
        __m512d u = _mm512_fnmadd_pd(A1, X0, _mm512_loadu_pd(u_));
        v = _mm512_fnmadd_pd(B0, X1, v);
        u = _mm512_fnmadd_pd(B1, X1, u);
        _mm512_storeu_pd(v_, v);
        _mm512_storeu_pd(u_, u);
        s0 = _mm512_fmadd_pd(v, Y0, s0);
        s1 = _mm512_fmadd_pd(v, Y1, s1);
        t0 = _mm512_fmadd_pd(u, Y0, t0);
        t1 = _mm512_fmadd_pd(u, Y1, t1);
        if (wf) {
            g = _mm512_fmadd_pd(bcast4(f0 + j), YY, g);
            h = _mm512_fmadd_pd(bcast4(f1 + j), YY, h);
        }
    }
    paired_finish(wf, blk0, f0, m, j, c0[0], c0[1], c0[2], c0[3], x0, x1, y0, y1, s0, s1, g, out0);
    paired_finish(wf, blk1, f1, m, j, c1[0], c1[1], c1[2], c1[3], x0, x1, y0, y1, t0, t1, h, out1);
}

/* update_project_pair on one block: its two partial sums per product are the even and the odd
 * blocks of four columns (s and t there), and a last block of four goes to s, as there. */
static inline void paired_pair(double *blk, int m, double a0, double b0, double a1, double b1,
                               const double *x0, const double *x1, const double *y0,
                               const double *y1, double out[4])
{
    const __m512d A = set2(a0, a1), B = set2(b0, b1);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, t0 = s0, t1 = s0;
    int j = 0;
    for (; j + 8 <= m; j += 8) {
        double *v_ = blk + 2 * j;
        __m512d v = _mm512_fnmadd_pd(A, bcast4(x0 + j), _mm512_loadu_pd(v_));
        __m512d u = _mm512_fnmadd_pd(A, bcast4(x0 + j + 4), _mm512_loadu_pd(v_ + 8));
        v = _mm512_fnmadd_pd(B, bcast4(x1 + j), v);
        u = _mm512_fnmadd_pd(B, bcast4(x1 + j + 4), u);
        _mm512_storeu_pd(v_, v);
        _mm512_storeu_pd(v_ + 8, u);
        s0 = _mm512_fmadd_pd(v, bcast4(y0 + j), s0);
        s1 = _mm512_fmadd_pd(v, bcast4(y1 + j), s1);
        t0 = _mm512_fmadd_pd(u, bcast4(y0 + j + 4), t0);
        t1 = _mm512_fmadd_pd(u, bcast4(y1 + j + 4), t1);
    }
    if (j + 4 <= m) {
        double *v_ = blk + 2 * j;
        __m512d v = _mm512_fnmadd_pd(A, bcast4(x0 + j), _mm512_loadu_pd(v_));
        v = _mm512_fnmadd_pd(B, bcast4(x1 + j), v);
        _mm512_storeu_pd(v_, v);
        s0 = _mm512_fmadd_pd(v, bcast4(y0 + j), s0);
        s1 = _mm512_fmadd_pd(v, bcast4(y1 + j), s1);
        j += 4;
    }
    double tail[4] = {0, 0, 0, 0};
    if (j < m) {
        int t = m - j;
        update_project_rows2(blk + 2 * j, blk + 2 * j + t, t, a0, b0, a1, b1, x0 + j, x1 + j,
                             y0 + j, y1 + j, tail);
    }
    s0 = _mm512_add_pd(s0, t0);
    s1 = _mm512_add_pd(s1, t1);
    out[0] = tail[0] + hsum(lo4(s0));
    out[1] = tail[1] + hsum(lo4(s1));
    out[2] = tail[2] + hsum(hi4(s0));
    out[3] = tail[3] + hsum(hi4(s1));
}

#endif

#endif

#define KERN_T double
#define KERN_NAME(x) x
#define KERN_PORTABLE(x) x##_portable
#define KERN_WIDE(x) (x)
#define KERN_DOT(a, b, m) kern_dot(a, b, m)
#define KERN_HAVE_VECTOR KERN_VECTOR
#include "kern_generic.h"

int kern_paired(int T) { return KERN_AVX512 && T == 2; }

/* The paired pass; without F (wf = 0) the first nf pairs keep the sums of the pass with F. */
static int fused_paired(int wf, double *M, int n, int m, const double *C, const double *X,
                        const double *Y, double *O, const double *F, int nf, double *Z, int ldz)
{
#if KERN_AVX512
    int pairs = n / 2, done = nf < pairs ? nf : pairs, p = 0;
    for (; p + 2 <= done; p += 2) {
        int i = 2 * p;
        double out0[6], out1[6], *blk = M + (size_t)i * m;
        /* the coefficients (a0, b0, a1, b1) of rows i, i + 1 and of rows i + 2, i + 3 */
        const double c0[4] = {C[i], C[n + i], C[i + 1], C[n + i + 1]},
                     c1[4] = {C[i + 2], C[n + i + 2], C[i + 3], C[n + i + 3]};
        if (wf)
            paired_quad_f(1, blk, blk + 2 * (size_t)m, F + (size_t)p * m, F + (size_t)(p + 1) * m,
                          m, c0, c1, X, X + m, Y, Y + m, out0, out1);
        else
            paired_quad_f(0, blk, blk + 2 * (size_t)m, NULL, NULL, m, c0, c1, X, X + m, Y, Y + m,
                          out0, out1);
        put_pair(O, n, i, out0);
        put_pair(O, n, i + 2, out1);
        if (wf) {
            Z[p] = out0[4];
            Z[ldz + p] = out0[5];
            Z[p + 1] = out1[4];
            Z[ldz + p + 1] = out1[5];
        }
    }
    for (; p < pairs; p++) {
        int i = 2 * p;
        double out[6], *blk = M + (size_t)i * m;
        if (p < done && wf) {
            paired_pair_f(1, blk, F + (size_t)p * m, m, C[i], C[n + i], C[i + 1], C[n + i + 1], X,
                          X + m, Y, Y + m, out);
            Z[p] = out[4];
            Z[ldz + p] = out[5];
        } else if (p < done) {
            paired_pair_f(0, blk, NULL, m, C[i], C[n + i], C[i + 1], C[n + i + 1], X, X + m, Y,
                          Y + m, out);
        } else {
            paired_pair(blk, m, C[i], C[n + i], C[i + 1], C[n + i + 1], X, X + m, Y, Y + m, out);
        }
        put_pair(O, n, i, out);
    }
    if (2 * pairs < n)
        update_project_portable_ld(M + (size_t)2 * pairs * m, n - 2 * pairs, m, 2, C + 2 * pairs, X,
                                   Y, O + 2 * pairs, n);
    return done;
#else
    (void)wf, (void)M, (void)n, (void)m, (void)C, (void)X, (void)Y, (void)O, (void)F, (void)nf,
        (void)Z, (void)ldz;
    return -1;
#endif
}

int kern_update_project_fused_paired(double *M, int n, int m, int T, const double *C,
                                     const double *X, const double *Y, double *O, const double *F,
                                     int nf, double *Z, int ldz)
{
    if (!kern_paired(T))
        return -1;
    return F ? fused_paired(1, M, n, m, C, X, Y, O, F, nf, Z, ldz)
             : fused_paired(0, M, n, m, C, X, Y, O, NULL, nf, NULL, 0);
}

#if KERN_AVX512

/* How far ahead of its loads (in doubles along the pair block) the two-step pass asks for its
 * rows into the first-level cache: eight lines. The hardware's own prefetch left part of the
 * second-level cache's latency in the pass; asking ahead made the double step 1.04-1.14x as fast
 * at d = 400, 1.02-1.05x at 800, 1.00-1.12x at 1600 and 1.11-1.21x at 3200 (bench/compare.sh,
 * three rounds; 32 and 128 did as well within the noise, 256 less, and a block of rows ahead
 * lost 3-12%). The arithmetic is unchanged. */
#define KERN_PP_AHEAD 64

/* The two-step pass (kern_update2_project2_paired) on the pair blocks of rows i, i + 1 (blk0)
 * and, when `two`, of rows i + 2, i + 3 (blk1) of the n x m paired matrix, over columns j0 to j1
 * (multiples of 4; the last m % 4 columns are pp_finish's), asking for the entries pf doubles
 * ahead of those it loads. Each entry takes the first correction (two multiply-adds, as the
 * one-step kernel), then dg on the diagonal, then the second correction, in that order, so that
 * it ends as two one-step passes leave it; the projections then run over the entry just stored
 * into the accumulators acc (s0-s3 of blk0, t0-t3 of blk1), one per sum whatever the flags, so
 * that a sum does not depend on which of the corrections came with it, nor on the spans its
 * columns were taken in. */
static inline __attribute__((always_inline)) void
pp_span(const int two, const int c1, const int c2, const int ny, const int hasdg, double *blk0,
        double *blk1, int i, int n, int m, int ldx, int j0, int j1, const double *C1,
        const double *C2, double dg, const double *X1, const double *X2, const double *Y,
        const double *Y2, __m512d *acc, size_t pf)
{
    const int q = m & ~3;
    const double *x10 = X1, *x11 = X1 + ldx, *x20 = X2, *x21 = X2 + ldx;
    const double *y0 = Y, *y1 = Y + ldx, *y2 = Y2, *y3 = Y2 + ldx;
    __m512d A1 = _mm512_setzero_pd(), B1 = A1, A2 = A1, B2 = A1, E1 = A1, F1 = A1, E2 = A1, F2 = A1;
    if (c1) {
        A1 = set2(C1[i], C1[i + 1]);
        B1 = set2(C1[n + i], C1[n + i + 1]);
        if (two) {
            E1 = set2(C1[i + 2], C1[i + 3]);
            F1 = set2(C1[n + i + 2], C1[n + i + 3]);
        }
    }
    if (c2) {
        A2 = set2(C2[i], C2[i + 1]);
        B2 = set2(C2[n + i], C2[n + i + 1]);
        if (two) {
            E2 = set2(C2[i + 2], C2[i + 3]);
            F2 = set2(C2[n + i + 2], C2[n + i + 3]);
        }
    }
    /* the diagonal entries (i, i), (i + 1, i + 1) lie in the block of four columns i & ~3 (i is
     * even), lanes i & 3 and 4 + (i + 1) & 3, unless they are among the last m % 4 columns */
    const __m512d DG = _mm512_set1_pd(dg);
    const int jd0 = i + 1 < q ? i & ~3 : -1, jd1 = i + 3 < q ? (i + 2) & ~3 : -1;
    const __mmask8 mk0 = (__mmask8)((1u << (i & 3)) | (1u << (4 + ((i + 1) & 3)))),
                   mk1 = (__mmask8)((1u << ((i + 2) & 3)) | (1u << (4 + ((i + 3) & 3))));
    __m512d s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3], t0 = acc[4], t1 = acc[5],
            t2 = acc[6], t3 = acc[7];
    for (int j = j0; j < j1; j += 4) {
        double *v_ = blk0 + 2 * j, *u_ = two ? blk1 + 2 * j : v_;
        _mm_prefetch((const char *)(v_ + pf), _MM_HINT_T0);
        if (two)
            _mm_prefetch((const char *)(u_ + pf), _MM_HINT_T0);
        __m512d v = _mm512_loadu_pd(v_), u = two ? _mm512_loadu_pd(u_) : v;
        if (c1) {
            const __m512d X0 = bcast4(x10 + j), X1v = bcast4(x11 + j);
            v = _mm512_fnmadd_pd(A1, X0, v);
            v = _mm512_fnmadd_pd(B1, X1v, v);
            if (two) {
                u = _mm512_fnmadd_pd(E1, X0, u);
                u = _mm512_fnmadd_pd(F1, X1v, u);
            }
        }
        if (hasdg) {
            if (j == jd0)
                v = _mm512_mask_add_pd(v, mk0, v, DG);
            if (two && j == jd1)
                u = _mm512_mask_add_pd(u, mk1, u, DG);
        }
        if (c2) {
            const __m512d X0 = bcast4(x20 + j), X1v = bcast4(x21 + j);
            v = _mm512_fnmadd_pd(A2, X0, v);
            v = _mm512_fnmadd_pd(B2, X1v, v);
            if (two) {
                u = _mm512_fnmadd_pd(E2, X0, u);
                u = _mm512_fnmadd_pd(F2, X1v, u);
            }
        }
        if (c1 || c2 || hasdg) {
            _mm512_storeu_pd(v_, v);
            if (two)
                _mm512_storeu_pd(u_, u);
        }
        if (ny >= 1) {
            const __m512d Y0 = bcast4(y0 + j), Y1 = bcast4(y1 + j);
            s0 = _mm512_fmadd_pd(v, Y0, s0);
            s1 = _mm512_fmadd_pd(v, Y1, s1);
            if (two) {
                t0 = _mm512_fmadd_pd(u, Y0, t0);
                t1 = _mm512_fmadd_pd(u, Y1, t1);
            }
        }
        if (ny >= 2) {
            const __m512d Y0 = bcast4(y2 + j), Y1 = bcast4(y3 + j);
            s2 = _mm512_fmadd_pd(v, Y0, s2);
            s3 = _mm512_fmadd_pd(v, Y1, s3);
            if (two) {
                t2 = _mm512_fmadd_pd(u, Y0, t2);
                t3 = _mm512_fmadd_pd(u, Y1, t3);
            }
        }
    }
    acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
    acc[4] = t0, acc[5] = t1, acc[6] = t2, acc[7] = t3;
}

/* The last m % 4 columns of those rows (the one-step kernel's tail) and the sums out of their
 * accumulators acc. */
static inline __attribute__((always_inline)) void
pp_finish(const int two, const int c1, const int c2, const int ny, const int hasdg, double *blk0,
          double *blk1, int i, int n, int m, int ldx, const double *C1, const double *C2, double dg,
          const double *X1, const double *X2, const double *Y, const double *Y2, double *O,
          double *O2, const __m512d *acc)
{
    const int q = m & ~3;
    const double *x10 = X1, *x11 = X1 + ldx, *x20 = X2, *x21 = X2 + ldx;
    const double *y0 = Y, *y1 = Y + ldx, *y2 = Y2, *y3 = Y2 + ldx;
    for (int h = 0; h < 1 + two; h++) {
        int r = i + 2 * h, t = m - q;
        double *r0 = (h ? blk1 : blk0) + 2 * (size_t)q, *r1 = r0 + t;
        double junk[4], a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
        if (t > 0) { /* the last m % 4 columns: the arithmetic of the one-step kernel's tail */
            if (c1)
                update_project_rows2(r0, r1, t, C1[r], C1[n + r], C1[r + 1], C1[n + r + 1], x10 + q,
                                     x11 + q, x10 + q, x11 + q, junk);
            if (hasdg && r >= q) {
                r0[r - q] += dg;
                r1[r + 1 - q] += dg;
            }
            if (c2)
                update_project_rows2(r0, r1, t, C2[r], C2[n + r], C2[r + 1], C2[n + r + 1], x20 + q,
                                     x21 + q, x20 + q, x21 + q, junk);
            if (ny >= 1)
                project_rows2(r0, r1, t, y0 + q, y1 + q, a);
            if (ny >= 2)
                project_rows2(r0, r1, t, y2 + q, y3 + q, b);
        }
        __m512d p0 = acc[4 * h], p1 = acc[4 * h + 1], p2 = acc[4 * h + 2], p3 = acc[4 * h + 3];
        if (ny >= 1) {
            const double out[4] = {a[0] + hsum(lo4(p0)), a[1] + hsum(lo4(p1)), a[2] + hsum(hi4(p0)),
                                   a[3] + hsum(hi4(p1))};
            put_pair(O, n, r, out);
        }
        if (ny >= 2) {
            const double out[4] = {b[0] + hsum(lo4(p2)), b[1] + hsum(lo4(p3)), b[2] + hsum(hi4(p2)),
                                   b[3] + hsum(hi4(p3))};
            put_pair(O2, n, r, out);
        }
    }
}

/* Both over the whole rows. */
static inline __attribute__((always_inline)) void
pp_blocks(const int two, const int c1, const int c2, const int ny, const int hasdg, double *blk0,
          double *blk1, int i, int n, int m, int ldx, const double *C1, const double *C2, double dg,
          const double *X1, const double *X2, const double *Y, const double *Y2, double *O,
          double *O2)
{
    __m512d acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm512_setzero_pd();
    pp_span(two, c1, c2, ny, hasdg, blk0, blk1, i, n, m, ldx, 0, m & ~3, C1, C2, dg, X1, X2, Y, Y2,
            acc, KERN_PP_AHEAD);
    pp_finish(two, c1, c2, ny, hasdg, blk0, blk1, i, n, m, ldx, C1, C2, dg, X1, X2, Y, Y2, O, O2,
              acc);
}

/* Rows longer than KERN_PP_LONG columns go through the two-step pass KERN_PP_GROUPS groups of
 * two pair blocks at a time, in spans of KERN_PP_SPAN columns, each group's accumulators kept
 * between spans (a vector stored and loaded back is the same vector, so each sum is the one-span
 * sum bit for bit): the pass's tokens (two corrections' and the projections' of two samples) are
 * 8 d doubles, 51 KB at d = 800, more than the first-level cache; a span's are 16 KB. In span
 * order the next group's rows at the same columns come next, and those are what the loop asks
 * for ahead (KERN_PP_AHEAD along the block came to nothing there). Against the pass without spans
 * (bench/compare.sh, two rounds): 1.06-1.09x at d = 800, 1.06-1.08x at 1600, 1.08-1.16x at 3200
 * for the three decompositions; spans of 128 or 512 columns and groups of 4 did about as well. */
#define KERN_PP_LONG 600
#define KERN_PP_SPAN 256
#define KERN_PP_GROUPS 8

/* The whole two-step pass for the flags (c1, c2, ny, hasdg = dg != 0): the pair blocks two at a
 * time (KERN_PP_GROUPS such groups over spans of KERN_PP_SPAN columns when the rows are long), a
 * last pair block alone, and an odd last row (row-major) by the portable loop's arithmetic. */
static inline __attribute__((always_inline)) void
pp_pass(const int c1, const int c2, const int ny, const int hasdg, double *M, int rows, int m,
        size_t ld, int ldx, int n, const double *C1, const double *C2, double dg, const double *X1,
        const double *X2, const double *Y, const double *Y2, double *O, double *O2)
{
    int pairs = rows / 2, p = 0;
    if (m > KERN_PP_LONG) {
        const int q = m & ~3;
        for (; p + 2 <= pairs; p += 2 * KERN_PP_GROUPS) {
            int ng = (pairs - p) / 2 < KERN_PP_GROUPS ? (pairs - p) / 2 : KERN_PP_GROUPS;
            __m512d acc[KERN_PP_GROUPS][8];
            for (int g = 0; g < ng; g++)
                for (int k = 0; k < 8; k++)
                    acc[g][k] = _mm512_setzero_pd();
            for (int j0 = 0; j0 < q; j0 += KERN_PP_SPAN) {
                int j1 = q - j0 > KERN_PP_SPAN ? j0 + KERN_PP_SPAN : q;
                for (int g = 0; g < ng; g++) {
                    double *blk = M + 2 * (size_t)(p + 2 * g) * ld;
                    pp_span(1, c1, c2, ny, hasdg, blk, blk + 2 * ld, 2 * (p + 2 * g), n, m, ldx, j0,
                            j1, C1, C2, dg, X1, X2, Y, Y2, acc[g], 4 * ld);
                }
            }
            for (int g = 0; g < ng; g++) {
                double *blk = M + 2 * (size_t)(p + 2 * g) * ld;
                pp_finish(1, c1, c2, ny, hasdg, blk, blk + 2 * ld, 2 * (p + 2 * g), n, m, ldx, C1,
                          C2, dg, X1, X2, Y, Y2, O, O2, acc[g]);
            }
        }
        p = pairs - pairs % 2;
    }
    for (; p + 2 <= pairs; p += 2) {
        double *blk = M + 2 * (size_t)p * ld;
        pp_blocks(1, c1, c2, ny, hasdg, blk, blk + 2 * ld, 2 * p, n, m, ldx, C1, C2, dg, X1, X2, Y,
                  Y2, O, O2);
    }
    if (p < pairs)
        pp_blocks(0, c1, c2, ny, hasdg, M + 2 * (size_t)p * ld, NULL, 2 * p, n, m, ldx, C1, C2, dg,
                  X1, X2, Y, Y2, O, O2);
    if (2 * pairs < rows) { /* as update_project_portable_ld takes a last row */
        int i = rows - 1;
        double *row = M + (size_t)i * ld;
        for (int a = 0; c1 && a < 2; a++) {
            double c = C1[(size_t)a * n + i];
            const double *xa = X1 + (size_t)a * ldx;
            for (int j = 0; j < m; j++)
                row[j] -= c * xa[j];
        }
        if (hasdg)
            row[i] += dg;
        for (int a = 0; c2 && a < 2; a++) {
            double c = C2[(size_t)a * n + i];
            const double *xa = X2 + (size_t)a * ldx;
            for (int j = 0; j < m; j++)
                row[j] -= c * xa[j];
        }
        for (int b = 0; b < ny; b++) {
            double *o = b ? O2 : O;
            const double *y = b ? Y2 : Y;
            o[i] = kern_dot(row, y, m);
            o[n + i] = kern_dot(row, y + ldx, m);
        }
    }
}

#endif

int kern_update2_project2_paired_ld(double *M, int rows, int m, size_t ld, int ldx, int ldc,
                                    const double *C1, const double *X1, double dg, const double *C2,
                                    const double *X2, const double *Y, const double *Y2, double *O,
                                    double *O2)
{
#if KERN_AVX512
    if ((dg != 0 && rows > m) || (rows % 2 && ld != (size_t)m))
        return -1;
    int ny = Y ? (Y2 ? 2 : 1) : 0, hasdg = dg != 0;
    /* the step's cases with their flags constant, so that each compiles to its own loop (a test
     * of dg in the loop of the two-step case cost it a tenth of its time) */
#define PP_ARGS M, rows, m, ld, ldx, ldc, C1, C2, dg, X1, X2, Y, Y2, O, O2
    if (C1 && C2 && ny == 2 && !hasdg)
        pp_pass(1, 1, 2, 0, PP_ARGS);
    else if (C1 && C2 && ny == 2)
        pp_pass(1, 1, 2, 1, PP_ARGS);
    else if (!C1 && C2 && ny == 2 && !hasdg)
        pp_pass(0, 1, 2, 0, PP_ARGS);
    else if (!C1 && C2 && ny == 2)
        pp_pass(0, 1, 2, 1, PP_ARGS);
    else
        pp_pass(C1 != NULL, C2 != NULL, ny, hasdg, PP_ARGS);
#undef PP_ARGS
    return 0;
#else
    (void)M, (void)rows, (void)m, (void)ld, (void)ldx, (void)ldc, (void)C1, (void)X1, (void)dg,
        (void)C2, (void)X2, (void)Y, (void)Y2, (void)O, (void)O2;
    return -1;
#endif
}

int kern_update2_project2_paired(double *M, int n, int m, const double *C1, const double *X1,
                                 double dg, const double *C2, const double *X2, const double *Y,
                                 const double *Y2, double *O, double *O2)
{
    if (dg != 0 && n != m)
        return -1;
    return kern_update2_project2_paired_ld(M, n, m, (size_t)m, m, n, C1, X1, dg, C2, X2, Y, Y2, O,
                                           O2);
}

/* kern_project_fused_order takes KERN_ORDER_ROWS rows of F and KERN_ORDER_SAMPLES samples at a
 * time: sixteen independent chains of multiply-adds (enough to hide their latency), and each
 * sample's interleaved tokens read once per eight rows of F instead of once per row (one row at
 * a time, the tokens of eight samples outgrew the first-level cache and the loop streamed them
 * from the second, about a fifth of the direct step at d = 400; of 4 x 4, 2 x 8, 6 x 2, 8 x 2
 * and 12 x 2 rows x samples, those with two samples took the least). Each sum keeps its order. */
#define KERN_ORDER_ROWS 8
#define KERN_ORDER_SAMPLES 2

int kern_project_fused_order(const double *F, int nf, int m, int K, const double *Y, size_t ldy,
                             const double *YY, size_t ldyy, double *Z, size_t ldzs, int ldz)
{
#if KERN_AVX512
    int q = m & ~3;
    for (int p0 = 0; p0 < nf; p0 += KERN_ORDER_ROWS) {
        int np = nf - p0 < KERN_ORDER_ROWS ? nf - p0 : KERN_ORDER_ROWS;
        const double *f[KERN_ORDER_ROWS];
        for (int r = 0; r < KERN_ORDER_ROWS; r++)
            f[r] = F + (size_t)(p0 + (r < np ? r : 0)) * m;
        for (int s0 = 0; s0 < K; s0 += KERN_ORDER_SAMPLES) {
            int ns = K - s0 < KERN_ORDER_SAMPLES ? K - s0 : KERN_ORDER_SAMPLES;
            __m512d g[KERN_ORDER_ROWS][KERN_ORDER_SAMPLES];
            const double *yy[KERN_ORDER_SAMPLES];
            for (int u = 0; u < KERN_ORDER_SAMPLES; u++) {
                for (int r = 0; r < KERN_ORDER_ROWS; r++)
                    g[r][u] = _mm512_setzero_pd();
                yy[u] = YY + (size_t)(s0 + (u < ns ? u : 0)) * ldyy;
            }
            for (int j = 0; j < q; j += 4) /* as g in paired_pair_f */
                for (int r = 0; r < KERN_ORDER_ROWS; r++) {
                    const __m512d fv = bcast4(f[r] + j);
                    for (int u = 0; u < KERN_ORDER_SAMPLES; u++)
                        g[r][u] = _mm512_fmadd_pd(fv, _mm512_loadu_pd(yy[u] + 2 * j), g[r][u]);
                }
            for (int r = 0; r < np; r++)
                for (int u = 0; u < ns; u++) {
                    const double *y0 = Y + (size_t)(s0 + u) * ldy, *y1 = y0 + m;
                    double t4 = 0, t5 = 0;
                    if (q < m) {
                        t4 = kern_dot(f[r] + q, y0 + q, m - q);
                        t5 = kern_dot(f[r] + q, y1 + q, m - q);
                    }
                    double *z = Z + (size_t)(s0 + u) * ldzs;
                    z[p0 + r] = t4 + hsum(lo4(g[r][u]));
                    z[ldz + p0 + r] = t5 + hsum(hi4(g[r][u]));
                }
        }
    }
    return 0;
#else
    (void)F, (void)nf, (void)m, (void)K, (void)Y, (void)ldy, (void)YY, (void)ldyy, (void)Z,
        (void)ldzs, (void)ldz;
    return -1;
#endif
}

/* The machine's multiply-add rate, for the compute roof of `aimsweep bench`: KERN_FMA_CHAINS
 * independent chains of vector multiply-adds (each waits only for its own previous one), so
 * that the units, not the latency, bound the loop; in the widest vectors this build has, in
 * double or float (a vector holds 8 doubles or 16 floats with AVX-512, 4 or 8 with AVX2; the
 * portable build times scalar chains the compiler may vectorise). Sixteen chains, twelve with
 * AVX2: its sixteen registers cannot hold sixteen chains and the two constants, and with sixteen
 * GCC kept three of the chains in memory, a load and a store each a round, which made the roof
 * a fifth too low. Chain q runs a <- 0.9999 a + c from a = q; the value returned is the sum over
 * the chains of their first lane.
 * The step's kernels load, store and ask for lines ahead between their multiply-adds, and what
 * that costs the units is what `aimsweep bench --loads` shows. With `loads` > 0 the first `loads`
 * chains add a vector loaded from memory instead of c (one load each a round, from eight rows of
 * KERN_FMA_CHAINS vectors, one row a round, at most 8 KB, in the first-level cache); the rows hold
 * 1, so that a chain that did not load would end elsewhere. With `stores` 2 each round also
 * stores chains 0 and 1 (to one of eight places in turn) and asks for two lines of the next row,
 * as the float two-step pass stores its two rows and asks for the next pair's. */
#if KERN_VECTOR && !KERN_AVX512
#define KERN_FMA_CHAINS 12
#else
#define KERN_FMA_CHAINS 16
#endif

int kern_fma_chains(void) { return KERN_FMA_CHAINS; }

/* n rounds of the chains in vectors of type V of `lanes` entries of type T (SET1 broadcasts,
 * FMADD multiplies and adds, LOAD loads, STORE stores, FIRST reads the first lane), the first
 * `loads` chains adding a loaded vector and `stores` (0 or 2) of them stored (both constants);
 * the first lanes' sum into sink. The empty asm statements tell the compiler the rows may have
 * changed (so that it loads them instead of their known value) and that the stores are read. */
#define KERN_FMA_RUN(V, T, SET1, FMADD, LOAD, STORE, FIRST, lanes, c, n, loads, stores, sink)      \
    do {                                                                                           \
        enum { ROW_ = KERN_FMA_CHAINS * (lanes) };                                                 \
        T buf_[8 * ROW_] __attribute__((aligned(64))),                                             \
            out_[16 * (lanes)] __attribute__((aligned(64)));                                       \
        for (int i_ = 0; i_ < 8 * ROW_; i_++)                                                      \
            buf_[i_] = (T)1;                                                                       \
        __asm__ volatile("" : : "r"(buf_) : "memory");                                             \
        V a_[KERN_FMA_CHAINS], m_ = SET1(0.9999), c_ = SET1(c);                                    \
        for (int q = 0; q < KERN_FMA_CHAINS; q++)                                                  \
            a_[q] = SET1(q);                                                                       \
        for (long k = 0; k < (n); k++) {                                                           \
            const T *p_ = buf_ + (size_t)(k & 7) * ROW_;                                           \
            for (int q = 0; q < KERN_FMA_CHAINS; q++)                                              \
                a_[q] = FMADD(a_[q], m_, q < (loads) ? LOAD(p_ + (size_t)q * (lanes)) : c_);       \
            if (stores) {                                                                          \
                const T *next_ = buf_ + (size_t)((k + 1) & 7) * ROW_;                              \
                __builtin_prefetch(next_);                                                         \
                __builtin_prefetch(next_ + ROW_ / 2);                                              \
                STORE(out_ + (size_t)(k & 7) * 2 * (lanes), a_[0]);                                \
                STORE(out_ + ((size_t)(k & 7) * 2 + 1) * (lanes), a_[1]);                          \
            }                                                                                      \
        }                                                                                          \
        __asm__ volatile("" : : "r"(out_) : "memory");                                             \
        for (int q = 0; q < KERN_FMA_CHAINS; q++)                                                  \
            (sink) += FIRST(a_[q]);                                                                \
    } while (0)

/* KERN_FMA_RUN with `loads` one of 0, 2, ..., KERN_FMA_CHAINS and `stores` 0 or 2, each a loop
 * of its own. */
#define KERN_FMA_CASE(L, ...)                                                                      \
    case L:                                                                                        \
        if (stores)                                                                                \
            KERN_FMA_RUN(__VA_ARGS__, L, 2, sink);                                                 \
        else                                                                                       \
            KERN_FMA_RUN(__VA_ARGS__, L, 0, sink);                                                 \
        break
#define KERN_FMA_LOADS(...)                                                                        \
    do {                                                                                           \
        switch (loads) {                                                                           \
            KERN_FMA_CASE(0, __VA_ARGS__);                                                         \
            KERN_FMA_CASE(2, __VA_ARGS__);                                                         \
            KERN_FMA_CASE(4, __VA_ARGS__);                                                         \
            KERN_FMA_CASE(6, __VA_ARGS__);                                                         \
            KERN_FMA_CASE(8, __VA_ARGS__);                                                         \
            KERN_FMA_CASE(10, __VA_ARGS__);                                                        \
            KERN_FMA_CASE(12, __VA_ARGS__);                                                        \
            KERN_FMA_CASE(14, __VA_ARGS__);                                                        \
            default: KERN_FMA_CASE(16, __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

#if !KERN_VECTOR
static inline double fma_scalar(double a, double m, double c) { return a * m + c; }
static inline double first_scalar(double a) { return a; }
static inline double set1_scalar(double a) { return a; }
static inline double load_scalar(const double *p) { return *p; }
static inline void store_scalar(double *p, double v) { *p = v; }
#endif

double kern_fma_loads(int single, int loads, int stores, long n, double *fmas)
{
    double sink = 0;
    int lanes;
    if (loads < 0 || loads > KERN_FMA_CHAINS || loads % 2 || (stores != 0 && stores != 2))
        return NAN;
#if KERN_AVX512
    if (single)
        KERN_FMA_LOADS(__m512, float, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_load_ps,
                       _mm512_store_ps, _mm512_cvtss_f32, 16, 1e-6, n);
    else
        KERN_FMA_LOADS(__m512d, double, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_load_pd,
                       _mm512_store_pd, _mm512_cvtsd_f64, 8, 1e-9, n);
    lanes = single ? 16 : 8;
#elif KERN_VECTOR
    if (single)
        KERN_FMA_LOADS(__m256, float, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_load_ps,
                       _mm256_store_ps, _mm256_cvtss_f32, 8, 1e-6, n);
    else
        KERN_FMA_LOADS(__m256d, double, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_load_pd,
                       _mm256_store_pd, _mm256_cvtsd_f64, 4, 1e-9, n);
    lanes = single ? 8 : 4;
#else
    KERN_FMA_LOADS(double, double, set1_scalar, fma_scalar, load_scalar, store_scalar, first_scalar,
                   1, single ? 1e-6 : 1e-9, n);
    lanes = 1;
#endif
    *fmas = (double)lanes * KERN_FMA_CHAINS * (double)n;
    return sink;
}

double kern_fma_burst(int single, long n, double *fmas)
{
    return kern_fma_loads(single, 0, 0, n, fmas);
}
