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
 * 2k nodes per axis (k on the cross term's innermost one); relu and erf have closed forms, tanh
 * a Mehler expansion (below).
 *
 * relu: D(u, w) = (u - R) 1(u > 0), R = relu(w). With P = 1/4 + asin(r)/(2 pi) the orthant
 * probability of a centred pair of correlation r, and sx, sy its deviations,
 *   E[XY; X > 0, Y > 0] = sx sy (r P + sqrt(1 - r^2)/(2 pi)),
 *   E[Y^2; X > 0, Y > 0] = sy^2 (P + r sqrt(1 - r^2)/(2 pi)),
 *   E[Y; X > 0, Y > 0] = sy (1 + r)/(2 sqrt(2 pi))
 * (the second from Stein, E[Y g] = sum_k Cov(Y, X_k) E[d_k g]), so with r = c/sqrt(om)
 *   n1/(T(T-1)) = om/2 - 2 E[uw; u, w > 0] + E[w^2; u, w > 0].
 * For n2 = T(T-1) E[(u1 - R)(u2 - R); u1, u2 > 0] over (u1, u2, w) (Var u = om, Cov(u1, u2) = psi,
 * Cov(u, w) = c, Var w = 1): the trivariate orthant probability
 * P3 = 1/8 + (asin r12 + 2 asin r)/(4 pi), r12 = psi/om, and Stein on u1 and on w give
 *   E[u1 w; all > 0] = (om + psi) Q/sqrt(2 pi om) + c P3,
 *   E[w^2; all > 0] = P3 + 2c Q/sqrt(2 pi om),
 * Q = E[w; u2 > 0, w > 0 | u1 = 0] (the pair formula for the conditional law), so
 *   n2/(T(T-1)) = E[u1 u2; u1, u2 > 0] - 2 E[u1 w; all > 0] + E[w^2; all > 0].
 * erf: D = (erf u - erf w) g(u), g = (2/sqrt(pi)) e^(-u^2). The factor g(u)^2 (n1) or
 * g(u1) g(u2) (n2) is a Gaussian tilt: E[f e^(-x^T B x/2)] = Z E'[f] with the tilted covariance
 * S' = S - S_.u (S_uu + B_uu^-1)^-1 S_u. and Z = det(I + B_uu S_uu)^(-1/2); then every term is
 * E'[erf X erf Y] = (2/pi) asin(2 Cov/sqrt((1 + 2 Var X)(1 + 2 Var Y))).
 * tanh: with A = sigma sigma', B = sigma', D(u, w) = A(u) - B(u) sigma(w). For n2 write
 * X = (u1 + u2)/2, Y = (u1 - u2)/2: Var X = (om + psi)/2, Cov(X, w) = c, Var Y = (om - psi)/2,
 * and Y is independent of (X, w). So with the Y-averages (functions of X)
 *   al(X) = E_Y[A(X+Y) A(X-Y)],  ga(X) = E_Y[A(X+Y) B(X-Y)],  be(X) = E_Y[B(X+Y) B(X-Y)]
 * (ga is odd in X, al and be even; ga symmetrised in Y),
 *   n2/(T(T-1)) = E al(X) - 2 E[ga(X) sigma(w)] + E[be(X) sigma(w)^2],
 * and n1 is the same at Var Y = 0, Var X = om. The pair expectations are Mehler sums over the
 * orthonormal Hermite coefficients, E[f(X) g(w)] = sum_p r^p f_p g_p, r = c/sqrt(Var X)
 * (phi_mehler.c), the coefficients by the trapezoidal rule on NOISE_MH_NQ nodes (step
 * NOISE_MH_H) up to order NOISE_MH_P, the Y-averages by the trapezoidal rule of step at most
 * NOISE_MH_DY in u and NOISE_MH_HYS in standard units (a multiple of the X-step, so that one
 * table of tanh serves every X +- Y).
 * Both rules converge exponentially (tanh is analytic in the strip |Im u| < pi/2), unlike
 * Gauss-Hermite. The stated error is the last quarter of the Mehler terms; measured against a
 * 3D trapezoidal rule of step 0.1 (tests/test_phi_fast.c): within 1e-9, 3e-10 in n2 at om = 4.
 * (The closed forms and this replace the 40/28-node product rule, off by up to 4 % at om = 4,
 * whose relu version was not smooth in the order parameters: the integrator took 30 times more
 * steps.)
 * Softmax at T = 2 reduces to the score differences and a 2D Mehler expansion (softmax2_mehler;
 * the 4D product rule softmax2_rule where it does not apply); larger T uses the general row rule
 * (slow beyond T = 3).
 *
 * Over 800 lines: the file holds one concern, these expectations for every activation family,
 * with the derivations above the code that implements them. Where it grows, the cut is the
 * softmax section (softmax_row_D to noise_softmax2_rule, about 390 lines) into a file of its
 * own, sharing struct gh, struct chol3 (kern_dot4 is in kern.h) through a private header.
 */
#include "aimsweep/theory/noise.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/model/phi.h"

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

/* delta_elem(a, u, w) with sigma(w) = fw given: the same value, bit for bit (the rules below
 * hold w fixed over their inner sums, and take sigma and sigma' of u from one recurrence). */
static double delta_at(const struct act *a, double u, double fw)
{
    double fu, dfu;
    act_f_df(a, u, &fu, &dfu);
    return (fu - fw) * dfu;
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

/* n2d nodes per axis for E[delta^2]; n3d for the outer axes (w, z1) of the cross term and nin
 * for its inner one (z2), over which each delta is a polynomial of degree 2k - 1 for a Hermite
 * sigma of degree k. A constant sigma (k = 0, no nodes) has delta = 0 and gives 0. */
static void elem_rule(const struct act *a, int T, const struct chol3 *k, int n2d, int n3d, int nin,
                      double *n1, double *n2)
{
    struct gh g, gi;
    double s1 = 0.0, s2 = 0.0;
    gh_make(&g, n2d);
    for (int i = 0; i < g.n; i++) {
        double w = g.x[i], fw = act_f(a, w);
        for (int j = 0; j < g.n; j++) {
            double u = k->c * w + k->s1 * g.x[j];
            double dl = delta_at(a, u, fw);
            s1 += g.w[i] * g.w[j] * dl * dl;
        }
    }
    gh_make(&g, n3d);
    gh_make(&gi, nin);
    for (int i = 0; i < g.n; i++) {
        double w = g.x[i], fw = act_f(a, w);
        for (int j = 0; j < g.n; j++) {
            double u1 = k->c * w + k->s1 * g.x[j];
            double d1 = delta_at(a, u1, fw);
            double inner = 0.0;
            for (int l = 0; l < gi.n; l++) {
                double u2 = k->c * w + k->r * g.x[j] + k->s2 * gi.x[l];
                inner += gi.w[l] * delta_at(a, u2, fw);
            }
            s2 += g.w[i] * g.w[j] * d1 * inner;
        }
    }
    *n1 = T * (T - 1) * s1;
    *n2 = T * (T - 1) * s2;
}

/* ---- closed forms: relu and erf ---- */

static double clamp1(double x) { return x > 1.0 ? 1.0 : x < -1.0 ? -1.0 : x; }

/* Centred pair of deviations sx, sy and correlation r: E[XY; X, Y > 0], E[Y^2; X, Y > 0],
 * E[Y; X, Y > 0]. */
static void orthant2(double sx, double sy, double r, double *xy, double *yy, double *y1)
{
    r = clamp1(r);
    double P = 0.25 + asin(r) / (2 * M_PI), q = sqrt(1 - r * r) / (2 * M_PI);
    *xy = sx * sy * (r * P + q);
    *yy = sy * sy * (P + r * q);
    *y1 = sy * (1 + r) / (2 * sqrt(2 * M_PI));
}

static int relu_closed(int T, double om, double psi, double c, double *n1, double *n2)
{
    if (!(om > 0)) {
        *n1 = *n2 = 0; /* u = 0: D = 0 almost surely */
        return 0;
    }
    double so = sqrt(om), r = clamp1(c / so), r12 = clamp1(psi / om), xy, yy, y1;
    orthant2(so, 1.0, r, &xy, &yy, &y1);
    double e1 = om / 2 - 2 * xy + yy;
    double uu, t2, t3;
    orthant2(so, so, r12, &uu, &t2, &t3); /* uu = E[u1 u2; u1, u2 > 0] */
    /* (u2, w) given u1 = 0 */
    double vu = om - psi * psi / om, vw = 1 - c * c / om, cw = c * (1 - psi / om);
    vu = vu > 0 ? vu : 0;
    vw = vw > 0 ? vw : 0;
    double den = sqrt(vu * vw), rc = den > 0 ? clamp1(cw / den) : 0.0;
    double Q = sqrt(vw) * (1 + rc) / (2 * sqrt(2 * M_PI));
    double P3 = 0.125 + (asin(r12) + 2 * asin(r)) / (4 * M_PI);
    double k = Q / sqrt(2 * M_PI * om);
    double e2 = uu - 2 * ((om + psi) * k + c * P3) + (P3 + 2 * c * k);
    *n1 = T * (T - 1) * e1;
    *n2 = T * (T - 1) * e2;
    return 0;
}

static double erf_pair(double vx, double vy, double cxy)
{
    return M_2_PI * asin(clamp1(2 * cxy / sqrt((1 + 2 * vx) * (1 + 2 * vy))));
}

static int erf_closed(int T, double om, double psi, double c, double *n1, double *n2)
{
    /* n1: tilt by e^(-2u^2) (B_uu = 4) on (u, w) */
    double q = 1 + 4 * om, Z1 = 1 / sqrt(q);
    double vu = om / q, cuw = c / q, vw = 1 - 4 * c * c / q;
    double E1 = erf_pair(vu, vu, vu) - 2 * erf_pair(vu, vw, cuw) + erf_pair(vw, vw, vw);
    /* n2: tilt by e^(-u1^2 - u2^2) (B_uu = 2 I) on (u1, u2, w); M = S_uu + I/2 */
    double m11 = om + 0.5, det = m11 * m11 - psi * psi;
    if (!(det > 0))
        return -1;
    double i11 = m11 / det, i12 = -psi / det; /* M^-1 = [[i11, i12], [i12, i11]] */
    /* S_uu M^-1 S_uu, S_uu M^-1 S_uw (S_uw = c (1, 1)), S_wu M^-1 S_uw */
    double a11 = om * i11 + psi * i12, a12 = om * i12 + psi * i11; /* (S_uu M^-1) rows */
    double vu2 = om - (a11 * om + a12 * psi), cu12 = psi - (a11 * psi + a12 * om);
    double cuw2 = c - c * (a11 + a12), vw2 = 1 - 2 * c * c * (i11 + i12);
    double Z2 = 1 / sqrt((1 + 2 * om) * (1 + 2 * om) - 4 * psi * psi);
    double E2 = erf_pair(vu2, vu2, cu12) - 2 * erf_pair(vu2, vw2, cuw2) + erf_pair(vw2, vw2, vw2);
    double g2 = 4 / M_PI; /* g(u)^2 = (4/pi) e^(-2u^2); g(u1) g(u2) = (4/pi) e^(-u1^2 - u2^2) */
    *n1 = T * (T - 1) * g2 * Z1 * E1;
    *n2 = T * (T - 1) * g2 * Z2 * E2;
    return 0;
}

/* ---- tanh: Y-averages and Mehler sums ---- */

#define NOISE_MH_H 0.1     /* trapezoidal step for the Hermite coefficients (standard units) */
#define NOISE_MH_NQ 200    /* nodes x_i = i h, i = 0..NQ (to |x| = 20) */
#define NOISE_MH_P 100     /* highest order of the Mehler sums */
#define NOISE_MH_DY 0.2    /* largest step of the Y-average, in units of u (tanh's poles: pi/2) */
#define NOISE_MH_HYS 0.4   /* and at most this in standard units of Y (its Gaussian weight) */
#define NOISE_MH_YMAX 8.5  /* the Y-average's half-width in standard units */
#define NOISE_MH_MMAX 8192 /* tanh table X_m = m hx, |m| <= MMAX; past it, direct evaluation */

/* mh_tab[p][i] = w_i psi_p(x_i), halved at i = 0 (parity sums double the half-line); mh_y the
 * Y-rule's weights, halved at 0 likewise. Not thread-safe (one thread per rank). */
static double mh_tab[NOISE_MH_P + 1][NOISE_MH_NQ + 1], mh_x[NOISE_MH_NQ + 1];
static int mh_ready;

static void mh_make(void)
{
    double ws = 0, w[NOISE_MH_NQ + 1];
    for (int i = 0; i <= NOISE_MH_NQ; i++) {
        mh_x[i] = i * NOISE_MH_H;
        w[i] = exp(-0.5 * mh_x[i] * mh_x[i]);
        ws += i ? 2 * w[i] : w[i];
    }
    for (int i = 0; i <= NOISE_MH_NQ; i++) {
        double wi = w[i] / ws * (i ? 1.0 : 0.5), p0 = 1, p1 = mh_x[i];
        mh_tab[0][i] = wi;
        mh_tab[1][i] = wi * p1;
        for (int p = 1; p < NOISE_MH_P; p++) {
            double p2 = (mh_x[i] * p1 - sqrt((double)p) * p0) / sqrt((double)p + 1);
            mh_tab[p + 1][i] = wi * p2;
            p0 = p1;
            p1 = p2;
        }
    }
    mh_ready = 1;
}

/* Coefficients of a function of parity par (0 even, 1 odd) given on the half-line nodes. */
static void mh_coefs(const double *f, int par, double *c)
{
    for (int p = 0; p <= NOISE_MH_P; p++) {
        if ((p & 1) != par) {
            c[p] = 0;
            continue;
        }
        c[p] = 2 * kern_dot4(mh_tab[p], f, NOISE_MH_NQ + 1);
    }
}

static void tanh_ab(double x, double *A, double *B)
{
    double t = tanh(x), d = 1 - t * t;
    *A = t * d;
    *B = d;
}

/* E[D(X+Y, w) D(X-Y, w)] for tanh: Var X = vx, Var Y = vy (independent of X, w), Cov(X, w) = c,
 * Var w = 1; the stated error in *err. */
static double tanh_pair(double vx, double vy, double c, double *err)
{
    static double gs[NOISE_MH_P + 1], gs2[NOISE_MH_P + 1]; /* sigma(w), sigma(w)^2 */
    static int g_ready;
    if (!mh_ready)
        mh_make();
    if (!g_ready) {
        double f1[NOISE_MH_NQ + 1], f2[NOISE_MH_NQ + 1];
        for (int i = 0; i <= NOISE_MH_NQ; i++) {
            f1[i] = tanh(mh_x[i]);
            f2[i] = f1[i] * f1[i];
        }
        mh_coefs(f1, 1, gs);
        mh_coefs(f2, 0, gs2);
        g_ready = 1;
    }
    double sx = sqrt(vx > 0 ? vx : 0), sy = sqrt(vy > 0 ? vy : 0), hx = sx * NOISE_MH_H;
    double al[NOISE_MH_NQ + 1], ga[NOISE_MH_NQ + 1], be[NOISE_MH_NQ + 1];
    /* The Y-rule: step dY = k hx <= NOISE_MH_DY, so that X_i +- Y_j = (i +- jk) hx fall on one
     * table of A, B; J nodes on each side. */
    double dmax = fmin(NOISE_MH_DY, NOISE_MH_HYS * sy);
    int k = hx > 0 ? (int)floor(dmax / hx) : 0;
    if (k < 1)
        k = 1;
    double dY = k * hx;
    int J = sy > 0 && dY > 0 ? (int)ceil(NOISE_MH_YMAX * sy / dY) : 0;
    int tabled = sy > 0 && dY > 0 && NOISE_MH_NQ + (double)J * k <= NOISE_MH_MMAX;
    if (sy > 0 && !tabled) { /* X nearly degenerate against Y: the Y-rule on its own step */
        J = (int)ceil(NOISE_MH_YMAX * sy / dmax);
        dY = NOISE_MH_YMAX * sy / J;
    }
    static double wy[NOISE_MH_MMAX + 1], At[NOISE_MH_MMAX + 1], Bt[NOISE_MH_MMAX + 1];
    if (sy > 0) {
        double ws = 0;
        for (int j = 0; j <= J; j++) {
            double y = j * dY / sy;
            wy[j] = exp(-0.5 * y * y);
            ws += j ? 2 * wy[j] : wy[j];
        }
        for (int j = 0; j <= J; j++)
            wy[j] *= (j ? 1.0 : 0.5) / ws; /* the node pair +-y counts twice, halved at 0 */
    }
    if (tabled) /* A is odd, B even: m >= 0 suffices */
        for (int m = 0; m <= NOISE_MH_NQ + J * k; m++)
            tanh_ab(m * hx, &At[m], &Bt[m]);
    for (int i = 0; i <= NOISE_MH_NQ; i++) {
        double X = sx * mh_x[i];
        if (sy == 0) {
            double A, B;
            tanh_ab(X, &A, &B);
            al[i] = A * A;
            ga[i] = A * B;
            be[i] = B * B;
            continue;
        }
        double sa = 0, sg = 0, sb = 0;
        for (int j = 0; j <= J; j++) {
            double Ap, Bp, Am, Bm;
            if (tabled) {
                int mp = i + j * k, mm = i - j * k;
                Ap = At[mp];
                Bp = Bt[mp];
                Am = mm >= 0 ? At[mm] : -At[-mm];
                Bm = mm >= 0 ? Bt[mm] : Bt[-mm];
            } else {
                tanh_ab(X + j * dY, &Ap, &Bp);
                tanh_ab(X - j * dY, &Am, &Bm);
            }
            sa += wy[j] * 2 * Ap * Am;
            sg += wy[j] * (Ap * Bm + Am * Bp);
            sb += wy[j] * 2 * Bp * Bm;
        }
        al[i] = sa;
        ga[i] = sg;
        be[i] = sb;
    }
    double ca[NOISE_MH_P + 1], cg[NOISE_MH_P + 1], cb[NOISE_MH_P + 1];
    mh_coefs(al, 0, ca);
    mh_coefs(ga, 1, cg);
    mh_coefs(be, 0, cb);
    double r = sx > 0 ? c / sx : 0;
    r = r > 1 ? 1 : r < -1 ? -1 : r;
    double sum = ca[0], tail = 0, rp = 1;
    for (int p = 0; p <= NOISE_MH_P; p++) {
        double t = rp * (-2 * cg[p] * gs[p] + cb[p] * gs2[p]);
        sum += t;
        if (p > NOISE_MH_P - NOISE_MH_P / 4)
            tail += fabs(t);
        rp *= r;
    }
    *err = tail;
    return sum;
}

static int tanh_mehler(int T, double om, double psi, double c, double *n1, double *n2, double *err)
{
    double e1, e2;
    double v1 = tanh_pair(om, 0.0, c, &e1),
           v2 = tanh_pair(0.5 * (om + psi), 0.5 * (om - psi), c, &e2);
    *n1 = T * (T - 1) * v1;
    *n2 = T * (T - 1) * v2;
    *err = T * (T - 1) * fmax(e1, e2);
    return isfinite(v1) && isfinite(v2) ? 0 : -1;
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

/* T = 2 by Mehler. With x = (beta/2) Delta, y = (beta/2) Delta* the row's delta is
 * (beta/4) D(x, y),
 * D(u, w) = (tanh u - tanh w) tanh'(u) (sigmoid(2t) = (1 + tanh t)/2), so with k = beta^2/4
 *   n1 = (beta^2/4) E D^2,  n2 = (beta^2/8) (E D^2 + E[D(Z0) D(Z1)]),
 * Z_r = (x_r, y_r) the rows' pairs: each N(0, S), S = k [[2 om + psi, 3c], [3c, 3]], cross-
 * covariance C = k [[psi, c], [c, 1]] (symmetric). Whiten S (S = U s U^T) and diagonalise
 * R = s^(-1/2) U^T C U s^(-1/2) = Q diag(l1, l2) Q^T: in v = Q^T s^(-1/2) U^T Z the two rows are
 * standard and correlated l1, l2 component by component, so Mehler's formula in two dimensions
 * gives E[D(Z0) D(Z1)] = sum_ij l1^i l2^j d_ij^2, d_ij = E[D psi_i(v1) psi_j(v2)], the 2D
 * Hermite coefficients of D by the trapezoidal rule on a square grid (step and width sized to
 * the order). The sums stop at i + j = P with |l|max^P = SM2_TAIL; the stated error is the
 * last quarter of the terms kept. |l| is 1/3 at S = S* but reaches 1/2 at ordinary points (an
 * indefinite C); past |l| = SM2_LMAX the product rule below is used instead.
 * Cost: D is odd (D(-v) = -D(v)), so d_ij = 0 for i + j even and half the grid holds D; the
 * coefficients are two matrix products over that half (BLAS). This made the noise term, 90 % of
 * a softmax(1) ODE point with the noise on, 6 times cheaper: the point's instruction count fell
 * from 3.0e9 to 6.3e8 (tied, d = 60, init scale 1.2, rate 0.01; callgrind), its results equal to
 * rounding (4.6e-14). */
#define SM2_PMAX 80         /* highest total order i + j */
#define SM2_TAIL 1e-10      /* the order P: |l|max^P below this */
#define SM2_LMAX 0.75       /* largest |l| for the Mehler route (P = 80 there) */
#define SM2_HMAX 0.35       /* grid step in v (standard units), at most */
#define SM2_STRIP 30.0      /* the grid error exponent (softmax2_mehler) */
#define SM2_VPAD 4.5        /* grid half-width 2 sqrt(P) + VPAD: psi_P phi is negligible past it */
#define SM2_NMAX 512        /* grid nodes per axis, at most */
#define SM2_EIG_FLOOR 1e-14 /* whitening: eigenvalues of S below this times tr S are raised */
#define SM2_EXP_MAX 300.0   /* largest exponent of one factor of e^(2x) */

static void sym2_eig(double a, double b, double d, double ev[2], double U[4])
{
    /* [[a, b], [b, d]] = U diag(ev) U^T, U = [[cos, -sin], [sin, cos]] */
    double th = 0.5 * atan2(2 * b, a - d), cs = cos(th), sn = sin(th);
    ev[0] = a * cs * cs + 2 * b * cs * sn + d * sn * sn;
    ev[1] = a * sn * sn - 2 * b * cs * sn + d * cs * cs;
    U[0] = cs;
    U[1] = -sn;
    U[2] = sn;
    U[3] = cs;
}

static int softmax2_mehler(double beta, double om, double psi, double c, double *n1, double *n2,
                           double *err)
{
    double k = 0.25 * beta * beta, sv[2], U[4], lam[2], Q[4];
    sym2_eig(k * (2 * om + psi), 3 * k * c, 3 * k, sv, U);
    double floor_ = SM2_EIG_FLOOR * k * (2 * om + psi + 3);
    for (int i = 0; i < 2; i++) {
        if (sv[i] < -NOISE_COV_SLACK * k * (2 * om + psi + 3))
            return -1;
        if (sv[i] < floor_)
            sv[i] = floor_;
    }
    /* G = U s^(1/2), R = G^-1 C G^-T */
    double G[4] = {U[0] * sqrt(sv[0]), U[1] * sqrt(sv[1]), U[2] * sqrt(sv[0]), U[3] * sqrt(sv[1])};
    double Ck[4] = {k * psi, k * c, k * c, k};
    double Gi[4] = {U[0] / sqrt(sv[0]), U[2] / sqrt(sv[0]), U[1] / sqrt(sv[1]), U[3] / sqrt(sv[1])};
    double T[4], Rm[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            T[2 * i + j] = Gi[2 * i] * Ck[j] + Gi[2 * i + 1] * Ck[2 + j];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            Rm[2 * i + j] = T[2 * i] * Gi[2 * j] + T[2 * i + 1] * Gi[2 * j + 1];
    sym2_eig(Rm[0], 0.5 * (Rm[1] + Rm[2]), Rm[3], lam, Q);
    double lmax = fmax(fabs(lam[0]), fabs(lam[1]));
    if (lmax > SM2_LMAX)
        return 1;
    int P = lmax > 0 ? (int)ceil(log(SM2_TAIL) / log(lmax)) : 1;
    P = P < 4 ? 4 : P > SM2_PMAX ? SM2_PMAX : P;
    /* The trapezoidal error for D psi_i psi_j phi is about exp(-dl (2 pi/h - sqrt(2P + 1))),
     * dl = pi/(2 sqrt(max(S_xx, S_yy))) the distance of tanh's poles from the real v-plane
     * (psi_P grows like exp(|Im v| sqrt(2P + 1)) there): h makes the exponent SM2_STRIP. */
    double dl = M_PI / (2 * sqrt(k * fmax(2 * om + psi, 3.0)));
    double h = fmin(SM2_HMAX, 2 * M_PI / (SM2_STRIP / dl + sqrt(2.0 * P + 1)));
    int NA = (int)ceil((2 * sqrt((double)P) + SM2_VPAD) / h), N = 2 * NA + 1;
    if (N > SM2_NMAX)
        return 1;
    /* Psi[i][a] = w_a psi_i(v_a), the trapezoidal weights normalised to sum 1 */
    static double Psi[SM2_PMAX + 1][SM2_NMAX], vx[SM2_NMAX];
    double ws = 0;
    for (int a = 0; a < N; a++) {
        vx[a] = (a - NA) * h;
        Psi[0][a] = exp(-0.5 * vx[a] * vx[a]);
        ws += Psi[0][a];
    }
    for (int a = 0; a < N; a++) {
        double p0 = 1, p1 = vx[a], wa = Psi[0][a] / ws;
        Psi[0][a] = wa;
        Psi[1][a] = wa * p1;
        for (int i = 1; i < P; i++) {
            double p2 = (vx[a] * p1 - sqrt((double)i) * p0) / sqrt((double)i + 1);
            Psi[i + 1][a] = wa * p2;
            p0 = p1;
            p1 = p2;
        }
    }
    double M[4]; /* Z = M v, M = G Q */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            M[2 * i + j] = G[2 * i] * Q[j] + G[2 * i + 1] * Q[2 + j];
    /* tanh(x) = 1 - 2/(1 + e^(2x)) with e^(2x) = e^(2 M00 v_a) e^(2 M01 v_b): two exponentials
     * per grid line instead of one tanh per node (tanh() itself where a factor could overflow) */
    static double D[SM2_NMAX][SM2_NMAX], Tm[SM2_PMAX + 1][SM2_NMAX], ex[2][2][SM2_NMAX],
        Dm[SM2_PMAX + 1][SM2_PMAX + 1];
    int big = 0;
    for (int a = 0; a < N; a++)
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 2; q++) {
                double arg = 2 * M[2 * r + q] * vx[a];
                big |= fabs(arg) > SM2_EXP_MAX;
                ex[r][q][a] = exp(arg);
            }
    /* psi_i(v1) psi_j(v2) phi with i + j <= P is negligible outside the disk |v| <= V. D is odd,
     * D(-v) = -D(v), and the grid and the disk are symmetric about 0, so the left half b <= NA
     * (the centre column included) holds all of D: D is evaluated there only, and e2 = E D^2
     * counts the columns b < NA twice. */
    double V = NA * h, e2 = 0;
    for (int a = 0; a < N; a++) {
        double r2 = V * V - vx[a] * vx[a];
        int m = r2 > 0 ? (int)floor(sqrt(r2) / h) : 0, lo = NA - m;
        for (int b = 0; b < lo; b++)
            D[a][b] = 0;
        for (int b = lo; b <= NA; b++) {
            double t, ty;
            if (big) {
                t = tanh(M[0] * vx[a] + M[1] * vx[b]);
                ty = tanh(M[2] * vx[a] + M[3] * vx[b]);
            } else {
                t = 1 - 2 / (1 + ex[0][0][a] * ex[0][1][b]);
                ty = 1 - 2 / (1 + ex[1][0][a] * ex[1][1][b]);
            }
            double d = (t - ty) * (1 - t * t);
            D[a][b] = d;
            e2 += (b < NA ? 2 : 1) * Psi[0][a] * Psi[0][b] * d * d;
        }
    }
    /* The coefficients d_ij = sum_ab Psi[i][a] D[a][b] Psi[j][b]. With Tm = Psi D over the left
     * half, Tm[i][N - 1 - b] = -(-1)^i Tm[i][b] (Psi[i] has parity (-1)^i), so d_ij = 0 for
     * i + j even, and for i + j odd d_ij = 2 sum_{b < NA} Tm[i][b] Psi[j][b] + Tm[i][NA] Psi[j][NA]
     * (the centre column once). Two matrix products and the centre's outer product. */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, P + 1, NA + 1, N, 1.0, &Psi[0][0],
                SM2_NMAX, &D[0][0], SM2_NMAX, 0.0, &Tm[0][0], SM2_NMAX);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P + 1, P + 1, NA, 2.0, &Tm[0][0], SM2_NMAX,
                &Psi[0][0], SM2_NMAX, 0.0, &Dm[0][0], SM2_PMAX + 1);
    for (int i = 0; i <= P; i++)
        for (int j = 0; j <= P; j++)
            Dm[i][j] += Tm[i][NA] * Psi[j][NA];
    double cross = 0, tail = 0, li = 1;
    for (int i = 0; i <= P; i++, li *= lam[0]) {
        double lj = i % 2 ? 1 : lam[1];
        for (int j = 1 - i % 2; i + j <= P; j += 2, lj *= lam[1] * lam[1]) {
            double dij = Dm[i][j], t = li * lj * dij * dij;
            cross += t;
            if (i + j > P - P / 4)
                tail += fabs(t);
        }
    }
    *n1 = beta * beta / 4 * e2;
    *n2 = beta * beta / 8 * (e2 + cross);
    *err = beta * beta / 8 * tail;
    return isfinite(*n1) && isfinite(*n2) ? 0 : -1;
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

int noise_softmax2_rule(double beta, double omega11, double psi11, double omega12, int n,
                        struct noise_val *out)
{
    memset(out, 0, sizeof *out);
    return softmax2_rule(beta, omega11, psi11, omega12, n, &out->n1, &out->n2);
}

int noise_eval_rule(const struct act *a, int T, double omega11, double psi11, double omega12,
                    int n2d, int n3d, struct noise_val *out)
{
    memset(out, 0, sizeof *out);
    struct chol3 k;
    if (a->kind == ACT_SOFTMAX || chol3_make(omega11, psi11, omega12, &k))
        return -1;
    elem_rule(a, T, &k, n2d, n3d, n3d, &out->n1, &out->n2);
    return isfinite(out->n1) && isfinite(out->n2) ? 0 : -1;
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
    /* softmax at T = 2: the Mehler sums; where they do not apply (rc 1), the product rule */
    int sm2 = a->kind == ACT_SOFTMAX && T == 2 ? 1 : 0;
    if (sm2) {
        double e;
        sm2 = softmax2_mehler(a->beta, omega11, psi11, omega12, &n1, &n2, &e);
        if (sm2 < 0)
            return -1;
        if (!sm2 && want_err)
            out->err = e;
    }
    if (a->kind == ACT_SOFTMAX && T == 2) {
        if (sm2 && softmax2_rule(a->beta, omega11, psi11, omega12, NOISE_GH_SOFTMAX2, &n1, &n2))
            return -1;
        if (sm2 && want_err) {
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
        /* exact: delta is a polynomial of degree 2k - 1 in (w, z1, z2), the cross term's
         * integrand of degree 4k - 2 in w and z1 (2k nodes) and 2k - 1 in z2 (k nodes) */
        elem_rule(a, T, &k, 2 * a->degree, 2 * a->degree, a->degree, &n1, &n2);
    } else if (a->kind == ACT_RELU) {
        if (relu_closed(T, omega11, psi11, omega12, &n1, &n2))
            return -1;
    } else if (a->kind == ACT_ERF) {
        if (erf_closed(T, omega11, psi11, omega12, &n1, &n2))
            return -1;
    } else { /* tanh */
        double e;
        if (tanh_mehler(T, omega11, psi11, omega12, &n1, &n2, &e))
            return -1;
        if (want_err)
            out->err = e;
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
