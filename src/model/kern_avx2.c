/*
 * kern_avx2.c: the kernels' avx2 path (kern_isa.h): the SGD step's kernels, double and single,
 * built for AVX2 and FMA (x86-64-v3).
 */
#if !defined(__AVX2__) || !defined(__FMA__) || defined(__AVX512F__)
#error "the AVX2 path is built with -march=x86-64-v3 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx2
#define KERN_PATH avx2
#include "kern_path.h"
