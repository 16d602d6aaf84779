/*
 * phi.c: the population loss Phi(omega11, psi11, omega12) and its gradient (docs/model.md §5).
 *
 * Elementwise activations: Phi = T(T-1) E[F(u, w)], F = 1/2 (sigma(u) - sigma(w))^2,
 * (u, w) ~ N(0, [[a, c], [c, 1]]) with a = omega11, c = omega12. By Price's theorem
 *   dE[F]/da = 1/2 E[F_uu] = 1/2 E[sigma'(u)^2 + (sigma(u) - sigma(w)) sigma''(u)],
 *   dE[F]/dc = E[F_uw]    = -E[sigma'(u) sigma'(w)].
 * Closed forms:
 *  - Hermite: with B_{n,p}(a) = (a-1)^{(n-p)/2} n! / (((n-p)/2)! p! 2^{(n-p)/2}) (n - p even),
 *    He_n(sqrt(a) z) = sum_p a^{p/2} B_{n,p}(a) He_p(z), and Mehler's E[He_p(z1) He_q(z2)] =
 *    delta_pq p! rho^p give E[He_j(u) He_k(w)] = sum_p c^p p! B_{j,p}(a) B_{k,p}(b) for
 *    Var u = a, Var w = b, Cov = c: a polynomial, differentiated exactly.
 *  - erf: E[erf(u) erf(w)] = (2/pi) asin(2c / sqrt((1 + 2a)(1 + 2b))).
 *  - relu: E[relu(u) relu(w)] = sqrt(ab)/(2 pi) (sin t + (pi - t) cos t), cos t = c/sqrt(ab),
 *    E[relu(u)^2] = a/2; d/dc = (pi - t)/(2 pi), d/da = sqrt(ab - c^2)/(4 pi a).
 *  - tanh: the truncated Hermite expansion with Mehler's formula (phi_mehler.c, its stated error
 *    there); the 2D trapezoidal rule in standard units outside its range, error = difference to
 *    the rule of twice the step.
 * Softmax: rows of T independent pairs (diagonal: Var u = omega11 + psi11, Cov = 2 omega12,
 * Var w = 2; off-diagonal: omega11, omega12, 1). Price's theorem per pair with the exact Hessian
 * of the row loss; T = 2 reduces to one 2D integral over the differences u0 - u1, w0 - w1, which
 * is the tanh loss at rescaled variances (phi_mehler.c; the trapezoidal rule past its range);
 * larger T uses a tensor Gauss-Hermite rule (GSL), or Monte Carlo past a size limit.
 */
#include "aimsweep/model/phi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_integration.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/rng.h"

/* Rule sizes: main rule and the lower-order rule whose difference is the stated error. */
/* Trapezoidal rule for 2D Gaussian integrals: step and half-width in standard units. */
#define PHI_TRAP_H 0.1
#define PHI_TRAP_ZMAX 8.6
#define PHI_TRAP_NMAX 256
#define PHI_TENSOR_MAX_POINTS (1 << 17)
#define PHI_MC_SAMPLES (1 << 17)
#define PHI_MC_SEED 0x5eedULL
/* Tolerance on a negative conditional variance, relative to the variance, before refusing. */
#define PHI_PSD_TOL 1e-9

/* Cached Gauss-Hermite rules for the standard normal weight. Not thread-safe: the program is
 * one thread per rank. */
static double *gh_x[PHI_GH_MAX + 1], *gh_w[PHI_GH_MAX + 1];

static int gh_get(int n, const double **x, const double **w)
{
    if (n < 1 || n > PHI_GH_MAX)
        return -1;
    if (!gh_x[n]) {
        /* GSL's rule for the weight exp(-b x^2) with b = 1/2, normalised to sum 1. */
        gsl_integration_fixed_workspace *ws = gsl_integration_fixed_alloc(
            gsl_integration_fixed_hermite, (size_t)n, 0.0, 0.5, 0.0, 0.0);
        double *xs = malloc(sizeof(double) * (size_t)n), *ws_ = malloc(sizeof(double) * (size_t)n);
        if (!ws || !xs || !ws_) {
            if (ws)
                gsl_integration_fixed_free(ws);
            free(xs);
            free(ws_);
            return -1;
        }
        const double *nx = gsl_integration_fixed_nodes(ws), *nw = gsl_integration_fixed_weights(ws);
        double s = 0;
        for (int i = 0; i < n; i++)
            s += nw[i];
        for (int i = 0; i < n; i++) {
            xs[i] = nx[i];
            ws_[i] = nw[i] / s;
        }
        gsl_integration_fixed_free(ws);
        gh_x[n] = xs;
        gh_w[n] = ws_;
    }
    *x = gh_x[n];
    *w = gh_w[n];
    return 0;
}

void phi_gh_rule(int n, double *x, double *w)
{
    const double *gx, *gw;
    if (gh_get(n, &gx, &gw))
        return;
    memcpy(x, gx, sizeof(double) * (size_t)n);
    memcpy(w, gw, sizeof(double) * (size_t)n);
}

/* Cholesky of [[vu, c], [c, vw]]: w = l22 z2, u = l21 z2 + l11 z1. Returns -1 if not PSD. */
static int chol2(double vu, double c, double vw, double *l11, double *l21, double *l22)
{
    if (!(vw > 0) || !(vu >= 0))
        return -1;
    *l22 = sqrt(vw);
    *l21 = c / *l22;
    double cv = vu - c * c / vw;
    if (cv < 0) {
        if (cv < -PHI_PSD_TOL * (vu > 1 ? vu : 1))
            return -1;
        cv = 0;
    }
    *l11 = sqrt(cv);
    return 0;
}

/* The trapezoidal rule in z on [-PHI_TRAP_ZMAX, PHI_TRAP_ZMAX]: for integrands analytic in a
 * strip it converges exponentially in 1/h (faster than Gauss-Hermite for the logistic and tanh,
 * whose poles sit near the real axis), and its even-indexed points form the rule of step 2h,
 * whose difference is the stated error. */
static void trap_rule(double *z, double *wt, int *n)
{
    int m = (int)lround(PHI_TRAP_ZMAX / PHI_TRAP_H);
    double s = 0;
    for (int i = -m; i <= m; i++) {
        z[i + m] = i * PHI_TRAP_H;
        wt[i + m] = exp(-0.5 * z[i + m] * z[i + m]);
        s += wt[i + m];
    }
    for (int i = 0; i <= 2 * m; i++)
        wt[i] /= s;
    *n = 2 * m + 1;
}

/* E[f_k(u, w)] for k < nf, with (u, w) ~ N(0, [[vu, c], [c, vw]]), on the fine and the coarse
 * trapezoidal rule. f fills nf values at a point. Returns -1 if the covariance is not PSD. */
static int trap2(phi_fnv f, void *ctx, int nf, double vu, double c, double vw, double *fine,
                 double *coarse)
{
    static double z[PHI_TRAP_NMAX], wt[PHI_TRAP_NMAX];
    static int n;
    double l11, l21, l22, v[8];
    if (!n)
        trap_rule(z, wt, &n);
    if (chol2(vu, c, vw, &l11, &l21, &l22))
        return -1;
    double cs = 0; /* normaliser of the coarse rule */
    for (int j = 0; j < n; j += 2)
        cs += wt[j];
    for (int k = 0; k < nf; k++)
        fine[k] = coarse[k] = 0;
    for (int j = 0; j < n; j++) {
        double w = l22 * z[j], base = l21 * z[j];
        double rf[8] = {0}, rc[8] = {0};
        for (int i = 0; i < n; i++) {
            if (wt[i] * wt[j] < 1e-300)
                continue;
            f(base + l11 * z[i], w, ctx, v);
            for (int k = 0; k < nf; k++) {
                rf[k] += wt[i] * v[k];
                if (!(i & 1))
                    rc[k] += wt[i] * v[k];
            }
        }
        for (int k = 0; k < nf; k++) {
            fine[k] += wt[j] * rf[k];
            if (!(j & 1))
                coarse[k] += wt[j] * rc[k] / (cs * cs);
        }
    }
    return 0;
}

/* ---- Hermite closed form ---------------------------------------------------------------- */

/* B_{n,p}(a) and dB/da. */
static void herm_B(int n, int p, double a, double *B, double *dB)
{
    int m = n - p;
    if (m < 0 || (m & 1)) {
        *B = *dB = 0;
        return;
    }
    m /= 2;
    double coef = 1; /* n! / (m! p! 2^m) */
    for (int k = p + 1; k <= n; k++)
        coef *= k;
    for (int k = 2; k <= m; k++)
        coef /= k;
    coef /= ldexp(1.0, m);
    *B = coef * pow(a - 1, m);
    *dB = m ? coef * m * pow(a - 1, m - 1) : 0;
}

/* K(a, b, c) = E[sigma(u) sigma(w)] for Var u = a, Var w = b, Cov c, and its partials. */
static void herm_K(const struct act *s, double a, double b, double c, double *K, double *Ka,
                   double *Kb, double *Kc)
{
    int D = s->degree;
    double k = 0, ka = 0, kb = 0, kc = 0;
    double fact = 1;
    for (int p = 0; p <= D; p++) {
        if (p > 0)
            fact *= p;
        double Ba = 0, dBa = 0, Bb = 0, dBb = 0;
        for (int j = p; j <= D; j++) {
            double B, dB;
            if (s->c[j] == 0)
                continue;
            herm_B(j, p, a, &B, &dB);
            Ba += s->c[j] * B;
            dBa += s->c[j] * dB;
            herm_B(j, p, b, &B, &dB);
            Bb += s->c[j] * B;
            dBb += s->c[j] * dB;
        }
        double cp = pow(c, p);
        k += cp * fact * Ba * Bb;
        ka += cp * fact * dBa * Bb;
        kb += cp * fact * Ba * dBb;
        kc += p ? p * pow(c, p - 1) * fact * Ba * Bb : 0;
    }
    *K = k;
    *Ka = ka;
    *Kb = kb;
    *Kc = kc;
}

/* Elementwise E[F], dE/da, dE/dc for the three closed forms. */
static void elem_closed(const struct act *s, double a, double c, double *e, double *ea, double *ec)
{
    if (s->kind == ACT_HERMITE) {
        double Kuu, Kuua, Kuub, Kuuc, Kuw, Kuwa, Kuwb, Kuwc, Kww, t1, t2, t3;
        herm_K(s, a, a, a, &Kuu, &Kuua, &Kuub, &Kuuc);
        herm_K(s, a, 1, c, &Kuw, &Kuwa, &Kuwb, &Kuwc);
        herm_K(s, 1, 1, 1, &Kww, &t1, &t2, &t3);
        *e = 0.5 * (Kuu - 2 * Kuw + Kww);
        *ea = 0.5 * (Kuua + Kuub + Kuuc) - Kuwa;
        *ec = -Kuwc;
    } else if (s->kind == ACT_ERF) {
        double qa = 1 + 2 * a, sq = sqrt(qa * 3.0);
        double su = 2 * a / qa, sw = 2.0 / 3.0, sc = 2 * c / sq;
        double Euu = M_2_PI * asin(su), Eww = M_2_PI * asin(sw), Euw = M_2_PI * asin(sc);
        *e = 0.5 * (Euu - 2 * Euw + Eww);
        double dEuu = M_2_PI / sqrt(1 - su * su) * 2 / (qa * qa);
        double dsc = 1 / sqrt(1 - sc * sc);
        double dEuw_a = M_2_PI * dsc * (-sc / qa), dEuw_c = M_2_PI * dsc * 2 / sq;
        *ea = 0.5 * dEuu - dEuw_a;
        *ec = -dEuw_c;
    } else { /* relu, Var w = 1 */
        double Kuw, Kc, Ka;
        if (a <= 0) {
            Kuw = 0;
            Kc = 0.25;
            Ka = 0;
        } else {
            double ct = c / sqrt(a);
            ct = ct > 1 ? 1 : ct < -1 ? -1 : ct;
            double t = acos(ct), cond = a - c * c;
            Kuw = sqrt(a) / (2 * M_PI) * (sin(t) + (M_PI - t) * ct);
            Kc = (M_PI - t) / (2 * M_PI);
            Ka = sqrt(cond > 0 ? cond : 0) / (4 * M_PI * a);
        }
        *e = 0.5 * (a / 2 - 2 * Kuw + 0.5);
        *ea = 0.25 - Ka;
        *ec = -Kc;
    }
}

/* ---- Quadrature for elementwise activations --------------------------------------------- */

/* F, F_uu, F_uw of F = 1/2 (sigma(u) - sigma(w))^2 at one point. */
static void elem_fn(double u, double w, void *vctx, double *out)
{
    const struct act *s = vctx;
    double su = act_f(s, u), sw = act_f(s, w), du = act_df(s, u);
    out[0] = 0.5 * (su - sw) * (su - sw);
    out[1] = du * du + (su - sw) * act_d2f(s, u);
    out[2] = -du * act_df(s, w);
}

static int elem_quad(const struct act *s, double a, double c, double *e, double *ea, double *ec,
                     double *err, double *err_grad)
{
    double fine[3], coarse[3];
    if (trap2(elem_fn, (void *)s, 3, a, c, 1.0, fine, coarse))
        return -1;
    *e = fine[0];
    *ea = 0.5 * fine[1];
    *ec = fine[2];
    *err = fabs(fine[0] - coarse[0]);
    *err_grad = fmax(0.5 * fabs(fine[1] - coarse[1]), fabs(fine[2] - coarse[2]));
    return isfinite(*e) && isfinite(*ea) && isfinite(*ec) ? 0 : -1;
}

/* tanh: the Mehler expansion of phi_mehler.c where it applies, the trapezoidal rule elsewhere. */
static int elem_tanh(const struct act *s, double a, double c, double *e, double *ea, double *ec,
                     double *err, double *err_grad)
{
    struct phi_mehler m;
    int rc = phi_tanh_mehler(a, c, 1.0, &m);
    if (rc > 0)
        return elem_quad(s, a, c, e, ea, ec, err, err_grad);
    *e = m.e;
    *ea = m.e_a;
    *ec = m.e_c;
    *err = m.err;
    *err_grad = m.err_grad;
    return rc;
}

/* ---- Softmax ----------------------------------------------------------------------------- */

static double logistic(double t) { return t >= 0 ? 1 / (1 + exp(-t)) : exp(t) / (1 + exp(t)); }

/* F = (s(bx) - s(by))^2 with s the logistic, and F_xx, F_xy. */
static void sm2_fn(double x, double y, void *vctx, double *out)
{
    double b = *(const double *)vctx, sx = logistic(b * x), sy = logistic(b * y);
    double d1x = b * sx * (1 - sx);
    out[0] = (sx - sy) * (sx - sy);
    out[1] = 2 * d1x * d1x + 2 * (sx - sy) * b * d1x * (1 - 2 * sx);
    out[2] = -2 * d1x * b * sy * (1 - sy);
}

/* Row loss and its Price terms for one point: F, Huu[b] = d2F/du_b^2, Huw[b] = d2F/du_b dw_b. */
static double sm_row(double beta, int T, const double *u, const double *w, double *Huu, double *Huw)
{
    double p[PARAMS_MAX_TOKENS], q[PARAMS_MAX_TOKENS];
    act_softmax(beta, T, u, p);
    act_softmax(beta, T, w, q);
    double F = 0;
    for (int c = 0; c < T; c++)
        F += 0.5 * (p[c] - q[c]) * (p[c] - q[c]);
    double b2 = beta * beta;
    for (int b = 0; b < T; b++) {
        double Jbb = p[b] * (1 - p[b]);
        double huu = 0, huw = 0;
        for (int c = 0; c < T; c++) {
            double Jp = (c == b ? p[b] : 0) - p[c] * p[b];
            double Jq = (c == b ? q[b] : 0) - q[c] * q[b];
            double dJ = (c == b ? Jp : 0) - Jp * p[b] - p[c] * Jbb; /* dJ_cb/ds_b */
            huu += Jp * Jp + (p[c] - q[c]) * dJ;
            huw += Jp * Jq;
        }
        Huu[b] = b2 * huu;
        Huw[b] = -b2 * huw;
    }
    return F;
}

/* Pair b = 0 is the diagonal entry of the row. */
static void sm_pair_cov(int b, double o11, double p11, double o12, double *vu, double *c,
                        double *vw)
{
    if (b == 0) {
        *vu = o11 + p11;
        *c = 2 * o12;
        *vw = 2;
    } else {
        *vu = o11;
        *c = o12;
        *vw = 1;
    }
}

/* E[F], E[Huu_b], E[Huw_b] by tensor Gauss-Hermite with n nodes per axis. */
static int sm_tensor(double beta, int T, const double *L, int n, double *EF, double *EHuu,
                     double *EHuw)
{
    const double *x, *w;
    if (gh_get(n, &x, &w))
        return -1;
    int idx[2 * PARAMS_MAX_TOKENS] = {0};
    double u[PARAMS_MAX_TOKENS], v[PARAMS_MAX_TOKENS], Huu[PARAMS_MAX_TOKENS],
        Huw[PARAMS_MAX_TOKENS];
    *EF = 0;
    for (int b = 0; b < T; b++)
        EHuu[b] = EHuw[b] = 0;
    for (;;) {
        double wt = 1;
        for (int b = 0; b < T; b++) {
            double z1 = x[idx[2 * b]], z2 = x[idx[2 * b + 1]];
            wt *= w[idx[2 * b]] * w[idx[2 * b + 1]];
            v[b] = L[3 * b + 2] * z2;
            u[b] = L[3 * b + 1] * z2 + L[3 * b] * z1;
        }
        *EF += wt * sm_row(beta, T, u, v, Huu, Huw);
        for (int b = 0; b < T; b++) {
            EHuu[b] += wt * Huu[b];
            EHuw[b] += wt * Huw[b];
        }
        int k = 0;
        while (k < 2 * T && ++idx[k] == n)
            idx[k++] = 0;
        if (k == 2 * T)
            break;
    }
    return 0;
}

static int sm_mc(double beta, int T, const double *L, double *EF, double *EHuu, double *EHuw,
                 double *err)
{
    struct rng g;
    rng_init(&g, PHI_MC_SEED, 0, (uint32_t)T);
    double z[2 * PARAMS_MAX_TOKENS], u[PARAMS_MAX_TOKENS], v[PARAMS_MAX_TOKENS],
        Huu[PARAMS_MAX_TOKENS], Huw[PARAMS_MAX_TOKENS];
    double s = 0, s2 = 0;
    for (int b = 0; b < T; b++)
        EHuu[b] = EHuw[b] = 0;
    for (int i = 0; i < PHI_MC_SAMPLES; i++) {
        rng_normals(&g, z, 2 * (size_t)T);
        for (int b = 0; b < T; b++) {
            v[b] = L[3 * b + 2] * z[2 * b + 1];
            u[b] = L[3 * b + 1] * z[2 * b + 1] + L[3 * b] * z[2 * b];
        }
        double F = sm_row(beta, T, u, v, Huu, Huw);
        s += F;
        s2 += F * F;
        for (int b = 0; b < T; b++) {
            EHuu[b] += Huu[b];
            EHuw[b] += Huw[b];
        }
    }
    double N = PHI_MC_SAMPLES;
    *EF = s / N;
    for (int b = 0; b < T; b++) {
        EHuu[b] /= N;
        EHuw[b] /= N;
    }
    *err = sqrt((s2 / N - *EF * *EF) / N);
    return 0;
}

static int softmax_eval(const struct act *s, int T, double o11, double p11, double o12,
                        struct phi_val *out)
{
    if (T == 2) {
        /* The row loss depends on x = u0 - u1, y = w0 - w1 only: F = (s(bx) - s(by))^2. With
         * s(t) = (1 + tanh(t/2))/2, Phi = 2 E F = 1/2 E[(tanh x' - tanh y')^2] for x' = beta x/2,
         * y' = beta y/2: phi_mehler.c's e at Var x' = k(2 o11 + p11), Cov = 3 k o12,
         * Var y' = 3k, k = beta^2/4, differentiated through those three. */
        double k = 0.25 * s->beta * s->beta;
        struct phi_mehler m;
        int rc = phi_tanh_mehler(k * (2 * o11 + p11), 3 * k * o12, 3 * k, &m);
        if (rc <= 0) {
            out->phi = m.e;
            out->d_omega11 = 2 * k * m.e_a;
            out->d_psi11 = k * m.e_a;
            out->d_omega12 = 3 * k * m.e_c;
            out->err = m.err;
            out->err_grad = 3 * k * m.err_grad;
            return rc;
        }
        if (phi_eval_softmax2_trap(s, o11, p11, o12, out))
            return -1;
        return isfinite(out->phi) && isfinite(out->d_psi11) && isfinite(out->d_omega12) ? 0 : -1;
    }
    double L[3 * PARAMS_MAX_TOKENS];
    for (int b = 0; b < T; b++) {
        double vu, c, vw;
        sm_pair_cov(b, o11, p11, o12, &vu, &c, &vw);
        if (chol2(vu, c, vw, &L[3 * b], &L[3 * b + 1], &L[3 * b + 2]))
            return -1;
    }
    double EF, EHuu[PARAMS_MAX_TOKENS], EHuw[PARAMS_MAX_TOKENS], err;
    int n = 2;
    while (pow(n + 1, 2 * T) <= PHI_TENSOR_MAX_POINTS)
        n++;
    if (n >= 4) {
        double lo, h1[PARAMS_MAX_TOKENS], h2[PARAMS_MAX_TOKENS];
        if (sm_tensor(s->beta, T, L, n, &EF, EHuu, EHuw) ||
            sm_tensor(s->beta, T, L, n - 1, &lo, h1, h2))
            return -1;
        err = fabs(EF - lo);
        /* the gradient's stated error: the same difference for each of its three entries.
         * Neither estimate is a bound at T = 3 (7 nodes per axis): at (2, 2, -1.1) the rule of
         * phi_general.c's whitening differs by 4.9e-4 in Phi (stated 5.8e-5) and 3.4e-3 in the
         * gradient (stated 5.3e-4). */
        double g[3] = {0}, gl[3] = {0};
        for (int b = 0; b < T; b++) {
            g[0] += 0.5 * T * EHuu[b];
            gl[0] += 0.5 * T * h1[b];
            g[2] += T * (b == 0 ? 2 : 1) * EHuw[b];
            gl[2] += T * (b == 0 ? 2 : 1) * h2[b];
        }
        g[1] = 0.5 * T * EHuu[0];
        gl[1] = 0.5 * T * h1[0];
        for (int k = 0; k < 3; k++)
            out->err_grad = fmax(out->err_grad, fabs(g[k] - gl[k]));
    } else if (sm_mc(s->beta, T, L, &EF, EHuu, EHuw, &err)) {
        return -1;
    }
    out->phi = T * EF;
    out->err = T * err;
    out->d_omega11 = 0;
    out->d_omega12 = 0;
    for (int b = 0; b < T; b++) {
        out->d_omega11 += 0.5 * T * EHuu[b];
        out->d_omega12 += T * (b == 0 ? 2 : 1) * EHuw[b];
    }
    out->d_psi11 = 0.5 * T * EHuu[0];
    return isfinite(out->phi) ? 0 : -1;
}

int phi_eval(const struct act *a, int T, double o11, double p11, double o12, struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    if (!isfinite(o11) || !isfinite(p11) || !isfinite(o12) || T < 2 || T > PARAMS_MAX_TOKENS)
        return -1;
    if (o11 - o12 * o12 < -PHI_PSD_TOL * (o11 > 1 ? o11 : 1))
        return -1;
    if (a->kind == ACT_SOFTMAX) {
        /* the diagonal pair needs (omega11 + psi11)/2 >= omega12^2 */
        if (0.5 * (o11 + p11) - o12 * o12 < -PHI_PSD_TOL * (o11 > 1 ? o11 : 1))
            return -1;
        return softmax_eval(a, T, o11, p11, o12, out);
    }
    double e, ea, ec, err = 0, err_grad = 0;
    if (a->kind == ACT_TANH) {
        if (elem_tanh(a, o11, o12, &e, &ea, &ec, &err, &err_grad))
            return -1;
    } else {
        elem_closed(a, o11, o12, &e, &ea, &ec);
    }
    double pairs = (double)T * (T - 1);
    out->phi = pairs * e;
    out->d_omega11 = pairs * ea;
    out->d_psi11 = 0;
    out->d_omega12 = pairs * ec;
    out->err = pairs * err;
    out->err_grad = pairs * err_grad;
    return isfinite(out->phi) && isfinite(out->d_omega11) && isfinite(out->d_omega12) ? 0 : -1;
}

/* The quadrature path for any elementwise activation, for tests of the closed forms. */
int phi_eval_quadrature(const struct act *a, int T, double o11, double o12, struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    double e, ea, ec, err, err_grad;
    if (a->kind == ACT_SOFTMAX || elem_quad(a, o11, o12, &e, &ea, &ec, &err, &err_grad))
        return -1;
    double pairs = (double)T * (T - 1);
    out->phi = pairs * e;
    out->d_omega11 = pairs * ea;
    out->d_omega12 = pairs * ec;
    out->err = pairs * err;
    out->err_grad = pairs * err_grad;
    return 0;
}

/* Softmax at T = 2 by the trapezoidal rule on the differences: the route outside phi_mehler.c's
 * range (softmax_eval) and the tests' reference for the Mehler route. */
int phi_eval_softmax2_trap(const struct act *a, double o11, double p11, double o12,
                           struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    double fine[3], coarse[3], beta = a->beta;
    if (a->kind != ACT_SOFTMAX ||
        trap2(sm2_fn, &beta, 3, 2 * o11 + p11, 3 * o12, 3.0, fine, coarse))
        return -1;
    out->phi = 2 * fine[0];
    out->d_omega11 = 2 * fine[1];
    out->d_psi11 = fine[1];
    out->d_omega12 = 6 * fine[2];
    out->err = 2 * fabs(fine[0] - coarse[0]);
    out->err_grad = fmax(2 * fabs(fine[1] - coarse[1]), 6 * fabs(fine[2] - coarse[2]));
    return 0;
}

/* The general tensor/Monte Carlo softmax path for T = 2 too, for tests of the reduction. */
int phi_eval_softmax_general(const struct act *a, int T, double o11, double p11, double o12,
                             struct phi_val *out)
{
    memset(out, 0, sizeof *out);
    if (T == 2) {
        double L[6];
        for (int b = 0; b < 2; b++) {
            double vu, c, vw;
            sm_pair_cov(b, o11, p11, o12, &vu, &c, &vw);
            if (chol2(vu, c, vw, &L[3 * b], &L[3 * b + 1], &L[3 * b + 2]))
                return -1;
        }
        double EF, EHuu[2], EHuw[2];
        if (sm_tensor(a->beta, 2, L, 24, &EF, EHuu, EHuw))
            return -1;
        out->phi = 2 * EF;
        out->d_omega11 = EHuu[0] + EHuu[1];
        out->d_psi11 = EHuu[0];
        out->d_omega12 = 2 * (2 * EHuw[0] + EHuw[1]);
        return 0;
    }
    return softmax_eval(a, T, o11, p11, o12, out);
}

int phi_trap2(phi_fnv f, void *ctx, int nf, double vu, double c, double vw, double *fine,
              double *coarse)
{
    return trap2(f, ctx, nf, vu, c, vw, fine, coarse);
}

int phi_gh_get(int n, const double **x, const double **w) { return gh_get(n, x, w); }

int phi_chol2(double vu, double c, double vw, double *l11, double *l21, double *l22)
{
    return chol2(vu, c, vw, l11, l21, l22);
}
