/*
 * direct.c: the closed moment system of the direct decomposition.
 *
 * The direct system. docs/model.md §6: dS/dtau = -G - lambda S, G = 2 Phi_o S + 2 Phi_p S^T + Phi_12 P
 * (P = S*, symmetric, tr P^2 = 1; tr = Tr/d). Differentiating the traces:
 *   d omega11/dtau = 2 tr(S' S^T) = -2 tr(G S^T) - 2 lambda omega11
 *                  = -2 (2 Phi_o omega11 + 2 Phi_p psi11 + Phi_12 omega12) - 2 lambda omega11
 *     (tr(S S^T) = omega11, tr(S^T S^T) = psi11, tr(P S^T) = omega12)
 *   d psi11/dtau   = 2 tr(S' S) = -2 tr(G S) - 2 lambda psi11
 *                  = -2 (2 Phi_o psi11 + 2 Phi_p omega11 + Phi_12 omega12) - 2 lambda psi11
 *   d omega12/dtau = tr(S' P) = -(2 Phi_o omega12 + 2 Phi_p omega12 + Phi_12) - lambda omega12
 *     (tr(S P) = tr(S^T P) = omega12)
 *   d t1/dtau      = tr(S') = -(2 Phi_o + 2 Phi_p) t1 - Phi_12 t2 - lambda t1
 * Phi depends on (omega11, psi11, omega12) only, so (omega11, psi11, omega12) is closed and t1
 * rides along linearly; no truncation at any M. The O(eta) noise drift adds
 * eta (n1, n2, 0, 0) (noise.c, docs/noise.md): the linear functionals omega12, t1 have no
 * second-order term.
 *
 * Direct with the general index (docs/model.md §10): G gains sqrt(d) Phi_mu I and Phi depends on
 * mu = Tr S/sqrt(d) = sqrt(d) t1 too. With tr(I S^T) = t1, sqrt(d) Phi_mu t1 = Phi_mu mu and
 * sqrt(d) Phi_mu t2 = Phi_mu mu*, the state (omega11, psi11, omega12, mu) is closed:
 *   d omega11/dtau = -2 (2 Phi_o omega11 + 2 Phi_p psi11 + Phi_12 omega12 + Phi_mu mu) - 2 lambda omega11
 *   d psi11/dtau   = -2 (2 Phi_o psi11 + 2 Phi_p omega11 + Phi_12 omega12 + Phi_mu mu) - 2 lambda psi11
 *   d omega12/dtau = -((2 Phi_o + 2 Phi_p) omega12 + Phi_12 + Phi_mu mu*) - lambda omega12
 *   d mu/dtau      = -(2 Phi_o + 2 Phi_p) mu - Phi_12 mu* - d Phi_mu - lambda mu.
 * The last has rate d Phi_mumu: stiff. `ode_mean stiff` integrates all four with GSL's implicit
 * multistep BDF (msbdf; Jacobian by central differences of the right-hand side); `ode_mean
 * slaved` takes the d -> inf fast-slow limit: mu = mu*(q), the root of Phi_mu(mu, q) = 0 nearest
 * the last one (Newton from there), and integrates (omega11, psi11, omega12) with Phi_mu = 0.
 */
#include "aimsweep/theory/direct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "aimsweep/model/phi.h"
#include "aimsweep/theory/noise.h"

struct direct_ctx {
    struct act act;
    int T;
    double lambda, t2;
    struct params p; /* for the rate in force (params_rate) in the noise term */
    int noise;
};

static int direct_rhs(void *p, double tau, const double *y, double *dy)
{
    const struct direct_ctx *x = p;
    double o11 = y[0], p11 = y[1], o12 = y[2], t1 = y[3];
    struct phi_val v;
    if (phi_eval(&x->act, x->T, o11, p11, o12, &v))
        return -1;
    double po = v.d_omega11, pp = v.d_psi11, p12 = v.d_omega12, lam = x->lambda;
    dy[0] = -2.0 * (2.0 * po * o11 + 2.0 * pp * p11 + p12 * o12) - 2.0 * lam * o11;
    dy[1] = -2.0 * (2.0 * po * p11 + 2.0 * pp * o11 + p12 * o12) - 2.0 * lam * p11;
    dy[2] = -(2.0 * po * o12 + 2.0 * pp * o12 + p12) - lam * o12;
    dy[3] = -(2.0 * po + 2.0 * pp) * t1 - p12 * x->t2 - lam * t1;
    if (x->noise) {
        struct noise_val nv;
        double dr[4];
        if (noise_eval(&x->act, x->T, o11, p11, o12, 0, &nv))
            return -1;
        noise_direct_drift(params_rate(&x->p, tau), &nv, dr);
        for (int i = 0; i < 4; i++)
            dy[i] += dr[i];
    }
    return 0;
}

static int direct_observe(void *p, const double *y, struct obs_row *row)
{
    const struct direct_ctx *x = p;
    struct phi_val v;
    row->omega11 = y[0];
    row->psi11 = y[1];
    row->omega12 = y[2];
    row->trace = y[3];
    row->overlap = obs_overlap(y[0], y[2], y[3], x->t2);
    row->loss = phi_eval(&x->act, x->T, y[0], y[1], y[2], &v) ? NAN : v.phi;
    return 0;
}

static void direct_destroy(void *p) { free(p); }

/* ---- direct with the mean (docs/model.md §10) ---- */

struct mean_ctx {
    struct act act;
    struct phi_law law;
    struct params p; /* for the rate in force in the noise term */
    int T, d, slaved, noise;
    double lambda, t2, mu_star;
    double mu_guess; /* slaved: the last root, the start of the next solve */
};

static int slave_mu(struct mean_ctx *x, double o11, double p11, double o12, double *mu_out)
{
    return phi_mu_slow(&x->act, x->T, &x->law, x->mu_guess, o11, p11, o12, mu_out);
}

static int mean_rhs(void *p, double tau, const double *y, double *dy)
{
    struct mean_ctx *x = p;
    double o11 = y[0], p11 = y[1], o12 = y[2], mu, lam = x->lambda, ms = x->mu_star;
    if (x->slaved) {
        if (slave_mu(x, o11, p11, o12, &mu))
            return -1;
    } else {
        mu = y[3];
    }
    struct phi_val v;
    if (phi_eval_law(&x->act, x->T, &x->law, mu, o11, p11, o12, &v))
        return -1;
    double po = v.d_omega11, pp = v.d_psi11, p12 = v.d_omega12, pm = x->slaved ? 0.0 : v.d_mu;
    dy[0] = -2.0 * (2.0 * po * o11 + 2.0 * pp * p11 + p12 * o12 + pm * mu) - 2.0 * lam * o11;
    dy[1] = -2.0 * (2.0 * po * p11 + 2.0 * pp * o11 + p12 * o12 + pm * mu) - 2.0 * lam * p11;
    dy[2] = -((2.0 * po + 2.0 * pp) * o12 + p12 + pm * ms) - lam * o12;
    if (!x->slaved)
        dy[3] = -(2.0 * po + 2.0 * pp) * mu - p12 * ms - x->d * v.d_mu - lam * mu;
    if (x->noise) { /* omega11, psi11 only: omega12 and mu are linear in S */
        struct noise_val nv;
        if (noise_eval_law(&x->act, x->T, &x->law, mu, o11, p11, o12, 0, &nv))
            return -1;
        double eta = params_rate(&x->p, tau);
        dy[0] += eta * nv.n1;
        dy[1] += eta * nv.n2;
    }
    return 0;
}

static int mean_observe(void *p, const double *y, struct obs_row *row)
{
    struct mean_ctx *x = p;
    struct phi_val v;
    double mu;
    if (x->slaved) {
        if (slave_mu(x, y[0], y[1], y[2], &mu))
            return -1;
        x->mu_guess = mu;
    } else {
        mu = y[3];
    }
    row->omega11 = y[0];
    row->psi11 = y[1];
    row->omega12 = y[2];
    row->trace = mu / sqrt((double)x->d);
    row->overlap = obs_overlap(y[0], y[2], row->trace, x->t2);
    row->loss = phi_eval_law(&x->act, x->T, &x->law, mu, y[0], y[1], y[2], &v) ? NAN : v.phi;
    return 0;
}

/* Matched initial values: the exact traces of the run's own S0, y[0..2] = Tr(S S^T)/d, Tr(S^2)/d,
 * Tr(S S*)/d, and Tr S in y[3] (the caller divides it by d for t1 or by sqrt(d) for mu). With
 * ode_init limit their d -> infinity values for S0 = s0 goe + t I free from S*: Omega11 = Psi11
 * = s0^2 + t^2, Omega12 = t t2, Tr S = t d (the goe's own trace, O(1) in Tr S, is 0 in the
 * limit); with t = 0 the overlap m(0) is exactly 0. */
static void initial_traces(const struct model *m, double *y)
{
    int d = m->d;
    if (m->p.ode_init == ODE_INIT_LIMIT) {
        double s0 = m->p.init_scale, t = m->p.init_trace;
        y[0] = y[1] = s0 * s0 + t * t;
        y[2] = t * m->t2;
        y[3] = t * d;
        return;
    }
    const double *S = m->S0, *P = m->teacher;
    double o11 = 0.0, p11 = 0.0, o12 = 0.0, tr = 0.0;
    for (int i = 0; i < d; i++) {
        for (int j = 0; j < d; j++) {
            double s = S[(size_t)i * d + j];
            o11 += s * s;
            p11 += s * S[(size_t)j * d + i];
            o12 += s * P[(size_t)i * d + j];
        }
        tr += S[(size_t)i * d + i];
    }
    y[0] = o11 / d;
    y[1] = p11 / d;
    y[2] = o12 / d;
    y[3] = tr;
}

/* What both systems start with: a zeroed context of size bytes (returned) and the four initial
 * moments in *y0 (initial_traces, the trace not yet scaled). Returns NULL with *y0 = NULL and
 * "ode: out of memory" in err when an allocation fails. The caller owns both. */
static void *system_alloc(const struct model *m, size_t size, double **y0, char *err, size_t errlen)
{
    void *ctx = calloc(1, size);
    *y0 = calloc(4, sizeof(double));
    if (!ctx || !*y0) {
        free(ctx);
        free(*y0);
        *y0 = NULL;
        snprintf(err, errlen, "ode: out of memory");
        return NULL;
    }
    initial_traces(m, *y0);
    return ctx;
}

static int mean_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    int d = m->d;
    double *y0;
    struct mean_ctx *x = system_alloc(m, sizeof *x, &y0, err, errlen);
    if (!x)
        return -1;
    x->act = m->p.activation;
    x->law = m->law;
    x->p = m->p;
    x->noise = m->p.ode_noise;
    x->T = m->T;
    x->d = d;
    /* centred: Phi_mu = 0, the trace rides along and nothing is stiff or slaved */
    x->slaved = m->p.ode_mean == ODE_MEAN_SLAVED && m->law.uncentred;
    x->lambda = m->p.weight_decay;
    x->t2 = m->t2;
    x->mu_star = m->mu_star;
    y0[3] /= sqrt((double)d);
    x->mu_guess = y0[3];
    if (x->slaved && slave_mu(x, y0[0], y0[1], y0[2], &x->mu_guess)) {
        free(x);
        free(y0);
        snprintf(
            err, errlen,
            "ode: no slow manifold mu*(q) (Phi_mu = 0) at the initial moments: use ode_mean stiff");
        return -1;
    }
    sys->dim = x->slaved ? 3 : 4;
    sys->y0 = y0;
    sys->rhs = mean_rhs;
    sys->observe = mean_observe;
    sys->destroy = direct_destroy;
    sys->ctx = x;
    sys->stiff = m->law.uncentred && !x->slaved;
    return 0;
}

int direct_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    if (!phi_law_special(&m->law))
        return mean_create(m, sys, err, errlen);
    int d = m->d;
    double *y0;
    struct direct_ctx *x = system_alloc(m, sizeof *x, &y0, err, errlen);
    if (!x)
        return -1;
    x->act = m->p.activation;
    x->T = m->T;
    x->lambda = m->p.weight_decay;
    x->t2 = m->t2;
    x->p = m->p;
    x->noise = m->p.ode_noise;
    y0[3] /= d;
    sys->dim = 4;
    sys->y0 = y0;
    sys->rhs = direct_rhs;
    sys->observe = direct_observe;
    sys->destroy = direct_destroy;
    sys->ctx = x;
    return 0;
}
