/* The Gaussian generator (src/model/rng.c) against what it is made of: its Philox words against
 * Random123's philox4x32 block by block (the vector batch is a second implementation of the
 * rounds), across the carry of the block counter into its high word; its normals against
 * Box-Muller written out here with the C library's log, cos and sin on those words (rng.c uses
 * the vector math library); and a stream read in pieces of every size against the same stream
 * read at once, since pieces of RNG_BATCH blocks and more take the vector batch and shorter
 * ones the scalar rounds. */
#include <stdlib.h>
#include <string.h>

#include <Random123/philox.h>

#include "aimsweep/model/rng.h"
#include "check.h"
#include "paths.h"

#if defined(__x86_64__) && defined(__GLIBC__)
#include <immintrin.h>
/* The avx512 path's normals, bit for bit: each pair on its own through the 8-lane functions
 * rng_batch.h calls, the pair's arguments in every lane, so that the batch's loads, masks and
 * interleaving are checked exactly, not within the tolerance of the scalar comparison (a
 * normal's bits are what these calls make). Compiled for AVX-512 here alone (the test is built
 * at the baseline) and called only on that path. Returns the pairs that differ. */
#define AVX512 __attribute__((target("avx512f,avx512dq")))
AVX512 __m512d _ZGVeN8v_log(__m512d x);
AVX512 __m512d _ZGVeN8v_cos(__m512d x);
AVX512 __m512d _ZGVeN8v_sin(__m512d x);
AVX512 static int pairs_off_avx512(const uint32_t *words, const double *x, int pairs)
{
    int bad = 0;
    for (int j = 0; j < pairs; j++) {
        double u1 = ((double)words[2 * j] + 0.5) * 0x1p-32,
               u2 = ((double)words[2 * j + 1] + 0.5) * 0x1p-32;
        double l[8], c[8], sn[8];
        _mm512_storeu_pd(l, _ZGVeN8v_log(_mm512_set1_pd(u1)));
        double rad = sqrt(-2.0 * l[0]), th = 6.283185307179586476925286766559 * u2;
        _mm512_storeu_pd(c, _ZGVeN8v_cos(_mm512_set1_pd(th)));
        _mm512_storeu_pd(sn, _ZGVeN8v_sin(_mm512_set1_pd(th)));
        double e0 = rad * c[0], e1 = rad * sn[0];
        bad += memcmp(&e0, x + 2 * j, sizeof e0) != 0 || memcmp(&e1, x + 2 * j + 1, sizeof e1);
    }
    return bad;
}
#endif

static void words_ref(uint64_t seed, uint32_t stream, uint32_t dim, uint64_t block, int nb,
                      uint32_t *w)
{
    philox4x32_key_t k = {{(uint32_t)seed, (uint32_t)(seed >> 32)}};
    for (int b = 0; b < nb; b++) {
        uint64_t n = block + (uint64_t)b;
        philox4x32_ctr_t c = {{(uint32_t)n, (uint32_t)(n >> 32), stream, dim}};
        philox4x32_ctr_t r = philox4x32(c, k);
        memcpy(w + 4 * b, r.v, sizeof r.v);
    }
}

int main(void)
{
    test_path_start();
    const uint64_t seeds[] = {0, 9, 0x123456789abcdefULL};
    const uint64_t starts[] = {0, 7, (1ULL << 32) - 40, (1ULL << 33) - 1};
    const int counts[] = {1, 31, 32, 33, 64, 200};
    enum { MAXB = 200 };
    static uint32_t w[4 * MAXB], ref[4 * MAXB];
    int words_bad = 0, words_checked = 0;
    for (int a = 0; a < 3; a++)
        for (int s = 0; s < 4; s++)
            for (int c = 0; c < 6; c++) {
                struct rng g;
                rng_init(&g, seeds[a], 3 + (uint32_t)s, 400 + (uint32_t)c);
                rng_seek(&g, starts[s]);
                rng_words(&g, w, counts[c]);
                words_ref(seeds[a], 3 + (uint32_t)s, 400 + (uint32_t)c, starts[s], counts[c], ref);
                words_checked++;
                if (memcmp(w, ref, sizeof(uint32_t) * 4 * (size_t)counts[c]))
                    words_bad++;
                /* the stream moved past the blocks it gave */
                rng_words(&g, w, 1);
                words_ref(seeds[a], 3 + (uint32_t)s, 400 + (uint32_t)c,
                          starts[s] + (uint64_t)counts[c], 1, ref);
                if (memcmp(w, ref, sizeof(uint32_t) * 4))
                    words_bad++;
            }
    CHECK(words_bad == 0, "%d of %d batches of words differ from Random123's philox4x32", words_bad,
          2 * words_checked);

    /* normals: Box-Muller on the reference words, u = (w + 1/2) 2^-32 */
    enum { NN = 4 * MAXB };
    static double x[NN], y[NN];
    struct rng g;
    rng_init(&g, 77, 1, 60);
    rng_seek(&g, (1ULL << 32) - 100);
    rng_normals(&g, x, NN);
    words_ref(77, 1, 60, (1ULL << 32) - 100, MAXB, ref);
    double worst = 0;
    for (int j = 0; j < NN / 2; j++) {
        double u1 = ((double)ref[2 * j] + 0.5) * 0x1p-32,
               u2 = ((double)ref[2 * j + 1] + 0.5) * 0x1p-32;
        double rad = sqrt(-2.0 * log(u1)), th = 2 * M_PI * u2;
        double e0 = fabs(x[2 * j] - rad * cos(th)) / (rad + 1);
        double e1 = fabs(x[2 * j + 1] - rad * sin(th)) / (rad + 1);
        worst = fmax(worst, fmax(e0, e1));
    }
    CHECK(worst < 1e-13,
          "normals differ from Box-Muller on Philox's words by %.3g (relative to "
          "the radius + 1; the vector math library is within a few units of the last place)",
          worst);

#if defined(__x86_64__) && defined(__GLIBC__)
    if (!strcmp(kern_path(), "avx512")) {
        int bits_bad = pairs_off_avx512(ref, x, NN / 2);
        CHECK(bits_bad == 0,
              "%d of %d pairs differ in their bits from the vector log, cos and sin "
              "on the pair's own words",
              bits_bad, NN / 2);
    }
#endif

    /* the same stream in pieces of assorted sizes, and entered at a normal's address */
    rng_init(&g, 77, 1, 60);
    rng_seek(&g, (1ULL << 32) - 100);
    int at = 0, sizes[] = {1, 3, 130, 2, 127, 4, 5, 129, 33, 64, 7};
    for (int k = 0; at < NN; k = (k + 1) % 11) {
        int n = sizes[k] < NN - at ? sizes[k] : NN - at;
        rng_normals(&g, y + at, (size_t)n);
        at += n;
    }
    CHECK(!memcmp(x, y, sizeof x),
          "the stream read in pieces differs from the stream read at once");
    rng_init(&g, 77, 1, 60);
    rng_seek_normal(&g, 4 * ((1ULL << 32) - 100) + 301);
    rng_normals(&g, y, NN - 301);
    CHECK(!memcmp(x + 301, y, sizeof(double) * (NN - 301)),
          "the stream entered at normal 301 differs from the stream read from its start");
    return check_done("test_rng");
}
