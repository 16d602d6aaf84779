/*
 * noise.h: the O(eta) SGD-noise correction of the moment ODE (docs/model.md §6).
 *
 * One SGD step changes every quadratic trace by a first-order term (the flow) plus a
 * second-order term of size (eta/d)^2 Tr(g A g^(T) B)/d. At leading order in d these
 * factorise into normalised traces times two Gaussian expectations of the per-sample loss
 * derivative D_ab = dl/dh_ab (T x T), evaluated at the current order parameters:
 *   n1 = E[sum_ab D_ab^2]       (pairs g ... g^T:  Tr(g A g^T B)/d -> m(A) m(B) n1)
 *   n2 = E[sum_ab D_ab D_ba]    (pairs g ... g:    Tr(g A g B)/d   -> m(A) m(B) n2)
 * The derivation and the resulting terms for direct, tied and untied words are in
 * docs/noise.md.
 */
#ifndef AIMSWEEP_NOISE_H
#define AIMSWEEP_NOISE_H

#include "aimsweep/base/params.h"

struct noise_val {
    double n1;  /* E sum_ab D_ab^2 */
    double n2;  /* E sum_ab D_ab D_ba */
    double err; /* estimated absolute error of n1, n2 when requested (0 for Hermite: exact) */
};

/* The two noise expectations at (omega11, psi11, omega12) for T tokens. Hermite activations
 * use tensor Gauss-Hermite rules (exact), relu and erf closed forms (exact up to rounding), tanh
 * and softmax at T = 2 truncated Mehler expansions with trapezoidal rules; softmax at T >= 3 a
 * product rule over the 2T-dimensional row law and, for the cross-row term, the row average
 * conditioned on the shared entry. want_err != 0 also reports the estimated error (the Mehler
 * tail, or the difference to a smaller product rule at twice the cost). Returns 0, or -1 when
 * the covariance is not positive semidefinite beyond rounding, a value is not finite, or
 * softmax has T > 6. */
int noise_eval(const struct act *a, int T, double omega11, double psi11, double omega12,
               int want_err, struct noise_val *out);

/* The Gauss-Hermite product rule for any elementwise activation with n2d nodes per axis (n1)
 * and n3d (n2), whatever noise_eval uses for it: an independent route, for tests. */
int noise_eval_rule(const struct act *a, int T, double omega11, double psi11, double omega12,
                    int n2d, int n3d, struct noise_val *out);

/* Softmax(beta) at T = 2 by the 4D Gauss-Hermite rule with n nodes per axis (the route the
 * Mehler sums replaced), for tests. */
int noise_softmax2_rule(double beta, double omega11, double psi11, double omega12, int n,
                        struct noise_val *out);

/* Direct: the O(eta) drift of (omega11, psi11, omega12, t1) per unit tau, to be added to the
 * flow's right-hand side: eta * (n1, n2, 0, 0). */
void noise_direct_drift(double eta, const struct noise_val *nv, double drift[4]);

#endif
