/*
 * ode.h: the order-M moment ODE (solver `ode`, docs/model.md §7, §7b): the moment system of a
 * model's parameters (ode.c picks it), integrated by mom_integrate (mom.h).
 *
 * Systems: direct (closed, 3 unknowns, direct.c), tied/untied word hierarchies (words_*.c) with
 * the closures of enum closure, and the tied spectral resummation (spectral.c). A system that
 * cannot be built (unsupported combination) leaves status RUN_ERROR and the message in out.
 */
#ifndef AIMSWEEP_ODE_H
#define AIMSWEEP_ODE_H

#include <stddef.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/obs.h"
#include "aimsweep/theory/mom.h"

/* Builds the moment system of the model's parameters (decomposition, order_m, closure,
 * ode_noise) with initial values matched to the model's own initial matrices. Returns 0, or
 * -1 with a message in err. Release it with mom_sys_destroy. */
int ode_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen);

/* Whether ode_system_create would accept p (decomposition, closure, order, noise), without
 * building anything: 0, or -1 with a message. Planning runs it on every grid point. */
int ode_check(const struct params *p, char *err, size_t errlen);

/* Runs the ode solver of a model into out (traj_init done by the caller). */
int ode_run(const struct model *m, struct traj *out);
/* The same, polling stop(ctx) between integrator steps (RUN_INTERRUPTED when it answers). */
int ode_run_stop(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx);

#endif
