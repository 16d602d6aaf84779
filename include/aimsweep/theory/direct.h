/*
 * direct.h: the closed moment system of the direct decomposition (docs/model.md §6): three order
 * parameters and the trace, exact at every order M (derivation in direct.c).
 */
#ifndef AIMSWEEP_DIRECT_H
#define AIMSWEEP_DIRECT_H

#include <stddef.h>

#include "aimsweep/model/model.h"
#include "aimsweep/theory/mom.h"

/* Builds the direct system of a model, with initial values the exact traces of the run's own
 * S0 and the O(eta) noise drift when p.ode_noise. Returns 0, or -1 with a message in err. */
int direct_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen);

#endif
