/*
 * stats.c: one head's order parameters, its spectrum and the predicted law of its scores.
 *
 * The small matrix. Put A = [W_Q^T  W_K^T] (d x 2 d_head) and A = Q R (LAPACK dgeqrf; Q is
 * d x m with orthonormal columns, R is m x 2 d_head, m = min(d, 2 d_head)). With R_Q, R_K the
 * first and last d_head columns of R,
 *     S = W_Q^T W_K / sqrt(d_head) = Q K Q^T,   K = R_Q R_K^T / sqrt(d_head)   (m x m),
 * so Tr S = Tr K, Tr S S^T = ||K||_F^2, Tr S^2 = Tr K^2, the nonzero singular values of S are
 * those of K and the nonzero eigenvalues of (S + S^T)/2 those of (K + K^T)/2; the other d - m
 * are zeros (counted in the histograms' zero bin).
 *
 * The law of an entry. With tokens x_1 = z_1, x_2 = c z_1 + sqrt(1 - c^2) z_2 (z_i ~ N(0, I_d),
 * the Cholesky factor of C = [[1, c], [c, 1]]) only w = (Q^T z_1, Q^T z_2) ~ N(0, I_2m) enters:
 * x_1^T S x_2 / sqrt(d) = w^T B w with B = [[c K, s K], [0, 0]] / sqrt(d), s = sqrt(1 - c^2).
 * A Gaussian quadratic form w^T M w (M = (B + B^T)/2) has cumulants kappa_n = 2^(n-1) (n-1)!
 * Tr M^n, so skewness = 8 Tr M^3 / (2 Tr M^2)^(3/2) and excess kurtosis = 48 Tr M^4 / (2 Tr
 * M^2)^2. At c = 0 this is 6 Tr (SS^T)^2 / (Tr SS^T)^2 = 6 / eff_rank <= 6 (||S||_op/||S||_F)^2:
 * the rank ratio bounds the distance from the Gaussian law. The Kolmogorov distance predicted is
 * sup_x |phi(x) (g1/6 He2 + g2/24 He3 + g1^2/72 He5)(x)|, the Edgeworth correction to Phi.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "aimsweep/probe/stats.h"

extern void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau,
                    double *work, const int *lwork, int *info);
extern void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work,
                    const int *lwork, int *iwork, int *info);
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);

/* Grid of the Edgeworth correction's supremum. */
#define EDGEWORTH_POINTS 1201
#define EDGEWORTH_XMAX 6.0

static void hist_fill(struct probe_hist *h, const double *v, int n, int zeros)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    if (hi <= lo)
        hi = lo + 1;
    h->lo = lo;
    h->hi = hi;
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n + zeros; i++) {
        double x = i < n ? v[i] : 0.0;
        int b = (int)((x - lo) / (hi - lo) * PROBE_HIST_BINS);
        h->count[b < 0 ? 0 : b >= PROBE_HIST_BINS ? PROBE_HIST_BINS - 1 : b]++;
    }
}

const char *probe_hist_json(const struct probe_hist *h, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "{\"lo\":%.9g,\"hi\":%.9g,\"count\":[", h->lo, h->hi);
    for (int i = 0; i < PROBE_HIST_BINS && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "," : "", h->count[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]}");
    return buf;
}

double probe_edgeworth_ks(double g1, double g2)
{
    double best = 0;
    for (int i = 0; i < EDGEWORTH_POINTS; i++) {
        double x = -EDGEWORTH_XMAX + 2 * EDGEWORTH_XMAX * i / (EDGEWORTH_POINTS - 1);
        double x2 = x * x, he2 = x2 - 1, he3 = x * (x2 - 3), he5 = x * (x2 * x2 - 10 * x2 + 15);
        double phi = exp(-0.5 * x2) / sqrt(2 * M_PI);
        best = fmax(best, fabs(phi * (g1 / 6 * he2 + g2 / 24 * he3 + g1 * g1 / 72 * he5)));
    }
    return best;
}

/* Cumulants of one off-diagonal entry (see the top of the file); K is m x m row-major. */
static int entry_law(const double *K, int m, int d, double c, struct probe_head *h)
{
    int n = 2 * m;
    double *M = calloc((size_t)n * n, sizeof *M), *M2 = malloc((size_t)n * n * sizeof *M2);
    if (!M || !M2) {
        free(M);
        free(M2);
        return -1;
    }
    double s = sqrt(1 - c * c), f = 0.5 / sqrt((double)d);
    /* B = [[c K, s K], [0, 0]] / sqrt(d); M = (B + B^T)/2. */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double k = K[i * m + j] * f;
            M[i * n + j] += c * k;
            M[j * n + i] += c * k;
            M[i * n + m + j] += s * k;
            M[(m + j) * n + i] += s * k;
        }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, M, n, M, n, 0.0, M2, n);
    double t2 = 0, t3 = 0, t4 = 0;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        t3 += M2[i] * M[i]; /* M symmetric: sum (M^2)_ij M_ji */
        t4 += M2[i] * M2[i];
    }
    for (int i = 0; i < n; i++)
        t2 += M2[i * n + i];
    free(M);
    free(M2);
    double k2 = 2 * t2;
    h->skew_pred = k2 > 0 ? 8 * t3 / pow(k2, 1.5) : NAN;
    h->kurt_pred = k2 > 0 ? 48 * t4 / (k2 * k2) : NAN;
    h->ks_pred = k2 > 0 ? probe_edgeworth_ks(h->skew_pred, h->kurt_pred) : NAN;
    return 0;
}

int probe_head_stats(const double *wq, const double *wk, int dh, int d, const double *teacher,
                     double c, struct probe_head *h)
{
    memset(h, 0, sizeof *h);
    int n2 = 2 * dh, m = d < n2 ? d : n2, info = 0, lwork = -1;
    double *A = malloc((size_t)d * n2 * sizeof *A), *tau = malloc((size_t)m * sizeof *tau);
    double *K = malloc((size_t)m * m * sizeof *K), *W = malloc((size_t)m * m * sizeof *W);
    double *sv = malloc((size_t)m * sizeof *sv), *work = NULL, wq1;
    int *iwork = malloc((size_t)8 * m * sizeof *iwork), rc = -1;
    if (!A || !tau || !K || !W || !sv || !iwork)
        goto out;
    /* Column-major A (d x 2 d_head): column j is row j of W_Q, then of W_K. */
    memcpy(A, wq, (size_t)dh * d * sizeof *A);
    memcpy(A + (size_t)dh * d, wk, (size_t)dh * d * sizeof *A);
    dgeqrf_(&d, &n2, A, &d, tau, &wq1, &lwork, &info);
    lwork = (int)wq1;
    if (info || !(work = malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work)))
        goto out;
    dgeqrf_(&d, &n2, A, &d, tau, work, &lwork, &info);
    if (info)
        goto out;
    /* K = R_Q R_K^T / sqrt(d_head), with R(i, j) = A[j d + i] for i <= j and zero below; R is
     * copied row-major (m x 2 d_head) into W's place first. */
    double g = 1 / sqrt((double)dh);
    double *R = calloc((size_t)m * n2, sizeof *R);
    if (!R)
        goto out;
    for (int j = 0; j < n2; j++)
        for (int i = 0; i <= j && i < m; i++)
            R[(size_t)i * n2 + j] = A[(size_t)j * d + i];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, dh, g, R, n2, R + dh, n2, 0.0, K, m);
    free(R);
    double tr = 0, ff = 0, f2 = 0;
    for (int i = 0; i < m; i++) {
        tr += K[i * m + i];
        for (int j = 0; j < m; j++) {
            ff += K[i * m + j] * K[i * m + j];
            f2 += K[i * m + j] * K[j * m + i];
        }
    }
    h->trace = tr / d;
    h->mu = tr / sqrt((double)d);
    h->omega11 = ff / d;
    h->psi11 = f2 / d;
    h->frob = sqrt(ff);
    h->sym_share = ff > 0 ? (ff + f2) / (2 * ff) : NAN;
    h->anti_share = ff > 0 ? (ff - f2) / (2 * ff) : NAN;
    /* Singular values of K. */
    memcpy(W, K, (size_t)m * m * sizeof *W);
    free(work);
    work = NULL;
    lwork = -1;
    dgesdd_("N", &m, &m, W, &m, sv, NULL, &m, NULL, &m, &wq1, &lwork, iwork, &info);
    lwork = (int)wq1;
    if (info || !(work = malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work)))
        goto out;
    dgesdd_("N", &m, &m, W, &m, sv, NULL, &m, NULL, &m, work, &lwork, iwork, &info);
    if (info)
        goto out;
    double s4 = 0;
    for (int i = 0; i < m; i++)
        s4 += pow(sv[i], 4);
    h->op_norm = sv[0];
    h->rank_ratio = ff > 0 ? sv[0] / sqrt(ff) : NAN;
    h->eff_rank = s4 > 0 ? ff * ff / s4 : 0;
    hist_fill(&h->sv, sv, m, d - m);
    /* Eigenvalues of (K + K^T)/2. */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            W[i * m + j] = 0.5 * (K[i * m + j] + K[j * m + i]);
    free(work);
    work = NULL;
    lwork = -1;
    dsyev_("N", "U", &m, W, &m, sv, &wq1, &lwork, &info);
    lwork = (int)wq1;
    if (info || !(work = malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work)))
        goto out;
    dsyev_("N", "U", &m, W, &m, sv, work, &lwork, &info);
    if (info)
        goto out;
    hist_fill(&h->eig, sv, m, d - m);
    h->omega12 = h->overlap = NAN;
    if (teacher) {
        /* Tr S S* = Tr W_Q^T W_K S* / sqrt(d_head) = <W_K, W_Q S*^T>_F / sqrt(d_head). */
        double *P = malloc((size_t)dh * d * sizeof *P);
        if (!P)
            goto out;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, d, d, 1.0, wq, d, teacher, d, 0.0,
                    P, d);
        double o = 0, t2 = 0, q2 = 0;
        for (size_t i = 0; i < (size_t)dh * d; i++)
            o += wk[i] * P[i];
        free(P);
        for (int i = 0; i < d; i++) {
            t2 += teacher[(size_t)i * d + i];
            for (int j = 0; j < d; j++)
                q2 += teacher[(size_t)i * d + j] * teacher[(size_t)i * d + j];
        }
        h->omega12 = o * g / d;
        t2 /= d;
        q2 /= d;
        /* Centred overlap (docs/model.md §8): S~ = S - t1 I, S~* = S* - t2 I. */
        double num = h->omega12 - h->trace * t2, a = h->omega11 - h->trace * h->trace,
               b = q2 - t2 * t2;
        h->overlap = a > 0 && b > 0 ? num / sqrt(a * b) : NAN;
    }
    rc = entry_law(K, m, d, c, h);
out:
    free(A);
    free(tau);
    free(K);
    free(W);
    free(sv);
    free(work);
    free(iwork);
    return rc;
}

int probe_pairs(const double *wq, const double *wk, int H, int dh, int d, double *omega,
                double *psi)
{
    int n = H * dh;
    double *QQ = malloc((size_t)n * n * sizeof *QQ), *KK = malloc((size_t)n * n * sizeof *KK),
           *KQ = malloc((size_t)n * n * sizeof *KQ);
    if (!QQ || !KK || !KQ) {
        free(QQ);
        free(KK);
        free(KQ);
        return -1;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0, wq, d, wq, d, 0.0, QQ, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0, wk, d, wk, d, 0.0, KK, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0, wk, d, wq, d, 0.0, KQ, n);
    /* Tr S_k S_l^T d_head = sum_ab KK[ka, lb] QQ[ka, lb]; Tr S_k S_l d_head = sum_ab KQ[ka, lb]
     * KQ[lb, ka]. */
    double f = 1.0 / ((double)dh * d);
    for (int k = 0; k < H; k++)
        for (int l = 0; l < H; l++) {
            double o = 0, p = 0;
            for (int a = 0; a < dh; a++)
                for (int b = 0; b < dh; b++) {
                    size_t ka = (size_t)k * dh + a, lb = (size_t)l * dh + b;
                    o += KK[ka * n + lb] * QQ[ka * n + lb];
                    p += KQ[ka * n + lb] * KQ[lb * n + ka];
                }
            omega[k * H + l] = o * f;
            psi[k * H + l] = p * f;
        }
    free(QQ);
    free(KK);
    free(KQ);
    return 0;
}
