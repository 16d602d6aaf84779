/*
 * ode.h: the order-M moment ODE (solver `ode`, MODEL.md §7, §7b).
 *
 * A moment system is a finite state vector y with a right-hand side and a map from y to the
 * recorded observables. The integrator (ode_integrate) is the same for every system: an
 * adaptive Runge-Kutta with error control (GSL odeiv2), records on the common tau grid, and
 * divergence detection (non-finite or exploding state: status RUN_ODE_DIVERGED).
 *
 * Systems: direct (closed, 3 unknowns), tied/untied word hierarchies (words.c) with the
 * closures of enum closure, and the tied spectral resummation (spectral.c). A system that
 * cannot be built (unsupported combination) leaves status RUN_ERROR and the message in out.
 */
#ifndef AIMSWEEP_ODE_H
#define AIMSWEEP_ODE_H

#include "aimsweep/model/model.h"
#include "aimsweep/model/obs.h"

struct mom_sys {
    int dim;
    double *y0;                                                   /* initial state, dim */
    int (*rhs)(void *ctx, double tau, const double *y, double *dydt); /* 0 or -1 */
    int (*observe)(void *ctx, const double *y, struct obs_row *row);  /* fills all but tau/samples */
    void (*destroy)(void *ctx);
    void *ctx;
    int stiff; /* 1: integrate with GSL's implicit BDF (msbdf), Jacobian by finite differences */
};

/* Builds the moment system of the model's parameters (decomposition, order_m, closure,
 * ode_noise) with initial values matched to the model's own initial matrices. Returns 0, or
 * -1 with a message in err. */
int ode_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen);
void ode_system_destroy(struct mom_sys *sys);

/* Integrates a system from its y0 over the tau grid of p (obs_tau_grid), pushing one row per
 * record into out. Divergence (the right-hand side fails, the state is non-finite or beyond
 * the explosion bound, the step collapses) is status RUN_ODE_DIVERGED with the tau in
 * out->error and diverged_at_samples = tau d^2/eta, never an error return. Returns 0, or -1
 * on allocation failure. Sets status, diverged_at_samples and wall_s. */
int ode_integrate(const struct mom_sys *sys, const struct params *p, struct traj *out);

/* Runs the ode solver of a model into out (traj_init done by the caller). */
int ode_run(const struct model *m, struct traj *out);

#endif
