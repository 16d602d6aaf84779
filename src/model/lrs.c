/*
 * lrs.c: the learning-rate schedule and samples against tau (lrs.h).
 *
 * Step i (from 0) starts at tau_i = i eta1/d^2 while in the first phase; it runs at eta1 when
 * t_i = d tau_i < t_switch, i.e. i < t_switch d/eta1, which holds for the first
 * n1 = ceil(t_switch d/eta1) steps. The first phase ends at tau_sw = n1 eta1/d^2 (at or just
 * after t_switch/d), and afterwards tau = tau_sw + (n - n1) lr/d^2, so
 *   n(tau) = tau d^2/eta1                          (tau <= tau_sw)
 *          = n1 + (tau - tau_sw) d^2/lr = tau d^2/lr + n1 (1 - eta1/lr)   (tau > tau_sw),
 * continuous at tau_sw. Both branches equal tau d^2/lr bit for bit when eta1 = lr (eta1/lr is
 * then exactly 1), so two_phase(lr, t) reproduces constant.
 */
#include "aimsweep/model/lrs.h"

#include <math.h>

void lrs_init(struct lrs *s, const struct params *p)
{
    double d = p->d;
    s->two_phase = p->lr_schedule.kind == LR_TWO_PHASE;
    s->lr = p->lr;
    s->eta1 = s->two_phase ? p->lr_schedule.eta1 : p->lr;
    s->per_tau = d * d / s->lr;
    s->per_tau1 = d * d / s->eta1;
    s->n1 = s->two_phase ? (long)ceil(p->lr_schedule.t_switch * d / s->eta1) : 0;
    s->tau_sw = s->two_phase ? (double)s->n1 * s->eta1 / (d * d) : INFINITY;
    s->offset = (double)s->n1 * (1.0 - s->eta1 / s->lr);
}

double lrs_samples(const struct lrs *s, double tau)
{
    if (!s->two_phase)
        return tau * s->per_tau;
    if (tau <= s->tau_sw)
        return tau * s->per_tau1;
    return tau * s->per_tau + s->offset;
}

double lrs_rate(const struct lrs *s, double tau) { return tau < s->tau_sw ? s->eta1 : s->lr; }
