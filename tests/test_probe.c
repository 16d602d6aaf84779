/*
 * test_probe.c: Theorem 1's check (src/probe/gauss.c) and the predicted law of an entry
 * (src/probe/stats.c).
 *  - A random extensive-rank S (W_Q, W_K Gaussian d x d): the mean and covariance of the indices
 *    pass, the predicted Kolmogorov distance is below the regime's bound, the sampled excess
 *    kurtosis matches the predicted one, at c = 0 and c = 0.4.
 *  - A rank-1 S (d_head = 1): mean and covariance still pass (Isserlis is exact at any d), but
 *    the predicted excess kurtosis is 6 (c = 0), the sample's agrees, and the head is out of
 *    the regime.
 *  - Planted: the check fed Omega 10 % too large fails; a kurtosis prediction from
 *    6 / eff_rank (the closed form at c = 0) equals the general one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/rng.h"
#include "aimsweep/probe/gauss.h"
#include "aimsweep/probe/stats.h"
#include "check.h"

#define REGIME_KS 0.01

static void fill(double *w, size_t n, uint64_t seed, uint32_t stream)
{
    struct rng g;
    rng_init(&g, seed, stream, (uint32_t)n);
    rng_normals(&g, w, n);
}

/* One head, the whole check; returns the layer's verdict. omega_scale plants an error. */
static int run(int d, int dh, double c, long N, double omega_scale, struct probe_head *h,
               struct probe_t1_head *t, struct probe_t1_layer *lay, uint64_t seed)
{
    double *wq = malloc((size_t)dh * d * sizeof *wq), *wk = malloc((size_t)dh * d * sizeof *wk);
    fill(wq, (size_t)dh * d, seed, 1);
    fill(wk, (size_t)dh * d, seed, 2);
    for (int i = 0; i < dh * d; i++) {
        wq[i] /= sqrt((double)d);
        wk[i] /= sqrt((double)d);
    }
    CHECK_TRUE(probe_head_stats(wq, wk, dh, d, NULL, c, h) == 0);
    double om, ps;
    CHECK_TRUE(probe_pairs(wq, wk, 1, dh, d, &om, &ps) == 0);
    CHECK(fabs(om - h->omega11) < 1e-12 * fmax(1, om) &&
              fabs(ps - h->psi11) < 1e-12 * fmax(1, fabs(om)),
          "pairs' diagonal %g %g against the head's %g %g", om, ps, h->omega11, h->psi11);
    om *= omega_scale;
    struct probe_tokens tk;
    CHECK_TRUE(probe_tokens_draw(&tk, d, 4, N, c, seed + 7) == 0);
    CHECK_TRUE(probe_t1_layer(&tk, wq, wk, 1, dh, h, &om, &ps, t, lay) == 0);
    probe_tokens_free(&tk);
    free(wq);
    free(wk);
    return lay->pass;
}

int main(void)
{
    struct probe_head h;
    struct probe_t1_head t;
    struct probe_t1_layer lay;
    for (int ci = 0; ci < 2; ci++) {
        double c = ci ? 0.4 : 0.0;
        /* Extensive rank. */
        int pass = run(120, 120, c, 3000, 1.0, &h, &t, &lay, 11);
        CHECK(pass, "c = %g extensive: mean |z| %g, cov |z| %g, bound %g", c, lay.mean_z, lay.cov_z,
              lay.z_crit);
        CHECK(h.ks_pred <= REGIME_KS, "c = %g extensive: predicted KS %g", c, h.ks_pred);
        CHECK(h.rank_ratio < 0.25, "extensive: rank ratio %g", h.rank_ratio);
        /* kurtosis of 12000 dependent entries: standard error about 0.05 */
        CHECK(fabs(t.kurt - h.kurt_pred) < 0.15, "c = %g extensive: kurtosis %g, predicted %g", c,
              t.kurt, h.kurt_pred);
        CHECK(t.ks < 0.03, "c = %g extensive: KS %g", c, t.ks);
        if (ci == 0)
            CHECK(fabs(h.kurt_pred - 6 / h.eff_rank) < 1e-9 * h.kurt_pred,
                  "c = 0: kurtosis %g against 6/eff_rank %g", h.kurt_pred, 6 / h.eff_rank);
        /* Rank one. */
        pass = run(120, 1, c, 3000, 1.0, &h, &t, &lay, 12);
        CHECK(pass, "c = %g rank 1: mean |z| %g, cov |z| %g, bound %g", c, lay.mean_z, lay.cov_z,
              lay.z_crit);
        CHECK(fabs(h.rank_ratio - 1) < 1e-12, "rank 1: rank ratio %g", h.rank_ratio);
        CHECK(h.ks_pred > REGIME_KS, "c = %g rank 1: predicted KS %g is inside the regime", c,
              h.ks_pred);
        if (ci == 0)
            CHECK(fabs(h.kurt_pred - 6) < 1e-9, "rank 1: predicted kurtosis %g, not 6",
                  h.kurt_pred);
        CHECK(fabs(t.kurt - h.kurt_pred) < 0.25 * h.kurt_pred,
              "c = %g rank 1: kurtosis %g, predicted %g", c, t.kurt, h.kurt_pred);
        CHECK(t.ks > 5 * t.ks_noise, "c = %g rank 1: KS %g within noise %g", c, t.ks, t.ks_noise);
        /* Planted: Omega 10 % too large. */
        pass = run(120, 120, c, 3000, 1.1, &h, &t, &lay, 11);
        CHECK(!pass, "c = %g planted Omega * 1.1 passes: cov |z| %g, bound %g", c, lay.cov_z,
              lay.z_crit);
    }
    return check_done("test_probe");
}
