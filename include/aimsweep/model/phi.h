/*
 * phi.h: the population loss Phi(omega11, psi11, omega12) and its gradient (MODEL.md §5).
 *
 * Elementwise activations act on the T(T-1) ordered off-diagonal entries, each a bivariate
 * normal (u, w) with Var u = omega11, Cov = omega12, Var w = 1, so
 *   Phi = T(T-1) * 1/2 E[(sigma(u) - sigma(w))^2]     (psi11 does not enter).
 * Softmax acts on rows: Phi = T * E[1/2 |softmax(beta u) - softmax(beta w)|^2] with the T pairs
 * of one row independent, the diagonal pair having Var u = omega11 + psi11, Cov = 2 omega12,
 * Var w = 2.
 *
 * Hermite, erf and relu use closed forms; tanh and softmax use quadrature whose error is stated
 * in phi_val.err (the difference to a coarser rule: an overestimate).
 * Gradients follow from Price's theorem: dE[F]/dVar u = 1/2 E[F_uu], dE[F]/dCov = E[F_uw].
 */
#ifndef AIMSWEEP_PHI_H
#define AIMSWEEP_PHI_H

#include "aimsweep/base/params.h"

struct phi_val {
    double phi;
    double d_omega11, d_psi11, d_omega12; /* partial derivatives */
    double err;                           /* estimated absolute error of phi (0 for closed forms) */
};

/* Evaluates Phi and its gradient. Returns 0, or -1 when the covariance is not positive
 * semidefinite (omega11 < omega12^2 beyond rounding) or values are not finite. */
int phi_eval(const struct act *a, int T, double omega11, double psi11, double omega12,
             struct phi_val *out);

/* The Gauss-Hermite path for any elementwise activation and the general softmax path (tensor
 * rule or Monte Carlo, also for T = 2): independent routes to the same numbers, for tests. */
int phi_eval_quadrature(const struct act *a, int T, double omega11, double omega12,
                        struct phi_val *out);
int phi_eval_softmax_general(const struct act *a, int T, double omega11, double psi11,
                             double omega12, struct phi_val *out);

#define PHI_GH_MAX 128

/* Gauss-Hermite rule for the standard normal weight: nodes x, weights w (sum 1), n points. */
void phi_gh_rule(int n, double *x, double *w);

#endif
