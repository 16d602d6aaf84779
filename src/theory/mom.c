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
#define MOM_POLL_STEPS 16      /* steps between polls of the stop callback */
#define MOM_STIFF_RETRIES 8    /* restarts of the implicit stepper after a failed step */
/* A state pinned at the edge of the system's domain: at least one failed right-hand side per
 * step, on average over a block of MOM_PIN_BLOCK steps. GSL halves the step at each failure and
 * accepts what lies inside, so such a run crawls on (a few accepted steps growing from 1e-12,
 * then a trial point outside again: 2 to 3 failures a step) above LIMIT_ODE_HMIN for minutes
 * until MOM_MAX_STEPS. */
#define MOM_PIN_BLOCK 100

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
    double *jac_buf; /* 4 dim: the stiff systems' finite-difference Jacobian */
    /* While integrating up to a two_phase switch, every stage (even one evaluated at the
     * switch itself) sees a time below it, so the noise term keeps the first phase's rate
     * until the step that starts at the switch; +inf otherwise (times pass unchanged). */
    double tau_cap;
    unsigned long nfail; /* right-hand sides that failed so far */
};

static int bridge_rhs(double t, const double y[], double dydt[], void *p)
{
    struct gsl_bridge *b = p;
    int n = b->sys->dim;
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            goto fail; /* the stepper retries with a smaller step */
    if (b->sys->rhs(b->sys->ctx, fmin(t, b->tau_cap), y, dydt))
        goto fail;
    for (int i = 0; i < n; i++)
        if (!isfinite(dydt[i]))
            goto fail;
    return GSL_SUCCESS;
fail:
    b->nfail++;
    return GSL_FAILURE;
}

/* The Jacobian by central differences (for the implicit stepper; the systems are autonomous). */
#define MOM_JAC_REL 1e-7
static int bridge_jac(double t, const double y[], double *dfdy, double dfdt[], void *p)
{
    struct gsl_bridge *b = p;
    int n = b->sys->dim;
    double *yp = b->jac_buf, *fp = yp + n, *fm = fp + n;
    memcpy(yp, y, sizeof(double) * (size_t)n);
    /* near a boundary of Phi's domain (omega11 = omega12^2 at perfect recovery) one side of a
     * central difference may fall outside: then the one-sided difference from the other side */
    int have_f0 = 0;
    double *f0 = fm + n;
    for (int j = 0; j < n; j++) {
        double h = MOM_JAC_REL * (fabs(y[j]) > 1 ? fabs(y[j]) : 1);
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

static void mark_diverged(struct traj *out, const struct params *p, double tau, const char *why)
{
    out->status = RUN_ODE_DIVERGED;
    out->diverged_at_samples = params_samples_ode(p, tau);
    snprintf(out->error, sizeof out->error, "ode diverged at tau=%.6g: %s", tau, why);
}

int mom_integrate(const struct mom_sys *sys, const struct params *p, int ntau, const double *grid,
                  struct traj *out)
{
    return mom_integrate_stop(sys, p, ntau, grid, out, NULL, NULL);
}

int mom_integrate_stop(const struct mom_sys *sys, const struct params *p, int ntau,
                       const double *grid, struct traj *out, obs_stop_fn stop, void *ctx)
{
    int nrec = grid ? ntau : p->records + 1, ret = -1;
    double *taus = malloc(sizeof(double) * (size_t)(nrec > 0 ? nrec : 1));
    double *y = malloc(sizeof(double) * (size_t)sys->dim);
    gsl_odeiv2_step *step = NULL;
    gsl_odeiv2_control *ctl = NULL;
    gsl_odeiv2_evolve *ev = NULL;
    gsl_odeiv2_driver *drv = NULL;
    struct gsl_bridge br = {sys, NULL, INFINITY, 0};
    gsl_odeiv2_system gs = {bridge_rhs, bridge_jac, (size_t)sys->dim, &br};
    int stiff = sys->stiff; /* a remap may turn to the implicit stepper */
    double t0 = clock_now_s();
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    out->status = RUN_OK;
    out->diverged_at_samples = -1.0;
    if (!taus || !y || !(br.jac_buf = malloc(sizeof(double) * 4 * (size_t)sys->dim)))
        goto done;
    if (stiff) {
        /* msbdf needs a driver object behind its stepper; evolve_apply runs on the driver's own
         * stepper, control and evolve, so that every step is still checked below */
        drv = gsl_odeiv2_driver_alloc_y_new(&gs, gsl_odeiv2_step_msbdf, MOM_H0, MOM_ATOL, MOM_RTOL);
        if (!drv)
            goto done;
        step = drv->s;
        ctl = drv->c;
        ev = drv->e;
    } else {
        step = gsl_odeiv2_step_alloc(gsl_odeiv2_step_rk8pd, (size_t)sys->dim);
        ctl = gsl_odeiv2_control_y_new(MOM_ATOL, MOM_RTOL);
        ev = gsl_odeiv2_evolve_alloc((size_t)sys->dim);
    }
    if (!step || !ctl || !ev)
        goto done;
    if (grid)
        memcpy(taus, grid, sizeof(double) * (size_t)nrec);
    else
        obs_tau_grid(p, taus);
    memcpy(y, sys->y0, sizeof(double) * (size_t)sys->dim);
    /* a two_phase rate changes the noise term at tau_sw: no step crosses it */
    double tau_sw = params_switch_tau(p);
    int jump = p->ode_noise && p->lr_schedule.kind == LR_TWO_PHASE && p->lr_schedule.eta1 != p->lr;
    double t = 0.0, h = MOM_H0;
    long nsteps = 0;
    unsigned long nfail_block = 0; /* br.nfail at the start of the block of steps */
    ret = 0;
    for (int k = 0; k < nrec; k++) {
        double tk = taus[k];
        while (t < tk) {
            double until = jump && t < tau_sw && tau_sw < tk ? tau_sw : tk;
            br.tau_cap = jump && t < tau_sw ? nextafter(tau_sw, 0) : INFINITY;
            int st = gsl_odeiv2_evolve_apply(ev, ctl, step, &gs, &t, until, &h, y);
            nsteps++;
            /* the implicit multistep method does not shrink its step by itself when a trial
             * point leaves the domain of Phi (near perfect recovery a predictor can step past
             * omega11 = omega12^2): restart it from the last accepted state with a smaller step */
            for (int retry = 0; stiff && st != GSL_SUCCESS && retry < MOM_STIFF_RETRIES; retry++) {
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
            if (nsteps % MOM_PIN_BLOCK == 0) {
                if (br.nfail - nfail_block >= MOM_PIN_BLOCK) {
                    char why[160];
                    snprintf(why, sizeof why,
                             "the right-hand side failed %lu times in %d steps (pinned at the "
                             "edge of its domain)",
                             br.nfail - nfail_block, MOM_PIN_BLOCK);
                    mark_diverged(out, p, t, why);
                    goto stop;
                }
                nfail_block = br.nfail;
            }
            /* The observables, not the raw state, decide explosion: the spectral state
             * (phi, F) legitimately grows while the traces stay bounded. */
            struct obs_row chk;
            if (!state_ok(y, sys->dim) || sys->observe(sys->ctx, y, &chk) || !row_ok(&chk)) {
                mark_diverged(out, p, t, "non-finite or exploding state");
                goto stop;
            }
            /* the system moved to other variables: restart the stepper there (the implicit one
             * if the system says so) */
            int rm = sys->remap ? sys->remap(sys->ctx, y) : 0;
            if (rm == MOM_REMAP_STIFF && !stiff) {
                gsl_odeiv2_evolve_free(ev);
                gsl_odeiv2_control_free(ctl);
                gsl_odeiv2_step_free(step);
                ev = NULL;
                ctl = NULL;
                step = NULL;
                drv = gsl_odeiv2_driver_alloc_y_new(&gs, gsl_odeiv2_step_msbdf, h, MOM_ATOL,
                                                    MOM_RTOL);
                if (!drv) {
                    ret = -1;
                    goto stop;
                }
                step = drv->s;
                ctl = drv->c;
                ev = drv->e;
                stiff = 1;
            } else if (rm) {
                gsl_odeiv2_step_reset(step);
                gsl_odeiv2_evolve_reset(ev);
            }
            if (h < LIMIT_ODE_HMIN && t < tk) {
                mark_diverged(out, p, t, "step size collapsed");
                goto stop;
            }
            if (nsteps > MOM_MAX_STEPS) {
                mark_diverged(out, p, t, "step limit reached");
                goto stop;
            }
            /* every MOM_POLL_STEPS steps (a stiff point takes millions of steps between two
             * records) and at every record (a smooth one takes one step a record, and with softmax
             * at T = 5 a step costs 0.4 s) */
            if (stop && (nsteps % MOM_POLL_STEPS == 0 || t >= tk) && stop(ctx)) {
                out->status = RUN_INTERRUPTED;
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
        row.samples = params_samples_ode(p, tk);
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
