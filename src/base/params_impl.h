/*
 * params_impl.h: what the two files of the parameter module share and no one else: the
 * defaults and the limits (every number a reader of the ranges needs, named once), and the
 * word lists that the table (params.c) shows and the parsers (params_parse.c) read. The
 * interface is include/aimsweep/base/params.h.
 */
#ifndef AIMSWEEP_BASE_PARAMS_IMPL_H
#define AIMSWEEP_BASE_PARAMS_IMPL_H

/* Defaults: a small tied point that shows weak recovery by drift in a few seconds. */
#define PARAMS_DEFAULT_D 100
#define PARAMS_DEFAULT_LR 0.05
#define PARAMS_DEFAULT_INIT_SCALE 0.7
#define PARAMS_DEFAULT_TOKENS 2
#define PARAMS_DEFAULT_WIDTH 1.0
#define PARAMS_DEFAULT_TAU_END 0.5
#define PARAMS_DEFAULT_RECORDS 20
#define PARAMS_DEFAULT_THRESHOLD 0.5
#define PARAMS_DEFAULT_ORDER 4
#define PARAMS_DEFAULT_BETA 1.0
/* Limits that catch typos rather than restrict science. */
#define PARAMS_MIN_D 2
#define PARAMS_MAX_D 100000
#define PARAMS_MAX_RECORDS 1000000
#define PARAMS_MAX_ORDER 16
/* 2^53 - 1: every seed up to it is exact as a double. Not 2^53 itself: 2^53 + 1, read as a
 * double, rounds to 2^53, and would silently become another seed. */
#define PARAMS_MAX_SEED 9007199254740991.0
/* What the solvers can do (the same bounds as the storage-reliability work): lr and
 * weight_decay beyond 1e3 make the explicit flow's step vanish; tied/untied order parameters
 * grow like s0^4, so init_scale 100 reaches the divergence limits before the first step; tau_end
 * between 1e-9 and 1e6. */
#define PARAMS_MAX_LR 1e3
#define PARAMS_MAX_INIT_SCALE 100.0
#define PARAMS_MAX_WEIGHT_DECAY 1e3
#define PARAMS_MIN_TAU_END 1e-9
#define PARAMS_MAX_TAU_END 1e6
/* The student's rank r = round(width d) is at most this many times d. */
#define PARAMS_MAX_RANK_PER_D 4
/* The arguments of the parenthesised values, bounded by what the solvers can do:
 *   wishart rho <= 16: r* = round(rho d) is a matrix dimension (the teacher's d x r* factor);
 *     wishart(1e8) at d = 12 asked for 115 GB and crashed.
 *   softmax beta <= 20: the flow and the ODE grow stiff with beta (d = 12, T = 2, the flow:
 *     0.5 s at beta = 5, 1.1 s at 10, 3.3 s at 20, over a minute at 40; at 1e300 the population
 *     loss is not even computable and SGD stored NaN as done).
 *   Hermite coefficients and goe_shift m within +-1e6: beyond, the loss overflows. */
#define PARAMS_MAX_RHO 16.0
#define PARAMS_MAX_BETA 20.0
#define PARAMS_MAX_COEF 1e6
/* Most SGD samples one run may ask for (tau_end d^2 / lr): the count is kept exactly in a
 * double and in a long (2^53 steps are centuries of computing anyway). */
#define PARAMS_MAX_SAMPLES 9007199254740992.0
/* The flow is integrated explicitly: with weight decay lambda its step is at most ~1/lambda,
 * so it takes at least lambda tau_end steps of d^3 work each (lambda tau_end = 1e5 takes 0.8 s
 * at d = 20, 8000 times that at d = 400). Above this the flow is refused. */
#define PARAMS_MAX_FLOW_STIFFNESS 1e6
/* Untied moment ODE: the highest order whose word system builds in seconds. Order 7 tracks
 * 7673 word classes and spends ~30 s and ~330 MB building its terms before the first step
 * (measured at d = 20; the build does not depend on tau_end). */
#define PARAMS_MAX_ORDER_UNTIED 6
/* init_trace: a typo guard, t I with |t| <= this */
#define PARAMS_MAX_INIT_TRACE 1e3
/* The most SGD steps a two_phase first phase may take (t_switch d / eta1): beyond it the step
 * count would not fit a long; no run gets near it. */
#define PARAMS_MAX_SWITCH_STEPS 1e15

/* The words of the parenthesised and listed values (NULL-terminated), for the table's choices
 * and the parsers' suggestions. */
extern const char *const params_act_words[];
extern const char *const params_teacher_words[];
extern const char *const params_solver_words[];
extern const char *const params_lr_schedule_words[];

#endif
