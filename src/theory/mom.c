/*
 * mom.c: the integrator every moment system shares: GSL odeiv2's Runge-Kutta Prince-Dormand
 * 8(9) with error control, stepped record by record, each state checked for divergence through
 * its observables.
 */
#include "aimsweep/theory/mom.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/model/limits.h"

/* Integrator settings (one place). Runge-Kutta Prince-Dormand 8(9) with the standard
 * y/dydt error control: |err_i| <= MOM_ATOL + MOM_RTOL |y_i|. */
#define MOM_RTOL 1e-9
#define MOM_ATOL 1e-11
#define MOM_H0 1e-4
#define MOM_MAX_STEPS 2000000L /* accepted + rejected steps over one run */

void mom_sys_destroy(struct mom_sys *sys)
{
    if (!sys)
        return;
    if (sys->destroy)
        sys->destroy(sys->ctx);
    free(sys->y0);
    memset(sys, 0, sizeof *sys);
}

struct gsl_bridge {
    const struct mom_sys *sys;
};

static int bridge_rhs(double t, const double y[], double dydt[], void *p)
{
    const struct gsl_bridge *b = p;
    int n = b->sys->dim;
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return GSL_FAILURE; /* the stepper retries with a smaller step */
    if (b->sys->rhs(b->sys->ctx, t, y, dydt))
        return GSL_FAILURE;
    for (int i = 0; i < n; i++)
        if (!isfinite(dydt[i]))
            return GSL_FAILURE;
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

static void mark_diverged(struct traj *out, const struct params *p, double tau, const char *why)
{
    out->status = RUN_ODE_DIVERGED;
    out->diverged_at_samples = tau * (double)p->d * p->d / p->lr;
    snprintf(out->error, sizeof out->error, "ode diverged at tau=%.6g: %s", tau, why);
}

int mom_integrate(const struct mom_sys *sys, const struct params *p, int ntau, const double *grid,
                  struct traj *out)
{
    int nrec = grid ? ntau : p->records + 1, ret = -1;
    double *taus = malloc(sizeof(double) * (size_t)(nrec > 0 ? nrec : 1));
    double *y = malloc(sizeof(double) * (size_t)sys->dim);
    gsl_odeiv2_step *step = NULL;
    gsl_odeiv2_control *ctl = NULL;
    gsl_odeiv2_evolve *ev = NULL;
    struct gsl_bridge br = {sys};
    gsl_odeiv2_system gs = {bridge_rhs, NULL, (size_t)sys->dim, &br};
    double t0 = clock_now_s();
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    out->status = RUN_OK;
    out->diverged_at_samples = -1.0;
    if (!taus || !y)
        goto done;
    step = gsl_odeiv2_step_alloc(gsl_odeiv2_step_rk8pd, (size_t)sys->dim);
    ctl = gsl_odeiv2_control_y_new(MOM_ATOL, MOM_RTOL);
    ev = gsl_odeiv2_evolve_alloc((size_t)sys->dim);
    if (!step || !ctl || !ev)
        goto done;
    if (grid)
        memcpy(taus, grid, sizeof(double) * (size_t)nrec);
    else
        obs_tau_grid(p, taus);
    memcpy(y, sys->y0, sizeof(double) * (size_t)sys->dim);
    double t = 0.0, h = MOM_H0;
    long nsteps = 0;
    ret = 0;
    for (int k = 0; k < nrec; k++) {
        double tk = taus[k];
        while (t < tk) {
            int st = gsl_odeiv2_evolve_apply(ev, ctl, step, &gs, &t, tk, &h, y);
            nsteps++;
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
            if (nsteps > MOM_MAX_STEPS) {
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
        row.samples = tk * (double)p->d * p->d / p->lr;
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
    if (ev)
        gsl_odeiv2_evolve_free(ev);
    if (ctl)
        gsl_odeiv2_control_free(ctl);
    if (step)
        gsl_odeiv2_step_free(step);
    free(taus);
    free(y);
    return ret;
}
