/*
 * direct.c: the closed moment system of the direct decomposition.
 *
 * The direct system. MODEL.md §6: dS/dtau = -G - lambda S, G = 2 Phi_o S + 2 Phi_p S^T + Phi_12 P
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
    double lambda, t2, eta;
    int noise;
};

static int direct_rhs(void *p, double tau, const double *y, double *dy)
{
    (void)tau;
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
        noise_direct_drift(x->eta, &nv, dr);
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

static void direct_destroy(void *p)
{
    free(p);
}

int direct_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    int d = m->d;
    struct direct_ctx *x = calloc(1, sizeof *x);
    double *y0 = calloc(4, sizeof(double));
    if (!x || !y0) {
        free(x);
        free(y0);
        snprintf(err, errlen, "ode: out of memory");
        return -1;
    }
    x->act = m->p.activation;
    x->T = m->T;
    x->lambda = m->p.weight_decay;
    x->t2 = m->t2;
    x->eta = m->p.lr;
    x->noise = m->p.ode_noise;
    /* matched initial values: exact traces of the run's own S0 */
    const double *S = m->S0, *P = m->teacher;
    double o11 = 0.0, p11 = 0.0, o12 = 0.0, t1 = 0.0;
    for (int i = 0; i < d; i++) {
        for (int j = 0; j < d; j++) {
            double s = S[(size_t)i * d + j];
            o11 += s * s;
            p11 += s * S[(size_t)j * d + i];
            o12 += s * P[(size_t)i * d + j];
        }
        t1 += S[(size_t)i * d + i];
    }
    y0[0] = o11 / d;
    y0[1] = p11 / d;
    y0[2] = o12 / d;
    y0[3] = t1 / d;
    sys->dim = 4;
    sys->y0 = y0;
    sys->rhs = direct_rhs;
    sys->observe = direct_observe;
    sys->destroy = direct_destroy;
    sys->ctx = x;
    return 0;
}
