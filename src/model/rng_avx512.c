/*
 * rng_avx512.c: the Gaussian generator's batches (rng_batch.h) on the avx512 path, built for
 * x86-64-v4 with -ffast-math.
 */
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "the AVX-512 path is built with -march=x86-64-v4 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx512
#include "rng_batch.h"
