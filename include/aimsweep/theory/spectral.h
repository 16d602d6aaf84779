/*
 * spectral.h: the exact spectral resummation of the tied hierarchy (closure `spectral`,
 * docs/model.md §7b).
 *
 * Without the noise term, H = h_S S + h_P P and
 *   S(tau) = E (S0^-1 + F(P))^-1 E,   E = exp(-phi P - psi),  psi = lambda_wd tau,
 *   phi' = h_P,   F(l)' = 2 h_S exp(-2 phi l - 2 psi),
 * with h_S = 4 (Phi_omega + Phi_psi), h_P = 2 Phi_12 (S is symmetric). The traces follow from
 * additive free subordination of A = S0^-1 and B = F(P) at z = 0, integrated over the
 * teacher's spectral measure nu, which is replaced by its M-point Gauss rule. The state is
 * (phi, psi, F(l_1..l_M)).
 *
 * S0's spectrum is either the run's own (closure `spectral`, "matched") or Marchenko-Pastur
 * with the decomposition's aspect ratio and scale (closure `spectral_mp`, the d -> infinity
 * form).
 */
#ifndef AIMSWEEP_SPECTRAL_H
#define AIMSWEEP_SPECTRAL_H

#include <stddef.h>

#include "aimsweep/model/model.h"
#include "aimsweep/theory/mom.h"

/* Builds the tied spectral system of a model with M = p.order_m nodes. mp != 0 selects the
 * Marchenko-Pastur law for S0. Returns 0, or -1 with a message in err. */
int spectral_system_create(const struct model *m, int mp, struct mom_sys *sys, char *err,
                           size_t errlen);

/* M-point Gauss rule of the discrete measure (1/n) sum_i delta(eig[i]) (Lanczos with full
 * reorthogonalisation, then Golub-Welsch). M is reduced to the number of distinct values when
 * larger. Writes nodes, weights (sum 1); returns the number of nodes, or -1. */
int spectral_gauss_rule(const double *eig, int n, int M, double *nodes, double *weights);

/* A spectral measure of S0 as atoms s[j] with masses q[j] (sum q <= 1; the rest sits at 0). */
struct spectral_measure {
    int n;
    double *s, *q;
};

/* Marchenko-Pastur law of S0 = W W^T / sqrt(r d), W_ij ~ N(0, s0^2), r = rho d, discretised
 * on n atoms (spectrally accurate midpoint rule in the angle variable). Caller frees s, q. */
int spectral_mp_measure(double s0, double rho, int n, struct spectral_measure *mu);

/* The traces of S = E (A + B)^-1 E at one state: given the S0 measure mu, the teacher rule
 * (nodes l, weights w, M), F at the nodes and c = exp(-2 phi l - 2 psi) at the nodes, returns
 * t1, omega12 and omega11 (= psi11). guess: in/out warm starts for g = G_{A+B}(0), omega_A,
 * omega_B (start with {-t1(0), NAN, NAN}). Returns 0, or -1 when no solution exists (A + B not
 * positive). */
struct spectral_traces {
    double t1, omega12, omega11;
    double g, omega_a, omega_b; /* of the scaled problem: g/eps, eps omega_A, eps omega_B */
    double log_scale;           /* -log eps (0 for spectral_solve) */
};
int spectral_solve(const struct spectral_measure *mu, int M, const double *l, const double *w,
                   const double *F, const double *c, double guess[3], struct spectral_traces *out);

/* The same traces from the scaled state (spectral.c, "The limit S -> S*"): x = log c at the
 * nodes and z = F/(1 + c), so that neither c nor F is formed. The subordination is solved for
 * eps A and eps B, eps = exp(-max(min x, 0)), whose g, omega_A, omega_B are g/eps, eps omega_A,
 * eps omega_B: every quantity stays of order one as c -> infinity at strong recovery. work:
 * 3 M doubles. guess: 4 values, the three warm starts in the scale -log eps = guess[3] (start
 * with {g eps^-1, eps omega_A, eps omega_B, -log eps}; they are rescaled as eps moves). Returns
 * 0, or -1 when no solution exists. */
int spectral_solve_scaled(const struct spectral_measure *mu, int M, const double *l,
                          const double *w, const double *x, const double *z, double *work,
                          double guess[4], struct spectral_traces *out);

#endif
