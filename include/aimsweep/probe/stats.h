/*
 * stats.h: the order parameters of one attention head's query-key product and of pairs of
 * heads (docs/probe.md gives the formulas).
 *
 * For a head with query and key weights W_Q, W_K (d_head x d, PyTorch's Linear layout)
 * S = W_Q^T W_K / sqrt(d_head) is the d x d matrix with x_i^T S x_j the head's score. With d the
 * model width: mu = Tr S / sqrt(d), Omega11 = Tr S S^T / d, Psi11 = Tr S^2 / d, Omega12 =
 * Tr S S* / d against a teacher S*. Not one of them needs S itself: S = Q K Q^T with Q (d x m)
 * orthonormal columns spanning the rows of W_Q and W_K and K an m x m matrix, m = min(d,
 * 2 d_head) (stats.c), so each head costs O(d d_head^2).
 */
#ifndef AIMSWEEP_PROBE_STATS_H
#define AIMSWEEP_PROBE_STATS_H

/* Bins of the spectrum histograms. */
#define PROBE_HIST_BINS 24

struct probe_hist {
    double lo, hi;              /* the bins split [lo, hi] evenly */
    int count[PROBE_HIST_BINS]; /* d values in all */
};

struct probe_head {
    double mu, omega11, psi11, trace; /* trace = Tr S / d (t1) */
    double sym_share, anti_share;     /* ||(S + S^T)/2||_F^2 / ||S||_F^2 and the rest */
    double op_norm, frob, rank_ratio; /* ||S||_op, ||S||_F, their ratio */
    double eff_rank;                  /* participation ratio (Tr SS^T)^2 / Tr (SS^T)^2 */
    double omega12, overlap;          /* against a teacher: Tr S S* / d, and the centred m; NAN */
    /* The law of one off-diagonal entry x_1^T S x_2 / sqrt(d) with Gaussian tokens of
     * correlation c (exact cumulants of a Gaussian quadratic form): skewness, excess kurtosis,
     * and the Kolmogorov distance to the normal law their Edgeworth series predicts. */
    double skew_pred, kurt_pred, ks_pred;
    struct probe_hist sv;  /* singular values of S */
    struct probe_hist eig; /* eigenvalues of (S + S^T)/2 */
};

/* One head: wq, wk are d_head x d, row-major; teacher is d x d or NULL; c the token correlation
 * for the predicted law. Returns 0, or -1 when memory or LAPACK fails. */
int probe_head_stats(const double *wq, const double *wk, int dh, int d, const double *teacher,
                     double c, struct probe_head *h);

/* The heads of one layer side by side: wq, wk are (H d_head) x d, row-major. Fills the H x H
 * matrices omega[k H + l] = Tr S_k S_l^T / d and psi[k H + l] = Tr S_k S_l / d from three Gram
 * matrices of the rows. Returns 0 or -1 (memory). */
int probe_pairs(const double *wq, const double *wk, int H, int dh, int d, double *omega,
                double *psi);

/* The Kolmogorov distance to N(0, 1) of a law with skewness g1 and excess kurtosis g2, from its
 * Edgeworth series (the supremum over a grid on [-6, 6]). */
double probe_edgeworth_ks(double g1, double g2);

/* Writes a histogram as JSON, {"lo":..,"hi":..,"count":[...]}, into buf; returns buf. */
const char *probe_hist_json(const struct probe_hist *h, char *buf, size_t len);

#endif
