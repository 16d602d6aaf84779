/*
 * phi_general.c: the population loss under the general index of docs/model.md §10 (correlated
 * tokens, an index with a mean, outputs on every entry) and its gradient, d/dmu included.
 *
 * The law (exact at every d by Isserlis; Gaussian as d -> inf). With E x_a x_b^T = C_ab I,
 * h_ab = (x_a^T S x_b - k C_ab Tr S)/sqrt(d) (k = 1 centred, 0 uncentred):
 *   E h_ab = (1 - k) C_ab mu,  mu = Tr S/sqrt(d),
 *   Cov(h_ab(S), h_a'b'(S')) = (1/d) sum S_ij S'_kl [E x_ai x_a'k E x_bj x_b'l + E x_ai x_b'l E x_bj x_a'k]
 *                            = C_aa' C_bb' Tr(S S'^T)/d + C_ab' C_ba' Tr(S S')/d.
 * With C = (1 - c) I + c 1 1^T and the symmetric teacher (Psi12 = Omega12, Omega22 = Psi22 = 1):
 *   off-diagonal entry (a != b): u ~ N(c mu, Omega11 + c^2 Psi11), w ~ N(c mu*, 1 + c^2),
 *                                Cov(u, w) = (1 + c^2) Omega12;
 *   diagonal entry:              u ~ N(mu, Omega11 + Psi11), w ~ N(mu*, 2), Cov = 2 Omega12
 * (means only for the uncentred index), as docs/model.md §10 states. A sum of per-entry losses needs
 * only these marginals: Phi = T(T-1) E_off[F] + [outputs all] T E_diag[F], F = (sigma(u) - sigma(w))^2/2.
 * For one entry with mean m_u, variance v_u and covariance k (Price and Stein):
 *   dE/dm_u = E[F_u],  dE/dv_u = E[F_uu]/2,  dE/dk = E[F_uw],
 * and the chain rule through (m_u, v_u, k)(mu, Omega11, Psi11, Omega12) gives the gradient.
 *
 * Closed form for Hermite activations (shifted Mehler): He_n(x + m) = sum_k C(n, k) m^(n-k) He_k(x)
 * (an Appell sequence), so sigma(m + x) = sum_k s_k He_k(x) with s_k = sum_n c_n C(n, k) m^(n-k);
 * then E[f(u) g(w)] for centred (u, w) is phi.c's Mehler sum with two coefficient vectors,
 *   E[f(u) g(w)] = sum_p k^p p! F_p(v_u) G_p(v_w),  F_p(a) = sum_j f_j B_{j,p}(a),
 * and sigma' has coefficients (k + 1) c_{k+1}. Every term of E[F], E[F_u], E[F_uu], E[F_uw] is
 * such a sum.
 * relu: over z2 with u = m_u + l11 z1 + l21 z2, w = m_w + l22 z2; the z1 integral in closed form
 * (E[relu(u)|z2] = A Phi(A/s) + s phi(A/s), E[relu(u)^2|z2] = (A^2 + s^2) Phi(A/s) + A s phi(A/s),
 * A = m_u + l21 z2, s = l11), the z2 integral by Gauss-Legendre on pieces split at the kink of
 * relu(w); F_uu holds a delta at u = 0: E[relu(w) delta(u)] = p_u(0) E[relu(w) | u = 0], in
 * closed form (w | u = 0 is normal).
 * tanh, erf: phi.c's trapezoidal rule, shifted by the means.
 * Softmax rows: row a has entries (h_ab)_b; with e_b = C_ab, its 2T-dim law is
 *   E u_b = (1 - k) e_b mu, E w_b = (1 - k) e_b mu*,
 *   Cov(u_b, u_b') = Omega11 C_bb' + Psi11 e_b e_b',  Cov(w_b, w_b') = C_bb' + e_b e_b',
 *   Cov(u_b, w_b') = Omega12 (C_bb' + e_b e_b'),
 * the same for every row up to a permutation, so Phi = T E[row loss of row 0]. Multivariate
 * Price: dE/dOmega11 = 1/2 sum E[F_{u_b u_b'}] C_bb', dE/dPsi11 = 1/2 sum E[F_{u_b u_b'}] e_b e_b',
 * dE/dOmega12 = sum E[F_{u_b w_b'}] (C_bb' + e_b e_b'), dE/dmu = (1 - k) sum E[F_{u_b}] e_b.
 * T = 2 reduces to the differences x = u_0 - u_1, y = w_0 - w_1 (the row loss is
 * (s(beta x) - s(beta y))^2, s the logistic): with a = (1, -1), a^T C a = 2 - 2c, a^T e = 1 - c.
 * T >= 3 (and T = 2 on request, for tests) uses a tensor Gauss-Hermite rule over the 2T
 * whitened coordinates, or Monte Carlo past the size limit, as phi.c.
 */
#include "aimsweep/model/phi.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_integration.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/rng.h"

/* Gauss-Legendre sizes for relu's outer integral (the stated error is the difference of the
 * two), its half-width in standard units, and the limits of the softmax rules (as phi.c). */
#define PHIG_GL_FINE 96
#define PHIG_GL_COARSE 48
#define PHIG_ZMAX 12.0
#define PHIG_TENSOR_MAX_POINTS (1 << 17)
#define PHIG_MC_SAMPLES (1 << 17)
#define PHIG_MC_SEED 0x5eedULL
#define PHIG_PSD_TOL 1e-9
#define PHIG_MAX_DIM (2 * PARAMS_MAX_TOKENS)
#define PHIG_TEST_NODES_T2 40

void phi_law_of(const struct params *p, double mu_star, struct phi_law *law)
{
    law->c = p->token_corr;
    law->uncentred = p->index == INDEX_UNCENTRED;
    law->all = p->outputs == OUTPUTS_ALL;
    law->mu_star = mu_star;
}

int phi_law_special(const struct phi_law *law)
{
    return law->c == 0 && !law->uncentred && !law->all;
}

/* One entry: E[F] and its partials in the entry's own mean, variance and covariance. */
struct entry {
    double e, e_m, e_v, e_k, err;
};

/* ---- Hermite: shifted Mehler --------------------------------------------------------------- */

/* B_{n,p}(a) of phi.c: He_n(sqrt(a) z) = sum_p a^{p/2} B_{n,p}(a) He_p(z). */
static double herm_B(int n, int p, double a)
{
    int m = n - p;
    if (m < 0 || (m & 1))
        return 0;
    m /= 2;
    double coef = 1;
    for (int k = p + 1; k <= n; k++)
        coef *= k;
    for (int k = 2; k <= m; k++)
        coef /= k;
    return coef / ldexp(1.0, m) * pow(a - 1, m);
}

/* E[f(u) g(w)], (u, w) centred with Var u = a, Var w = b, Cov = k; f, g of degree <= D. */
static double herm_E(const double *f, const double *g, int D, double a, double b, double k)
{
    double s = 0, fact = 1;
    for (int p = 0; p <= D; p++) {
        if (p > 0)
            fact *= p;
        double Fa = 0, Gb = 0;
        for (int j = p; j <= D; j++) {
            if (f[j] != 0)
                Fa += f[j] * herm_B(j, p, a);
            if (g[j] != 0)
                Gb += g[j] * herm_B(j, p, b);
        }
        s += pow(k, p) * fact * Fa * Gb;
    }
    return s;
}

/* Coefficients of x -> sigma(m + x) (out, degree D) and of its derivative (dout). */
static void herm_shift(const double *c, int D, double m, double *out)
{
    for (int k = 0; k <= D; k++) {
        double s = 0, binom = 1; /* C(n, k) for n = k, k+1, ... */
        for (int n = k; n <= D; n++) {
            if (n > k)
                binom = binom * n / (n - k);
            s += c[n] * binom * pow(m, n - k);
        }
        out[k] = s;
    }
}

static void herm_deriv(const double *c, int D, double *out)
{
    for (int k = 0; k <= D; k++)
        out[k] = k < D ? (k + 1) * c[k + 1] : 0;
}

static void entry_hermite(const struct act *s, double mu_u, double mu_w, double a, double k,
                          double b, struct entry *r)
{
    int D = s->degree;
    double fu[ACT_MAX_DEGREE + 1], fw[ACT_MAX_DEGREE + 1], du[ACT_MAX_DEGREE + 1],
        d2u[ACT_MAX_DEGREE + 1], dw[ACT_MAX_DEGREE + 1];
    herm_shift(s->c, D, mu_u, fu);
    herm_shift(s->c, D, mu_w, fw);
    herm_deriv(fu, D, du);
    herm_deriv(du, D, d2u);
    herm_deriv(fw, D, dw);
    double Euu = herm_E(fu, fu, D, a, a, a), Euw = herm_E(fu, fw, D, a, b, k),
           Eww = herm_E(fw, fw, D, b, b, b);
    r->e = 0.5 * (Euu - 2 * Euw + Eww);
    r->e_m = herm_E(fu, du, D, a, a, a) - herm_E(du, fw, D, a, b, k);
    r->e_v = 0.5 * (herm_E(du, du, D, a, a, a) + herm_E(fu, d2u, D, a, a, a) -
                    herm_E(d2u, fw, D, a, b, k));
    r->e_k = -herm_E(du, dw, D, a, b, k);
    r->err = 0;
}

/* ---- relu: closed inner integral, Gauss-Legendre outer ------------------------------------- */

static double npdf(double x) { return exp(-0.5 * x * x) / sqrt(2 * M_PI); }
static double ncdf(double x) { return 0.5 * erfc(-x / M_SQRT2); }

/* E[relu(X)] for X ~ N(m, s^2). */
static double relu_mean(double m, double s)
{
    return s > 0 ? m * ncdf(m / s) + s * npdf(m / s) : (m > 0 ? m : 0);
}

struct relu_ctx {
    double mu_u, mu_w, l11, l21, l22;
};

/* The z2 integrands: E[F | z2], E[F_u | z2], E[1(u > 0) 1(w > 0) | z2], times the weight phi(z2). */
static void relu_at(const struct relu_ctx *c, double z2, double *out)
{
    double A = c->mu_u + c->l21 * z2, s = c->l11, w = c->mu_w + c->l22 * z2;
    double rw = w > 0 ? w : 0, P, E1, E2;
    if (s > 0) {
        double t = A / s;
        P = ncdf(t);
        E1 = A * P + s * npdf(t);
        E2 = (A * A + s * s) * P + A * s * npdf(t);
    } else {
        P = A > 0 ? 1 : 0;
        E1 = A > 0 ? A : 0;
        E2 = E1 * E1;
    }
    double wt = npdf(z2);
    out[0] = wt * 0.5 * (E2 - 2 * rw * E1 + rw * rw);
    out[1] = wt * (E1 - rw * P);
    out[2] = wt * (w > 0 ? P : 0);
}

static int entry_relu(double mu_u, double mu_w, double a, double k, double b, struct entry *r)
{
    static gsl_integration_glfixed_table *tf, *tc;
    if (!tf)
        tf = gsl_integration_glfixed_table_alloc(PHIG_GL_FINE);
    if (!tc)
        tc = gsl_integration_glfixed_table_alloc(PHIG_GL_COARSE);
    struct relu_ctx c = {mu_u, mu_w, 0, 0, 0};
    if (!tf || !tc || phi_chol2(a, k, b, &c.l11, &c.l21, &c.l22))
        return -1;
    /* pieces of [-ZMAX, ZMAX] split where relu(w) kinks and, for a degenerate u | z2, where u does */
    double br[4] = {-PHIG_ZMAX, 0, 0, PHIG_ZMAX};
    int nb = 1;
    double kinks[2];
    int nk = 0;
    if (c.l22 > 0)
        kinks[nk++] = -mu_w / c.l22;
    if (c.l11 == 0 && c.l21 != 0)
        kinks[nk++] = -mu_u / c.l21;
    if (nk == 2 && kinks[0] > kinks[1]) {
        double t = kinks[0];
        kinks[0] = kinks[1];
        kinks[1] = t;
    }
    for (int i = 0; i < nk; i++)
        if (kinks[i] > br[nb - 1] && kinks[i] < PHIG_ZMAX)
            br[nb++] = kinks[i];
    br[nb++] = PHIG_ZMAX;
    double fine[3] = {0}, coarse[3] = {0}, v[3];
    for (int piece = 0; piece + 1 < nb; piece++)
        for (int rule = 0; rule < 2; rule++) {
            gsl_integration_glfixed_table *t = rule ? tc : tf;
            int n = rule ? PHIG_GL_COARSE : PHIG_GL_FINE;
            for (int i = 0; i < n; i++) {
                double x, w;
                gsl_integration_glfixed_point(br[piece], br[piece + 1], (size_t)i, &x, &w, t);
                relu_at(&c, x, v);
                for (int j = 0; j < 3; j++)
                    (rule ? coarse : fine)[j] += w * v[j];
            }
        }
    /* E[F_uu] = P(u > 0) - p_u(0) E[relu(w) | u = 0]; w | u = 0 ~ N(mu_w - k mu_u/a, b - k^2/a) */
    double Fuu;
    if (a > 0) {
        double su = sqrt(a), cm = mu_w - k / a * mu_u, cv = b - k * k / a;
        Fuu = ncdf(mu_u / su) - npdf(mu_u / su) / su * relu_mean(cm, sqrt(cv > 0 ? cv : 0));
    } else {
        Fuu = mu_u > 0 ? 1 : 0;
    }
    r->e = fine[0];
    r->e_m = fine[1];
    r->e_v = 0.5 * Fuu;
    r->e_k = -fine[2];
    r->err = fabs(fine[0] - coarse[0]);
    return isfinite(r->e) && isfinite(r->e_m) && isfinite(r->e_k) && isfinite(r->e_v) ? 0 : -1;
}

/* ---- tanh, erf: the trapezoidal rule, shifted ---------------------------------------------- */

struct shift_ctx {
    const struct act *s;
    double mu_u, mu_w;
};

static void shifted_fn(double u, double w, void *vctx, double *out)
{
    const struct shift_ctx *c = vctx;
    u += c->mu_u;
    w += c->mu_w;
    double su = act_f(c->s, u), sw = act_f(c->s, w), du = act_df(c->s, u);
    out[0] = 0.5 * (su - sw) * (su - sw);
    out[1] = du * du + (su - sw) * act_d2f(c->s, u);
    out[2] = -du * act_df(c->s, w);
    out[3] = (su - sw) * du;
}

static int entry_smooth(const struct act *s, double mu_u, double mu_w, double a, double k, double b,
                        struct entry *r)
{
    struct shift_ctx c = {s, mu_u, mu_w};
    double fine[4], coarse[4];
    if (phi_trap2(shifted_fn, &c, 4, a, k, b, fine, coarse))
        return -1;
    r->e = fine[0];
    r->e_v = 0.5 * fine[1];
    r->e_k = fine[2];
    r->e_m = fine[3];
    r->err = fabs(fine[0] - coarse[0]);
    return isfinite(r->e) && isfinite(r->e_v) && isfinite(r->e_k) && isfinite(r->e_m) ? 0 : -1;
}

static int entry_eval(const struct act *s, double mu_u, double mu_w, double a, double k, double b,
                      struct entry *r)
{
    if (!(a >= 0) || !(b > 0) || a * b - k * k < -PHIG_PSD_TOL * (a * b > 1 ? a * b : 1))
        return -1;
    switch (s->kind) {
        case ACT_HERMITE: entry_hermite(s, mu_u, mu_w, a, k, b, r); return 0;
        case ACT_RELU: return entry_relu(mu_u, mu_w, a, k, b, r);
        default: return entry_smooth(s, mu_u, mu_w, a, k, b, r);
    }
}

static int elementwise(const struct act *s, int T, const struct phi_law *law, double mu, double o11,
                       double p11, double o12, struct phi_val *out)
{
    double c = law->c, u = law->uncentred ? 1 : 0, c2 = c * c;
    struct entry r;
    double off = (double)T * (T - 1);
    if (entry_eval(s, u * c * mu, u * c * law->mu_star, o11 + c2 * p11, (1 + c2) * o12, 1 + c2, &r))
        return -1;
    out->phi = off * r.e;
    out->d_omega11 = off * r.e_v;
    out->d_psi11 = off * c2 * r.e_v;
    out->d_omega12 = off * (1 + c2) * r.e_k;
    out->d_mu = off * u * c * r.e_m;
    out->err = off * r.err;
    if (law->all) {
        if (entry_eval(s, u * mu, u * law->mu_star, o11 + p11, 2 * o12, 2.0, &r))
            return -1;
        out->phi += T * r.e;
        out->d_omega11 += T * r.e_v;
        out->d_psi11 += T * r.e_v;
        out->d_omega12 += T * 2 * r.e_k;
        out->d_mu += T * u * r.e_m;
        out->err += T * r.err;
    }
    return 0;
}

/* ---- Softmax rows --------------------------------------------------------------------------- */

static double logistic(double t) { return t >= 0 ? 1 / (1 + exp(-t)) : exp(t) / (1 + exp(t)); }

/* T = 2 on the differences: F = (s(beta x) - s(beta y))^2, with F_xx, F_xy, F_x. */
struct sm2_ctx {
    double beta, mx, my;
};

static void sm2_shifted(double x, double y, void *vctx, double *out)
{
    const struct sm2_ctx *c = vctx;
    double b = c->beta, sx = logistic(b * (x + c->mx)), sy = logistic(b * (y + c->my));
    double d1x = b * sx * (1 - sx);
    out[0] = (sx - sy) * (sx - sy);
    out[1] = 2 * d1x * d1x + 2 * (sx - sy) * b * d1x * (1 - 2 * sx);
    out[2] = -2 * d1x * b * sy * (1 - sy);
    out[3] = 2 * (sx - sy) * d1x;
}

static int softmax_pair(const struct act *s, const struct phi_law *law, double mu, double o11,
                        double p11, double o12, struct phi_val *out)
{
    double c = law->c, u = law->uncentred ? 1 : 0, aCa = 2 - 2 * c, ae = 1 - c;
    struct sm2_ctx x = {s->beta, u * ae * mu, u * ae * law->mu_star};
    double fine[4], coarse[4];
    if (phi_trap2(sm2_shifted, &x, 4, o11 * aCa + p11 * ae * ae, o12 * (aCa + ae * ae),
                  aCa + ae * ae, fine, coarse))
        return -1;
    out->phi = 2 * fine[0];
    out->d_omega11 = fine[1] * aCa;
    out->d_psi11 = fine[1] * ae * ae;
    out->d_omega12 = 2 * fine[2] * (aCa + ae * ae);
    out->d_mu = 2 * fine[3] * ae * u;
    out->err = 2 * fabs(fine[0] - coarse[0]);
    return isfinite(out->phi) && isfinite(fine[1]) && isfinite(fine[2]) && isfinite(fine[3]) ? 0
                                                                                             : -1;
}

/* Row loss F = 1/2 |p - q|^2 (p = softmax(beta u), q = softmax(beta w)), its u-gradient gu, its
 * u-u Hessian Huu and u-w Hessian Huw (T x T). */
static double sm_row_full(double beta, int T, const double *u, const double *w, double *gu,
                          double *Huu, double *Huw)
{
    double p[PARAMS_MAX_TOKENS], q[PARAMS_MAX_TOKENS], Jp[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        Jq[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    act_softmax(beta, T, u, p);
    act_softmax(beta, T, w, q);
    double F = 0;
    for (int c = 0; c < T; c++) {
        F += 0.5 * (p[c] - q[c]) * (p[c] - q[c]);
        for (int i = 0; i < T; i++) { /* J[c][i] = dp_c/du_i = beta p_c (delta_ci - p_i) */
            Jp[c * T + i] = beta * p[c] * ((c == i) - p[i]);
            Jq[c * T + i] = beta * q[c] * ((c == i) - q[i]);
        }
    }
    double b2 = beta * beta;
    for (int i = 0; i < T; i++) {
        double g = 0;
        for (int c = 0; c < T; c++)
            g += (p[c] - q[c]) * Jp[c * T + i];
        gu[i] = g;
        for (int j = 0; j < T; j++) {
            double huu = 0, huw = 0;
            for (int c = 0; c < T; c++) {
                /* d2 p_c/du_i du_j = beta^2 [p_c (d_ci - p_i)(d_cj - p_j) - p_c p_i (d_ij - p_j)] */
                double d2 = b2 * (p[c] * ((c == i) - p[i]) * ((c == j) - p[j]) -
                                  p[c] * p[i] * ((i == j) - p[j]));
                huu += Jp[c * T + i] * Jp[c * T + j] + (p[c] - q[c]) * d2;
                huw -= Jp[c * T + i] * Jq[c * T + j];
            }
            Huu[i * T + j] = huu;
            Huw[i * T + j] = huw;
        }
    }
    return F;
}

/* Lower Cholesky of an n x n matrix; -1 if not positive semidefinite (a zero pivot is kept). */
static int cholesky(int n, const double *A, double *L)
{
    memset(L, 0, sizeof(double) * (size_t)n * n);
    for (int j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int k = 0; k < j; k++)
            s -= L[j * n + k] * L[j * n + k];
        if (s < -PHIG_PSD_TOL * (A[j * n + j] > 1 ? A[j * n + j] : 1))
            return -1;
        L[j * n + j] = s > 0 ? sqrt(s) : 0;
        for (int i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (int k = 0; k < j; k++)
                t -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = L[j * n + j] > 0 ? t / L[j * n + j] : 0;
        }
    }
    return 0;
}

/* Expectations over the row law X = M + L z (2T dims): E F, E gu, E Huu, E Huw. */
struct row_acc {
    double F, gu[PARAMS_MAX_TOKENS], Huu[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        Huw[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
};

static void row_point(double beta, int T, const double *M, const double *L, const double *z,
                      double wt, struct row_acc *acc)
{
    int n = 2 * T;
    double X[PHIG_MAX_DIM], gu[PARAMS_MAX_TOKENS], Huu[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS],
        Huw[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS];
    for (int i = 0; i < n; i++) {
        double s = M[i];
        for (int k = 0; k <= i; k++)
            s += L[i * n + k] * z[k];
        X[i] = s;
    }
    double F = sm_row_full(beta, T, X, X + T, gu, Huu, Huw);
    acc->F += wt * F;
    for (int i = 0; i < T; i++) {
        acc->gu[i] += wt * gu[i];
        for (int j = 0; j < T; j++) {
            acc->Huu[i * T + j] += wt * Huu[i * T + j];
            acc->Huw[i * T + j] += wt * Huw[i * T + j];
        }
    }
}

static int row_tensor(double beta, int T, const double *M, const double *L, int nodes,
                      struct row_acc *acc)
{
    const double *x, *w;
    if (phi_gh_get(nodes, &x, &w))
        return -1;
    int n = 2 * T, idx[PHIG_MAX_DIM] = {0};
    double z[PHIG_MAX_DIM] = {0};
    memset(acc, 0, sizeof *acc);
    for (;;) {
        double wt = 1;
        for (int i = 0; i < n; i++) {
            z[i] = x[idx[i]];
            wt *= w[idx[i]];
        }
        row_point(beta, T, M, L, z, wt, acc);
        int k = 0;
        while (k < n && ++idx[k] == nodes)
            idx[k++] = 0;
        if (k == n)
            break;
    }
    return 0;
}

static void row_mc(double beta, int T, const double *M, const double *L, struct row_acc *acc,
                   double *err)
{
    struct rng g;
    rng_init(&g, PHIG_MC_SEED, 1, (uint32_t)T);
    double z[PHIG_MAX_DIM] = {0}, s2 = 0;
    memset(acc, 0, sizeof *acc);
    for (int i = 0; i < PHIG_MC_SAMPLES; i++) {
        rng_normals(&g, z, 2 * (size_t)T);
        double before = acc->F;
        row_point(beta, T, M, L, z, 1.0 / PHIG_MC_SAMPLES, acc);
        double F = (acc->F - before) * PHIG_MC_SAMPLES;
        s2 += F * F;
    }
    *err = sqrt((s2 / PHIG_MC_SAMPLES - acc->F * acc->F) / PHIG_MC_SAMPLES);
}

static int softmax_rows(const struct act *s, int T, const struct phi_law *law, double mu,
                        double o11, double p11, double o12, int nodes_min, struct phi_val *out)
{
    int n = 2 * T;
    double c = law->c, u = law->uncentred ? 1 : 0;
    double C[PARAMS_MAX_TOKENS * PARAMS_MAX_TOKENS], e[PARAMS_MAX_TOKENS];
    double M[PHIG_MAX_DIM], Sig[PHIG_MAX_DIM * PHIG_MAX_DIM], L[PHIG_MAX_DIM * PHIG_MAX_DIM];
    for (int b = 0; b < T; b++) {
        e[b] = b == 0 ? 1 : c; /* row 0: e_b = C_0b */
        for (int bb = 0; bb < T; bb++)
            C[b * T + bb] = b == bb ? 1 : c;
    }
    for (int b = 0; b < T; b++) {
        M[b] = u * e[b] * mu;
        M[T + b] = u * e[b] * law->mu_star;
        for (int bb = 0; bb < T; bb++) {
            double K1 = C[b * T + bb], K2 = e[b] * e[bb];
            Sig[b * n + bb] = o11 * K1 + p11 * K2;
            Sig[(T + b) * n + T + bb] = K1 + K2;
            Sig[b * n + T + bb] = Sig[(T + bb) * n + b] = o12 * (K1 + K2);
        }
    }
    if (cholesky(n, Sig, L))
        return -1;
    struct row_acc acc, lo;
    double err;
    int nodes = 2;
    while (pow(nodes + 1, n) <= PHIG_TENSOR_MAX_POINTS)
        nodes++;
    if (nodes < nodes_min)
        nodes = nodes_min;
    if (nodes >= 4) {
        if (row_tensor(s->beta, T, M, L, nodes, &acc) ||
            row_tensor(s->beta, T, M, L, nodes - 1, &lo))
            return -1;
        err = fabs(acc.F - lo.F);
    } else {
        row_mc(s->beta, T, M, L, &acc, &err);
    }
    out->phi = T * acc.F;
    out->err = T * err;
    out->d_omega11 = out->d_psi11 = out->d_omega12 = out->d_mu = 0;
    for (int b = 0; b < T; b++) {
        out->d_mu += T * u * e[b] * acc.gu[b];
        for (int bb = 0; bb < T; bb++) {
            double K1 = C[b * T + bb], K2 = e[b] * e[bb];
            out->d_omega11 += T * 0.5 * acc.Huu[b * T + bb] * K1;
            out->d_psi11 += T * 0.5 * acc.Huu[b * T + bb] * K2;
            out->d_omega12 += T * acc.Huw[b * T + bb] * (K1 + K2);
        }
    }
    return isfinite(out->phi) && isfinite(out->d_omega11) && isfinite(out->d_mu) ? 0 : -1;
}

/* Newton on Phi_mu(mu) = 0 from the guess, Phi_mumu by central differences; at most this many
 * iterations, to this tolerance on |Phi_mu|, before the slaved system reports failure. */
#define PHIG_SLAVE_ITER 60
#define PHIG_SLAVE_TOL 1e-12
#define PHIG_SLAVE_DMU 1e-6

/* The minimum of Phi in mu that the fast dynamics dmu/dt = -d Phi_mu reaches from the guess:
 * Newton where Phi is convex in mu, a descent step of the guess's size where it is not (h2 on
 * the diagonal makes Phi a double well in mu, with a maximum near mu = 0), each step halved
 * until Phi decreases. Returns 0 with the root, or -1. */
int phi_mu_slow(const struct act *act, int T, const struct phi_law *law, double guess, double o11,
                double p11, double o12, double *mu_out)
{
    double mu = guess;
    struct phi_val v, a, b, t;
    for (int it = 0; it < PHIG_SLAVE_ITER; it++) {
        if (phi_eval_law(act, T, law, mu, o11, p11, o12, &v) ||
            phi_eval_law(act, T, law, mu + PHIG_SLAVE_DMU, o11, p11, o12, &a) ||
            phi_eval_law(act, T, law, mu - PHIG_SLAVE_DMU, o11, p11, o12, &b))
            return -1;
        double dd = (a.d_mu - b.d_mu) / (2 * PHIG_SLAVE_DMU);
        if (fabs(v.d_mu) <= PHIG_SLAVE_TOL * (1 + fabs(v.phi)) && dd > 0) {
            *mu_out = mu;
            return 0;
        }
        double cap = 1 + fabs(mu);
        double step = dd > 0 ? -v.d_mu / dd : (v.d_mu > 0 ? -1.0 : 1.0) * 0.25 * cap;
        if (fabs(step) > cap)
            step = step > 0 ? cap : -cap;
        int ok = 0;
        for (int half = 0; half < 40; half++) {
            if (phi_eval_law(act, T, law, mu + step, o11, p11, o12, &t))
                return -1;
            if (t.phi <= v.phi) {
                ok = 1;
                break;
            }
            step *= 0.5;
        }
        if (!ok)
            return -1;
        mu += step;
        if (fabs(step) <= 1e-15 * (1 + fabs(mu)) && dd > 0) {
            *mu_out = mu;
            return 0;
        }
    }
    return -1;
}

/* ---- Entry points ----------------------------------------------------------------------------- */

static int inputs_ok(int T, double mu, double o11, double p11, double o12)
{
    return isfinite(mu) && isfinite(o11) && isfinite(p11) && isfinite(o12) && T >= 2 &&
           T <= PARAMS_MAX_TOKENS;
}

int phi_eval_law_general(const struct act *a, int T, const struct phi_law *law, double mu,
                         double o11, double p11, double o12, struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    if (!inputs_ok(T, mu, o11, p11, o12) || !(law->c >= 0 && law->c < 1))
        return -1;
    int rc = a->kind == ACT_SOFTMAX ? (T == 2 ? softmax_pair(a, law, mu, o11, p11, o12, out)
                                              : softmax_rows(a, T, law, mu, o11, p11, o12, 0, out))
                                    : elementwise(a, T, law, mu, o11, p11, o12, out);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

int phi_eval_law_softmax_rows(const struct act *a, int T, const struct phi_law *law, double mu,
                              double o11, double p11, double o12, struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    if (a->kind != ACT_SOFTMAX || !inputs_ok(T, mu, o11, p11, o12))
        return -1;
    /* T = 2 for tests: more nodes than the size limit allows (the logistic needs them) */
    return softmax_rows(a, T, law, mu, o11, p11, o12, T == 2 ? PHIG_TEST_NODES_T2 : 0, out);
}

int phi_eval_law(const struct act *a, int T, const struct phi_law *law, double mu, double o11,
                 double p11, double o12, struct phi_val *out)
{
    if (phi_law_special(law))
        return phi_eval(a, T, o11, p11, o12, out);
    return phi_eval_law_general(a, T, law, mu, o11, p11, o12, out);
}
