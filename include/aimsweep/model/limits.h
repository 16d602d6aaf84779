/*
 * limits.h: when a run has diverged. One place for the thresholds every solver applies, so
 * that `diverged` and `ode_diverged` mean the same thing whichever solver reports them.
 *
 * A run whose values are not finite, or beyond these magnitudes, stops and is recorded as
 * diverged with the step (SGD) or time (flow, ODE) at which it stopped (docs/model.md §9). The
 * magnitudes are far above anything a run that stays on its flow reaches (|h| and the order
 * parameters are O(1) there), and far below overflow, so detection comes early.
 */
#ifndef AIMSWEEP_LIMITS_H
#define AIMSWEEP_LIMITS_H

/* SGD: an entry of the attention index beyond this (or not finite) ends the step. */
#define LIMIT_INDEX_MAX 1e6
/* SGD and flow: an order parameter beyond this means the run blew up even where the index
 * has not (yet). */
#define LIMIT_OMEGA_MAX 1e12
/* Moment ODE: any tracked moment or observable beyond this is an exploded closure. */
#define LIMIT_MOMENT_MAX 1e8
/* Moment ODE: an adaptive step below this (in tau) means the system went stiff or singular. */
#define LIMIT_ODE_HMIN 1e-13

#endif
