/*
 * test_phi_general.c: the population loss under the general index (docs/model.md §10, phi_general.c).
 *  1. At the special law (c = 0, centred, offdiag) the general path equals phi_eval (closed
 *     forms, quadrature, the softmax reduction: independent code) for every activation family.
 *  2. Every partial (d/dmu included) against central finite differences of Phi, for laws with
 *     c in {0, 0.3}, both index kinds, offdiag and all, every activation family, T = 2 and 3.
 *  3. Phi against Monte Carlo over the stated Gaussian law itself (sampled entry by entry from
 *     docs/model.md §10's means and covariances, not from phi_general's code), 3 standard errors:
 *     checks the shifted Mehler sums, the relu integral and the softmax row law.
 *  4. Softmax T = 2: the reduction to differences against the full 4-dim row rule.
 * A planted error: a wrong sign in the Appell shift or a missing c^2 fails 2 and 3; a d/dmu
 * without its factor c fails 2; a row covariance without the e e^T term fails 3 and 4.
 */
#include <math.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/act.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/model/rng.h"
#include "check.h"
#include "test_util.h"

static const char *const acts[] = {"h1",   "h2",   "h3",  "hermite(0.3,1,0.5)",
                                   "relu", "tanh", "erf", "softmax(1.5)"};
#define NACTS (sizeof acts / sizeof acts[0])

/* (mu, omega11, psi11, omega12) */
static const double pts[][4] = {{0.4, 0.6, 0.4, 0.3}, {-0.7, 1.1, 0.2, -0.5}, {1.2, 0.5, 0.5, 0.2}};
#define NPTS (sizeof pts / sizeof pts[0])

static void check_special(void)
{
    struct phi_law law = {0, 0, 0, 0.3};
    for (size_t i = 0; i < NACTS; i++) {
        struct act a = test_parse_act(acts[i]);
        for (size_t k = 0; k < NPTS; k++)
            for (int T = 2; T <= 3; T++) {
                struct phi_val g, s;
                int rg = phi_eval_law_general(&a, T, &law, pts[k][0], pts[k][1], pts[k][2],
                                              pts[k][3], &g);
                int rs = phi_eval(&a, T, pts[k][1], pts[k][2], pts[k][3], &s);
                CHECK(rg == 0 && rs == 0, "%s T=%d eval", acts[i], T);
                /* T = 3 softmax: both are 7-node tensor rules in different whitenings; their
                 * gradients differ by up to ~20 % at these points (the rules' own accuracy) */
                double tol =
                    1e-8 + 5 * (s.err + g.err) + (a.kind == ACT_SOFTMAX && T == 3 ? 0.03 : 0);
                CHECK_CLOSE(g.phi, s.phi, tol, 1e-9, acts[i]);
                CHECK_CLOSE(g.d_omega11, s.d_omega11, tol + 1e-7, 1e-6, acts[i]);
                CHECK_CLOSE(g.d_psi11, s.d_psi11, tol + 1e-7, 1e-6, acts[i]);
                CHECK_CLOSE(g.d_omega12, s.d_omega12, tol + 1e-7, 1e-6, acts[i]);
                CHECK(g.d_mu == 0, "%s: d_mu %g for the centred index", acts[i], g.d_mu);
            }
    }
}

static void check_fd(void)
{
    const struct phi_law laws[] = {
        {0.3, 0, 0, 0.5}, {0.0, 1, 1, 0.8}, {0.3, 1, 0, -0.6}, {0.3, 1, 1, 1.1}};
    for (size_t l = 0; l < sizeof laws / sizeof laws[0]; l++)
        for (size_t i = 0; i < NACTS; i++) {
            struct act a = test_parse_act(acts[i]);
            if (a.kind == ACT_SOFTMAX && laws[l].all)
                continue; /* refused by params: rows always hold the diagonal */
            for (size_t k = 0; k < NPTS; k++)
                for (int T = 2; T <= 3; T++) {
                    if (a.kind == ACT_SOFTMAX && T == 3 && (k > 0 || l != 2))
                        continue; /* the 6-dim rule is slow: one point, under the law with c, mean and all */
                    struct phi_val v, p, m;
                    double x[4] = {pts[k][0], pts[k][1], pts[k][2], pts[k][3]};
                    CHECK(phi_eval_law(&a, T, &laws[l], x[0], x[1], x[2], x[3], &v) == 0, "%s eval",
                          acts[i]);
                    double g[4] = {v.d_mu, v.d_omega11, v.d_psi11, v.d_omega12}, h = 1e-5;
                    for (int j = 0; j < 4; j++) {
                        double xp[4], xm[4];
                        memcpy(xp, x, sizeof x);
                        memcpy(xm, x, sizeof x);
                        xp[j] += h;
                        xm[j] -= h;
                        phi_eval_law(&a, T, &laws[l], xp[0], xp[1], xp[2], xp[3], &p);
                        phi_eval_law(&a, T, &laws[l], xm[0], xm[1], xm[2], xm[3], &m);
                        double fd = (p.phi - m.phi) / (2 * h);
                        /* the rule's gradient against the difference of its values over 2h: up
                         * to the O(h^2) truncation, rounding (about 1e-16/h) and, where the nodes
                         * move with the arguments (softmax's whitening), the rule's own error
                         * (10 err; it was 10 err/h, about 50 for softmax at T = 3, which nothing
                         * could fail) */
                        double tol = 2e-5 + 1e-4 * fabs(fd) + 10 * v.err;
                        CHECK(fabs(fd - g[j]) <= tol,
                              "%s law %zu T=%d pt %zu d/d%s: %.8g vs fd %.8g", acts[i], l, T, k,
                              (const char *[]){"mu", "omega11", "psi11", "omega12"}[j], g[j], fd);
                    }
                }
        }
}

/* Monte Carlo over the Gaussian law of docs/model.md §10, written out directly. */
static void check_mc(void)
{
    const struct phi_law laws[] = {{0.3, 1, 1, 0.7}, {0.3, 0, 1, 0}, {0.0, 1, 1, -0.5}};
    const int N = 400000;
    for (size_t l = 0; l < sizeof laws / sizeof laws[0]; l++)
        for (size_t i = 0; i < NACTS; i++) {
            struct act a = test_parse_act(acts[i]);
            int T = a.kind == ACT_SOFTMAX ? 3 : 2;
            if (a.kind == ACT_SOFTMAX && laws[l].all)
                continue;
            const double *x = pts[0];
            double mu = x[0], o11 = x[1], p11 = x[2], o12 = x[3], c = laws[l].c,
                   u = laws[l].uncentred;
            double ms = laws[l].mu_star;
            struct phi_val v;
            CHECK(phi_eval_law(&a, T, &laws[l], mu, o11, p11, o12, &v) == 0, "%s eval", acts[i]);
            struct rng g;
            rng_init(&g, 99 + l, (uint32_t)i, 7);
            double s = 0, s2 = 0;
            for (int n = 0; n < N; n++) {
                double loss = 0;
                if (a.kind == ACT_SOFTMAX) {
                    /* one row (row 0) of T entries, covariance built entry by entry from Isserlis */
                    double Sig[36] = {0}, L[36] = {0}, M[6], z[6], X[6], pr[3], qr[3];
                    for (int b = 0; b < T; b++) {
                        double eb = b == 0 ? 1 : c;
                        M[b] = u * eb * mu;
                        M[T + b] = u * eb * ms;
                        for (int bb = 0; bb < T; bb++) {
                            double ebb = bb == 0 ? 1 : c, Cbb = b == bb ? 1 : c;
                            Sig[b * 6 + bb] = Cbb * o11 + eb * ebb * p11;
                            Sig[(T + b) * 6 + T + bb] = Cbb + eb * ebb;
                            Sig[b * 6 + T + bb] = Sig[(T + bb) * 6 + b] = (Cbb + eb * ebb) * o12;
                        }
                    }
                    int D = 2 * T;
                    for (int j = 0; j < D; j++)
                        for (int k = 0; k <= j; k++) {
                            double t = Sig[j * 6 + k];
                            for (int q = 0; q < k; q++)
                                t -= L[j * 6 + q] * L[k * 6 + q];
                            L[j * 6 + k] = j == k ? sqrt(t) : t / L[k * 6 + k];
                        }
                    rng_normals(&g, z, (size_t)D);
                    for (int j = 0; j < D; j++) {
                        X[j] = M[j];
                        for (int k = 0; k <= j; k++)
                            X[j] += L[j * 6 + k] * z[k];
                    }
                    act_softmax(a.beta, T, X, pr);
                    act_softmax(a.beta, T, X + T, qr);
                    for (int b = 0; b < T; b++)
                        loss += 0.5 * (pr[b] - qr[b]) * (pr[b] - qr[b]);
                    loss *= T;
                } else {
                    /* one off-diagonal and one diagonal entry, weighted by their counts */
                    for (int diag = 0; diag <= laws[l].all; diag++) {
                        double mu_u = u * (diag ? 1 : c) * mu, mu_w = u * (diag ? 1 : c) * ms;
                        double vu = diag ? o11 + p11 : o11 + c * c * p11, vw = diag ? 2 : 1 + c * c;
                        double cv = diag ? 2 * o12 : (1 + c * c) * o12, z[2];
                        rng_normals(&g, z, 2);
                        double w = mu_w + sqrt(vw) * z[0];
                        double uu = mu_u + cv / sqrt(vw) * z[0] + sqrt(vu - cv * cv / vw) * z[1];
                        double e = act_f(&a, uu) - act_f(&a, w);
                        loss += (diag ? T : T * (T - 1)) * 0.5 * e * e;
                    }
                }
                s += loss;
                s2 += loss * loss;
            }
            double mean = s / N, se = sqrt((s2 / N - mean * mean) / N);
            CHECK(fabs(mean - v.phi) <= 3 * se + 2 * v.err + 1e-9,
                  "%s law %zu: Phi %.6g vs MC %.6g +- %.2g", acts[i], l, v.phi, mean, se);
        }
}

static void check_softmax_pair(void)
{
    /* the 4-dim rule at 40 nodes per axis is the cost of this test: two laws, two points */
    const struct phi_law laws[] = {{0.3, 1, 0, 0.4}, {0.0, 1, 0, -1.0}};
    struct act a = test_parse_act("softmax(2)");
    for (size_t l = 0; l < sizeof laws / sizeof laws[0]; l++)
        for (size_t k = 0; k < 2; k++) {
            struct phi_val p, r;
            const double *x = pts[k];
            CHECK(phi_eval_law(&a, 2, &laws[l], x[0], x[1], x[2], x[3], &p) == 0 &&
                      phi_eval_law_softmax_rows(&a, 2, &laws[l], x[0], x[1], x[2], x[3], &r) == 0,
                  "softmax pair eval");
            double tol = 1e-6 + 3 * r.err;
            CHECK_CLOSE(p.phi, r.phi, tol, 1e-5, "softmax T=2 phi");
            CHECK_CLOSE(p.d_mu, r.d_mu, tol * 10, 1e-4, "softmax T=2 d_mu");
            CHECK_CLOSE(p.d_omega11, r.d_omega11, tol * 10, 1e-4, "softmax T=2 d_omega11");
            CHECK_CLOSE(p.d_psi11, r.d_psi11, tol * 10, 1e-4, "softmax T=2 d_psi11");
            CHECK_CLOSE(p.d_omega12, r.d_omega12, tol * 10, 1e-4, "softmax T=2 d_omega12");
        }
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "all";
    if (!strcmp(s, "all") || !strcmp(s, "exact")) {
        check_special();
        check_fd();
        check_softmax_pair();
    }
    if (!strcmp(s, "all") || !strcmp(s, "mc"))
        check_mc();
    return check_done("test_phi_general");
}
