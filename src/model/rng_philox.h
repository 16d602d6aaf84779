/*
 * rng_philox.h: what rng.c and the Gaussian batches of every path (rng_batch.h) share: one
 * Philox4x32-10 block of a stream, the batch's length, and the constants of Box-Muller.
 */
#ifndef AIMSWEEP_RNG_PHILOX_H
#define AIMSWEEP_RNG_PHILOX_H

#include "aimsweep/model/rng.h"

#include <Random123/philox.h>

#define RNG_TWO_PI 6.283185307179586476925286766559
#define RNG_U32 2.3283064365386962890625e-10 /* 2^-32 */
#define RNG_BATCH 32                         /* blocks */

static inline philox4x32_ctr_t rng_draw(struct rng *g)
{
    philox4x32_ctr_t c = {{(uint32_t)g->block, (uint32_t)(g->block >> 32), g->stream, g->dim}};
    philox4x32_key_t k = {{g->key[0], g->key[1]}};
    g->block++;
    return philox4x32(c, k);
}

#endif
