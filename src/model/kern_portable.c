/*
 * kern_portable.c: the kernels' portable path (kern_isa.h): the SGD step's kernels, double and
 * single, as plain C loops built for the baseline (x86-64-v2, no AVX), for every x86-64 machine.
 */
#if defined(__AVX__)
#error "the portable path is built without AVX (src/model/CMakeLists.txt)"
#endif
#define KERN_ISA(x) x##_plain /* not _portable: kern.h has names of that ending */
#define KERN_PATH portable
#include "kern_path.h"
