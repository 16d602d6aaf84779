/*
 * kern_portable.c: the SGD step's kernels, double and single, built for every x86-64 machine: the baseline, x86-64-v2, with no AVX (kern_isa.h).
 */
#if defined(__AVX__)
#error "the portable path is built without AVX (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_plain /* not _portable: kern.h has names of that ending */
#include "kern_isa_names.h"

#include "kern_f64_body.h"

#include "kern_f32_body.h"

#include "kern_isa.h"

const struct kern_ops kern_ops_portable = {
    .name = "portable",
    KERN_OPS_VOID(KERN_OP_INIT_VOID) KERN_OPS_VALUE(KERN_OP_INIT_VALUE).rng_words =
        KERN_ISA(rng_words),
    .rng_batch = KERN_ISA(rng_batch),
};
