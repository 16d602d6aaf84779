/*
 * mom.h: a moment system and the integrator every system shares (docs/model.md §7).
 *
 * A moment system is a finite state vector y with a right-hand side and a map from y to the
 * recorded observables. The closed direct system (direct.c), the word hierarchies of tied and
 * untied (words_*.c) and the tied spectral resummation (spectral.c) each build one; ode.c picks
 * the system of a model's parameters. The integrator (mom_integrate) is an adaptive Runge-Kutta
 * with error control (GSL odeiv2), or for a stiff system (the mean of docs/model.md §10, rate d) GSL's
 * implicit multistep BDF, that records on a tau grid and detects divergence (non-finite or
 * exploding state: status RUN_ODE_DIVERGED).
 */
#ifndef AIMSWEEP_MOM_H
#define AIMSWEEP_MOM_H

#include "aimsweep/base/params.h"
#include "aimsweep/model/obs.h"

struct mom_sys {
    int dim;
    double *y0;                                                       /* initial state, dim */
    int (*rhs)(void *ctx, double tau, const double *y, double *dydt); /* 0 or -1 */
    int (*observe)(void *ctx, const double *y, struct obs_row *row); /* fills all but tau/samples */
    void (*destroy)(void *ctx);
    void *ctx;
    int stiff; /* 1: integrate with GSL's implicit BDF (msbdf), Jacobian by finite differences */
    /* optional: why the system stopped, if it knows (written into buf after a divergence) */
    void (*why)(void *ctx, char *buf, size_t n);
    /* optional: after each accepted step, may rewrite y in another set of variables of the
     * same system; returns 0 (y unchanged), MOM_REMAP (the integrator restarts its stepper
     * from the new y) or MOM_REMAP_STIFF (and integrates on with the implicit BDF) */
    int (*remap)(void *ctx, double *y);
};
enum { MOM_REMAP = 1, MOM_REMAP_STIFF = 2 };

/* Releases a system's context and initial state; accepts a zeroed system and zeroes it. */
void mom_sys_destroy(struct mom_sys *sys);

/* Integrates a system from its y0 over the ntau increasing values grid[0..ntau-1] (grid[0] =
 * 0), or over the tau grid of p (obs_tau_grid) when grid is NULL, pushing one row per record
 * into out; p also gives samples = tau d^2/eta. The stepper and its tolerances are mom.c's.
 * Divergence (the right-hand side fails, the state is non-finite or beyond the explosion bound,
 * the step collapses, the step budget runs out) is status RUN_ODE_DIVERGED with the tau in
 * out->error and diverged_at_samples = tau d^2/eta, never an error return. Returns 0, or -1 on
 * allocation failure. Sets status, diverged_at_samples and wall_s. */
int mom_integrate(const struct mom_sys *sys, const struct params *p, int ntau, const double *grid,
                  struct traj *out);
/* The same, polling stop(ctx) every MOM_POLL_STEPS steps (a nonzero answer ends the run with
 * RUN_INTERRUPTED and the records so far). */
int mom_integrate_stop(const struct mom_sys *sys, const struct params *p, int ntau,
                       const double *grid, struct traj *out, obs_stop_fn stop, void *ctx);

#endif
