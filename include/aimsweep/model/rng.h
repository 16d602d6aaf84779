/*
 * rng.h: counter-based random numbers (Random123 Philox4x32-10).
 *
 * A stream is keyed by the run's seed and addressed by (stream, dim, index): the numbers a
 * task draws depend on (seed, stream, d, position) only, never on which rank or in which order
 * tasks run. Gaussians come from Box-Muller on 32-bit uniforms (tails cut at 6.66 sigma).
 */
#ifndef AIMSWEEP_RNG_H
#define AIMSWEEP_RNG_H

#include <stddef.h>
#include <stdint.h>

struct rng {
    uint32_t key[2];
    uint32_t stream, dim;
    uint64_t block; /* next Philox block to draw */
    double buf[4];
    int nbuf;
};

/* Starts a stream at block 0. */
void rng_init(struct rng *g, uint64_t seed, uint32_t stream, uint32_t dim);

/* Moves a stream to block `block` (4 Gaussians per block) and empties its buffer. */
void rng_seek(struct rng *g, uint64_t block);

/* Moves a stream to its n-th normal (the one rng_normals would return after n others). */
void rng_seek_normal(struct rng *g, uint64_t n);

/* Fills out with n standard normals. */
void rng_normals(struct rng *g, double *out, size_t n);

/* The 4 nb 32-bit words of the stream's next nb Philox4x32-10 blocks, block by block (what
 * the normals are made from), and the stream moved past them. */
void rng_words(struct rng *g, uint32_t *w, int nb);

/* One uniform in (0, 1). */
double rng_uniform(struct rng *g);

#endif
