/*
 * gauss.c: Theorem 1's check on sampled tokens (gauss.h states what is compared).
 *
 * Tokens: x_a = sum_b L_ab z_b with C = L L^T (Cholesky) and z_b i.i.d. N(0, I_d) from
 * aimsweep's Philox streams (rng.h), so a check is reproducible from its seed. The projections
 * Y = X W_Q^T, Z = X W_K^T of all heads at once are two matrix products per block of samples;
 * h^k_ab = Y_a,k . Z_b,k / sqrt(d_head d).
 *
 * Standard errors: the sample mean of an entry has variance Var/N with Var = C_aa C_bb Omega_kk +
 * C_ab^2 Psi_kk exactly; the sample covariance (centred at the predicted means, so unbiased) of
 * cells p, q has variance Var(v_p v_q)/N, estimated by the sample's sum of (v_p v_q)^2 minus the
 * square of its mean: right whether or not the entries are Gaussian. z_crit is Bonferroni over
 * the cells tested: Phi^-1(1 - alpha/(2 cells)).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <gsl/gsl_cdf.h>

#include "aimsweep/model/rng.h"
#include "aimsweep/probe/gauss.h"

/* Philox stream of the probe's tokens. */
#define PROBE_TOKEN_STREAM 0x70726f62u
/* Samples per block of the projections. */
#define T1_BLOCK 256

int probe_tokens_draw(struct probe_tokens *tk, int d, int T, long N, double c, uint64_t seed)
{
    memset(tk, 0, sizeof tk[0]);
    if (!(c >= 0 && c < 1) || T < 2 || N < 2 || d < 1)
        return -1;
    size_t rows = (size_t)N * T;
    double *x = malloc(rows * d * sizeof *x), *z = malloc((size_t)T * d * sizeof *z);
    double L[16 * 16];
    if (!x || !z || T > 16) {
        free(x);
        free(z);
        return -1;
    }
    /* Cholesky of (1 - c) I + c 11^T. */
    memset(L, 0, sizeof L);
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double s = (i == j ? 1.0 : c);
            for (int k = 0; k < j; k++)
                s -= L[i * 16 + k] * L[j * 16 + k];
            L[i * 16 + j] = i == j ? sqrt(s) : s / L[j * 16 + j];
        }
    struct rng g;
    rng_init(&g, seed, PROBE_TOKEN_STREAM, (uint32_t)d);
    for (long n = 0; n < N; n++) {
        rng_normals(&g, z, (size_t)T * d);
        for (int a = 0; a < T; a++) {
            double *row = x + ((size_t)n * T + a) * d;
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int b = 0; b <= a; b++)
                    s += L[a * 16 + b] * z[(size_t)b * d + i];
                row[i] = s;
            }
        }
    }
    free(z);
    tk->d = d;
    tk->T = T;
    tk->N = N;
    tk->c = c;
    tk->x = x;
    return 0;
}

void probe_tokens_free(struct probe_tokens *tk)
{
    free(tk->x);
    tk->x = NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov distance of sorted u[0..n) to N(0, 1). */
static double ks_normal(double *u, size_t n)
{
    qsort(u, n, sizeof *u, cmp_double);
    double best = 0;
    for (size_t i = 0; i < n; i++) {
        double F = gsl_cdf_ugaussian_P(u[i]);
        best = fmax(best, fmax(fabs(F - (double)i / n), fabs((double)(i + 1) / n - F)));
    }
    return best;
}

int probe_t1_layer(const struct probe_tokens *tk, const double *wq, const double *wk, int H, int dh,
                   const struct probe_head *heads, const double *omega, const double *psi,
                   struct probe_t1_head *out, struct probe_t1_layer *lay)
{
    const int d = tk->d, T = tk->T, n = H * dh, P = H * T * T, off = T * (T - 1);
    const long N = tk->N;
    const double c = tk->c, scale = 1 / sqrt((double)dh * d);
    double *Y = malloc((size_t)T1_BLOCK * T * n * sizeof *Y);
    double *Z = malloc((size_t)T1_BLOCK * T * n * sizeof *Z);
    double *V = malloc((size_t)T1_BLOCK * P * sizeof *V),
           *V2 = malloc((size_t)T1_BLOCK * P * sizeof *V2);
    double *mean = calloc((size_t)P, sizeof *mean), *pm = malloc((size_t)P * sizeof *pm);
    double *C = calloc((size_t)P * P, sizeof *C), *D = calloc((size_t)P * P, sizeof *D);
    double *u = calloc((size_t)H * N * off, sizeof *u);
    int rc = -1;
    if (!Y || !Z || !V || !V2 || !mean || !pm || !C || !D || !u)
        goto out;
    /* Entry p = (k T + a) T + b: predicted mean C_ab mu_k. */
    for (int k = 0; k < H; k++)
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                pm[(k * T + a) * T + b] = (a == b ? 1.0 : c) * heads[k].mu;
    for (long n0 = 0; n0 < N; n0 += T1_BLOCK) {
        int B = (int)(N - n0 < T1_BLOCK ? N - n0 : T1_BLOCK), rows = B * T;
        const double *X = tk->x + (size_t)n0 * T * d;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, d, 1.0, X, d, wq, d, 0.0, Y,
                    n);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, d, 1.0, X, d, wk, d, 0.0, Z,
                    n);
        for (int s = 0; s < B; s++)
            for (int k = 0; k < H; k++)
                for (int a = 0; a < T; a++)
                    for (int b = 0; b < T; b++) {
                        const double *y = Y + (size_t)(s * T + a) * n + k * dh,
                                     *z = Z + (size_t)(s * T + b) * n + k * dh;
                        double h = 0;
                        for (int i = 0; i < dh; i++)
                            h += y[i] * z[i];
                        int p = (k * T + a) * T + b;
                        double v = h * scale - pm[p];
                        V[(size_t)s * P + p] = v;
                        V2[(size_t)s * P + p] = v * v;
                        mean[p] += v;
                        if (a != b) {
                            double var = omega[k * H + k] + c * c * psi[k * H + k];
                            int j = a * (T - 1) + (b < a ? b : b - 1);
                            u[((size_t)k * N + n0 + s) * off + j] = var > 0 ? v / sqrt(var) : 0;
                        }
                    }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, B, 1.0, V, P, V, P, 1.0, C, P);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, P, B, 1.0, V2, P, V2, P, 1.0, D, P);
    }
    long cells = (long)P * (P + 3) / 2; /* the means and the distinct covariance cells */
    lay->z_crit = gsl_cdf_ugaussian_Qinv(PROBE_T1_ALPHA / (2.0 * cells));
    lay->mean_z = lay->cov_z = 0;
    for (int k = 0; k < H; k++)
        out[k].mean_z = out[k].cov_z = 0;
    for (int p = 0; p < P; p++) {
        int k = p / (T * T), a = p / T % T, b = p % T;
        double var = (a == b ? omega[k * H + k] + psi[k * H + k]
                             : omega[k * H + k] + c * c * psi[k * H + k]);
        double z = var > 0 ? mean[p] / N / sqrt(var / N) : 0;
        out[k].mean_z = fmax(out[k].mean_z, fabs(z));
        for (int q = p; q < P; q++) {
            int l = q / (T * T), a2 = q / T % T, b2 = q % T;
            double Caa = a == a2 ? 1 : c, Cbb = b == b2 ? 1 : c, Cab = a == b2 ? 1 : c,
                   Cba = b == a2 ? 1 : c;
            double pred = Caa * Cbb * omega[k * H + l] + Cab * Cba * psi[k * H + l];
            double cov = C[(size_t)p * P + q] / N, v = D[(size_t)p * P + q] / N - cov * cov;
            double zc = v > 0 ? (cov - pred) / sqrt(v / N) : 0;
            out[k].cov_z = fmax(out[k].cov_z, fabs(zc));
            out[l].cov_z = fmax(out[l].cov_z, fabs(zc));
        }
    }
    for (int k = 0; k < H; k++) {
        lay->mean_z = fmax(lay->mean_z, out[k].mean_z);
        lay->cov_z = fmax(lay->cov_z, out[k].cov_z);
        double *uk = u + (size_t)k * N * off, m2 = 0, m4 = 0;
        size_t nu = (size_t)N * off;
        for (size_t i = 0; i < nu; i++) {
            m2 += uk[i] * uk[i];
            m4 += uk[i] * uk[i] * uk[i] * uk[i];
        }
        m2 /= nu;
        m4 /= nu;
        out[k].kurt = m2 > 0 ? m4 / (m2 * m2) - 3 : NAN;
        out[k].ks = ks_normal(uk, nu);
        out[k].ks_noise = 1.358 / sqrt((double)nu);
    }
    lay->pass = lay->mean_z <= lay->z_crit && lay->cov_z <= lay->z_crit;
    rc = 0;
out:
    free(Y);
    free(Z);
    free(V);
    free(V2);
    free(mean);
    free(pm);
    free(C);
    free(D);
    free(u);
    return rc;
}
