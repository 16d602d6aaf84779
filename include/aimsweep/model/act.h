/*
 * act.h: the activation sigma and its derivatives, and the softmax row map.
 */
#ifndef AIMSWEEP_ACT_H
#define AIMSWEEP_ACT_H

#include "aimsweep/base/params.h"

/* sigma(h), sigma'(h), sigma''(h) of an elementwise activation (not softmax). */
double act_f(const struct act *a, double h);
double act_df(const struct act *a, double h);
double act_d2f(const struct act *a, double h);
/* sigma(h) and sigma'(h) at once, each equal to act_f's and act_df's bit for bit. */
void act_f_df(const struct act *a, double h, double *f, double *df);

/* softmax(beta s) of a row of length T into p. */
void act_softmax(double beta, int T, const double *s, double *p);

#endif
