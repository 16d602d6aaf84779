/*
 * gauss.h: the check of Theorem 1 (docs/model.md §5 and §10) on a layer's heads.
 *
 * N samples of T Gaussian tokens, E x_a x_b^T = C_ab I_d with C = (1 - c) I + c 11^T. For every
 * head k and token pair (a, b) the uncentred index h^k_ab = x_a^T S_k x_b / sqrt(d). Exact at
 * every d (Isserlis): E h^k_ab = C_ab mu_k and Cov(h^k_ab, h^l_a'b') = C_aa'C_bb' Omega_kl +
 * C_ab'C_ba' Psi_kl. The check compares the sample mean and covariance of the H T^2 entries with
 * these, cell by cell, as z-scores (the mean's standard error from the predicted variance, the
 * covariance's from the sample's own fourth moments), against a Bonferroni bound. Theorem 1's
 * extra claim, that the entries are Gaussian when ||S||_op/||S||_F -> 0, is measured by the
 * excess kurtosis and the Kolmogorov distance of the off-diagonal entries standardised by the
 * predicted mean and variance, beside their exact prediction (stats.h).
 */
#ifndef AIMSWEEP_PROBE_GAUSS_H
#define AIMSWEEP_PROBE_GAUSS_H

#include <stdint.h>

#include "aimsweep/probe/stats.h"

/* Family-wise level of the mean and covariance tests of one layer. */
#define PROBE_T1_ALPHA 1e-3

/* The tokens of every layer's check (one draw per checkpoint): N T rows of d, row-major;
 * token a of sample n is row n T + a. */
struct probe_tokens {
    int d, T;
    long N;
    double c;
    double *x;
};

/* Draws the tokens from aimsweep's Philox streams (seed). Returns 0 or -1 (memory, or c outside
 * [0, 1)). */
int probe_tokens_draw(struct probe_tokens *tk, int d, int T, long N, double c, uint64_t seed);
void probe_tokens_free(struct probe_tokens *tk);

struct probe_t1_head {
    double mean_z;   /* largest |z| of the head's T^2 means */
    double cov_z;    /* largest |z| of the covariance cells that involve the head */
    double kurt;     /* excess kurtosis of its standardised off-diagonal entries */
    double ks;       /* their Kolmogorov distance to N(0, 1) */
    double ks_noise; /* the 95 % Kolmogorov quantile for that many independent draws */
};

struct probe_t1_layer {
    double mean_z, cov_z, z_crit; /* largest |z| over the layer, and the bound */
    int pass;                     /* mean_z and cov_z within z_crit */
};

/* The check on one layer: wq, wk are (H d_head) x d row-major, heads[k] its heads' statistics
 * (mu), omega and psi its H x H pair matrices (probe_pairs). Fills out[H] and lay. Returns 0 or
 * -1 (memory). */
int probe_t1_layer(const struct probe_tokens *tk, const double *wq, const double *wk, int H, int dh,
                   const struct probe_head *heads, const double *omega, const double *psi,
                   struct probe_t1_head *out, struct probe_t1_layer *lay);

#endif
