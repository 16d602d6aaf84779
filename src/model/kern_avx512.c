/*
 * kern_avx512.c: the SGD step's kernels, double and single, built for AVX-512 (x86-64-v4: F, CD, BW, DQ, VL), with the AVX2 kernels where it has no others (kern_isa.h).
 */
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__)
#error "the AVX-512 path is built with -march=x86-64-v4 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx512
#include "kern_isa_names.h"

#include "kern_f64_body.h"

#include "kern_f32_body.h"

#include "kern_isa.h"

const struct kern_ops kern_ops_avx512 = {
    .name = "avx512",
    KERN_OPS_VOID(KERN_OP_INIT_VOID) KERN_OPS_VALUE(KERN_OP_INIT_VALUE).rng_words =
        KERN_ISA(rng_words),
    .rng_batch = KERN_ISA(rng_batch),
};
