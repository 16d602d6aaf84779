/*
 * phi_mehler.c: the elementwise tanh loss (and through it softmax at T = 2) by a truncated Hermite
 * expansion and Mehler's formula, in place of phi.c's 2D trapezoidal rule (docs/model.md §5).
 *
 * For (u, w) ~ N(0, [[a, c], [c, b]]) and e = 1/2 E[(s(u) - s(w))^2], s = tanh:
 *   e = 1/2 E s(u)^2 + 1/2 E s(w)^2 - K,   K = E[s(u) s(w)].
 * With h_p(a) = E[s(sqrt(a) x) psi_p(x)], psi_p = He_p/sqrt(p!) (orthonormal, x ~ N(0, 1)),
 * Mehler's formula E[psi_p(x1) psi_q(x2)] = delta_pq r^p for correlation r = c/sqrt(ab) gives
 *   K    = sum_p r^p h_p(a) h_p(b),
 *   K_c  = E[s'(u) s'(w)]   = sum_p p r^(p-1) h_p(a) h_p(b) / sqrt(ab),
 *   K_a  = 1/2 E[s''(u) s(w)] = 1/(2a) sum_p r^p sqrt((p+1)(p+2)) h_{p+2}(a) h_p(b)
 * (Price's theorem, and E s^(k)(sqrt(a) x) = a^(-k/2) sqrt(k!) h_k(a) by parts), so that
 *   de/da = 1/2 E[s'(u)^2 + s(u) s''(u)] - K_a,   de/dc = -K_c;
 * the one-dimensional terms are summed directly on the nodes. tanh is odd: only odd p enter.
 * The sums stop at p = MEHLER_P. Their terms fall like exp(-C sqrt(p)) at |r| = 1 (tanh is
 * analytic in the strip |Im u| < pi/2), times |r|^p below it; the stated error (phi_val.err,
 * err_grad) is the sum of the moduli of the last quarter of the terms kept, an overestimate of
 * the tail while the terms decrease, plus MEHLER_ERR_FLOOR for the rounding of the coefficients.
 * Over a in (0, PHI_MEHLER_A_MAX], |r| <= 1 the stated error is at most 6e-11 in e and 3e-9 in
 * each partial (largest at |r| = 1, a = 6); the measured difference to phi.c's trapezoidal rule
 * is at most 1.3e-12 and 9e-11 (tests/test_phi_fast.c, which checks both and softmax's b = 3/4).
 *
 * The coefficients h_p(a) are integrals of entire functions times tanh: the trapezoidal rule
 * with step MEHLER_H on [-24, 24] converges like exp(-2 pi delta/h),
 * delta = pi/(2 sqrt(a)), where Gauss-Hermite with the
 * same number of nodes would not (its error falls only like exp(-2 delta sqrt(2n))). The node
 * weights times psi_p form a fixed table, so h(a) is one matrix-vector product over half the
 * nodes (parity). Outside (PHI_MEHLER_A_MIN, PHI_MEHLER_A_MAX] for a or b the callers use
 * quadrature (past a = 6 the tail at |r| = 1 grows: 1e-9 in e at a = 16).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/phi.h"

#define MEHLER_P 160  /* highest order kept in the sums */
#define MEHLER_H 0.08 /* trapezoidal step in standard units */
/* half-width MEHLER_NQ * MEHLER_H = 24: psi_p phi for p <= MEHLER_P + 2 lives inside */
#define MEHLER_ERR_FLOOR 1e-14 /* rounding of the coefficients, added to the stated error */

#define MEHLER_NQ 300              /* nodes x_i = i h, i = 0..NQ: NQ h = 24 */
#define MEHLER_ROWS (MEHLER_P + 3) /* p = 0..P+2 */

/* tab[p][i] = w_i psi_p(x_i), the trapezoidal weight (normalised to sum 1 over all 2NQ + 1
 * nodes) halved at i = 0, so that for an integrand of parity (-1)^p the full sum is twice the
 * sum over i >= 0. Not thread-safe (one thread per rank, as phi.c's rule caches). */
static double *tab;
static double xs[MEHLER_NQ + 1];

static int tab_make(void)
{
    if (tab)
        return 0;
    double *t = malloc(sizeof(double) * (size_t)MEHLER_ROWS * (MEHLER_NQ + 1));
    if (!t)
        return -1;
    double wsum = 0, w[MEHLER_NQ + 1];
    for (int i = 0; i <= MEHLER_NQ; i++) {
        xs[i] = i * MEHLER_H;
        w[i] = exp(-0.5 * xs[i] * xs[i]);
        wsum += i ? 2 * w[i] : w[i];
    }
    for (int i = 0; i <= MEHLER_NQ; i++) {
        double wi = w[i] / wsum * (i ? 1.0 : 0.5), p0 = 1, p1 = xs[i];
        t[i] = wi;
        t[(MEHLER_NQ + 1) + i] = wi * p1;
        for (int p = 1; p + 1 < MEHLER_ROWS; p++) {
            double p2 = (xs[i] * p1 - sqrt((double)p) * p0) / sqrt((double)p + 1);
            t[(size_t)(p + 1) * (MEHLER_NQ + 1) + i] = wi * p2;
            p0 = p1;
            p1 = p2;
        }
    }
    tab = t;
    return 0;
}

/* sum_i a_i b_i with four partial sums (a chain of one would wait on every add). */
static double dot4(const double *restrict a, const double *restrict b, int n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* Coefficients of tanh(sqrt(a) x): h[p] for p = 0..P+2 (even p are 0), and the node sums
 * m2 = E s^2, md = E[s'^2 + s s''] at variance a. */
struct coefs {
    double a, h[MEHLER_ROWS], m2, md;
};

static void coefs_make(double a, struct coefs *k)
{
    double s[MEHLER_NQ + 1], sa = sqrt(a), m2 = 0, md = 0;
    for (int i = 0; i <= MEHLER_NQ; i++) {
        double t = tanh(sa * xs[i]), d = 1 - t * t;
        s[i] = t;
        double wi = tab[i]; /* row 0 = the weights */
        m2 += wi * t * t;
        md += wi * (d * d - 2 * t * t * d);
    }
    k->a = a;
    k->m2 = 2 * m2;
    k->md = 2 * md;
    for (int p = 0; p < MEHLER_ROWS; p++) {
        if (!(p & 1)) {
            k->h[p] = 0;
            continue;
        }
        const double *row = tab + (size_t)p * (MEHLER_NQ + 1);
        k->h[p] = 2 * dot4(row + 1, s + 1, MEHLER_NQ); /* x_0 = 0: tanh(0) = 0 */
    }
}

/* The teacher side (one variance b per run in practice): a small cache. */
#define MEHLER_CACHE 4
static struct coefs cache[MEHLER_CACHE];
static int cache_n, cache_next;

static const struct coefs *coefs_cached(double b)
{
    for (int i = 0; i < cache_n; i++)
        if (cache[i].a == b)
            return &cache[i];
    struct coefs *k = &cache[cache_next];
    coefs_make(b, k);
    cache_next = (cache_next + 1) % MEHLER_CACHE;
    if (cache_n < MEHLER_CACHE)
        cache_n++;
    return k;
}

int phi_tanh_mehler(double a, double c, double b, struct phi_mehler *out)
{
    memset(out, 0, sizeof *out);
    if (!(a > PHI_MEHLER_A_MIN && a <= PHI_MEHLER_A_MAX && b > PHI_MEHLER_A_MIN &&
          b <= PHI_MEHLER_A_MAX) ||
        !isfinite(c) || tab_make())
        return 1;
    struct coefs ku;
    coefs_make(a, &ku);
    const struct coefs *kw = coefs_cached(b);
    double sab = sqrt(a * b), r = c / sab;
    if (r > 1)
        r = 1;
    if (r < -1)
        r = -1;
    /* odd p only: r^p from r, stepping by r^2 */
    double r2 = r * r, rp = r, rpm1 = 1; /* r^p and r^(p-1) at p = 1 */
    double K = 0, Kc = 0, Ka = 0, tK = 0, tKc = 0, tKa = 0;
    const int tail_from = MEHLER_P - MEHLER_P / 4;
    for (int p = 1; p <= MEHLER_P; p += 2) {
        double hh = ku.h[p] * kw->h[p];
        double tk = rp * hh, tc = p * rpm1 * hh;
        double ta = rp * sqrt((double)(p + 1) * (p + 2)) * ku.h[p + 2] * kw->h[p];
        K += tk;
        Kc += tc;
        Ka += ta;
        if (p > tail_from) {
            tK += fabs(tk);
            tKc += fabs(tc);
            tKa += fabs(ta);
        }
        rp *= r2;
        rpm1 *= r2;
    }
    Kc /= sab;
    Ka /= 2 * a;
    tKc /= sab;
    tKa /= 2 * a;
    out->e = 0.5 * (ku.m2 + kw->m2) - K;
    out->e_a = 0.5 * ku.md - Ka;
    out->e_c = -Kc;
    out->err = tK + MEHLER_ERR_FLOOR;
    out->err_grad = fmax(tKc, tKa) + MEHLER_ERR_FLOOR / a;
    return isfinite(out->e) && isfinite(out->e_a) && isfinite(out->e_c) ? 0 : -1;
}
