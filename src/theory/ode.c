/*
 * ode.c: the moment ODE solver: system dispatch, the closed direct system, and the adaptive
 * integrator every system shares.
 *
 * Dispatch (decomposition x closure, CLOSURE_AUTO resolved here):
 *   direct            -> the closed system below (closures play no role; M is ignored)
 *   tied, auto        -> spectral (spectral.c), the exact resummation; with --ode-noise on
 *                        the word hierarchy's auto closure instead (spectral has no noise)
 *   tied, spectral    -> spectral (matched S0 spectrum); spectral_mp: Marchenko-Pastur S0
 *   tied, other       -> word hierarchy (words.c)
 *   untied, auto      -> word hierarchy, closure flat at the largest odd order <= M (words.c)
 *   untied, other     -> word hierarchy
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
 *
 * Direct with the general index (MODEL.md §10): G gains sqrt(d) Phi_mu I and Phi depends on
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
#include "aimsweep/model/limits.h"
#include "aimsweep/base/clock.h"
#include "aimsweep/theory/ode.h"
#include "aimsweep/theory/words.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aimsweep/model/lrs.h"
#include "aimsweep/theory/noise.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/theory/spectral.h"

/* Integrator settings (one place). Runge-Kutta Prince-Dormand 8(9) with the standard
 * y/dydt error control: |err_i| <= ODE_ATOL + ODE_RTOL |y_i|. */
#define ODE_RTOL 1e-9
#define ODE_ATOL 1e-11
#define ODE_H0 1e-4
#define ODE_MAX_STEPS 2000000L  /* accepted + rejected steps over one run */
#define ODE_STIFF_RETRIES 8     /* restarts of the implicit stepper after a failed step */



/* ---- direct ---- */

struct direct_ctx {
    struct act act;
    int T;
    double lambda, t2;
    struct lrs sch; /* the noise term takes the rate in force */
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
        noise_direct_drift(lrs_rate(&x->sch, tau), &nv, dr);
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

static int direct_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
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
    lrs_init(&x->sch, &m->p);
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

/* ---- direct with the mean (MODEL.md §10) ---- */

struct mean_ctx {
    struct act act;
    struct phi_law law;
    int T, d, slaved;
    double lambda, t2, mu_star;
    double mu_guess; /* slaved: the last root, the start of the next solve */
};

static int slave_mu(struct mean_ctx *x, double o11, double p11, double o12, double *mu_out)
{
    return phi_mu_slow(&x->act, x->T, &x->law, x->mu_guess, o11, p11, o12, mu_out);
}

static int mean_rhs(void *p, double tau, const double *y, double *dy)
{
    (void)tau;
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

static int mean_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    int d = m->d;
    struct mean_ctx *x = calloc(1, sizeof *x);
    double *y0 = calloc(4, sizeof(double));
    if (!x || !y0) {
        free(x);
        free(y0);
        snprintf(err, errlen, "ode: out of memory");
        return -1;
    }
    x->act = m->p.activation;
    x->law = m->law;
    x->T = m->T;
    x->d = d;
    x->slaved = m->p.ode_mean == ODE_MEAN_SLAVED;
    x->lambda = m->p.weight_decay;
    x->t2 = m->t2;
    x->mu_star = m->mu_star;
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
    y0[0] = o11 / d;
    y0[1] = p11 / d;
    y0[2] = o12 / d;
    y0[3] = tr / sqrt((double)d);
    x->mu_guess = y0[3];
    if (x->slaved && slave_mu(x, y0[0], y0[1], y0[2], &x->mu_guess)) {
        free(x);
        free(y0);
        snprintf(err, errlen, "ode: no slow manifold mu*(q) (Phi_mu = 0) at the initial moments: use ode_mean stiff");
        return -1;
    }
    sys->dim = x->slaved ? 3 : 4;
    sys->y0 = y0;
    sys->rhs = mean_rhs;
    sys->observe = mean_observe;
    sys->destroy = direct_destroy;
    sys->ctx = x;
    sys->stiff = !x->slaved;
    return 0;
}

/* ---- dispatch ---- */

int ode_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    const struct params *p = &m->p;
    enum closure cl = p->closure;
    switch (p->decomposition) {
    case DECOMP_DIRECT:
        if (!phi_law_special(&m->law))
            return mean_create(m, sys, err, errlen);
        return direct_create(m, sys, err, errlen);
    case DECOMP_TIED:
        if (cl == CLOSURE_AUTO && !p->ode_noise)
            cl = CLOSURE_SPECTRAL;
        if (cl == CLOSURE_SPECTRAL || cl == CLOSURE_SPECTRAL_MP) {
            if (p->ode_noise) {
                snprintf(err, errlen,
                         "closure %s is the exact noiseless solution and has no O(eta) noise "
                         "term: use --ode-noise off, or --closure free_cumulant",
                         params_closure_name(cl));
                return -1;
            }
            return spectral_system_create(m, cl == CLOSURE_SPECTRAL_MP, sys, err, errlen);
        }
        return words_system_create(m, sys, err, errlen);
    case DECOMP_UNTIED:
        if (cl == CLOSURE_SPECTRAL || cl == CLOSURE_SPECTRAL_MP) {
            snprintf(err, errlen,
                     "closure %s applies to tied only (untied has no closed spectral form)",
                     params_closure_name(cl));
            return -1;
        }
        return words_system_create(m, sys, err, errlen);
    }
    snprintf(err, errlen, "ode: unknown decomposition");
    return -1;
}

void ode_system_destroy(struct mom_sys *sys)
{
    if (!sys)
        return;
    if (sys->destroy)
        sys->destroy(sys->ctx);
    free(sys->y0);
    memset(sys, 0, sizeof *sys);
}

/* ---- integrator ---- */

struct gsl_bridge {
    const struct mom_sys *sys;
    double *jac_buf; /* 4 dim: the stiff systems' finite-difference Jacobian */
    /* While integrating up to a two_phase switch, every stage (even one evaluated at the
     * switch itself) sees a time below it, so the noise term keeps the first phase's rate
     * until the step that starts at the switch; +inf otherwise (times pass unchanged). */
    double tau_cap;
};

static int bridge_rhs(double t, const double y[], double dydt[], void *p)
{
    const struct gsl_bridge *b = p;
    int n = b->sys->dim;
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return GSL_FAILURE; /* the stepper retries with a smaller step */
    if (b->sys->rhs(b->sys->ctx, fmin(t, b->tau_cap), y, dydt))
        return GSL_FAILURE;
    for (int i = 0; i < n; i++)
        if (!isfinite(dydt[i]))
            return GSL_FAILURE;
    return GSL_SUCCESS;
}

/* The Jacobian by central differences (for the implicit stepper; the systems are autonomous). */
#define ODE_JAC_REL 1e-7
static int bridge_jac(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    const struct gsl_bridge *b = p;
    int n = b->sys->dim;
    double *yp = b->jac_buf, *fp = yp + n, *fm = fp + n;
    memcpy(yp, y, sizeof(double) * (size_t)n);
    /* near a boundary of Phi's domain (omega11 = omega12^2 at perfect recovery) one side of a
     * central difference may fall outside: then the one-sided difference from the other side */
    int have_f0 = 0;
    double *f0 = fm + n;
    for (int j = 0; j < n; j++) {
        double h = ODE_JAC_REL * (fabs(y[j]) > 1 ? fabs(y[j]) : 1);
        yp[j] = y[j] + h;
        int okp = bridge_rhs(t, yp, fp, p) == GSL_SUCCESS;
        yp[j] = y[j] - h;
        int okm = bridge_rhs(t, yp, fm, p) == GSL_SUCCESS;
        yp[j] = y[j];
        if ((!okp || !okm) && !have_f0) {
            if (bridge_rhs(t, y, f0, p) != GSL_SUCCESS)
                return GSL_FAILURE;
            have_f0 = 1;
        }
        if (okp && okm)
            for (int i = 0; i < n; i++)
                dfdy[i * n + j] = (fp[i] - fm[i]) / (2 * h);
        else if (okp)
            for (int i = 0; i < n; i++)
                dfdy[i * n + j] = (fp[i] - f0[i]) / h;
        else if (okm)
            for (int i = 0; i < n; i++)
                dfdy[i * n + j] = (f0[i] - fm[i]) / h;
        else
            return GSL_FAILURE;
    }
    for (int i = 0; i < n; i++)
        dfdt[i] = 0;
    return GSL_SUCCESS;
}

static int state_ok(const double *y, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return 0;
    return 1;
}

static int row_ok(const struct obs_row *r)
{
    const double v[] = {r->omega11, r->psi11, r->omega12, r->trace};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i]) || fabs(v[i]) > LIMIT_MOMENT_MAX)
            return 0;
    return r->omega11 >= 0.0;
}

/* Samples after time tau, n(tau) of lrs.h, rounded as this solver has always rounded
 * tau d^2/eta ((tau d) d / eta, where SGD and the flow take tau (d^2/eta)), so that constant
 * and two_phase(lr, t) keep every bit. */
static double samples_at(const struct params *p, const struct lrs *sch, double tau)
{
    double n = tau * (double)p->d * p->d;
    if (sch->two_phase && tau <= sch->tau_sw)
        return n / sch->eta1;
    return n / p->lr + (sch->two_phase ? sch->offset : 0.0);
}

static void mark_diverged(struct traj *out, const struct params *p, double tau, const char *why)
{
    struct lrs sch;
    lrs_init(&sch, p);
    out->status = RUN_ODE_DIVERGED;
    out->diverged_at_samples = samples_at(p, &sch, tau);
    snprintf(out->error, sizeof out->error, "ode diverged at tau=%.6g: %s", tau, why);
}

int ode_integrate(const struct mom_sys *sys, const struct params *p, struct traj *out)
{
    int nrec = p->records + 1, ret = -1;
    double *taus = malloc(sizeof(double) * (size_t)nrec);
    double *y = malloc(sizeof(double) * (size_t)sys->dim);
    gsl_odeiv2_step *step = NULL;
    gsl_odeiv2_control *ctl = NULL;
    gsl_odeiv2_evolve *ev = NULL;
    gsl_odeiv2_driver *drv = NULL;
    struct gsl_bridge br = {sys, NULL, INFINITY};
    gsl_odeiv2_system gs = {bridge_rhs, sys->stiff ? bridge_jac : NULL, (size_t)sys->dim, &br};
    double t0 = clock_now_s();
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    out->status = RUN_OK;
    out->diverged_at_samples = -1.0;
    if (!taus || !y)
        goto done;
    if (sys->stiff) {
        if (!(br.jac_buf = malloc(sizeof(double) * 4 * (size_t)sys->dim)))
            goto done;
        /* msbdf needs a driver object behind its stepper; evolve_apply runs on the driver's own
         * stepper, control and evolve, so that every step is still checked below */
        drv = gsl_odeiv2_driver_alloc_y_new(&gs, gsl_odeiv2_step_msbdf, ODE_H0, ODE_ATOL, ODE_RTOL);
        if (!drv)
            goto done;
        step = drv->s;
        ctl = drv->c;
        ev = drv->e;
    } else {
        step = gsl_odeiv2_step_alloc(gsl_odeiv2_step_rk8pd, (size_t)sys->dim);
        ctl = gsl_odeiv2_control_y_new(ODE_ATOL, ODE_RTOL);
        ev = gsl_odeiv2_evolve_alloc((size_t)sys->dim);
    }
    if (!step || !ctl || !ev)
        goto done;
    obs_tau_grid(p, taus);
    struct lrs sch;
    lrs_init(&sch, p);
    int jump = p->ode_noise && sch.eta1 != sch.lr; /* the right-hand side jumps at tau_sw */
    memcpy(y, sys->y0, sizeof(double) * (size_t)sys->dim);
    double t = 0.0, h = ODE_H0;
    long nsteps = 0;
    ret = 0;
    for (int k = 0; k < nrec; k++) {
        double tk = taus[k];
        while (t < tk) {
            /* a two_phase rate changes the noise term at tau_sw: no step crosses it */
            double until = jump && t < sch.tau_sw && sch.tau_sw < tk ? sch.tau_sw : tk;
            br.tau_cap = jump && t < sch.tau_sw ? nextafter(sch.tau_sw, 0) : INFINITY;
            int st = gsl_odeiv2_evolve_apply(ev, ctl, step, &gs, &t, until, &h, y);
            nsteps++;
            /* the implicit multistep method does not shrink its step by itself when a trial
             * point leaves the domain of Phi (near perfect recovery a predictor can step past
             * omega11 = omega12^2): restart it from the last accepted state with a smaller step */
            for (int retry = 0; sys->stiff && st != GSL_SUCCESS && retry < ODE_STIFF_RETRIES; retry++) {
                gsl_odeiv2_step_reset(step);
                gsl_odeiv2_evolve_reset(ev);
                h *= 0.1;
                st = gsl_odeiv2_evolve_apply(ev, ctl, step, &gs, &t, until, &h, y);
                nsteps++;
            }
            if (st != GSL_SUCCESS) {
                mark_diverged(out, p, t, "the right-hand side could not be evaluated");
                goto stop;
            }
            /* The observables, not the raw state, decide explosion: the spectral state
             * (phi, F) legitimately grows while the traces stay bounded. */
            struct obs_row chk;
            if (!state_ok(y, sys->dim) || sys->observe(sys->ctx, y, &chk) || !row_ok(&chk)) {
                mark_diverged(out, p, t, "non-finite or exploding state");
                goto stop;
            }
            if (h < LIMIT_ODE_HMIN && t < tk) {
                mark_diverged(out, p, t, "step size collapsed");
                goto stop;
            }
            if (nsteps > ODE_MAX_STEPS) {
                mark_diverged(out, p, t, "step limit reached");
                goto stop;
            }
        }
        struct obs_row row;
        memset(&row, 0, sizeof row);
        if (sys->observe(sys->ctx, y, &row) || !row_ok(&row)) {
            mark_diverged(out, p, t, "observables non-finite or out of range");
            goto stop;
        }
        row.tau = tk;
        row.samples = samples_at(p, &sch, tk);
        if (traj_push(out, &row)) {
            ret = -1;
            out->status = RUN_ERROR;
            snprintf(out->error, sizeof out->error, "ode: out of memory");
            goto stop;
        }
    }
stop:
done:
    gsl_set_error_handler(old);
    if (ret < 0 && out->status == RUN_OK) {
        out->status = RUN_ERROR;
        snprintf(out->error, sizeof out->error, "ode: out of memory");
    }
    out->wall_s = clock_now_s() - t0;
    if (drv) {
        gsl_odeiv2_driver_free(drv);
        ev = NULL;
        ctl = NULL;
        step = NULL;
    }
    if (ev)
        gsl_odeiv2_evolve_free(ev);
    if (ctl)
        gsl_odeiv2_control_free(ctl);
    if (step)
        gsl_odeiv2_step_free(step);
    free(taus);
    free(y);
    free(br.jac_buf);
    return ret;
}

int ode_run(const struct model *m, struct traj *out)
{
    struct mom_sys sys;
    char err[200];
    double t0 = clock_now_s();
    if (ode_system_create(m, &sys, err, sizeof err)) {
        out->status = RUN_ERROR;
        out->diverged_at_samples = -1.0;
        snprintf(out->error, sizeof out->error, "%s", err);
        out->wall_s = clock_now_s() - t0;
        return 0;
    }
    int ret = ode_integrate(&sys, &m->p, out);
    ode_system_destroy(&sys);
    out->wall_s = clock_now_s() - t0;
    return ret;
}
