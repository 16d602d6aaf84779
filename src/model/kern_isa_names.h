/*
 * kern_isa_names.h: in a path's file (kern_portable.c, kern_avx2.c, kern_avx512.c), the public
 * names of kern.h's kernels given the path's suffix KERN_ISA(x), so that the kernels' bodies
 * (kern_f64_body.h, kern_f32_body.h) and kern.h's declarations name that path's functions; kern.c
 * defines the public names. Included before kern.h, and in no other file.
 */
#ifndef KERN_ISA
#error "kern_isa_names.h is included by a path's file only, after defining KERN_ISA(x)"
#endif

#define kern_vector KERN_ISA(kern_vector)
#define kern_paired KERN_ISA(kern_paired)
#define kern_dot KERN_ISA(kern_dot)
#define kern_dot3 KERN_ISA(kern_dot3)
#define kern_dot_f32 KERN_ISA(kern_dot_f32)
#define kern_update_project KERN_ISA(kern_update_project)
#define kern_project KERN_ISA(kern_project)
#define kern_update_project_portable KERN_ISA(kern_update_project_portable)
#define kern_project_portable KERN_ISA(kern_project_portable)
#define kern_update_project_f32 KERN_ISA(kern_update_project_f32)
#define kern_project_f32 KERN_ISA(kern_project_f32)
#define kern_update_project_f32_portable KERN_ISA(kern_update_project_f32_portable)
#define kern_project_f32_portable KERN_ISA(kern_project_f32_portable)
#define kern_update_project_fused KERN_ISA(kern_update_project_fused)
#define kern_update_project_fused_paired KERN_ISA(kern_update_project_fused_paired)
#define kern_update2_project2_paired KERN_ISA(kern_update2_project2_paired)
#define kern_update2_project2_paired_ld KERN_ISA(kern_update2_project2_paired_ld)
#define kern_project_fused_order KERN_ISA(kern_project_fused_order)
#define kern_update_project_fused_f32 KERN_ISA(kern_update_project_fused_f32)
#define kern_update_project_ahead_f32 KERN_ISA(kern_update_project_ahead_f32)
#define kern_project_fused_order_f32 KERN_ISA(kern_project_fused_order_f32)
#define kern_update2_project2_f32 KERN_ISA(kern_update2_project2_f32)
#define kern_update2_project2_f32_ld KERN_ISA(kern_update2_project2_f32_ld)
#define kern_band2_project2_f32 KERN_ISA(kern_band2_project2_f32)
#define kern_fma_burst KERN_ISA(kern_fma_burst)
#define kern_fma_chains KERN_ISA(kern_fma_chains)
#define kern_fma_loads KERN_ISA(kern_fma_loads)
#define kern_axpy KERN_ISA(kern_axpy)
#define kern_div KERN_ISA(kern_div)
#define kern_scal KERN_ISA(kern_scal)
