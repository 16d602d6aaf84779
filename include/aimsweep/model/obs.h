/*
 * obs.h: observables (docs/model.md §8), the tau grid they are recorded on, and a solver's
 * trajectory.
 *
 * Every solver records the same row at the same tau values, so rows of sgd, flow and ode
 * compare one to one. A trajectory owns its rows; `traj_free` releases them and leaves it empty.
 */
#ifndef AIMSWEEP_OBS_H
#define AIMSWEEP_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/task_status.h"

struct obs_row {
    double tau;
    double samples; /* n = tau d^2 / eta (a double: it exceeds 2^53 never, but saves casts) */
    double omega11; /* Tr(S S^T)/d */
    double psi11;   /* Tr(S^2)/d */
    double omega12; /* Tr(S S*)/d */
    double trace;   /* t1 = Tr(S)/d */
    double overlap; /* centred overlap m */
    double
        loss; /* population loss Phi(omega11, psi11, omega12) (with the mean: docs/model.md §10) */
    double mu; /* the mean of the index, mu = Tr(S)/sqrt(d) = sqrt(d) t1 (docs/model.md §10) */
};

/* Outcome of one solver run. */
enum run_status {
    RUN_OK = 0,
    RUN_DIVERGED,     /* sgd or flow: non-finite or exploding values; stopped */
    RUN_ODE_DIVERGED, /* ode: a closure or word went non-finite or exploded */
    RUN_ERROR,        /* anything else: see the message */
    RUN_INTERRUPTED,  /* stopped from outside before the end */
    RUN_TIMEOUT       /* stopped by the task's own wall limit */
};
/* The status a solver's outcome stands for in the database's vocabulary (task_status.h):
 * done, diverged, ode_diverged, error or interrupted; a value out of range is an error. */
enum task_status run_status_task(enum run_status s);
/* Its word: task_status_name(run_status_task(s)). */
const char *run_status_name(enum run_status s);

/* Optional: polled by the solvers within seconds (between steps, not only between records); a
 * nonzero return stops the run with RUN_INTERRUPTED. OBS_STOP_TIMEOUT says that the task's own
 * wall limit, not a signal, asked for the stop (the worker records it as RUN_TIMEOUT);
 * OBS_STOP_ABANDON that the task was given to another rank (this rank was taken for stalled):
 * stop and leave no checkpoint, the other rank's run owns it. */
typedef int (*obs_stop_fn)(void *ctx);
enum { OBS_STOP_NONE = 0, OBS_STOP_INTERRUPT = 1, OBS_STOP_TIMEOUT = 2, OBS_STOP_ABANDON = 3 };

struct traj;

/* How a long solver (SGD, flow) is steered from outside; every member may be zero/NULL.
 * stop: as obs_stop_fn. Checkpoints: when due(save_ctx) returns nonzero between steps, and when
 * the solver stops on request, it calls save(save_ctx, t, state, len) with its trajectory so far
 * and its state (opaque bytes, valid during the call); a failed save is not fatal. resume: a
 * state from an earlier save of the same task and solver, with the trajectory so far already
 * in the solver's traj; the solver continues from it, and the finished trajectory is bit for
 * bit the one an uninterrupted run gives. A state that does not fit the model is refused
 * (the solver returns -2 and leaves the traj alone). */
struct obs_ctl {
    obs_stop_fn stop;
    void *stop_ctx;
    int (*due)(void *save_ctx);
    int (*save)(void *save_ctx, const struct traj *t, const void *state, size_t len);
    void *save_ctx;
    const void *resume;
    size_t resume_len;
};

/* The stop callback's answer (0 without one). */
int obs_ctl_stop(const struct obs_ctl *c);

struct traj {
    int solver; /* SOLVER_SGD, SOLVER_FLOW or SOLVER_ODE */
    int n, cap;
    struct obs_row *rows;
    enum run_status status;
    double diverged_at_samples; /* step at which the run stopped, or -1 */
    double wall_s;
    char error[256];
};

/* The record times: records + 1 values from 0 to tau_end inclusive, linear, or log-spaced
 * from log_start (tau_end * 1e-3 when log_start is 0; with 0 first) when log_grid. Writes into taus (records + 1 values). */
void obs_tau_grid(const struct params *p, double *taus);

int traj_init(struct traj *t, int solver, int cap);
int traj_push(struct traj *t, const struct obs_row *row);
void traj_free(struct traj *t);

/* The centred overlap from the traces: omega12, omega11, t1, and the teacher's t2 = Tr(S*)/d
 * (Tr S*^2/d = 1). Uses Tr(S~ S~*)/d = omega12 - t1 t2, Tr(S~ S~^T)/d = omega11 - t1^2,
 * Tr(S~*^2)/d = 1 - t2^2. */
double obs_overlap(double omega11, double omega12, double t1, double t2);

/* The overlap that weak recovery reads (docs/model.md §8): |m| when the loss cannot tell S from
 * -S (sign_symmetric, from params_act_sign_symmetric: an even activation), m itself otherwise. */
double obs_recovery_overlap(double m, int sign_symmetric);

/* Weak recovery: the tau at which the recovery overlap r = obs_recovery_overlap(m, sign_symmetric)
 * first reaches threshold, linear in tau on r between the last record below it (k - 1) and the
 * first at or above it (k):
 *     tau_wr = tau_{k-1} + (threshold - r_{k-1}) / (r_k - r_{k-1}) (tau_k - tau_{k-1}),
 * and the sample count the same way between n_{k-1} and n_k, rounded to an integer (n is
 * counted, not computed from tau, so this holds for any learning-rate schedule). When record 0
 * is already at or above threshold (or record k - 1 is not finite), tau_wr = tau_k. A non-finite
 * overlap never counts. The database's view recovery_segments recomputes this for any threshold
 * (store.h). Returns 0 with *tau and *samples, or -1 when r never reaches threshold. */
int obs_recovery(const struct traj *t, int sign_symmetric, double threshold, double *tau,
                 double *samples);

/* The tau of obs_recovery, or -1 when never reached. */
double obs_tau_wr(const struct traj *t, int sign_symmetric, double threshold);

/* name of a solver bit */
const char *obs_solver_name(int solver);

#endif
