/*
 * rng_batch.h: the Gaussian generator's batches (rng.c), compiled once per path of the run-time
 * dispatch by rng_portable.c, rng_avx2.c and rng_avx512.c with -ffast-math (kern_isa.h): the words
 * of Philox blocks and the normals Box-Muller makes of them, each build taking the code its flags
 * allow. Not a header.
 */
#ifndef KERN_ISA
#error "rng_batch.h is included by rng_portable.c, rng_avx2.c and rng_avx512.c only"
#endif
#include "kern_isa.h"
#include "rng_philox.h"

#include <math.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
/* Philox4x32-10 on RNG_BATCH consecutive blocks at once, the same words as Random123's
 * philox4x32 (tests/test_rng.c holds them to it). Four groups of eight blocks, one block per
 * 64-bit lane: vpmuludq multiplies the low 32 bits of each lane into the whole 64-bit product,
 * whose high half is mulhi and whose low half is mullo; the lanes' high halves are otherwise
 * left as they fall, since every later use reads only the low 32 bits. The four groups are
 * independent chains, so that the rounds' latency is hidden (one group alone took 1.7 times as
 * long per word). */
#define RNG_GROUPS (RNG_BATCH / 8)
static void philox_batch(const struct rng *g, uint64_t block, uint32_t *w)
{
    __m512i c0[RNG_GROUPS], c1[RNG_GROUPS], c2[RNG_GROUPS], c3[RNG_GROUPS];
    const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < RNG_GROUPS; q++) {
        uint64_t first_block = block + 8 * (uint64_t)q;
        __m512i n = _mm512_add_epi64(_mm512_set1_epi64((long long)first_block), lane);
        c0[q] = n;
        c1[q] = _mm512_srli_epi64(n, 32);
        c2[q] = _mm512_set1_epi64(g->stream);
        c3[q] = _mm512_set1_epi64(g->dim);
    }
    const __m512i m0 = _mm512_set1_epi64(PHILOX_M4x32_0), m1 = _mm512_set1_epi64(PHILOX_M4x32_1);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 10; r++) {
        const __m512i K0 = _mm512_set1_epi64(k0), K1 = _mm512_set1_epi64(k1);
        for (int q = 0; q < RNG_GROUPS; q++) {
            __m512i p0 = _mm512_mul_epu32(c0[q], m0), p1 = _mm512_mul_epu32(c2[q], m1);
            /* hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0) */
            c0[q] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1[q], K0, 0x96);
            c2[q] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3[q], K1, 0x96);
            c1[q] = p1;
            c3[q] = p0;
        }
        k0 += PHILOX_W32_0;
        k1 += PHILOX_W32_1;
    }
    const __m512i lo32 = _mm512_set1_epi64(0xffffffffu);
    const __m512i first = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i last = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (int q = 0; q < RNG_GROUPS; q++) { /* words 0, 1 and 2, 3 of each block, block by block */
        __m512i a = _mm512_or_si512(_mm512_and_si512(c0[q], lo32), _mm512_slli_epi64(c1[q], 32));
        __m512i b = _mm512_or_si512(_mm512_and_si512(c2[q], lo32), _mm512_slli_epi64(c3[q], 32));
        _mm512_storeu_si512(w + 32 * q, _mm512_permutex2var_epi64(a, first, b));
        _mm512_storeu_si512(w + 32 * q + 16, _mm512_permutex2var_epi64(a, last, b));
    }
}
#endif

void KERN_ISA(rng_words)(struct rng *g, uint32_t *w, int nb)
{
#if defined(__AVX512F__)
    for (; nb >= RNG_BATCH; nb -= RNG_BATCH, w += 4 * RNG_BATCH) {
        philox_batch(g, g->block, w);
        g->block += RNG_BATCH;
    }
#endif
    for (int b = 0; b < nb; b++) {
        philox4x32_ctr_t r = rng_draw(g);
        for (int k = 0; k < 4; k++)
            w[4 * b + k] = r.v[k];
    }
}

/* Box-Muller on a batch: the 32-bit words of nb consecutive blocks, taken in pairs (u1, u2),
 * give normals rad cos(th), rad sin(th) in block order, so normal n always comes from block
 * n/4, with rad = sqrt(-2 log u1), th = 2 pi u2 and u = (word + 1/2) 2^-32 (exact). The bits of
 * a normal are those of glibc's vector log, cos and sin (libmvec) on those exact arguments;
 * every other operation is exact or one correctly rounded one. Every pair goes through the same
 * vector calls, whole groups of RNG_LANES pairs (padded with zero words past the batch): a
 * loop over the batch's length would leave its last pairs to scalar calls, which round
 * otherwise, and a normal would then depend on how the stream was read around it (in one batch
 * or in pieces), not on its counter alone. */
#define RNG_LANES 8
#if defined(__AVX512F__) && defined(__GLIBC__)
/* With AVX-512 the 8-lane functions are called by name, on the words as they are loaded: the
 * loops below for the compiler to vectorize (the way without AVX-512) spent a third of the
 * generator's time around the calls, moving the words and the results through memory
 * (1.7-2.2 ns a normal against 1.44). The same calls on the same arguments: the same bits
 * (tests/test_rng.c holds the normals to the C library's scalar functions, and with AVX-512
 * each pair bit for bit to these three calls on its own words). */
// NOLINTBEGIN(bugprone-reserved-identifier): libmvec's names, by the vector function ABI
__m512d _ZGVeN8v_log(__m512d x);
__m512d _ZGVeN8v_cos(__m512d x);
__m512d _ZGVeN8v_sin(__m512d x);
// NOLINTEND(bugprone-reserved-identifier)

void KERN_ISA(rng_batch)(struct rng *g, double *o, int nb)
{
    uint32_t w[4 * RNG_BATCH];
    KERN_ISA(rng_words)(g, w, nb);
    const __m512d half = _mm512_set1_pd(0.5), u32 = _mm512_set1_pd(RNG_U32);
    const __m512d two_pi = _mm512_set1_pd(RNG_TWO_PI), m2 = _mm512_set1_pd(-2.0);
    const __m512i first = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i last = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (int j = 0, np = 2 * nb; j < np; j += RNG_LANES) {
        int left = np - j < RNG_LANES ? np - j : RNG_LANES; /* pairs in this group */
        /* the pairs' words as 64-bit lanes: u1's word low, u2's high */
        __m512i ww = _mm512_maskz_loadu_epi64((__mmask8)((1u << left) - 1), w + 2 * j);
        __m512d u1 =
            _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepu32_pd(_mm512_cvtepi64_epi32(ww)), half), u32);
        __m512d u2 = _mm512_mul_pd(
            _mm512_add_pd(_mm512_cvtepu32_pd(_mm512_cvtepi64_epi32(_mm512_srli_epi64(ww, 32))),
                          half),
            u32);
        __m512d rad = _mm512_sqrt_pd(_mm512_mul_pd(m2, _ZGVeN8v_log(u1)));
        __m512d th = _mm512_mul_pd(two_pi, u2);
        __m512d c = _mm512_mul_pd(rad, _ZGVeN8v_cos(th)), sn = _mm512_mul_pd(rad, _ZGVeN8v_sin(th));
        __m512d lo = _mm512_permutex2var_pd(c, first, sn), hi = _mm512_permutex2var_pd(c, last, sn);
        if (left == RNG_LANES) {
            _mm512_storeu_pd(o + 2 * j, lo);
            _mm512_storeu_pd(o + 2 * j + 8, hi);
        } else { /* the group's 2 left normals: the first eight in lo, the rest in hi */
            unsigned n = 2 * (unsigned)left;
            _mm512_mask_storeu_pd(o + 2 * j, (__mmask8)(n >= 8 ? 0xff : (1u << n) - 1), lo);
            if (n > 8)
                _mm512_mask_storeu_pd(o + 2 * j + 8, (__mmask8)((1u << (n - 8)) - 1), hi);
        }
    }
}
#else
/* Without AVX-512, loops of constant length for GCC to vectorize: built with -ffast-math
 * (src/model/CMakeLists.txt), it calls glibc's vector log, cos and sin from them. */
void KERN_ISA(rng_batch)(struct rng *g, double *o, int nb)
{
    uint32_t w[4 * RNG_BATCH];
    KERN_ISA(rng_words)(g, w, nb);
    int np = 2 * nb, ng = (np + RNG_LANES - 1) / RNG_LANES * RNG_LANES;
    for (int j = 2 * np; j < 2 * ng; j++)
        w[j] = 0;
    double rad[2 * RNG_BATCH], th[2 * RNG_BATCH], c[2 * RNG_BATCH], sn[2 * RNG_BATCH];
#pragma omp simd simdlen(RNG_LANES)
    for (int j = 0; j < ng; j++) {
        double u1 = ((double)w[2 * j] + 0.5) * RNG_U32;
        double u2 = ((double)w[2 * j + 1] + 0.5) * RNG_U32;
        rad[j] = sqrt(-2.0 * log(u1));
        th[j] = RNG_TWO_PI * u2;
    }
    /* cos and sin in separate loops: together GCC fuses them into a scalar sincos */
#pragma omp simd simdlen(RNG_LANES)
    for (int j = 0; j < ng; j++)
        c[j] = cos(th[j]);
#pragma omp simd simdlen(RNG_LANES)
    for (int j = 0; j < ng; j++)
        sn[j] = sin(th[j]);
    for (int j = 0; j < np; j++) {
        o[2 * j] = rad[j] * c[j];
        o[2 * j + 1] = rad[j] * sn[j];
    }
}
#endif
