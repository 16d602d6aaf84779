/*
 * words_system.c: the moment system of the word hierarchy of tied and untied (docs/model.md §6-§7):
 * the tracked classes, their right-hand side along the population flow, the O(eta) SGD-noise
 * drift, and the observables.
 *
 * The derivative rule. m(w) = Tr(w)/d changes, along the population flow, by replacing each
 * student letter in turn by its right-hand side (docs/model.md §6), with
 *   G = a S + b S^T + c P,   a = 2 Phi_omega, b = 2 Phi_psi, c = Phi_12,
 * at (omega11, psi11, omega12) = (m(S S^T), m(S S), m(S P)):
 *   tied   (S^T = S):  S -> -(H S + S H),  H = G + G^T = h_S S + h_P P,  h_S = 2(a + b), h_P = 2c
 *   untied:            S -> -(G Lambda + Sigma G),   S^T -> its transpose,
 *                      Sigma -> -(G S^T + S G^T),    Lambda -> -(G^T S + S^T G)
 * and weight decay lambda adds -2 lambda per letter S, S^T, Sigma, Lambda (each is a product of
 * two parameters). A word of length L thus needs words of length L + 1; the right-hand side of
 * each tracked class is a fixed sparse combination of classes whose coefficients are the
 * scalars (h_S, h_P, lambda) or (a, b, c, lambda), built once (struct lin_term).
 *
 * The general index (docs/model.md §10, untied): G gains g I, g = sqrt(d) Phi_mu, Phi taken at
 * mu = sqrt(d) m(S); then S -> -(G Lambda + Sigma G) gains -g (Lambda + Sigma), and likewise
 * S^T -> -g (Lambda + Sigma), Sigma -> -g (S + S^T), Lambda -> -g (S + S^T): a fifth coefficient
 * kind (K_MU) whose replacements keep the length. dm(S)/dtau then holds -g (m(Sigma) + m(Lambda)),
 * i.e. dmu/dtau = -d Phi_mu (t_Sigma + t_Lambda) + ..., rate d: the system is stiff and
 * integrated implicitly (ode.c). With `ode_mean slaved` g = 0 and m(S) is replaced, wherever it
 * enters, by mu*(q)/sqrt(d) (phi_mu_slow), the d -> inf fast-slow limit.
 * Tied with the general index (centred only: tied refuses `uncentred`). The centred index has
 * mean 0 and, exactly at every d (Isserlis), covariances C_aa'C_bb' m(S S'^T) + C_ab'C_ba' m(S S'),
 * so Phi = Phi(omega11, psi11, omega12) under the law (c enters through Var u = omega11 + c^2
 * psi11 off the diagonal, and the diagonal's law with outputs all); Phi_mu = 0, G has no I term,
 * H = h_S S + h_P P as above with h_S = 4(Phi_o + Phi_p), h_P = 2 Phi_12 taken under the law. The
 * hierarchy is the same; only the scalars change. The same holds for untied with the centred
 * index: K_MU's coefficient is 0, the mean is no state and nothing is stiff (explicit stepper).
 * The length-(M + 1) classes come from the closure (words_closure.c).
 *
 * The O(eta) noise drift (params.ode_noise). One SGD step changes each rectangular factor
 * linearly in eps = eta/d: tied W -> W - eps g^ W (g^ = g + g^T), untied U -> U - eps g V,
 * V -> V - eps g^T U. The second-order part of Tr(w)/d is eps^2 times the sum over unordered
 * pairs of distinct factors of the word with both replaced; each such term is Tr(X A Y B)/d with
 * X, Y in {g, g^T} and A, B the two arcs of the cyclic word between them, re-paired into
 * letters. At leading order in d the tokens contract as x_b^T A x_c ≈ delta_bc Tr A, so
 *   Tr(g A g^T B)/d ≈ Tr(g^T A g B)/d ≈ N1 m(A) m(B),   Tr(g A g B)/d ≈ N2 m(A) m(B),
 *   N1 = E sum_ab D_ab^2,  N2 = E sum_ab D_ab D_ba,   (tied: g^ on both sides, E|D + D^T|^2 = 2N1 + 2N2)
 * the expectations over the Gaussian indices (docs/model.md §5: Cov(h_ab, h_ba) = psi, the teacher's
 * h*_ab = h*_ba). Per unit tau (d^2/eta steps) the drift is eta * N m(A) m(B) per pair: quadratic
 * in the moments, with arcs no longer than the word, so no closure is needed. Check: direct
 * omega11 gives eta N1 = eta T(T-1) E[(sigma(u) - sigma(w))^2 sigma'(u)^2], docs/model.md §6.
 *
 * The realisable set. Every matrix S has psi11 <= omega11 (Cauchy-Schwarz, Tr(S S)/d <=
 * Tr(S S^T)/d) and, for its symmetric part S_s = (S + S^T)/2 against the unit teacher,
 * omega12^2 = (Tr(S_s S*)/d)^2 <= Tr(S_s^2)/d = (omega11 + psi11)/2 (so also omega12^2 <= omega11,
 * the pair law of (h_ab, h*_ab)). These are the conditions under which the laws of section 5 are
 * covariances: (h_ab, h*_ab) for Phi, and (h_ab, h_ba, h*_ab) for the noise term (its eigenvalues
 * omega11 - psi11 and those of [[omega11 + psi11, sqrt2 omega12], [sqrt2 omega12, 1]]). The
 * truncated hierarchy keeps them only up to its closure and integration error: at strong recovery
 * the order-3 flat system of untied converges to S = S*, where all three gaps tend to 0, and
 * crosses the boundary (untied h2, d = 60, init scale 1.2: (omega11 + psi11)/2 = omega12^2 by 3e-9
 * at tau = 0.73, where the noise law gets a negative eigenvalue; omega11 = omega12^2 by 1e-9 at
 * tau = 0.94 without the noise, where Phi's pair law does). The right-hand side failed there, and
 * the integrator crawled on at steps of 1e-12 for minutes. Phi and the noise term are now taken at
 * a point of the set, omega11 kept: psi11 -> min(psi11, omega11), then omega12 clipped to
 * +-sqrt((omega11 + psi11)/2) (the moments recorded stay those tracked). The map is the identity
 * on the set, so runs that stay inside it are unchanged bit for bit. A state
 * further outside than WORDS_REAL_TOL (relative to max(omega11, 1)) is not rounding at the
 * boundary: the right-hand side fails there and the run ends `ode_diverged` with that reason.
 */
#include "aimsweep/model/limits.h"
#include "aimsweep/theory/words.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/obs.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/theory/noise.h"
#include "words_hooks.h"
#include "words_impl.h"

/* Coefficient kinds of the linear part. tied: h_S, h_P, -, lambda; untied: a, b, c, lambda. */
enum { K_A = 0, K_B, K_C, K_LAM, K_MU, K_N };
/* Kinds of the noise part: N1, N2, and the tied E|D + D^T|^2. */
enum { Q_N1 = 0, Q_N2, Q_TIED, Q_N };

struct lin_term {
    int row, col, kind;
    double coef;
};

struct quad_term {
    int row, a, b, kind;
    double coef;
};

struct repl {
    int kind;
    double coef;
    int n, l[2];
};

/* The right-hand side of each student letter (see the head comment). */
static const struct repl repl_tied[] = {
    {K_A, -2, 2, {WORDS_S, WORDS_S}},
    {K_B, -1, 2, {WORDS_P, WORDS_S}},
    {K_B, -1, 2, {WORDS_S, WORDS_P}},
    {K_LAM, -2, 1, {WORDS_S, 0}},
};
static const struct repl repl_s[] = {
    {K_A, -1, 2, {WORDS_S, WORDS_LAMBDA}},
    {K_B, -1, 2, {WORDS_ST, WORDS_LAMBDA}},
    {K_C, -1, 2, {WORDS_P, WORDS_LAMBDA}},
    {K_A, -1, 2, {WORDS_SIGMA, WORDS_S}},
    {K_B, -1, 2, {WORDS_SIGMA, WORDS_ST}},
    {K_C, -1, 2, {WORDS_SIGMA, WORDS_P}},
    {K_LAM, -2, 1, {WORDS_S, 0}},
    /* the general index only (the last REPL_MU of each untied table): G's sqrt(d) Phi_mu I */
    {K_MU, -1, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_SIGMA, 0}},
};
static const struct repl repl_st[] = {
    {K_A, -1, 2, {WORDS_LAMBDA, WORDS_ST}}, {K_B, -1, 2, {WORDS_LAMBDA, WORDS_S}},
    {K_C, -1, 2, {WORDS_LAMBDA, WORDS_P}},  {K_A, -1, 2, {WORDS_ST, WORDS_SIGMA}},
    {K_B, -1, 2, {WORDS_S, WORDS_SIGMA}},   {K_C, -1, 2, {WORDS_P, WORDS_SIGMA}},
    {K_LAM, -2, 1, {WORDS_ST, 0}},          {K_MU, -1, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_SIGMA, 0}},
};
static const struct repl repl_sigma[] = {
    {K_A, -2, 2, {WORDS_S, WORDS_ST}}, {K_B, -1, 2, {WORDS_ST, WORDS_ST}},
    {K_C, -1, 2, {WORDS_P, WORDS_ST}}, {K_B, -1, 2, {WORDS_S, WORDS_S}},
    {K_C, -1, 2, {WORDS_S, WORDS_P}},  {K_LAM, -2, 1, {WORDS_SIGMA, 0}},
    {K_MU, -1, 1, {WORDS_S, 0}},       {K_MU, -1, 1, {WORDS_ST, 0}},
};
static const struct repl repl_lambda[] = {
    {K_A, -2, 2, {WORDS_ST, WORDS_S}}, {K_B, -1, 2, {WORDS_S, WORDS_S}},
    {K_C, -1, 2, {WORDS_P, WORDS_S}},  {K_B, -1, 2, {WORDS_ST, WORDS_ST}},
    {K_C, -1, 2, {WORDS_ST, WORDS_P}}, {K_LAM, -2, 1, {WORDS_LAMBDA, 0}},
    {K_MU, -1, 1, {WORDS_S, 0}},       {K_MU, -1, 1, {WORDS_ST, 0}},
};
/* the K_MU rules at the end of each untied table */
#define REPL_MU 2

/* The rules of each letter code (WORDS_S .. WORDS_LAMBDA); P has none. */
struct repl_rule {
    const struct repl *r;
    int n;
};
#define REPL_RULE(t)                                                                               \
    {                                                                                              \
        (t), (int)(sizeof(t) / sizeof((t)[0]))                                                     \
    }
static const struct repl_rule repl_rule_tied[2] = {[WORDS_S] = REPL_RULE(repl_tied)};
static const struct repl_rule repl_rule_untied[5] = {
    [WORDS_S] = REPL_RULE(repl_s),
    [WORDS_ST] = REPL_RULE(repl_st),
    [WORDS_SIGMA] = REPL_RULE(repl_sigma),
    [WORDS_LAMBDA] = REPL_RULE(repl_lambda),
};
#undef REPL_RULE

struct words_ctx {
    struct words_basis *b;
    int M, dec, noise, T;
    struct act act;
    double lambda, t2;
    struct params p; /* for the rate in force (params_rate) in the noise term */
    /* the general index: the law, sqrt(d), and for the slaved mean the last mu*(q) */
    struct phi_law law;
    int general, slaved;
    double sqd, mu_guess;
    int ntr;
    int *trk; /* class of each state component */
    double *mom, *mom0;
    struct lin_term *lin;
    int nlin;
    struct quad_term *quad;
    int nquad;
    int c_s, c_ss, c_sst, c_sp; /* classes of the observables */
    struct words_closure cl;
    /* how far outside the realisable set a state is projected (WORDS_REAL_TOL; a test hook
     * changes it), and the last state found further outside, if any */
    double real_tol;
    int out_seen;
    double out_om, out_ps, out_o12;
};

/* How far (relative to max(omega11, 1)) the tracked moments may lie outside the realisable set
 * (the head comment) and still be taken as the boundary reached up to closure and integration
 * error; beyond it the right-hand side fails. Measured in runs through strong recovery: at most
 * 6e-8 over the tied and untied points of sweeps/phase-ode-d60.yaml, 7e-8 for untied h1, h2,
 * relu, tanh, erf, softmax(1) at d = 30 to 300 up to tau = 4. */
#define WORDS_REAL_TOL 1e-6

/* The moments (om, ps, o12) moved onto the realisable set (the head comment); 0, or -1 when
 * they lie outside it by more than WORDS_REAL_TOL (recorded in cx for words_why). */
static int realise(struct words_ctx *cx, double *om, double *ps, double *o12)
{
    double o = *om, s = *ps, c = *o12;
    if (!(o >= 0))
        return -1; /* not finite, or omega11 < 0: no projection, the caller reports it */
    double sp = s < o ? s : o, half = 0.5 * (o + sp);
    if (half < 0) { /* psi11 < -omega11: (S + S^T)/2 would have a negative square */
        sp = -o;
        half = 0;
    }
    double lim = sqrt(half), cp = c > lim ? lim : c < -lim ? -lim : c;
    double viol = fmax(fabs(s - sp), c * c - half);
    if (viol > cx->real_tol * (o > 1 ? o : 1)) {
        cx->out_seen = 1;
        cx->out_om = o;
        cx->out_ps = s;
        cx->out_o12 = c;
        return -1;
    }
    *ps = sp;
    *o12 = cp;
    return 0;
}

static int cmp_lin(const void *x, const void *y)
{
    const struct lin_term *a = x, *b = y;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

static int build_lin(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int cap = 0, w[WORDS_MAX_LEN], v[WORDS_MAX_LEN + 1];
    for (int i = 0; i < cx->ntr; i++)
        cap += b->len[cx->trk[i]] * 9;
    cx->lin = malloc(sizeof(struct lin_term) * (cap > 0 ? cap : 1));
    if (!cx->lin)
        return -1;
    int n = 0;
    for (int row = 0; row < cx->ntr; row++) {
        int L = words_basis_class(b, cx->trk[row], w);
        for (int i = 0; i < L; i++) {
            const struct repl_rule *rule = &(b->nl == 2 ? repl_rule_tied : repl_rule_untied)[w[i]];
            const struct repl *rp = rule->r;
            int nr = rule->n - (b->nl != 2 && rule->n && !cx->general ? REPL_MU : 0);
            for (int k = 0; k < nr; k++) {
                int nv = 0;
                for (int j = 0; j < i; j++)
                    v[nv++] = w[j];
                for (int j = 0; j < rp[k].n; j++)
                    v[nv++] = rp[k].l[j];
                for (int j = i + 1; j < L; j++)
                    v[nv++] = w[j];
                cx->lin[n].row = row;
                cx->lin[n].col = words_basis_index(b, nv, v);
                cx->lin[n].kind = rp[k].kind;
                cx->lin[n].coef = rp[k].coef;
                n++;
            }
        }
    }
    qsort(cx->lin, n, sizeof *cx->lin, cmp_lin);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && !cmp_lin(&cx->lin[m - 1], &cx->lin[i]))
            cx->lin[m - 1].coef += cx->lin[i].coef;
        else
            cx->lin[m++] = cx->lin[i];
    }
    cx->nlin = m;
    return 0;
}

/* Rectangular factors of the noise expansion, and the two markers g, g^T. */
enum { F_U = 0, F_UT, F_V, F_VT, F_P, F_G, F_GT };

static int units_to_letters(int nl, const int *u, int n, int *w)
{
    int L = 0;
    for (int i = 0; i < n; i++) {
        if (u[i] == F_P) {
            w[L++] = WORDS_P;
            continue;
        }
        if (i + 1 >= n)
            return -1;
        int x = u[i], y = u[++i];
        if ((nl == 2 && x == F_U && y == F_UT) || (nl == 5 && x == F_U && y == F_VT))
            w[L++] = WORDS_S;
        else if (nl == 5 && x == F_V && y == F_UT)
            w[L++] = WORDS_ST;
        else if (nl == 5 && x == F_U && y == F_UT)
            w[L++] = WORDS_SIGMA;
        else if (nl == 5 && x == F_V && y == F_VT)
            w[L++] = WORDS_LAMBDA;
        else
            return -1;
    }
    return L;
}

static int build_quad(struct words_ctx *cx)
{
    const struct words_basis *b = cx->b;
    int w[WORDS_MAX_LEN], u[2 * WORDS_MAX_LEN], cap = 0;
    for (int i = 0; i < cx->ntr; i++) {
        int f = 2 * b->len[cx->trk[i]];
        cap += f * (f - 1) / 2;
    }
    cx->quad = malloc(sizeof(struct quad_term) * (cap > 0 ? cap : 1));
    if (!cx->quad)
        return -1;
    int nq = 0;
    for (int row = 0; row < cx->ntr; row++) {
        int L = words_basis_class(b, cx->trk[row], w), n = 0;
        for (int i = 0; i < L; i++) {
            int x = w[i];
            if (x == WORDS_P) {
                u[n++] = F_P;
            } else if (b->nl == 2 || x == WORDS_SIGMA) {
                u[n++] = F_U;
                u[n++] = F_UT;
            } else if (x == WORDS_S) {
                u[n++] = F_U;
                u[n++] = F_VT;
            } else if (x == WORDS_ST) {
                u[n++] = F_V;
                u[n++] = F_UT;
            } else {
                u[n++] = F_V;
                u[n++] = F_VT;
            }
        }
        for (int i = 0; i < n; i++) {
            if (u[i] == F_P)
                continue;
            for (int j = i + 1; j < n; j++) {
                if (u[j] == F_P)
                    continue;
                int s[2 * WORDS_MAX_LEN + 2], ns = 0, mk[2], nm = 0;
                for (int k = 0; k < n; k++) {
                    int x = u[k];
                    if (k != i && k != j) {
                        s[ns++] = x;
                        continue;
                    }
                    int g = b->nl == 2 ? F_G : (x == F_U || x == F_VT) ? F_G : F_GT;
                    if (b->nl == 2) {
                        if (x == F_U) {
                            mk[nm++] = ns;
                            s[ns++] = g;
                            s[ns++] = F_U;
                        } else {
                            s[ns++] = F_UT;
                            mk[nm++] = ns;
                            s[ns++] = g;
                        }
                    } else if (x == F_U) { /* U -> g V */
                        mk[nm++] = ns;
                        s[ns++] = g;
                        s[ns++] = F_V;
                    } else if (x == F_V) { /* V -> g^T U */
                        mk[nm++] = ns;
                        s[ns++] = g;
                        s[ns++] = F_U;
                    } else if (x == F_UT) { /* U^T -> V^T g^T */
                        s[ns++] = F_VT;
                        mk[nm++] = ns;
                        s[ns++] = g;
                    } else { /* V^T -> U^T g */
                        s[ns++] = F_UT;
                        mk[nm++] = ns;
                        s[ns++] = g;
                    }
                }
                int wa[WORDS_MAX_LEN], wb[WORDS_MAX_LEN], ub[2 * WORDS_MAX_LEN + 2], nb = 0;
                int la = units_to_letters(b->nl, s + mk[0] + 1, mk[1] - mk[0] - 1, wa);
                for (int k = mk[1] + 1; k < ns; k++)
                    ub[nb++] = s[k];
                for (int k = 0; k < mk[0]; k++)
                    ub[nb++] = s[k];
                int lb = units_to_letters(b->nl, ub, nb, wb);
                if (la < 0 || lb < 0)
                    return -1; /* cannot happen: arcs always re-pair */
                cx->quad[nq].row = row;
                cx->quad[nq].a = words_basis_index(b, la, wa);
                cx->quad[nq].b = words_basis_index(b, lb, wb);
                cx->quad[nq].kind = b->nl == 2 ? Q_TIED : (s[mk[0]] == s[mk[1]] ? Q_N2 : Q_N1);
                cx->quad[nq].coef = 1;
                nq++;
            }
        }
    }
    cx->nquad = nq;
    return 0;
}

/* Fills cx->mom from the state: tracked classes, constants, and the closure. */
static void fill_moments(struct words_ctx *cx, const double *y)
{
    for (int i = 0; i < cx->ntr; i++)
        cx->mom[cx->trk[i]] = y[i];
    words_closure_apply(&cx->cl, cx->mom);
}

static int words_rhs(void *ctx, double tau, const double *y, double *dy)
{
    struct words_ctx *cx = ctx;
    struct phi_val pv;
    for (int i = 0; i < cx->ntr; i++)
        if (!isfinite(y[i]) || fabs(y[i]) > LIMIT_MOMENT_MAX)
            return -1;
    fill_moments(cx, y);
    double om = cx->mom[cx->c_sst], ps = cx->mom[cx->c_ss], o12 = cx->mom[cx->c_sp];
    if (realise(cx, &om, &ps, &o12))
        return -1;
    if (cx->general) {
        double mu = cx->sqd * cx->mom[cx->c_s];
        if (cx->slaved) {
            if (phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, om, ps, o12, &mu))
                return -1;
            cx->mom[cx->c_s] = mu / cx->sqd;
        }
        if (phi_eval_law(&cx->act, cx->T, &cx->law, mu, om, ps, o12, &pv))
            return -1;
        if (cx->slaved)
            pv.d_mu = 0;
    } else if (phi_eval(&cx->act, cx->T, om, ps, o12, &pv)) {
        return -1;
    }
    double k[K_N];
    double a = 2 * pv.d_omega11, bb = 2 * pv.d_psi11, c = pv.d_omega12;
    if (cx->dec == DECOMP_TIED) {
        k[K_A] = 2 * (a + bb);
        k[K_B] = 2 * c;
        k[K_C] = 0;
    } else {
        k[K_A] = a;
        k[K_B] = bb;
        k[K_C] = c;
    }
    k[K_LAM] = cx->lambda;
    k[K_MU] = cx->general ? cx->sqd * pv.d_mu : 0;
    for (int i = 0; i < cx->ntr; i++)
        dy[i] = 0;
    for (int i = 0; i < cx->nlin; i++) {
        const struct lin_term *t = &cx->lin[i];
        dy[t->row] += k[t->kind] * t->coef * cx->mom[t->col];
    }
    if (cx->noise) {
        struct noise_val nv;
        double q[Q_N];
        if (noise_eval_law(&cx->act, cx->T, &cx->law, cx->sqd * cx->mom[cx->c_s], om,
                           cx->dec == DECOMP_TIED ? om : ps, o12, 0, &nv))
            return -1;
        double eta = params_rate(&cx->p, tau);
        q[Q_N1] = eta * nv.n1;
        q[Q_N2] = eta * nv.n2;
        q[Q_TIED] = eta * 2 * (nv.n1 + nv.n2);
        for (int i = 0; i < cx->nquad; i++) {
            const struct quad_term *t = &cx->quad[i];
            dy[t->row] += q[t->kind] * t->coef * cx->mom[t->a] * cx->mom[t->b];
        }
    }
    return 0;
}

int words_noise_drift(const struct mom_sys *sys, const double *y, double n1, double n2, double *out)
{
    struct words_ctx *cx = sys->ctx;
    double q[Q_N] = {n1, n2, 2 * (n1 + n2)};
    fill_moments(cx, y);
    for (int i = 0; i < cx->ntr; i++)
        out[i] = 0;
    for (int i = 0; i < cx->nquad; i++) {
        const struct quad_term *t = &cx->quad[i];
        out[t->row] += q[t->kind] * t->coef * cx->mom[t->a] * cx->mom[t->b];
    }
    return 0;
}

static int words_observe(void *ctx, const double *y, struct obs_row *row)
{
    struct words_ctx *cx = ctx;
    struct phi_val pv;
    for (int i = 0; i < cx->ntr; i++)
        cx->mom[cx->trk[i]] = y[i];
    row->omega11 = cx->mom[cx->c_sst];
    row->psi11 = cx->mom[cx->c_ss];
    row->omega12 = cx->mom[cx->c_sp];
    row->trace = cx->mom[cx->c_s];
    /* the moments are recorded as tracked, the loss taken at the realisable point (as words_rhs) */
    double om = row->omega11, ps = row->psi11, o12 = row->omega12, mu = cx->sqd * row->trace;
    if (realise(cx, &om, &ps, &o12)) {
        row->loss = NAN;
        return -1;
    }
    if (cx->general && cx->slaved) {
        if (phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, om, ps, o12, &mu))
            return -1;
        cx->mu_guess = mu;
        row->trace = mu / cx->sqd;
    }
    row->overlap = obs_overlap(row->omega11, row->omega12, row->trace, cx->t2);
    if (cx->general ? phi_eval_law(&cx->act, cx->T, &cx->law, mu, om, ps, o12, &pv)
                    : phi_eval(&cx->act, cx->T, om, ps, o12, &pv)) {
        row->loss = NAN;
        return -1;
    }
    row->loss = pv.phi;
    return 0;
}

/* Least eigenvalue of flat's Gram matrix, relative to the largest, below which the tracked
 * moments are reported as having left the positive cone (rounding of a positive semidefinite
 * Gram matrix stays orders of magnitude above it). */
#define WORDS_FLAT_INDEF (-1e-9)

static void words_why(void *ctx, char *buf, size_t n)
{
    const struct words_ctx *cx = ctx;
    size_t k = 0;
    buf[0] = 0;
    /* out_seen stays set once any state tried was outside, even one the integrator recovered
     * from, so the message says so and does not call it the cause */
    if (cx->out_seen) {
        double o = cx->out_om, ps = cx->out_ps, c = cx->out_o12;
        int w = snprintf(buf, n,
                         "states tried left the order-%d realisable set by over %g (the last: "
                         "omega11 - psi11 = %.2g, (omega11 + psi11)/2 - omega12^2 = %.2g)",
                         cx->M, cx->real_tol, o - ps, 0.5 * (o + ps) - c * c);
        k = w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
    }
    if (cx->cl.kind == CLOSURE_FLAT && cx->cl.f_lmin < WORDS_FLAT_INDEF)
        snprintf(
            buf + k, n - k,
            "%sthe order-%d moments left the positive cone (flat's Gram matrix has least/largest "
            "eigenvalue %.2g), so no positive functional closes them; order_m 3 runs through",
            k ? "; " : "", cx->M, cx->cl.f_lmin);
}

static void words_ctx_destroy(void *ctx)
{
    struct words_ctx *cx = ctx;
    if (!cx)
        return;
    words_closure_free(&cx->cl);
    words_basis_destroy(&cx->b);
    free(cx->trk);
    free(cx->mom);
    free(cx->mom0);
    free(cx->lin);
    free(cx->quad);
    free(cx);
}

const struct words_basis *words_system_basis(const struct mom_sys *sys)
{
    return ((const struct words_ctx *)sys->ctx)->b;
}

const int *words_system_classes(const struct mom_sys *sys)
{
    return ((const struct words_ctx *)sys->ctx)->trk;
}

void words_system_set_real_tol(struct mom_sys *sys, double tol)
{
    ((struct words_ctx *)sys->ctx)->real_tol = tol;
}

/* The order and closure a word system uses: auto resolved. */
static void resolve(const struct params *p, enum closure *closure, int *M)
{
    *closure = p->closure;
    *M = p->order_m;
    /* auto: the positive `flat` closure at the largest odd order <= M (flat needs odd orders;
     * measured to run through strong recovery at order 3 where the cumulant closures stop,
     * docs/closures.md), or free_cumulant when M < 3. */
    if (*closure == CLOSURE_AUTO) {
        if (*M >= 3) {
            *closure = CLOSURE_FLAT;
            *M -= *M % 2 == 0;
        } else {
            *closure = CLOSURE_FREE_CUMULANT;
        }
    }
}

int words_check(const struct params *p, char *err, size_t errlen)
{
    enum closure closure;
    int M, nl;
    resolve(p, &closure, &M);
    if (p->decomposition != DECOMP_TIED && p->decomposition != DECOMP_UNTIED) {
        snprintf(err, errlen, "words: the word hierarchy is for tied and untied only");
        return -1;
    }
    nl = p->decomposition == DECOMP_TIED ? 2 : 5;
    if (M < 2 || M + 1 > (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN)) {
        snprintf(err, errlen,
                 "order_m = %d: the word hierarchy of %s with closure %s needs an order of %s %d",
                 p->order_m, params_decomp_name(p->decomposition), params_closure_name(p->closure),
                 M < 2 ? "at least" : "at most",
                 M < 2 ? 2 : (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN) - 1);
        return -1;
    }
    if (closure == CLOSURE_SPECTRAL || closure == CLOSURE_SPECTRAL_MP) {
        snprintf(err, errlen, "words: closure spectral is not a word closure");
        return -1;
    }
    if (closure == CLOSURE_FLAT && M % 2 == 0) {
        snprintf(
            err, errlen,
            "closure flat needs an odd order_m (got %d; even orders measured unstable): use order_m %d or %d, "
            "or closure auto",
            M, M - 1, M + 1);
        return -1;
    }
    if (closure == CLOSURE_FREE_RESIDUAL && M + 1 > (nl == 2 ? 10 : 6)) {
        snprintf(err, errlen, "closure free_residual supports order_m <= %d for %s (got %d)",
                 nl == 2 ? 9 : 5, params_decomp_name(p->decomposition), M);
        return -1;
    }
    return 0;
}

long words_init_products(const struct params *p)
{
    enum closure closure;
    int M;
    char err[256];
    if (words_check(p, err, sizeof err))
        return -1;
    resolve(p, &closure, &M);
    struct words_basis *b = words_basis_create(p->decomposition, M + 1);
    long np = b ? words_traces_products(b) : -1;
    words_basis_destroy(&b);
    return np;
}

int words_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    const struct params *p = &m->p;
    struct words_ctx *cx = NULL;
    int M, nl;
    enum closure closure;
    memset(sys, 0, sizeof *sys);
    if (words_check(p, err, errlen))
        return -1;
    resolve(p, &closure, &M);
    nl = p->decomposition == DECOMP_TIED ? 2 : 5;
    cx = calloc(1, sizeof *cx);
    if (!cx)
        goto oom;
    cx->M = M;
    cx->dec = p->decomposition;
    cx->noise = p->ode_noise;
    cx->T = m->T;
    cx->act = p->activation;
    cx->lambda = p->weight_decay;
    cx->p = *p;
    cx->t2 = m->t2;
    cx->law = m->law;
    cx->general = !phi_law_special(&m->law);
    /* the mean is a state (and stiff, or slaved) only for the uncentred index: centred, Phi_mu = 0 */
    cx->slaved = p->ode_mean == ODE_MEAN_SLAVED && m->law.uncentred;
    cx->sqd = sqrt((double)m->d);
    cx->real_tol = WORDS_REAL_TOL;
    cx->b = words_basis_create(p->decomposition, M + 1);
    if (!cx->b)
        goto oom;
    const struct words_basis *b = cx->b;
    int n = b->ncls;
    cx->mom = malloc(sizeof(double) * n);
    cx->mom0 = malloc(sizeof(double) * n);
    cx->trk = malloc(sizeof(int) * n);
    if (!cx->mom || !cx->mom0 || !cx->trk)
        goto oom;
    for (int c = 0; c < b->first[M + 1]; c++)
        if (b->stud[c])
            cx->trk[cx->ntr++] = c;
    /* matched initial values: exact traces of the run's own matrices where affordable; ode_init
     * limit: every word from free probability (2: lengths 1 and 2 too) */
    int exact;
    if (words_initial_values(m, b, m->p.ode_init == ODE_INIT_LIMIT ? 2 : 0, cx->mom0, &exact))
        goto oom;
    memcpy(cx->mom, cx->mom0, sizeof(double) * n);
    if (words_closure_init(&cx->cl, b, (int)closure, M, cx->mom0))
        goto oom;
    if (build_lin(cx) || build_quad(cx))
        goto oom;
    cx->c_s = words_class_of(b, WORDS_S, -1);
    cx->c_ss = words_class_of(b, WORDS_S, WORDS_S);
    cx->c_sst = nl == 2 ? cx->c_ss : words_class_of(b, WORDS_S, WORDS_ST);
    cx->c_sp = words_class_of(b, WORDS_S, WORDS_P);
    sys->dim = cx->ntr;
    sys->y0 = malloc(sizeof(double) * cx->ntr);
    if (!sys->y0)
        goto oom;
    for (int i = 0; i < cx->ntr; i++)
        sys->y0[i] = cx->mom0[cx->trk[i]];
    sys->rhs = words_rhs;
    sys->observe = words_observe;
    sys->destroy = words_ctx_destroy;
    sys->why = words_why;
    sys->ctx = cx;
    if (cx->general) {
        cx->mu_guess = cx->sqd * cx->mom0[cx->c_s];
        if (cx->slaved && phi_mu_slow(&cx->act, cx->T, &cx->law, cx->mu_guess, cx->mom0[cx->c_sst],
                                      cx->mom0[cx->c_ss], cx->mom0[cx->c_sp], &cx->mu_guess)) {
            snprintf(
                err, errlen,
                "words: no slow manifold mu*(q) (Phi_mu = 0) at the initial moments: use ode_mean stiff");
            words_ctx_destroy(cx);
            free(sys->y0);
            memset(sys, 0, sizeof *sys);
            return -1;
        }
        sys->stiff = m->law.uncentred && !cx->slaved;
    }
    return 0;
oom:
    words_ctx_destroy(cx);
    free(sys->y0);
    memset(sys, 0, sizeof *sys);
    snprintf(err, errlen, "words: out of memory building the order-%d system", M);
    return -1;
}
