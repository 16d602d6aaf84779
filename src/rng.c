/*
 * rng.c: Gaussian streams on Random123's Philox4x32-10.
 */
#include "aimsweep/rng.h"

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

/* Four normals from one block: two Box-Muller pairs on uniforms in (0, 1). */
static inline void rng_block_normals(struct rng *g, double *o)
{
    philox4x32_ctr_t r = rng_draw(g);
    for (int j = 0; j < 2; j++) {
        double u1 = ((double)r.v[2 * j] + 0.5) * RNG_U32;
        double u2 = ((double)r.v[2 * j + 1] + 0.5) * RNG_U32;
        double rad = sqrt(-2.0 * log(u1));
        double th = RNG_TWO_PI * u2;
        o[2 * j] = rad * cos(th);
        o[2 * j + 1] = rad * sin(th);
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
    for (; i + 4 <= n; i += 4)
        rng_block_normals(g, out + i);
    if (i < n) {
        rng_block_normals(g, g->buf);
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
