/*
 * spectral.c: the tied closure `spectral` (docs/model.md §7b), an (M + 2)-dimensional ODE.
 *
 * Derivation (tied, no noise term). S is symmetric, so H = G + G^T = h_S S + h_P P with
 * h_S = 4 (Phi_omega + Phi_psi), h_P = 2 Phi_12, and with weight decay
 *   dW/dtau = -h_S S W - h_P P W - lambda W = -h_S W B0 - (h_P P + lambda) W,  B0 = W^T W/kappa.
 * Try W = e^{-phi P - psi} W0 R with phi' = h_P, psi' = lambda: then R' = -h_S R B0 and
 * B0 = R^T C R, C = W0^T e^{-2 phi P - 2 psi} W0/kappa, so Q = R R^T obeys Q' = -2 h_S Q C Q,
 * i.e. (Q^-1)' = 2 h_S C, Q^-1 = I + W0^T F(P) W0/kappa with
 *   F(l, tau) = int_0^tau 2 h_S(s) e^{-2 phi(s) l - 2 psi(s)} ds.
 * Push-through: W0 Q W0^T/kappa = (I + S0 F)^-1 S0 = (S0^-1 + F)^-1, so
 *   S(tau) = E (A + B)^-1 E,   E = e^{-phi P - psi},  A = S0^-1,  B = F(P).
 * A is free from P (random initialisation). Additive subordination at z = 0: the conditional
 * expectation onto the algebra of P is E_P[(A + B)^-1] = (B - omega_B)^-1, where g < 0,
 * omega_A < min spec A, omega_B < min spec B solve
 *   G_A(omega_A) = G_B(omega_B) = g,  omega_A + omega_B = 1/g,   G_X(z) = tr (z - X)^-1.
 * With c(l) = e^{-2 phi l - 2 psi} and D(l) = F(l) - omega_B:
 *   t1 = int c/D dnu,   omega12 = int l c/D dnu,
 *   omega11 = psi11 = tr(C (A+B)^-1 C (A+B)^-1) = d/de tr(C (A + B - e C)^-1) at e = 0
 *           = int c (c + omega_B') / D^2 dnu,
 * where omega_B' = d omega_B/de follows from differentiating the three equations:
 *   J_A = -G_A'(omega_A), J_B = -G_B'(omega_B), J_c = int c/D^2 dnu,
 *   g' = -J_c / (1 + J_B/J_A - J_B/g^2),   omega_B' = g' (1/J_A - 1/g^2).
 * With delta_X = J_X - g^2 >= 0 (a variance, computed as a sum of squares) this is
 *   omega_B' = J_c delta_A / (g^4 - delta_A delta_B),
 *   omega11 = int (c/D)^2 dnu + J_c^2 delta_A / (g^4 - delta_A delta_B),
 * free of the cancellation 1/g^2 - 1/J_A that ruins the first form once the student has
 * converged (g -> 0-, c = e^{-2 phi l} large); the denominator is positive at the physical root
 * (it is g^2 J_A J_B times -dR/dg, R(g) = omega_A + omega_B - 1/g).
 * (Check at tau = 0: B = 0, c = 1 gives g = -t1, omega_B = -1/t1 and omega11 = tr S0^2.)
 *
 * The general index (docs/model.md §10) with the centred index (tied refuses `uncentred`):
 * E h_ab = 0 and, by Isserlis, Cov(h_ab(S), h_a'b'(S')) = C_aa' C_bb' Tr(S S'^T)/d +
 * C_ab' C_ba' Tr(S S')/d exactly, so the index law, hence Phi, is still a function of
 * (omega11, psi11, omega12) alone, now with the token correlation c in it (off-diagonal entries
 * have Var u = omega11 + c^2 psi11, so Phi_psi != 0 even for outputs offdiag). G keeps the form
 * 2 Phi_o S + 2 Phi_p S^T + Phi_12 P (no I term: Phi_mu = 0), H = h_S S + h_P P with the same
 * h_S = 4 (Phi_o + Phi_p), h_P = 2 Phi_12, and everything above holds unchanged; only Phi's
 * partials are taken under the law (phi_eval_law at mu = 0; the special case is phi_eval, bit
 * for bit).
 * In terms of S0's eigenvalues s (masses q): G_A(z) = sum q s/(z s - 1), which keeps the
 * zero eigenvalues of a rank-deficient S0 harmless (they contribute 0).
 *
 * Numerics: nu is replaced by its M-point Gauss rule (Lanczos on the empirical spectrum of S*).
 * Each inversion G_X(omega) = g is a safeguarded Newton on 1/G_X (nearly linear, increasing)
 * inside the bracket [min X + mass/g, min X); the outer equation
 * omega_A(g) + omega_B(g) - 1/g = 0 is solved by bracketing in log|g| from a warm start and
 * Illinois regula falsi. The root taken is the one continuous from g = 0-, i.e. g = G_{A+B}(0).
 *
 * The limit S -> S* (strong recovery). At the fixed point H = h_S S + h_P P = 0 with S = P, so
 * h_S = -h_P != 0 (wishart(0.5), d = 60: h_P -> -16 for h2, -72 for h3, -384 for h4): phi' = h_P
 * stays finite, phi -> -infinity linearly, c(l) = e^{-2 phi l - 2 psi} grows like e^{2 |h_P| l tau}
 * and F(l) with it; only c/D -> l converges. The state (phi, psi, F) is degenerate there: c
 * overflows once max -2 phi l > 709.8 (h4 at tau ~ 0.32, h3 ~ 1.7, h2 ~ 7.7), after which the
 * right-hand side cannot be evaluated, and before that an explicit stepper follows the growth
 * e^{r tau}, r = max |d log c/dtau| = max |2 h_P l + 2 lambda|, at steps of 0.15-0.2/r (measured).
 * The scaled state replaces F by z = F/(1 + c) (-> 1/l where c -> infinity, -> F where c -> 0)
 * and forms c only through x = log c = -2 phi l - 2 psi:
 *   z' = c/(1 + c) (2 h_S - z x'),   x' = -2 h_P l - 2 lambda,
 * which converges with S. The subordination is homogeneous: for eps > 0,
 * (eps A + eps B)^-1 = (A + B)^-1/eps and G_{eps X}(eps w) = G_X(w)/eps, so g/eps, eps omega_A,
 * eps omega_B solve it for eps A, eps B (atoms eps/s and eps F); c/D = eps c/(eps F - eps omega_B),
 * and the omega11 correction J_c^2 delta_A/(g^4 - delta_A delta_B) is of degree 0 in eps: the
 * traces are the same. With eps = exp(-max(min x, 0)) and kappa = eps c = exp(x - max(min x, 0)),
 * eps F = z (eps + kappa) and c/D = kappa/(eps F - eps omega_B) = 1/(z (eps/kappa + 1) -
 * eps omega_B/kappa) are of order one (eps F = +inf where kappa overflows: that node's resolvent
 * is 0 and its c/D is 1/z), so the solve runs unchanged through S = S* (and where c -> 0, at
 * negative teacher eigenvalues, kappa underflows to 0 harmlessly). A student narrower than
 * the teacher's rank (mass of A below 1) has omega_B ~ (1 - mass)/g: there g falls faster than
 * e^-min x, so -log eps follows the last solution's -log|g| (in steps of SPECTRAL_SCALE_STEP)
 * to keep g/eps of order one; that holds while eps is a normal double (|g| > e^-708: wishart(2),
 * width 0.25, h4 at d = 60 reaches its fixed point by tau = 2 and fails at tau = 4).
 * The scaled system is stiff at the fixed point: the Jacobian of (phi, psi, z) for h4 (d = 60,
 * M = 4) has eigenvalues -16, -687, -1851, -1.1e4 and two zeros, so it is integrated with the
 * implicit BDF. It is taken (spectral_remap, after an accepted step) once
 * r > SPECTRAL_SCALED_RATE, max x > SPECTRAL_SCALED_LOGC or |g| < SPECTRAL_SCALED_G; a run that
 * never gets there keeps the unscaled state and its output bit for bit (the tied spectral points
 * of sweeps/phase-ode-d60.yaml for h1, h2 and the other activations; h3 there reaches r = 420 and
 * h4 r = 2200, and both move).
 */
#include "aimsweep/theory/spectral.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/obs.h"
#include "aimsweep/model/phi.h"

#define SPECTRAL_MP_ATOMS 512 /* atoms of the Marchenko-Pastur discretisation */
#define SPECTRAL_NEWTON_ITER 200
#define SPECTRAL_OUTER_STEP 0.35 /* bracketing step in log|g| */
#define SPECTRAL_OUTER_SCAN 120
#define SPECTRAL_TOL 1e-14
#define SPECTRAL_STACK_ATOMS 2048   /* S0 atoms handled without allocation (d or the MP rule) */
#define SPECTRAL_OUTER_YMIN (-60.0) /* fallback scan of log|g| starts here (g -> 0-) */
/* The scaled state (spectral_remap): taken once max |d log c/dtau| exceeds SPECTRAL_SCALED_RATE
 * (the unscaled state costs the explicit stepper 5-7 r steps per unit tau: h4 14,000) or
 * max log c exceeds SPECTRAL_SCALED_LOGC (exp overflows at 709.8). The rate bound: tied h3 at
 * d = 60 (phase-ode-d60, r -> 420) took 0.10-0.14 s a point on the explicit stepper and 0.02 s
 * once it moves at 300; against a run at rtol 1e-12 its records are then within 2.6e-9
 * (relative; the explicit stepper's 5e-11, h4's 2e-9). At 100 and 200 the implicit stepper takes
 * over earlier, where the state is not stiff yet, and is off by 2.4e-8. */
#define SPECTRAL_SCALED_RATE 300.0
#define SPECTRAL_SCALED_LOGC 600.0
/* or once |g| at the state falls below SPECTRAL_SCALED_G (a student narrower than the teacher's
 * rank: g^4 in omega11's correction turns subnormal near 1e-77) */
#define SPECTRAL_SCALED_G 1e-30
#define SPECTRAL_SCALE_STEP 16.0 /* -log eps moves to the scale of g in steps of this */

/* ---- Gauss rule of a discrete measure ---- */

int spectral_gauss_rule(const double *eig, int n, int M, double *nodes, double *weights)
{
    if (n < 1 || M < 1)
        return -1;
    if (M > n)
        M = n;
    double *Q = malloc(sizeof(double) * (size_t)n * (size_t)(M + 1));
    double *alpha = calloc((size_t)M, sizeof(double));
    double *beta = calloc((size_t)M + 1, sizeof(double));
    double *r = malloc(sizeof(double) * (size_t)n);
    int k, m = M, ret = -1;
    if (!Q || !alpha || !beta || !r)
        goto out;
    double scale = 0.0;
    for (int i = 0; i < n; i++)
        scale = fmax(scale, fabs(eig[i]));
    if (scale == 0.0)
        scale = 1.0;
    for (int i = 0; i < n; i++)
        Q[i] = 1.0 / sqrt((double)n);
    for (k = 0; k < M; k++) {
        double *q = Q + (size_t)k * n;
        double a = 0.0;
        for (int i = 0; i < n; i++)
            a += eig[i] * q[i] * q[i];
        alpha[k] = a;
        if (k == M - 1) {
            m = M;
            break;
        }
        for (int i = 0; i < n; i++)
            r[i] = (eig[i] - a) * q[i] - (k > 0 ? beta[k] * Q[(size_t)(k - 1) * n + i] : 0.0);
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j <= k; j++) {
                const double *qj = Q + (size_t)j * n;
                double dot = 0.0;
                for (int i = 0; i < n; i++)
                    dot += qj[i] * r[i];
                for (int i = 0; i < n; i++)
                    r[i] -= dot * qj[i];
            }
        double b = 0.0;
        for (int i = 0; i < n; i++)
            b += r[i] * r[i];
        b = sqrt(b);
        if (b < 1e-10 * scale) { /* the measure has only k + 1 distinct atoms */
            m = k + 1;
            break;
        }
        beta[k + 1] = b;
        for (int i = 0; i < n; i++)
            Q[(size_t)(k + 1) * n + i] = r[i] / b;
    }
    {
        gsl_matrix *J = gsl_matrix_calloc((size_t)m, (size_t)m);
        gsl_vector *ev = gsl_vector_alloc((size_t)m);
        gsl_matrix *V = gsl_matrix_alloc((size_t)m, (size_t)m);
        gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)m);
        if (!J || !ev || !V || !ws) {
            gsl_matrix_free(J);
            gsl_vector_free(ev);
            gsl_matrix_free(V);
            if (ws)
                gsl_eigen_symmv_free(ws);
            goto out;
        }
        for (int i = 0; i < m; i++) {
            gsl_matrix_set(J, (size_t)i, (size_t)i, alpha[i]);
            if (i + 1 < m) {
                gsl_matrix_set(J, (size_t)i, (size_t)i + 1, beta[i + 1]);
                gsl_matrix_set(J, (size_t)i + 1, (size_t)i, beta[i + 1]);
            }
        }
        gsl_eigen_symmv(J, ev, V, ws);
        gsl_eigen_symmv_sort(ev, V, GSL_EIGEN_SORT_VAL_ASC);
        for (int i = 0; i < m; i++) {
            nodes[i] = gsl_vector_get(ev, (size_t)i);
            double v0 = gsl_matrix_get(V, 0, (size_t)i);
            weights[i] = v0 * v0;
        }
        gsl_matrix_free(J);
        gsl_vector_free(ev);
        gsl_matrix_free(V);
        gsl_eigen_symmv_free(ws);
        ret = m;
    }
out:
    free(Q);
    free(alpha);
    free(beta);
    free(r);
    return ret;
}

/* ---- Marchenko-Pastur ---- */

int spectral_mp_measure(double s0, double rho, int n, struct spectral_measure *mu)
{
    double y = 1.0 / rho; /* d / r */
    double a = (1.0 - sqrt(y)) * (1.0 - sqrt(y)), b = (1.0 + sqrt(y)) * (1.0 + sqrt(y));
    double scale = s0 * s0 * sqrt(rho);
    double mass = y > 1.0 ? 1.0 / y : 1.0;
    mu->n = n;
    mu->s = malloc(sizeof(double) * (size_t)n);
    mu->q = malloc(sizeof(double) * (size_t)n);
    if (!mu->s || !mu->q) {
        free(mu->s);
        free(mu->q);
        mu->s = mu->q = NULL;
        return -1;
    }
    double tot = 0.0, h = 0.5 * (b - a);
    for (int j = 0; j < n; j++) {
        double t = M_PI * (j + 0.5) / n;
        double x = a + h * (1.0 - cos(t));
        double st = sin(t);
        mu->s[j] = scale * x;
        mu->q[j] = (M_PI / n) * h * h * st * st / (2.0 * M_PI * y * x);
        tot += mu->q[j];
    }
    for (int j = 0; j < n; j++)
        mu->q[j] *= mass / tot;
    return 0;
}

/* ---- subordination ---- */

/* Inversion of G_X(omega) = g on omega < top, G_X(z) = sum_j m_j / (z - x_j). A = S0^-1 is
 * passed through the inverses of S0's nonzero eigenvalues (zero eigenvalues of a rank-deficient
 * S0 are infinite eigenvalues of A and contribute nothing). last: warm start, updated. */
struct gfun {
    int n;
    const double *x, *m;
    double top, mass;
    double *last;
};

static void gfun_eval(const struct gfun *f, double z, double *G, double *J)
{
    double g = 0.0, j = 0.0;
    for (int i = 0; i < f->n; i++) {
        double u = 1.0 / (z - f->x[i]);
        g += f->m[i] * u;
        j += f->m[i] * u * u;
    }
    *G = g;
    *J = j;
}

/* omega < top with G(omega) = g (< 0), via safeguarded Newton on h = 1/G (nearly linear and
 * increasing) inside [top + mass/g, top). */
static int ginv(const struct gfun *f, double g, double *omega)
{
    double lo = f->top + f->mass / g, hi = f->top;
    double target = 1.0 / g;
    double x = *f->last;
    if (!(x > lo && x < hi))
        x = 0.5 * (lo + hi);
    for (int it = 0; it < SPECTRAL_NEWTON_ITER; it++) {
        double G, J;
        gfun_eval(f, x, &G, &J);
        double h = 1.0 / G - target, dh = J / (G * G);
        if (h == 0.0)
            break;
        if (h < 0.0)
            lo = x;
        else
            hi = x;
        double xn = x - h / dh;
        if (!(xn > lo && xn < hi))
            xn = 0.5 * (lo + hi);
        int done = fabs(xn - x) <= SPECTRAL_TOL * (1.0 + fabs(x)) ||
                   hi - lo <= SPECTRAL_TOL * (1.0 + fabs(x));
        x = xn;
        if (done)
            break;
    }
    if (!isfinite(x))
        return -1;
    *omega = x;
    *f->last = x;
    return 0;
}

struct outer {
    const struct gfun *A, *B;
    int fail;
};

/* R(y) = omega_A(g) + omega_B(g) - 1/g with g = -exp(y). */
static double outer_R(double y, void *p)
{
    struct outer *o = p;
    double g = -exp(y), wa, wb;
    if (ginv(o->A, g, &wa) || ginv(o->B, g, &wb)) {
        o->fail = 1;
        return NAN;
    }
    return wa + wb - 1.0 / g;
}

/* The scaled form (spectral_solve_scaled): eps and the nodes' kappa = eps c, 1/kappa and z
 * (F = z (1 + c)); NULL in spectral_solve. */
struct spectral_scaling {
    double eps;
    const double *kap, *ikap, *z;
};

static int spectral_solve_work(const struct spectral_measure *mu, int M, const double *l,
                               const double *w, const double *F, const double *c,
                               const struct spectral_scaling *sc, double guess[3],
                               struct spectral_traces *out, double *ainv, double *aq);

static int spectral_solve_sc(const struct spectral_measure *mu, int M, const double *l,
                             const double *w, const double *F, const double *c,
                             const struct spectral_scaling *sc, double guess[3],
                             struct spectral_traces *out)
{
    double abuf[2 * SPECTRAL_STACK_ATOMS], *heap = NULL, *ainv = abuf;
    if (mu->n > SPECTRAL_STACK_ATOMS) {
        heap = malloc(sizeof(double) * 2 * (size_t)mu->n);
        if (!heap)
            return -1;
        ainv = heap;
    }
    double *aq = ainv + (mu->n > SPECTRAL_STACK_ATOMS ? mu->n : SPECTRAL_STACK_ATOMS);
    int ret = spectral_solve_work(mu, M, l, w, F, c, sc, guess, out, ainv, aq);
    free(heap);
    return ret;
}

int spectral_solve(const struct spectral_measure *mu, int M, const double *l, const double *w,
                   const double *F, const double *c, double guess[3], struct spectral_traces *out)
{
    int ret = spectral_solve_sc(mu, M, l, w, F, c, NULL, guess, out);
    if (ret == 0)
        out->log_scale = 0.0;
    return ret;
}

int spectral_solve_scaled(const struct spectral_measure *mu, int M, const double *l,
                          const double *w, const double *x, const double *z, double *work,
                          double guess[4], struct spectral_traces *out)
{
    double xmin = INFINITY;
    for (int k = 0; k < M; k++) {
        if (!isfinite(x[k]) || !isfinite(z[k]))
            return -1;
        xmin = fmin(xmin, x[k]);
    }
    double x0 = fmax(xmin, 0.0);
    /* a student narrower than the teacher's rank: g falls faster than e^-min x (omega_B ~ 1/g);
     * then the scale of the last solution's g, in steps, so that g/eps stays of order one */
    if (guess[0] < 0.0 && isfinite(guess[0]) && isfinite(guess[3])) {
        double lg = SPECTRAL_SCALE_STEP * floor((guess[3] - log(-guess[0])) / SPECTRAL_SCALE_STEP);
        x0 = fmax(x0, lg);
    }
    double *X = work, *kap = work + M, *ikap = work + 2 * M;
    struct spectral_scaling sc = {exp(-x0), kap, ikap, z};
    for (int k = 0; k < M; k++) {
        kap[k] = exp(x[k] - x0); /* +inf far above the smallest: the node's 1/D is 0 */
        ikap[k] = kap[k] > 1.0 ? exp(x0 - x[k]) : 0.0;
        X[k] = z[k] * (sc.eps + kap[k]);
    }
    /* the warm starts are in the scale of the last solve: g/eps, eps omega_A, eps omega_B */
    if (x0 != guess[3]) {
        double f = exp(x0 - guess[3]);
        guess[0] *= f;
        guess[1] /= f;
        guess[2] /= f;
        guess[3] = x0;
    }
    int ret = spectral_solve_sc(mu, M, l, w, X, NULL, &sc, guess, out);
    if (ret == 0)
        out->log_scale = x0;
    return ret;
}

static int spectral_solve_work(const struct spectral_measure *mu, int M, const double *l,
                               const double *w, const double *F, const double *c,
                               const struct spectral_scaling *sc, double guess[3],
                               struct spectral_traces *out, double *ainv, double *aq)
{
    struct gfun A = {0, ainv, aq, 0.0, 0.0, &guess[1]};
    double smax = 0.0, eps = sc ? sc->eps : 1.0;
    for (int j = 0; j < mu->n; j++)
        if (mu->s[j] > 0.0) {
            ainv[A.n] = eps / mu->s[j];
            aq[A.n++] = mu->q[j];
            A.mass += mu->q[j];
            smax = fmax(smax, mu->s[j]);
        }
    if (smax <= 0.0)
        return -1;
    A.top = eps / smax;
    struct gfun B = {M, F, w, F[0], 0.0, &guess[2]};
    for (int k = 0; k < M; k++) {
        B.top = fmin(B.top, F[k]);
        B.mass += w[k];
        /* scaled: eps F may be +inf (the node's resolvent is 0), never -inf or NaN */
        if (sc ? isnan(F[k]) || F[k] == -INFINITY : !isfinite(F[k]) || !isfinite(c[k]))
            return -1;
    }
    if (!isfinite(B.top))
        return -1;
    struct outer o = {&A, &B, 0};
    double y0 = log(guess[0] < 0.0 ? -guess[0] : 1.0);
    double r0 = outer_R(y0, &o);
    if (o.fail || !isfinite(r0))
        return -1;
    double ylo = y0, yhi = y0, rlo = r0, rhi = r0;
    int found = 0;
    if (r0 >= 0.0) {
        double y = y0;
        for (int i = 0; i < SPECTRAL_OUTER_SCAN; i++) {
            y -= SPECTRAL_OUTER_STEP;
            double r = outer_R(y, &o);
            if (o.fail)
                return -1;
            if (r < 0.0) {
                ylo = y;
                rlo = r;
                found = 1;
                break;
            }
            yhi = y;
            rhi = r;
        }
    } else {
        double y = y0;
        for (int i = 0; i < SPECTRAL_OUTER_SCAN / 3; i++) {
            y += SPECTRAL_OUTER_STEP;
            double r = outer_R(y, &o);
            if (o.fail)
                return -1;
            if (r >= 0.0) {
                yhi = y;
                rhi = r;
                found = 1;
                break;
            }
            ylo = y;
            rlo = r;
        }
        if (!found) { /* restart from g = 0-: the first crossing is the physical root */
            double yy = SPECTRAL_OUTER_YMIN;
            ylo = yy;
            rlo = outer_R(yy, &o);
            while (!o.fail && rlo < 0.0 && yy < -SPECTRAL_OUTER_YMIN) {
                yy += SPECTRAL_OUTER_STEP;
                double r = outer_R(yy, &o);
                if (r >= 0.0) {
                    yhi = yy;
                    rhi = r;
                    found = 1;
                    break;
                }
                ylo = yy;
                rlo = r;
            }
            if (o.fail)
                return -1;
        }
    }
    if (!found)
        return -1;

    /* Illinois regula falsi on the stored bracket values (the ends are not re-evaluated: at a
     * warm start sitting on the root their sign can flip at rounding level) */
    double y = 0.5 * (ylo + yhi);
    int side = 0;
    for (int it = 0; it < 200; it++) {
        y = rhi > rlo ? ylo - rlo * (yhi - ylo) / (rhi - rlo) : 0.5 * (ylo + yhi);
        if (!(y > ylo && y < yhi))
            y = 0.5 * (ylo + yhi);
        if (yhi - ylo <= 1e-15 * (1.0 + fabs(y)))
            break;
        double r = outer_R(y, &o);
        if (o.fail)
            return -1;
        if (r == 0.0)
            break;
        if (r < 0.0) {
            ylo = y;
            rlo = r;
            if (side == -1)
                rhi *= 0.5;
            side = -1;
        } else {
            yhi = y;
            rhi = r;
            if (side == 1)
                rlo *= 0.5;
            side = 1;
        }
    }

    double g = -exp(y), wa, wb;
    if (ginv(&A, g, &wa) || ginv(&B, g, &wb))
        return -1;
    /* delta_X = J_X - g^2 >= 0 as sums of squares (no cancellation when g -> 0-) */
    double dA = 0.0, dB = 0.0;
    if (sc)
        for (int j = 0; j < A.n; j++) { /* 1/(omega_A - a) in the scaled atoms a = eps/s */
            double u = 1.0 / (wa - ainv[j]) - g;
            dA += aq[j] * u * u;
        }
    else
        for (int j = 0; j < mu->n; j++)
            if (mu->s[j] > 0.0) {
                double u = mu->s[j] / (wa * mu->s[j] - 1.0) - g;
                dA += mu->q[j] * u * u;
            }
    dA += g * g * (1.0 - A.mass);
    double t1 = 0.0, o12 = 0.0, jc = 0.0, x2 = 0.0;
    if (sc)
        for (int k = 0; k < M; k++) {
            /* r = 1/D' (0 at eps F = +inf), u = c/D = kappa/D' without overflow */
            double r = 1.0 / (F[k] - wb), v = -r - g;
            double u = sc->kap[k] <= 1.0
                           ? sc->kap[k] * r
                           : 1.0 / (sc->z[k] * (eps * sc->ikap[k] + 1.0) - wb * sc->ikap[k]);
            if (!(r >= 0.0) || !(u >= 0.0)) /* 0 where c underflows */
                return -1;
            dB += w[k] * v * v;
            t1 += w[k] * u;
            o12 += w[k] * l[k] * u;
            jc += w[k] * u * r;
            x2 += w[k] * u * u;
        }
    else
        for (int k = 0; k < M; k++) {
            double D = F[k] - wb, v = -1.0 / D - g;
            dB += w[k] * v * v;
            t1 += w[k] * c[k] / D;
            o12 += w[k] * l[k] * c[k] / D;
            jc += w[k] * c[k] / (D * D);
            x2 += w[k] * (c[k] / D) * (c[k] / D);
        }
    double den = g * g * g * g - dA * dB;
    if (!(den > 0.0))
        return -1;
    double o11 = x2 + jc * jc * dA / den;
    if (!isfinite(t1) || !isfinite(o12) || !isfinite(o11))
        return -1;
    out->t1 = t1;
    out->omega12 = o12;
    out->omega11 = o11;
    out->g = g;
    out->omega_a = wa;
    out->omega_b = wb;
    guess[0] = g;
    return 0;
}

/* ---- the moment system ---- */

struct spectral_ctx {
    struct act act;
    struct phi_law law; /* centred: Phi(omega11, psi11, omega12) under the token correlation */
    int T, M;
    double lambda, t2;
    double *l, *w, *c; /* c: exp(-2 phi l - 2 psi) (unscaled) or its log x (scaled) */
    double *work;      /* 3 M: spectral_solve_scaled's */
    struct spectral_measure mu;
    double guess[4]; /* warm starts: g, omega_A, omega_B (and their scale, scaled) */
    int scaled;      /* the state holds z = F/(1 + c) instead of F (spectral_remap) */
    double rate;     /* max |d log c/dtau| at the last observed state */
};

static void spectral_destroy(void *p)
{
    struct spectral_ctx *x = p;
    if (!x)
        return;
    free(x->l);
    free(x->w);
    free(x->c);
    free(x->work);
    free(x->mu.s);
    free(x->mu.q);
    free(x);
}

static int spectral_state_traces(struct spectral_ctx *x, const double *y,
                                 struct spectral_traces *tr)
{
    double phi = y[0], psi = y[1];
    if (x->scaled) {
        for (int k = 0; k < x->M; k++)
            x->c[k] = -2.0 * phi * x->l[k] - 2.0 * psi;
        return spectral_solve_scaled(&x->mu, x->M, x->l, x->w, x->c, y + 2, x->work, x->guess, tr);
    }
    for (int k = 0; k < x->M; k++)
        x->c[k] = exp(-2.0 * phi * x->l[k] - 2.0 * psi);
    return spectral_solve(&x->mu, x->M, x->l, x->w, y + 2, x->c, x->guess, tr);
}

/* c/(1 + c) = 1/(1 + e^-x) without overflow */
static double logistic(double x)
{
    if (x >= 0.0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static int spectral_rhs(void *p, double tau, const double *y, double *dy)
{
    (void)tau;
    struct spectral_ctx *x = p;
    struct spectral_traces tr;
    struct phi_val pv;
    if (spectral_state_traces(x, y, &tr))
        return -1;
    if (phi_eval_law(&x->act, x->T, &x->law, 0.0, tr.omega11, tr.omega11, tr.omega12, &pv))
        return -1;
    double hs = 4.0 * (pv.d_omega11 + pv.d_psi11), hp = 2.0 * pv.d_omega12;
    dy[0] = hp;
    dy[1] = x->lambda;
    if (x->scaled)
        for (int k = 0; k < x->M; k++) /* z' = c/(1 + c) (2 h_S - z x'), x' = -2 h_P l - 2 lambda */
            dy[2 + k] =
                logistic(x->c[k]) * (2.0 * hs + 2.0 * y[2 + k] * (hp * x->l[k] + x->lambda));
    else
        for (int k = 0; k < x->M; k++)
            dy[2 + k] = 2.0 * hs * x->c[k];
    return 0;
}

static int spectral_observe(void *p, const double *y, struct obs_row *row)
{
    struct spectral_ctx *x = p;
    struct spectral_traces tr;
    struct phi_val pv;
    if (spectral_state_traces(x, y, &tr))
        return -1;
    row->omega11 = tr.omega11;
    row->psi11 = tr.omega11;
    row->omega12 = tr.omega12;
    row->trace = tr.t1;
    row->overlap = obs_overlap(tr.omega11, tr.omega12, tr.t1, x->t2);
    int bad = phi_eval_law(&x->act, x->T, &x->law, 0.0, tr.omega11, tr.omega11, tr.omega12, &pv);
    row->loss = bad ? NAN : pv.phi;
    x->rate = 0.0;
    for (int k = 0; !bad && k < x->M; k++)
        x->rate = fmax(x->rate, fabs(4.0 * pv.d_omega12 * x->l[k] + 2.0 * x->lambda));
    return 0;
}

/* After an accepted step: moves an unscaled state to the scaled one (z = F/(1 + c)) once c grows
 * fast or far, or g gets small (SPECTRAL_SCALED_RATE, SPECTRAL_SCALED_LOGC, SPECTRAL_SCALED_G).
 * Returns MOM_REMAP_STIFF when it rewrote y. */
static int spectral_remap(void *p, double *y)
{
    struct spectral_ctx *x = p;
    if (x->scaled)
        return 0;
    double xmin = INFINITY, xmax = -INFINITY;
    for (int k = 0; k < x->M; k++) {
        double lc = -2.0 * y[0] * x->l[k] - 2.0 * y[1];
        xmin = fmin(xmin, lc);
        xmax = fmax(xmax, lc);
    }
    if (!(x->rate > SPECTRAL_SCALED_RATE || xmax > SPECTRAL_SCALED_LOGC ||
          fabs(x->guess[0]) < SPECTRAL_SCALED_G))
        return 0;
    for (int k = 0; k < x->M; k++) {
        double lc = -2.0 * y[0] * x->l[k] - 2.0 * y[1];
        y[2 + k] = lc >= 0.0 ? y[2 + k] * exp(-lc) / (exp(-lc) + 1.0) : y[2 + k] / (1.0 + exp(lc));
    }
    double x0 = fmax(xmin, 0.0), f = exp(x0);
    x->guess[0] *= f;
    x->guess[1] /= f;
    x->guess[2] /= f;
    x->guess[3] = x0;
    x->scaled = 1;
    return MOM_REMAP_STIFF;
}

/* Eigenvalues of a symmetric n x n row-major matrix (copied). */
static int sym_eigenvalues(const double *a, int n, double *ev)
{
    gsl_matrix *A = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *e = gsl_vector_alloc((size_t)n);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)n);
    int ret = -1;
    if (A && e && ws) {
        memcpy(A->data, a, sizeof(double) * (size_t)n * (size_t)n);
        if (gsl_eigen_symm(A, e, ws) == GSL_SUCCESS) {
            for (int i = 0; i < n; i++)
                ev[i] = gsl_vector_get(e, (size_t)i);
            ret = 0;
        }
    }
    if (ws)
        gsl_eigen_symm_free(ws);
    gsl_vector_free(e);
    gsl_matrix_free(A);
    return ret;
}

int spectral_system_create(const struct model *m, int mp, struct mom_sys *sys, char *err,
                           size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    const struct params *p = &m->p;
    if (p->decomposition != DECOMP_TIED) {
        snprintf(err, errlen, "closure spectral applies to the tied decomposition only");
        return -1;
    }
    if (p->order_m < 1) {
        snprintf(err, errlen, "closure spectral needs order >= 1 (the number of Gauss nodes)");
        return -1;
    }
    int d = m->d, r = m->r;
    struct spectral_ctx *x = calloc(1, sizeof *x);
    double *ev = malloc(sizeof(double) * (size_t)d);
    double *gram = NULL;
    if (!x || !ev)
        goto oom;
    x->act = p->activation;
    x->law = m->law;
    x->T = m->T;
    x->lambda = p->weight_decay;
    x->t2 = m->t2;
    x->l = malloc(sizeof(double) * (size_t)p->order_m);
    x->w = malloc(sizeof(double) * (size_t)p->order_m);
    x->c = malloc(sizeof(double) * (size_t)p->order_m);
    x->work = malloc(sizeof(double) * 3 * (size_t)p->order_m);
    if (!x->l || !x->w || !x->c || !x->work)
        goto oom;
    if (sym_eigenvalues(m->teacher, d, ev)) {
        snprintf(err, errlen, "spectral: eigenvalues of the teacher failed");
        goto fail;
    }
    x->M = spectral_gauss_rule(ev, d, p->order_m, x->l, x->w);
    if (x->M < 1) {
        snprintf(err, errlen, "spectral: Gauss rule of the teacher spectrum failed");
        goto fail;
    }
    if (mp) {
        if (spectral_mp_measure(p->init_scale, (double)r / d, SPECTRAL_MP_ATOMS, &x->mu))
            goto oom;
    } else {
        int n = r <= d ? r : d;
        gram = malloc(sizeof(double) * (size_t)n * (size_t)n);
        x->mu.n = n;
        x->mu.s = calloc((size_t)n, sizeof(double)); /* zeroed: every atom is written below */
        x->mu.q = calloc((size_t)n, sizeof(double));
        if (!gram || !x->mu.s || !x->mu.q)
            goto oom;
        /* the nonzero spectrum of S0 = W0 W0^T/kappa: W0^T W0/kappa (r x r) or the d x d form */
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) {
                double acc = 0.0;
                if (r <= d)
                    for (int k = 0; k < d; k++)
                        acc += m->W0[(size_t)k * r + i] * m->W0[(size_t)k * r + j];
                else
                    for (int k = 0; k < r; k++)
                        acc += m->W0[(size_t)i * r + k] * m->W0[(size_t)j * r + k];
                gram[(size_t)i * n + j] = gram[(size_t)j * n + i] = acc / m->kappa;
            }
        if (sym_eigenvalues(gram, n, x->mu.s)) {
            snprintf(err, errlen, "spectral: eigenvalues of the initial Gram matrix failed");
            goto fail;
        }
        for (int i = 0; i < n; i++) {
            if (x->mu.s[i] < 0.0)
                x->mu.s[i] = 0.0;
            x->mu.q[i] = 1.0 / d;
        }
        free(gram);
        gram = NULL;
    }
    {
        double t1 = 0.0;
        for (int j = 0; j < x->mu.n; j++)
            t1 += x->mu.q[j] * x->mu.s[j];
        x->guess[0] = t1 > 0.0 ? -t1 : -1.0;
        x->guess[1] = x->guess[2] = NAN;
    }
    free(ev);
    ev = NULL;
    sys->dim = x->M + 2;
    sys->y0 = calloc((size_t)sys->dim, sizeof(double)); /* phi = psi = 0, F = 0 */
    if (!sys->y0)
        goto oom;
    sys->rhs = spectral_rhs;
    sys->observe = spectral_observe;
    sys->remap = spectral_remap;
    sys->destroy = spectral_destroy;
    sys->ctx = x;
    return 0;
oom:
    snprintf(err, errlen, "spectral: out of memory");
fail:
    free(gram);
    free(ev);
    spectral_destroy(x);
    free(sys->y0);
    memset(sys, 0, sizeof *sys);
    return -1;
}
