/*
 * sgd.h: online SGD of the student (docs/model.md §4), one fresh sample per step.
 *
 * The step never forms S for tied/untied: it works with the projections W^T x_a. Each step
 * is one fused pass over the parameters: the rank-T update and the projections of the next
 * sample are computed in the same sweep over memory.
 */
#ifndef AIMSWEEP_SGD_H
#define AIMSWEEP_SGD_H

#include "aimsweep/model/model.h"
#include "aimsweep/model/obs.h"

/* Runs SGD from the model's initial state to tau_end, recording on the tau grid into out
 * (traj_init done by the caller). The steps follow the learning-rate schedule (params.h): the
 * record at tau is taken after llround(n(tau)) steps, and its `samples` is that count. Divergence is a status in out, never an error return.
 * Returns 0, or -1 on allocation failure. */
int sgd_run(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx);
/* The same, steered by ctl (stop polled every few milliseconds of steps, checkpoints, resume:
 * see struct obs_ctl). Returns 0, -1 on allocation failure, -2 when ctl->resume does not fit. */
int sgd_run_ctl(const struct model *m, struct traj *out, const struct obs_ctl *ctl);

/* A stepping state, exposed for tests and benchmarks. */
struct sgd_state;
struct sgd_state *sgd_state_create(const struct model *m);
/* The same, from the initial state but with sample number `first` of the run's stream as its
 * first sample (the samples of a run are numbered 0, 1, ...). */
struct sgd_state *sgd_state_create_at(const struct model *m, long first);
void sgd_state_destroy(struct sgd_state **st);
/* Takes nsteps steps; returns 0, or 1 when the run diverged (values non-finite/exploding). */
int sgd_steps(struct sgd_state *st, long nsteps);
/* How many samples share one read of the teacher's factor: those drawn ahead with the paired
 * layout (double precision with AVX-512, T = 2) or with the float vector kernels (precision
 * single with AVX2, T = 2), else 1. For the bytes a step moves (bench). Every row of the
 * factor is shared. */
int sgd_samples_per_factor_read(const struct sgd_state *st);
/* Steps per pass over the stored parameters: 2 for the two-step pass (T = 2: in double with the
 * AVX-512 kernel, tied and untied in single with the float kernels; sgd_two.c), else 1. */
int sgd_steps_per_pass(const struct sgd_state *st);
/* The entries of the stored parameters a pass reads and writes: d^2 (direct), d r (tied), 2 d r
 * (untied); direct keeping half of S (sgd_set_symmetric) about d^2/2 + 16 d. For the bench. */
size_t sgd_entries_per_pass(const struct sgd_state *st);
/* on = 0: one step per pass from here on, as in a build without the two-step kernel (for the
 * tests and the bench, which compare the two); on = 1: back to the two-step pass where there is
 * one. P is the same either way; the projections are summed in another order. */
void sgd_set_two_step(struct sgd_state *st, int on);
/* Direct with an elementwise activation keeps half of the symmetric S (src/solvers/sgd_sym.c)
 * where the two-step pass runs (T = 2, d even): half the work of a step. on = 0 keeps the whole
 * S from here on (for the tests and the bench, which compare the two), on = 1 half again where
 * it can. sgd_symmetric tells which is in use. */
void sgd_set_symmetric(struct sgd_state *st, int on);
int sgd_symmetric(const struct sgd_state *st);
/* The current student in the model's layout (borrowed; valid until the next step or destroy).
 * Writes it out from the stepping state when it has changed since the last call. */
const struct student *sgd_student(struct sgd_state *st);
/* The state between two steps as bytes (sgd_state_size of them), and back into a state made
 * for the same model: restoring gives the very steps that would have followed. restore
 * returns 0, or -1 when the bytes are not such a state (nothing changed then). */
size_t sgd_state_size(struct sgd_state *st);
void sgd_state_save(struct sgd_state *st, unsigned char *buf);
int sgd_state_restore(struct sgd_state *st, const unsigned char *buf, size_t n);
/* The rate of the steps that follow (the state starts at the grid's lr); sgd_run sets it from
 * the schedule (params_switch_steps). */
void sgd_set_lr(struct sgd_state *st, double lr);

/* One step's update given a sample, without the fused machinery: the reference used by the
 * tests. x is T x d tokens. Updates s in place; returns 0, or -1 (s untouched) when memory for
 * the d x d gradient is lacking. */
int sgd_reference_step(const struct params *p, struct student *s, const double *teacher,
                       const double *x);

#endif
