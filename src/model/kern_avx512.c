/*
 * kern_avx512.c: the kernels' avx512 path (kern_isa.h): the SGD step's kernels, double and
 * single, built for AVX-512 (x86-64-v4: F, CD, BW, DQ, VL), the AVX2 kernels where it has no
 * others.
 */
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "the AVX-512 path is built with -march=x86-64-v4 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx512
#define KERN_PATH avx512
#include "kern_path.h"
