/*
 * kern_path.h: a path's file of the kernels (kern_portable.c, kern_avx2.c, kern_avx512.c) is
 * this, after KERN_ISA(x) (the suffix of its functions) and KERN_PATH (its name) are defined: the
 * kernels' bodies compiled under the path's names, and its table (kern_isa.h). Not a header.
 */
#if !defined(KERN_ISA) || !defined(KERN_PATH)
#error "kern_path.h is included by kern_portable.c, kern_avx2.c and kern_avx512.c only"
#endif
#include "kern_isa_names.h"

#include "kern_f64_body.h"

#include "kern_f32_body.h"

#include "kern_isa.h"

#define KERN_TABLE(path) KERN_TABLE_(path)
#define KERN_TABLE_(path) kern_ops_##path
#define KERN_NAME_OF(path) KERN_NAME_OF_(path)
#define KERN_NAME_OF_(path) #path

const struct kern_ops KERN_TABLE(KERN_PATH) = {
    .name = KERN_NAME_OF(KERN_PATH),
    KERN_OPS_VOID(KERN_OP_INIT_VOID) KERN_OPS_VALUE(KERN_OP_INIT_VALUE).rng_words =
        KERN_ISA(rng_words),
    .rng_batch = KERN_ISA(rng_batch),
};
