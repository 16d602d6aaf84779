/*
 * noise.c: the Gaussian expectations behind the O(eta) SGD-noise correction.
 *
 * n1 = E sum_ab D_ab^2 and n2 = E sum_ab D_ab D_ba with D = dl/dh of one sample (docs/model.md §4),
 * under the d -> infinity law of §5. For elementwise sigma only off-diagonal entries carry a
 * loss, D_ab = (sigma(u) - sigma(w)) sigma'(u), and
 *   n1 = T(T-1) E[(sigma(u) - sigma(w))^2 sigma'(u)^2],  (u, w) ~ N(0, [[om, c], [c, 1]]),
 *   n2 = T(T-1) E[D(u1, w) D(u2, w)],  (u1, u2, w) ~ N(0, [[om, psi, c], [psi, om, c], [c, c, 1]]),
 * since h_ab and h_ba share Cov = psi11 and the symmetric teacher gives h*_ab = h*_ba.
 * For softmax, D_a. = beta (diag p - p p^T)(p - p*) of row a; rows are i.i.d. (2T-dim law,
 * pairs (h_ab, h*_ab) independent across b), and D_ab, D_ba are coupled only through the shared
 * pair, so E[D_ab D_ba] = E[f(u1, w) f(u2, w)] with f(u, w) = E[D_ab | h_ab = u, h*_ab = w].
 *
 * The general index (docs/model.md §10, docs/noise.md): with E x_a x_b^T = C_ab I the contraction
 * is x_b^T A x_b' -> C_bb' Tr A, so n1 = E sum_{e,e'} C_aa'C_bb' D_e D_e' and n2 = E sum_{e,e'}
 * C_ab'C_ba' D_e D_e' over the output entries e = (a, b), e' = (a', b'); each E[D_e D_e'] is a 4D
 * Gaussian integral under the law (pair_expect), one per pattern of coinciding indices (law_rule).
 *
 * Rules: Gauss-Hermite products. Hermite activations of degree k are integrated exactly with
 * 2k + 2 nodes per axis; other activations use NOISE_GH_SMOOTH nodes and, on request, report as
 * error the difference to a rule with 2/3 as many nodes. Softmax at T = 2 reduces to a 4D rule
 * (see softmax2_rule); larger T uses the general row rule (slow beyond T = 3).
 */
#include "aimsweep/theory/noise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/phi.h"

#define NOISE_GH_SMOOTH 40  /* nodes per axis for non-polynomial elementwise sigma (2D) */
#define NOISE_GH_SMOOTH3 28 /* same, 3D rule */
#define NOISE_SOFTMAX_MAX_T 6
#define NOISE_GH_SOFTMAX2 14 /* nodes per axis of the 4D rule for softmax at T = 2 */
#define NOISE_COV_SLACK 1e-10
#define NOISE_GH_4D 16 /* nodes per axis of the general index's 4D rule (non-Hermite sigma) */

struct gh {
    int n;
    double x[PHI_GH_MAX], w[PHI_GH_MAX];
};

static void gh_make(struct gh *g, int n)
{
    if (n > PHI_GH_MAX)
        n = PHI_GH_MAX;
    g->n = n;
    phi_gh_rule(n, g->x, g->w);
}

static double delta_elem(const struct act *a, double u, double w)
{
    return (act_f(a, u) - act_f(a, w)) * act_df(a, u);
}

/* Conditional scales of (u1, u2) given w: u1 = c w + s1 z1, u2 = c w + r z1 + s2 z2. */
struct chol3 {
    double c, s1, r, s2;
};

static int chol3_make(double om, double psi, double c, struct chol3 *k)
{
    double v = om - c * c;
    if (v < -NOISE_COV_SLACK * (1.0 + om))
        return -1;
    if (v < 0.0)
        v = 0.0;
    k->c = c;
    k->s1 = sqrt(v);
    k->r = k->s1 > 0.0 ? (psi - c * c) / k->s1 : 0.0;
    double v2 = v - k->r * k->r;
    if (v2 < -NOISE_COV_SLACK * (1.0 + om))
        return -1;
    k->s2 = v2 > 0.0 ? sqrt(v2) : 0.0;
    return 0;
}

static void elem_rule(const struct act *a, int T, const struct chol3 *k, int n2d, int n3d,
                      double *n1, double *n2)
{
    struct gh g;
    double s1 = 0.0, s2 = 0.0;
    gh_make(&g, n2d);
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double w = g.x[i], u = k->c * w + k->s1 * g.x[j];
            double dl = delta_elem(a, u, w);
            s1 += g.w[i] * g.w[j] * dl * dl;
        }
    gh_make(&g, n3d);
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double w = g.x[i];
            double u1 = k->c * w + k->s1 * g.x[j];
            double d1 = delta_elem(a, u1, w);
            double inner = 0.0;
            for (int l = 0; l < g.n; l++) {
                double u2 = k->c * w + k->r * g.x[j] + k->s2 * g.x[l];
                inner += g.w[l] * delta_elem(a, u2, w);
            }
            s2 += g.w[i] * g.w[j] * d1 * inner;
        }
    *n1 = T * (T - 1) * s1;
    *n2 = T * (T - 1) * s2;
}

/* ---- softmax ---- */

/* D of one row: student scores h (T), teacher scores hs (T) -> D (T). */
static void softmax_row_D(double beta, int T, const double *h, const double *hs, double *D)
{
    double p[16], q[16];
    act_softmax(beta, T, h, p);
    act_softmax(beta, T, hs, q);
    double pv = 0.0;
    for (int b = 0; b < T; b++)
        pv += p[b] * (p[b] - q[b]);
    for (int b = 0; b < T; b++)
        D[b] = beta * p[b] * ((p[b] - q[b]) - pv);
}

/* 2x2 lower Cholesky of [[vu, cv], [cv, vw]]: u = l11 z + 0, w = l21 z + l22 z'. Written as
 * w first (teacher), u = (cv/vw) w + sqrt(vu - cv^2/vw) z'. */
struct pair_law {
    double a, s, sw; /* w = sw z0, u = a w + s z1 */
};

static int pair_law_make(double vu, double cv, double vw, struct pair_law *L)
{
    L->sw = sqrt(vw);
    L->a = cv / vw;
    double v = vu - cv * cv / vw;
    if (v < -NOISE_COV_SLACK * (1.0 + vu))
        return -1;
    L->s = v > 0.0 ? sqrt(v) : 0.0;
    return 0;
}

struct softmax_ctx {
    double beta;
    int T;
    struct pair_law diag, off;
    struct gh g;
};

/* Row expectations: E|D|^2 and E D_00^2 over the full row (entry 0 diagonal). */
static void softmax_row_moments(const struct softmax_ctx *s, double *e_norm, double *e_diag)
{
    int T = s->T, n = s->g.n, npair = n * n;
    int idx[16] = {0};
    double h[16] = {0}, hs[16] = {0}, D[16] = {0};
    double acc = 0.0, accd = 0.0;
    for (;;) {
        double wt = 1.0;
        for (int b = 0; b < T; b++) {
            const struct pair_law *L = b == 0 ? &s->diag : &s->off;
            int i = idx[b] / n, j = idx[b] % n;
            hs[b] = L->sw * s->g.x[i];
            h[b] = L->a * hs[b] + L->s * s->g.x[j];
            wt *= s->g.w[i] * s->g.w[j];
        }
        softmax_row_D(s->beta, T, h, hs, D);
        double nn = 0.0;
        for (int b = 0; b < T; b++)
            nn += D[b] * D[b];
        acc += wt * nn;
        accd += wt * D[0] * D[0];
        int b = 0;
        while (b < T && ++idx[b] == npair)
            idx[b++] = 0;
        if (b == T)
            break;
    }
    *e_norm = acc;
    *e_diag = accd;
}

/* f(u, w) = E[D_01 | h_01 = u, h*_01 = w] over the other entries of the row. */
static double softmax_f(const struct softmax_ctx *s, double u, double w)
{
    int T = s->T, n = s->g.n, npair = n * n;
    int idx[16] = {0};
    double h[16] = {0}, hs[16] = {0}, D[16] = {0};
    double acc = 0.0;
    for (;;) {
        double wt = 1.0;
        int k = 0;
        for (int b = 0; b < T; b++) {
            if (b == 1) {
                h[b] = u;
                hs[b] = w;
                continue;
            }
            const struct pair_law *L = b == 0 ? &s->diag : &s->off;
            int i = idx[k] / n, j = idx[k] % n;
            hs[b] = L->sw * s->g.x[i];
            h[b] = L->a * hs[b] + L->s * s->g.x[j];
            wt *= s->g.w[i] * s->g.w[j];
            k++;
        }
        softmax_row_D(s->beta, T, h, hs, D);
        acc += wt * D[1];
        int b = 0;
        while (b < T - 1 && ++idx[b] == npair)
            idx[b++] = 0;
        if (b == T - 1)
            break;
    }
    return acc;
}

/* T = 2: a row's output depends on Delta = h_aa - h_ab alone, p_a = sigmoid(beta Delta), so
 * l_row = (sigmoid(beta Delta) - sigmoid(beta Delta*))^2, D_aa = delta(Delta, Delta*) = -D_ab,
 *   delta = 2 beta (s - s*) s (1 - s).
 * Then n1 = 4 E[delta^2] and n2 = 2 E[delta^2] + 2 E[delta_0 delta_1] over rows 0 and 1 with
 *   Var Delta = 2 om + psi, Var Delta* = 3, Cov(Delta, Delta*) = 3c (same row),
 *   Cov(Delta_0, Delta_1) = psi, Cov(Delta*_0, Delta*_1) = 1, Cov(Delta_0, Delta*_1) = c
 * (only the shared pair h_01, h_10 couples the rows). */
static double sig_delta(double beta, double x, double xs)
{
    double s = 1.0 / (1.0 + exp(-beta * x)), q = 1.0 / (1.0 + exp(-beta * xs));
    return 2.0 * beta * (s - q) * s * (1.0 - s);
}

/* lower Cholesky of a K x K covariance, clamping non-positive pivots (degenerate directions) */
static int chol_clamp(int K, const double *C, double *L)
{
    memset(L, 0, sizeof(double) * (size_t)K * K);
    for (int j = 0; j < K; j++) {
        double v = C[j * K + j];
        for (int k = 0; k < j; k++)
            v -= L[j * K + k] * L[j * K + k];
        if (v < -NOISE_COV_SLACK * (1.0 + fabs(C[j * K + j])))
            return -1;
        double ljj = v > 0.0 ? sqrt(v) : 0.0;
        L[j * K + j] = ljj;
        for (int i = j + 1; i < K; i++) {
            double a = C[i * K + j];
            for (int k = 0; k < j; k++)
                a -= L[i * K + k] * L[j * K + k];
            L[i * K + j] = ljj > 0.0 ? a / ljj : 0.0;
        }
    }
    return 0;
}

static int softmax2_rule(double beta, double om, double psi, double c, int n, double *n1,
                         double *n2)
{
    double C2[4] = {2 * om + psi, 3 * c, 3 * c, 3.0}, L2[4];
    double C4[16] = {2 * om + psi, 3 * c, psi,          c,     3 * c, 3.0, c,     1.0,
                     psi,          c,     2 * om + psi, 3 * c, c,     1.0, 3 * c, 3.0};
    double L4[16];
    if (chol_clamp(2, C2, L2) || chol_clamp(4, C4, L4))
        return -1;
    struct gh g;
    gh_make(&g, n);
    double e2 = 0.0, ex = 0.0;
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double x = L2[0] * g.x[i], xs = L2[2] * g.x[i] + L2[3] * g.x[j];
            double dl = sig_delta(beta, x, xs);
            e2 += g.w[i] * g.w[j] * dl * dl;
        }
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double z0 = g.x[i], z1 = g.x[j];
            double x0 = L4[0] * z0, xs0 = L4[4] * z0 + L4[5] * z1;
            double d0 = sig_delta(beta, x0, xs0), wij = g.w[i] * g.w[j];
            double b1 = L4[8] * z0 + L4[9] * z1, b2 = L4[12] * z0 + L4[13] * z1;
            for (int k = 0; k < g.n; k++) {
                double z2 = g.x[k], inner = 0.0;
                double x1 = b1 + L4[10] * z2, c2 = b2 + L4[14] * z2;
                for (int l = 0; l < g.n; l++)
                    inner += g.w[l] * sig_delta(beta, x1, c2 + L4[15] * g.x[l]);
                ex += wij * g.w[k] * d0 * inner;
            }
        }
    *n1 = 4.0 * e2;
    *n2 = 2.0 * e2 + 2.0 * ex;
    return 0;
}

static int softmax_nodes(int T)
{
    switch (T) {
        case 2: return 12;
        case 3: return 7;
        case 4: return 5;
        case 5: return 4;
        default: return 3;
    }
}

static int softmax_rule(const struct act *a, int T, double om, double psi, double c, int ns, int n3,
                        double *n1, double *n2)
{
    struct softmax_ctx s;
    s.beta = a->beta;
    s.T = T;
    if (pair_law_make(om + psi, 2.0 * c, 2.0, &s.diag) || pair_law_make(om, c, 1.0, &s.off))
        return -1;
    gh_make(&s.g, ns);
    double e_norm, e_diag;
    softmax_row_moments(&s, &e_norm, &e_diag);

    struct chol3 k;
    if (chol3_make(om, psi, c, &k))
        return -1;
    struct gh g;
    gh_make(&g, n3);
    double cross = 0.0;
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double w = g.x[i];
            double f1 = softmax_f(&s, k.c * w + k.s1 * g.x[j], w);
            double inner = 0.0;
            if (k.s2 == 0.0) {
                inner = softmax_f(&s, k.c * w + k.r * g.x[j], w);
            } else {
                for (int l = 0; l < g.n; l++)
                    inner += g.w[l] * softmax_f(&s, k.c * w + k.r * g.x[j] + k.s2 * g.x[l], w);
            }
            cross += g.w[i] * g.w[j] * f1 * inner;
        }
    *n1 = T * e_norm;
    *n2 = T * e_diag + T * (T - 1) * cross;
    return 0;
}

int noise_eval(const struct act *a, int T, double omega11, double psi11, double omega12,
               int want_err, struct noise_val *out)
{
    memset(out, 0, sizeof *out);
    if (!isfinite(omega11) || !isfinite(psi11) || !isfinite(omega12) || T < 1)
        return -1;
    if (T == 1 && a->kind != ACT_SOFTMAX)
        return 0;
    struct chol3 k;
    if (chol3_make(omega11, psi11, omega12, &k))
        return -1;
    double n1, n2;
    if (a->kind == ACT_SOFTMAX && T == 2) {
        if (softmax2_rule(a->beta, omega11, psi11, omega12, NOISE_GH_SOFTMAX2, &n1, &n2))
            return -1;
        if (want_err) {
            double m1, m2;
            if (softmax2_rule(a->beta, omega11, psi11, omega12, 2 * NOISE_GH_SOFTMAX2 / 3, &m1,
                              &m2))
                return -1;
            out->err = fmax(fabs(n1 - m1), fabs(n2 - m2));
        }
    } else if (a->kind == ACT_SOFTMAX) {
        if (T > NOISE_SOFTMAX_MAX_T || T > 16)
            return -1;
        int ns = softmax_nodes(T), n3 = 12;
        if (softmax_rule(a, T, omega11, psi11, omega12, ns, n3, &n1, &n2))
            return -1;
        double m1, m2;
        if (want_err) {
            if (softmax_rule(a, T, omega11, psi11, omega12, ns - 2, n3 - 4, &m1, &m2))
                return -1;
            out->err = fmax(fabs(n1 - m1), fabs(n2 - m2));
        }
    } else if (a->kind == ACT_HERMITE) {
        int n = 2 * a->degree + 2;
        elem_rule(a, T, &k, n, n, &n1, &n2);
    } else {
        elem_rule(a, T, &k, NOISE_GH_SMOOTH, NOISE_GH_SMOOTH3, &n1, &n2);
        if (want_err) {
            double m1, m2;
            elem_rule(a, T, &k, 2 * NOISE_GH_SMOOTH / 3, 2 * NOISE_GH_SMOOTH3 / 3, &m1, &m2);
            out->err = fmax(fabs(n1 - m1), fabs(n2 - m2));
        }
    }
    if (!isfinite(n1) || !isfinite(n2))
        return -1;
    out->n1 = n1;
    out->n2 = n2;
    return 0;
}

/* ---- the general index (docs/model.md §10) ---- */

/* The joint law of (u_e, w_e, u_e', w_e') of two output entries e = (a, b), e' = (a', b') under
 * the law (head comment of noise_eval_law's section in docs/noise.md and noise.h):
 *   Cov(u_e, u_e') = C_aa'C_bb' om + C_ab'C_ba' psi,  Cov(u_e, w_e') = Cov(w_e, u_e') = (C_aa'C_bb'
 *   + C_ab'C_ba') o12,  Cov(w_e, w_e') = C_aa'C_bb' + C_ab'C_ba',  E u_e = C_ab mu, E w_e = C_ab mu*
 * (means for the uncentred index only). E[D_e D_e'] by a product Gauss-Hermite rule over the four
 * whitened coordinates (pivots of a singular covariance, e' = e or e' = e^T, clamped to 0). */
static double tok_c(double c, int a, int b) { return a == b ? 1.0 : c; }

static int pair_expect(const struct act *act, const struct phi_law *law, double mu, double om,
                       double psi, double o12, const int *e, const int *f, int n, double *out)
{
    double c = law->c;
    double p1e = tok_c(c, e[0], e[0]) * tok_c(c, e[1], e[1]),
           p2e = tok_c(c, e[0], e[1]) * tok_c(c, e[1], e[0]);
    double p1f = tok_c(c, f[0], f[0]) * tok_c(c, f[1], f[1]),
           p2f = tok_c(c, f[0], f[1]) * tok_c(c, f[1], f[0]);
    double q1 = tok_c(c, e[0], f[0]) * tok_c(c, e[1], f[1]),
           q2 = tok_c(c, e[0], f[1]) * tok_c(c, e[1], f[0]);
    double C[16] = {
        p1e * om + p2e * psi, (p1e + p2e) * o12, q1 * om + q2 * psi,   (q1 + q2) * o12,
        (p1e + p2e) * o12,    p1e + p2e,         (q1 + q2) * o12,      q1 + q2,
        q1 * om + q2 * psi,   (q1 + q2) * o12,   p1f * om + p2f * psi, (p1f + p2f) * o12,
        (q1 + q2) * o12,      q1 + q2,           (p1f + p2f) * o12,    p1f + p2f};
    double L[16], m[4] = {0, 0, 0, 0};
    if (law->uncentred) {
        m[0] = tok_c(c, e[0], e[1]) * mu;
        m[1] = tok_c(c, e[0], e[1]) * law->mu_star;
        m[2] = tok_c(c, f[0], f[1]) * mu;
        m[3] = tok_c(c, f[0], f[1]) * law->mu_star;
    }
    if (chol_clamp(4, C, L))
        return -1;
    struct gh g;
    gh_make(&g, n);
    double acc = 0.0;
    for (int i = 0; i < g.n; i++)
        for (int j = 0; j < g.n; j++) {
            double z0 = g.x[i], z1 = g.x[j], wij = g.w[i] * g.w[j];
            double u1 = m[0] + L[0] * z0, w1 = m[1] + L[4] * z0 + L[5] * z1;
            double d1 = delta_elem(act, u1, w1);
            if (d1 == 0.0)
                continue;
            double b2 = m[2] + L[8] * z0 + L[9] * z1, b3 = m[3] + L[12] * z0 + L[13] * z1;
            double inner = 0.0;
            for (int k = 0; k < g.n; k++) {
                double u2 = b2 + L[10] * g.x[k], c3 = b3 + L[14] * g.x[k], in2 = 0.0;
                if (L[15] == 0.0) {
                    in2 = delta_elem(act, u2, c3);
                } else {
                    for (int l = 0; l < g.n; l++)
                        in2 += g.w[l] * delta_elem(act, u2, c3 + L[15] * g.x[l]);
                }
                inner += g.w[k] * in2;
            }
            acc += wij * d1 * inner;
        }
    *out = acc;
    return 0;
}

/* n1 = sum_{e,e'} C_aa'C_bb' E[D_e D_e'], n2 = sum_{e,e'} C_ab'C_ba' E[D_e D_e'] over the output
 * entries; E[D_e D_e'] depends only on which of a, b, a', b' coincide (C is exchangeable), so it is
 * computed once per pattern (at most 15) and weighted by the pattern's count. */
static int law_rule(const struct act *act, int T, const struct phi_law *law, double mu, double om,
                    double psi, double o12, int n, double *n1, double *n2)
{
    double val[256];
    int known[256] = {0};
    double s1 = 0.0, s2 = 0.0, c = law->c;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            if (a == b && !law->all)
                continue;
            for (int a2 = 0; a2 < T; a2++)
                for (int b2 = 0; b2 < T; b2++) {
                    if (a2 == b2 && !law->all)
                        continue;
                    double w1 = tok_c(c, a, a2) * tok_c(c, b, b2),
                           w2 = tok_c(c, a, b2) * tok_c(c, b, a2);
                    if (w1 == 0.0 && w2 == 0.0)
                        continue;
                    /* the pattern: each index relabelled by its first occurrence, base 4 */
                    int idx[4] = {a, b, a2, b2}, lab[4], nl = 0, key = 0, first[4];
                    for (int i = 0; i < 4; i++) {
                        int l = -1;
                        for (int j = 0; j < nl; j++)
                            if (first[j] == idx[i])
                                l = j;
                        if (l < 0) {
                            first[nl] = idx[i];
                            l = nl++;
                        }
                        lab[i] = l;
                        key = 4 * key + l;
                    }
                    if (!known[key]) {
                        int e[2] = {lab[0], lab[1]}, f[2] = {lab[2], lab[3]};
                        if (pair_expect(act, law, mu, om, psi, o12, e, f, n, &val[key]))
                            return -1;
                        known[key] = 1;
                    }
                    s1 += w1 * val[key];
                    s2 += w2 * val[key];
                }
        }
    *n1 = s1;
    *n2 = s2;
    return 0;
}

int noise_law_supported(const struct act *a, const struct phi_law *law)
{
    return phi_law_special(law) || a->kind != ACT_SOFTMAX;
}

int noise_eval_law(const struct act *a, int T, const struct phi_law *law, double mu, double omega11,
                   double psi11, double omega12, int want_err, struct noise_val *out)
{
    if (phi_law_special(law))
        return noise_eval(a, T, omega11, psi11, omega12, want_err, out);
    memset(out, 0, sizeof *out);
    if (!noise_law_supported(a, law) || !isfinite(mu) || !isfinite(omega11) || !isfinite(psi11) ||
        !isfinite(omega12) || T < 1 || T > PARAMS_MAX_TOKENS)
        return -1;
    /* Hermite of degree k: D_e D_e' is a polynomial of degree 4k - 2, exact with 2k nodes */
    int n = a->kind == ACT_HERMITE ? 2 * a->degree : NOISE_GH_4D;
    double n1, n2;
    if (law_rule(a, T, law, mu, omega11, psi11, omega12, n, &n1, &n2))
        return -1;
    if (want_err && a->kind != ACT_HERMITE) {
        double m1, m2;
        if (law_rule(a, T, law, mu, omega11, psi11, omega12, 2 * n / 3, &m1, &m2))
            return -1;
        out->err = fmax(fabs(n1 - m1), fabs(n2 - m2));
    }
    if (!isfinite(n1) || !isfinite(n2))
        return -1;
    out->n1 = n1;
    out->n2 = n2;
    return 0;
}

void noise_direct_drift(double eta, const struct noise_val *nv, double drift[4])
{
    drift[0] = eta * nv->n1;
    drift[1] = eta * nv->n2;
    drift[2] = 0.0;
    drift[3] = 0.0;
}
