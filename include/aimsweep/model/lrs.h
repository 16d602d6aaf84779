/*
 * lrs.h: the learning-rate schedule (MODEL.md §4, §11) and the sample count it implies.
 *
 * `constant`: every step at eta = lr, n = tau d^2/eta. `two_phase(eta1, t_switch)`: the steps
 * begun while the fast clock t = d tau is below t_switch run at eta1, the rest at lr. Time
 * still advances by eta_step/d^2 per step, so n is no longer tau d^2/lr; this module is the one
 * place that converts between the two, for SGD (which counts its steps), the flow and the
 * moment ODE (which live in tau and report n(tau)), and for the noise term of the ODE (the rate
 * in force). The population flow itself does not depend on the rate.
 */
#ifndef AIMSWEEP_LRS_H
#define AIMSWEEP_LRS_H

#include "aimsweep/base/params.h"

struct lrs {
    int two_phase;
    double lr, eta1;         /* eta1 = lr for constant */
    long n1;                 /* SGD steps at eta1: ceil(t_switch d / eta1); 0 for constant */
    double tau_sw;           /* n1 eta1/d^2, the time the rate changes; +inf for constant */
    double per_tau, per_tau1; /* d^2/lr and d^2/eta1 */
    double offset;           /* n1 (1 - eta1/lr): n = tau d^2/lr + offset after the switch */
};

/* The schedule of a validated parameter set. */
void lrs_init(struct lrs *s, const struct params *p);

/* Samples after time tau: tau d^2/eta1 up to tau_sw, then n1 + (tau - tau_sw) d^2/lr, written
 * tau d^2/lr + n1 (1 - eta1/lr) so that with eta1 = lr it is tau d^2/lr to the last bit. A real
 * number: SGD takes llround of it as its step target. */
double lrs_samples(const struct lrs *s, double tau);

/* The rate in force at time tau (eta1 before tau_sw, lr from it on). */
double lrs_rate(const struct lrs *s, double tau);

#endif
