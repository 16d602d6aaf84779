/*
 * kern_avx2.c: the SGD step's kernels, double and single, built for AVX2 and FMA (x86-64-v3) (kern_isa.h).
 */
#if !defined(__AVX2__) || !defined(__FMA__) || defined(__AVX512F__)
#error "the AVX2 path is built with -march=x86-64-v3 (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_avx2
#include "kern_isa_names.h"

#include "kern_f64_body.h"

#include "kern_f32_body.h"

#include "kern_isa.h"

const struct kern_ops kern_ops_avx2 = {
    .name = "avx2",
    KERN_OPS_VOID(KERN_OP_INIT_VOID) KERN_OPS_VALUE(KERN_OP_INIT_VALUE).rng_words =
        KERN_ISA(rng_words),
    .rng_batch = KERN_ISA(rng_batch),
};
