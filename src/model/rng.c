/*
 * rng.c: Gaussian streams on Random123's Philox4x32-10.
 */
#include "aimsweep/model/rng.h"

#include <math.h>

#include <Random123/philox.h>

#define RNG_TWO_PI 6.283185307179586476925286766559
#define RNG_U32 2.3283064365386962890625e-10 /* 2^-32 */

void rng_init(struct rng *g, uint64_t seed, uint32_t stream, uint32_t dim)
{
    g->key[0] = (uint32_t)seed;
    g->key[1] = (uint32_t)(seed >> 32);
    g->stream = stream;
    g->dim = dim;
    g->block = 0;
    g->nbuf = 0;
}

void rng_seek(struct rng *g, uint64_t block)
{
    g->block = block;
    g->nbuf = 0;
}

static inline philox4x32_ctr_t rng_draw(struct rng *g)
{
    philox4x32_ctr_t c = {{(uint32_t)g->block, (uint32_t)(g->block >> 32), g->stream, g->dim}};
    philox4x32_key_t k = {{g->key[0], g->key[1]}};
    g->block++;
    return philox4x32(c, k);
}

/* Box-Muller on a batch: the 32-bit words of nb consecutive blocks, taken in pairs (u1, u2),
 * give normals rad cos(th), rad sin(th) in block order, so normal n always comes from block
 * n/4. The loop is written for vector log/sin/cos (this file is built with -ffast-math, which
 * lets GCC call glibc's vector math library; the results are still a fixed function of the
 * counter for a given build). */
#define RNG_BATCH 32 /* blocks */
static void rng_batch(struct rng *g, double *o, int nb)
{
    uint32_t w[4 * RNG_BATCH];
    for (int b = 0; b < nb; b++) {
        philox4x32_ctr_t r = rng_draw(g);
        for (int k = 0; k < 4; k++)
            w[4 * b + k] = r.v[k];
    }
    int np = 2 * nb;
    double rad[2 * RNG_BATCH], th[2 * RNG_BATCH], c[2 * RNG_BATCH], sn[2 * RNG_BATCH];
#pragma omp simd
    for (int j = 0; j < np; j++) {
        double u1 = ((double)w[2 * j] + 0.5) * RNG_U32;
        double u2 = ((double)w[2 * j + 1] + 0.5) * RNG_U32;
        rad[j] = sqrt(-2.0 * log(u1));
        th[j] = RNG_TWO_PI * u2;
    }
    /* cos and sin in separate loops: together GCC fuses them into a scalar sincos */
#pragma omp simd
    for (int j = 0; j < np; j++)
        c[j] = cos(th[j]);
#pragma omp simd
    for (int j = 0; j < np; j++)
        sn[j] = sin(th[j]);
    for (int j = 0; j < np; j++) {
        o[2 * j] = rad[j] * c[j];
        o[2 * j + 1] = rad[j] * sn[j];
    }
}

void rng_seek_normal(struct rng *g, uint64_t n)
{
    rng_seek(g, n / 4);
    double skip[4];
    rng_normals(g, skip, (size_t)(n % 4));
}

void rng_normals(struct rng *g, double *out, size_t n)
{
    size_t i = 0;
    while (i < n && g->nbuf > 0)
        out[i++] = g->buf[4 - g->nbuf--];
    while (n - i >= 4) {
        size_t nb = (n - i) / 4;
        if (nb > RNG_BATCH)
            nb = RNG_BATCH;
        rng_batch(g, out + i, (int)nb);
        i += 4 * nb;
    }
    if (i < n) {
        rng_batch(g, g->buf, 1);
        g->nbuf = 4;
        while (i < n)
            out[i++] = g->buf[4 - g->nbuf--];
    }
}

double rng_uniform(struct rng *g)
{
    philox4x32_ctr_t r = rng_draw(g);
    return ((double)r.v[0] + 0.5) * RNG_U32;
}
