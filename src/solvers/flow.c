/*
 * flow.c: the population flow on the run's own matrices (docs/model.md §6), integrated with GSL's
 * adaptive Runge-Kutta-Prince-Dormand (8,9) under error control.
 *
 * Right-hand sides, G = 2 Phi_o S + 2 Phi_p S^T + Phi_12 P (P = S*), lambda = weight decay, and
 * with the general index (docs/model.md §10) G gains sqrt(d) Phi_mu I, Phi taken at mu = Tr S/sqrt(d)
 * (untied: G V and G^T U gain sqrt(d) Phi_mu V and sqrt(d) Phi_mu U; tied is centred, Phi_mu = 0):
 *   direct: dS = -G - lambda S
 *   tied:   dW = -(G + G^T) W - lambda W = -2 (2 Phi_o + 2 Phi_p) W B/kappa - 2 Phi_12 P W - lambda W,
 *           B = W^T W (S W = W B/kappa, S symmetric)
 *   untied: dU = -G V - lambda U, dV = -G^T U - lambda V with
 *           S V = U (V^T V)/kappa, S^T V = V (U^T V)/kappa, S^T U = V (U^T U)/kappa, S U = U (V^T U)/kappa.
 * Everything is r x r Gram matrices and d x r products: S is never formed.
 */
#include "aimsweep/solvers/flow.h"
#include "aimsweep/model/limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

#include "aimsweep/model/phi.h"

#define FLOW_EPS_ABS 1e-9
#define FLOW_EPS_REL 1e-9
#define FLOW_H0 1e-4

struct flow_work {
    const struct model *m;
    double *G1, *G2, *G3; /* r x r scratch */
    double *PA, *PB;      /* d x r scratch */
    int failed;
};

static int flow_rhs_work(struct flow_work *w, const struct student *s, double *dA, double *dB)
{
    const struct model *m = w->m;
    const double *P = m->teacher;
    int d = s->d, r = s->r;
    double k = s->kappa, lam = m->p.weight_decay;
    struct phi_val pv;
    if (s->decomposition == DECOMP_DIRECT) {
        const double *S = s->A;
        double om = 0, ps = 0, o12 = 0, tr = 0;
        for (int i = 0; i < d; i++)
            tr += S[(size_t)i * d + i];
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) {
                double v = S[(size_t)i * d + j];
                om += v * v;
                ps += v * S[(size_t)j * d + i];
                o12 += v * P[(size_t)i * d + j];
            }
        if (phi_eval_law(&m->p.activation, m->T, &m->law, tr / sqrt((double)d), om / d, ps / d,
                         o12 / d, &pv))
            return -1;
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                dA[(size_t)i * d + j] =
                    -(2 * pv.d_omega11 * S[(size_t)i * d + j] +
                      2 * pv.d_psi11 * S[(size_t)j * d + i] + pv.d_omega12 * P[(size_t)i * d + j]) -
                    lam * S[(size_t)i * d + j];
        if (pv.d_mu != 0)
            for (int i = 0; i < d; i++)
                dA[(size_t)i * d + i] -= sqrt((double)d) * pv.d_mu;
        return 0;
    }
    if (s->decomposition == DECOMP_TIED) {
        const double *W = s->A;
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, W, r, W, r, 0.0, w->G1,
                    r);
        cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, r, 1.0, P, d, W, r, 0.0, w->PA, r);
        double om = cblas_ddot(r * r, w->G1, 1, w->G1, 1) / (k * k * d);
        double o12 = cblas_ddot(d * r, W, 1, w->PA, 1) / (k * d);
        if (phi_eval_law(&m->p.activation, m->T, &m->law, 0.0, om, om, o12, &pv))
            return -1;
        double cs = 2 * (2 * pv.d_omega11 + 2 * pv.d_psi11) / k, cp = 2 * pv.d_omega12;
        for (size_t i = 0; i < (size_t)d * r; i++)
            dA[i] = -cp * w->PA[i] - lam * W[i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, r, -cs, W, r, w->G1, r, 1.0,
                    dA, r);
        return 0;
    }
    const double *U = s->A, *V = s->B;
    double *UU = w->G1, *VV = w->G2, *VU = w->G3;
    if (!V || !dB)
        return -1; /* untied: both factors and both derivatives */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, U, r, U, r, 0.0, UU, r);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, V, r, V, r, 0.0, VV, r);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, V, r, U, r, 0.0, VU, r);
    cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, r, 1.0, P, d, U, r, 0.0, w->PA, r);
    cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, r, 1.0, P, d, V, r, 0.0, w->PB, r);
    double om = cblas_ddot(r * r, UU, 1, VV, 1) / (k * k * d), ps = 0, tr = 0;
    for (int i = 0; i < r; i++) {
        tr += VU[(size_t)i * r + i];
        for (int j = 0; j < r; j++)
            ps += VU[(size_t)i * r + j] * VU[(size_t)j * r + i];
    }
    ps /= k * k * d;
    double o12 = cblas_ddot(d * r, U, 1, w->PB, 1) / (k * d);
    if (phi_eval_law(&m->p.activation, m->T, &m->law, tr / (k * sqrt((double)d)), om, ps, o12, &pv))
        return -1;
    double a = 2 * pv.d_omega11 / k, b = 2 * pv.d_psi11 / k, c = pv.d_omega12;
    /* dU = -(a U VV + b V VU^T + c P V) - lam U ;  dV = -(a V UU + b U VU + c P U) - lam V */
    for (size_t i = 0; i < (size_t)d * r; i++) {
        dA[i] = -c * w->PB[i] - lam * U[i];
        dB[i] = -c * w->PA[i] - lam * V[i];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, r, -a, U, r, VV, r, 1.0, dA, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, r, r, -b, V, r, VU, r, 1.0, dA, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, r, -a, V, r, UU, r, 1.0, dB, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, r, r, -b, U, r, VU, r, 1.0, dB, r);
    if (pv.d_mu != 0) { /* the mean's term: -sqrt(d) Phi_mu V in dU, -sqrt(d) Phi_mu U in dV */
        double f = sqrt((double)d) * pv.d_mu;
        cblas_daxpy(d * r, -f, V, 1, dA, 1);
        cblas_daxpy(d * r, -f, U, 1, dB, 1);
    }
    return 0;
}

static int work_init(struct flow_work *w, const struct model *m)
{
    memset(w, 0, sizeof *w);
    w->m = m;
    size_t rr = (size_t)m->r * m->r, dr = (size_t)m->d * m->r;
    w->G1 = malloc(sizeof(double) * rr);
    w->G2 = malloc(sizeof(double) * rr);
    w->G3 = malloc(sizeof(double) * rr);
    w->PA = malloc(sizeof(double) * dr);
    w->PB = malloc(sizeof(double) * dr);
    return w->G1 && w->G2 && w->G3 && w->PA && w->PB ? 0 : -1;
}

static void work_free(struct flow_work *w)
{
    free(w->G1);
    free(w->G2);
    free(w->G3);
    free(w->PA);
    free(w->PB);
}

int flow_rhs(const struct model *m, const struct student *s, double *dA, double *dB)
{
    struct flow_work w;
    int rc = -1;
    if (work_init(&w, m) == 0)
        rc = flow_rhs_work(&w, s, dA, dB);
    work_free(&w);
    return rc;
}

static size_t block_size(const struct model *m)
{
    return m->p.decomposition == DECOMP_DIRECT ? (size_t)m->d * m->d : (size_t)m->d * m->r;
}

static struct student view(const struct model *m, const double *y)
{
    struct student s = {m->p.decomposition, m->d, m->r, m->kappa, (double *)y, NULL};
    if (m->p.decomposition == DECOMP_UNTIED)
        s.B = (double *)y + block_size(m);
    return s;
}

static int gsl_rhs(double t, const double y[], double f[], void *params)
{
    (void)t;
    struct flow_work *w = params;
    struct student s = view(w->m, y);
    double *dB = w->m->p.decomposition == DECOMP_UNTIED ? f + block_size(w->m) : NULL;
    if (flow_rhs_work(w, &s, f, dB)) {
        w->failed = 1;
        return GSL_EBADFUNC;
    }
    return GSL_SUCCESS;
}

/* ---- checkpoints ----
 * Between two steps the integration is (t, h, y): GSL's rk8pd step and the standard error
 * control keep nothing from one step to the next, and the evolve object re-evaluates dy/dt at
 * the start of each step. flow_advance is gsl_odeiv2_driver_apply written out (the same
 * calls, in the same order), so that the stop callback is polled between steps; restored into
 * a fresh driver, the next steps are the ones an uninterrupted run takes. */
#define FLOW_STATE_MAGIC 0x31574c46u /* "FLW1" */

struct flow_state_head {
    uint32_t magic, pad;
    uint64_t dim;
    double t, h;
};

static void flow_checkpoint(const struct obs_ctl *ctl, const struct traj *out, size_t dim, double t,
                            double h, const double *y)
{
    if (!ctl || !ctl->save)
        return;
    size_t n = sizeof(struct flow_state_head) + dim * sizeof(double);
    unsigned char *buf = malloc(n);
    if (!buf)
        return;
    struct flow_state_head hd = {FLOW_STATE_MAGIC, 0, dim, t, h};
    memcpy(buf, &hd, sizeof hd);
    memcpy(buf + sizeof hd, y, dim * sizeof(double));
    ctl->save(ctl->save_ctx, out, buf, n);
    free(buf);
}

/* Integrates from *t to t1 as gsl_odeiv2_driver_apply does (hmax, hmin and nmax unset), polling
 * the stop callback after every step and saving when due. Returns a GSL status, or
 * GSL_SUCCESS with *stopped set. */
static int flow_advance(gsl_odeiv2_driver *d, double *t, double t1, double *y,
                        const struct obs_ctl *ctl, const struct traj *out, size_t dim, int *stopped)
{
    while (t1 - *t > 0.0) {
        int st = gsl_odeiv2_evolve_apply(d->e, d->c, d->s, d->sys, t, t1, &d->h, y);
        if (st != GSL_SUCCESS)
            return st;
        d->n++;
        if (t1 - *t > 0.0 && (*stopped = obs_ctl_stop(ctl)) != 0)
            return GSL_SUCCESS;
        if (ctl && ctl->due && ctl->due(ctl->save_ctx))
            flow_checkpoint(ctl, out, dim, *t, d->h, y);
    }
    return GSL_SUCCESS;
}

int flow_run(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx)
{
    struct obs_ctl ctl = {stop, ctx, NULL, NULL, NULL, NULL, 0};
    return flow_run_ctl(m, out, &ctl);
}

int flow_run_ctl(const struct model *m, struct traj *out, const struct obs_ctl *ctl)
{
    const struct params *p = &m->p;
    size_t nb = block_size(m), dim = nb * (p->decomposition == DECOMP_UNTIED ? 2 : 1);
    struct flow_work w;
    double *y = malloc(sizeof(double) * dim),
           *taus = malloc(sizeof(double) * (size_t)(p->records + 1));
    int rc = -1, k0 = 0;
    gsl_odeiv2_driver *drv = NULL;
    if (work_init(&w, m) || !y || !taus)
        goto done;
    double t = 0;
    if (ctl && ctl->resume) {
        struct flow_state_head hd;
        if (ctl->resume_len != sizeof hd + dim * sizeof(double) || out->n > p->records + 1) {
            rc = -2;
            goto done;
        }
        memcpy(&hd, ctl->resume, sizeof hd);
        if (hd.magic != FLOW_STATE_MAGIC || hd.dim != dim || !(hd.h > 0) || !(hd.t >= 0)) {
            rc = -2;
            goto done;
        }
        memcpy(y, (const unsigned char *)ctl->resume + sizeof hd, dim * sizeof(double));
        t = hd.t;
        k0 = out->n;
    } else {
        memcpy(y, p->decomposition == DECOMP_DIRECT ? m->S0 : m->W0, sizeof(double) * nb);
        if (p->decomposition == DECOMP_UNTIED)
            memcpy(y + nb, m->V0, sizeof(double) * nb);
    }
    gsl_odeiv2_system sys = {gsl_rhs, NULL, dim, &w};
    drv = gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, FLOW_H0, FLOW_EPS_ABS,
                                        FLOW_EPS_REL);
    if (!drv)
        goto done;
    if (ctl && ctl->resume)
        drv->h = ((const struct flow_state_head *)ctl->resume)->h;
    gsl_set_error_handler_off();
    obs_tau_grid(p, taus);
    for (int k = k0; k <= p->records; k++) {
        if (taus[k] > t) {
            int stopped = 0;
            int st = flow_advance(drv, &t, taus[k], y, ctl, out, dim, &stopped);
            if (st != GSL_SUCCESS) {
                out->status = RUN_DIVERGED;
                out->diverged_at_samples = params_samples(p, t);
                snprintf(out->error, sizeof out->error, "flow stopped at tau = %g (%s)", t,
                         w.failed ? "population loss not finite" : gsl_strerror(st));
                break;
            }
            if (stopped) {
                flow_checkpoint(ctl, out, dim, t, drv->h, y);
                out->status = RUN_INTERRUPTED;
                break;
            }
        }
        struct student s = view(m, y);
        struct obs_row row = {.tau = taus[k], .samples = params_samples(p, taus[k])};
        if (model_observe(m, &s, &row))
            goto done;
        if (!(row.omega11 <= LIMIT_OMEGA_MAX) || !isfinite(row.omega12) || !isfinite(row.psi11) ||
            !isfinite(row.trace) || !isfinite(row.overlap)) {
            out->status = RUN_DIVERGED;
            out->diverged_at_samples = params_samples(p, t);
            break;
        }
        if (!isfinite(row.loss)) {
            out->status = RUN_ERROR;
            snprintf(
                out->error, sizeof out->error,
                "flow: the population loss is not finite at tau = %g (omega11 = %g, omega12 = %g)",
                taus[k], row.omega11, row.omega12);
            break;
        }
        if (traj_push(out, &row))
            goto done;
        if (k < p->records && obs_ctl_stop(ctl)) {
            flow_checkpoint(ctl, out, dim, t, drv->h, y);
            out->status = RUN_INTERRUPTED;
            break;
        }
    }
    rc = 0;
done:
    if (drv)
        gsl_odeiv2_driver_free(drv);
    work_free(&w);
    free(y);
    free(taus);
    return rc;
}
