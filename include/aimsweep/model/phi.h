/*
 * phi.h: the population loss Phi(omega11, psi11, omega12) and its gradient (docs/model.md §5).
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
    double d_mu;     /* dPhi/dmu (docs/model.md §10; 0 for the centred index) */
    double err_grad; /* estimated absolute error of each gradient entry (0 for closed forms) */
};

/* Evaluates Phi and its gradient. Returns 0, or -1 when the covariance is not positive
 * semidefinite (omega11 < omega12^2 beyond rounding) or values are not finite. */
int phi_eval(const struct act *a, int T, double omega11, double psi11, double omega12,
             struct phi_val *out);

/* The trapezoidal path for any elementwise activation, softmax at T = 2 by the trapezoidal rule
 * (both the routes phi_mehler.c replaced for tanh and softmax) and the general softmax path
 * (tensor rule or Monte Carlo, also for T = 2): independent routes to the same numbers, for
 * tests. */
int phi_eval_quadrature(const struct act *a, int T, double omega11, double omega12,
                        struct phi_val *out);
int phi_eval_softmax2_trap(const struct act *a, double omega11, double psi11, double omega12,
                           struct phi_val *out);
int phi_eval_softmax_general(const struct act *a, int T, double omega11, double psi11,
                             double omega12, struct phi_val *out);

/* ---- The general index (docs/model.md §10; phi_general.c) ----------------------------------------
 * Tokens with covariance C = (1 - c) I + c 1 1^T, an index with mean (uncentred), and the loss
 * over the off-diagonal entries or all of them. The law of the index is fixed by (mu, mu*,
 * omega11, psi11, omega12), mu = Tr S/sqrt(d); Phi is a function of (mu, omega11, psi11, omega12)
 * with mu* a constant of the teacher. */
struct phi_law {
    double c;       /* token_corr */
    int uncentred;  /* the index has mean C_ab mu */
    int all;        /* the diagonal entries are outputs too (elementwise activations) */
    double mu_star; /* the teacher's mean Tr(S*)/sqrt(d) (enters only when uncentred) */
};

/* The law of a parameter set with the teacher's mean mu_star. */
void phi_law_of(const struct params *p, double mu_star, struct phi_law *law);

/* 1 when the law is the special case of docs/model.md §5 (c = 0, centred, offdiag). */
int phi_law_special(const struct phi_law *law);

/* Phi(mu, omega11, psi11, omega12) and its gradient (d_mu included) under the law. The special
 * case is phi_eval itself, bit for bit. Returns 0, or -1 as phi_eval. */
int phi_eval_law(const struct act *a, int T, const struct phi_law *law, double mu, double omega11,
                 double psi11, double omega12, struct phi_val *out);

/* The slow manifold of docs/model.md §10: the mu at which the fast dynamics dmu/dt = -d Phi_mu comes to
 * rest from `guess` with the moments frozen, Phi_mu(mu, q) = 0 at a minimum of Phi in mu
 * (Newton where Phi is convex in mu, descent steps where it is not). Returns 0, or -1 when no
 * such point is found. */
int phi_mu_slow(const struct act *a, int T, const struct phi_law *law, double guess, double omega11,
                double psi11, double omega12, double *mu);

/* The general path even for the special case (for tests: it must agree with phi_eval), and the
 * softmax rows through the full 2T-dimensional rule for T = 2 as well (for tests of the
 * reduction to differences). */
int phi_eval_law_general(const struct act *a, int T, const struct phi_law *law, double mu,
                         double omega11, double psi11, double omega12, struct phi_val *out);
int phi_eval_law_softmax_rows(const struct act *a, int T, const struct phi_law *law, double mu,
                              double omega11, double psi11, double omega12, struct phi_val *out);

/* Internal to phi.c and phi_general.c: the 2D trapezoidal rule (fine and coarse) of up to 8
 * functions, the Gauss-Hermite rules, the 2 x 2 Cholesky. */
typedef void (*phi_fnv)(double u, double w, void *ctx, double *out);
int phi_trap2(phi_fnv f, void *ctx, int nf, double vu, double c, double vw, double *fine,
              double *coarse);
int phi_gh_get(int n, const double **x, const double **w);
int phi_chol2(double vu, double c, double vw, double *l11, double *l21, double *l22);

#define PHI_GH_MAX 128

/* The truncated Hermite (Mehler) expansion of phi_mehler.c: e = 1/2 E[(tanh u - tanh w)^2] for
 * (u, w) ~ N(0, [[a, c], [c, b]]), its partials in a and c, and the stated errors (of e; of
 * each partial). Returns 0; 1 when a or b lies outside (PHI_MEHLER_A_MIN, PHI_MEHLER_A_MAX],
 * where the caller integrates by quadrature instead; -1 on non-finite values. */
#define PHI_MEHLER_A_MIN 1e-6
#define PHI_MEHLER_A_MAX 6.0
struct phi_mehler {
    double e, e_a, e_c, err, err_grad;
};
int phi_tanh_mehler(double a, double c, double b, struct phi_mehler *out);

/* Gauss-Hermite rule for the standard normal weight: nodes x, weights w (sum 1), n points. */
void phi_gh_rule(int n, double *x, double *w);

#endif
