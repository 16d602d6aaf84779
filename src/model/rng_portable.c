/*
 * rng_portable.c: the Gaussian generator's batches (rng_batch.h) on the portable path, built for
 * the baseline (x86-64-v2, no AVX) with -ffast-math.
 */
#if defined(__AVX__)
#error "the portable path is built without AVX (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_plain /* not _portable: kern.h has names of that ending */
#include "rng_batch.h"
