/*
 * ode.c: the order-M moment ODE. Placeholder until the moment systems land: reports that the
 * solver is unavailable.
 */
#include "aimsweep/ode.h"

#include <stdio.h>

int ode_run(const struct model *m, struct traj *out)
{
    (void)m;
    out->status = RUN_ERROR;
    snprintf(out->error, sizeof out->error, "the ode solver is not available in this build");
    return 0;
}
