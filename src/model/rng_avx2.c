/*
 * rng_avx2.c: the Gaussian generator's batches (rng_batch.h) on the avx2 path, built for
 * x86-64-v3 with -ffast-math.
 */
#if !defined(__AVX2__) || !defined(__FMA__) || defined(__AVX512F__)
#error "the AVX2 path is built with -march=x86-64-v3 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx2
#include "rng_batch.h"
