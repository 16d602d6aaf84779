/*
 * rng.c: Gaussian streams on Random123's Philox4x32-10: the streams' addresses here, their
 * batches of words and normals in the chosen path's build of rng_batch.h (kern_isa.h).
 */
#include "aimsweep/model/rng.h"

#include "kern_isa.h"
#include "rng_philox.h"

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

/* The words of the chosen path's batch (rng_batch.h); the same words on every path. */
void rng_words(struct rng *g, uint32_t *w, int nb) { kern_ops()->rng_words(g, w, nb); }

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
    void (*batch)(struct rng *, double *, int) = kern_ops()->rng_batch;
    while (n - i >= 4) {
        size_t nb = (n - i) / 4;
        if (nb > RNG_BATCH)
            nb = RNG_BATCH;
        batch(g, out + i, (int)nb);
        i += 4 * nb;
    }
    if (i < n) {
        batch(g, g->buf, 1);
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
