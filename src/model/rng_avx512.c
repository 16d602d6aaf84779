/*
 * rng_avx512.c: the Gaussian generator's batches built for AVX-512 (x86-64-v4: F, CD, BW, DQ, VL), with the AVX2 kernels where it has no others, with -ffast-math (rng_batch.h).
 */
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "the AVX-512 path is built with -march=x86-64-v4 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx512
#include "rng_batch.h"
