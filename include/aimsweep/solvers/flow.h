/*
 * flow.h: the population flow (docs/model.md §6) integrated on the run's own d x d matrices.
 *
 * direct: dS/dtau = -G;  tied: dW/dtau = -(G + G^T) W;  untied: dU = -G V, dV = -G^T U,
 * G = 2 Phi_omega S + 2 Phi_psi S^T + Phi_12 S*, weight decay adds -lambda * parameter.
 */
#ifndef AIMSWEEP_FLOW_H
#define AIMSWEEP_FLOW_H

#include "aimsweep/model/model.h"
#include "aimsweep/model/obs.h"

int flow_run(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx);
/* The same, steered by ctl (stop polled after every integrator step, checkpoints, resume: see
 * struct obs_ctl). Returns 0, -1 on allocation failure, -2 when ctl->resume does not fit. */
int flow_run_ctl(const struct model *m, struct traj *out, const struct obs_ctl *ctl);

/* The flow's right-hand side for a student state: dA (and dB for untied) in parameter form,
 * same shapes as s->A, s->B. Returns 0, or -1 when Phi cannot be evaluated. */
int flow_rhs(const struct model *m, const struct student *s, double *dA, double *dB);

#endif
