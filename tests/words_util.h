/*
 * words_util.h: helpers shared by the word-hierarchy test and measurement programs: a model
 * from key=value text, and the integration of a moment system on the flow's tau grid.
 */
#ifndef AIMSWEEP_TESTS_WORDS_UTIL_H
#define AIMSWEEP_TESTS_WORDS_UTIL_H

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/theory/ode.h"
#include "aimsweep/base/params.h"

/* "key=value key=value ..." on top of the defaults; exits on a bad key. */
static inline void wu_params(struct params *p, const char *text)
{
    char buf[1024], err[256];
    params_default(p);
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fprintf(stderr, "bad parameter text '%s'\n", tok);
            exit(2);
        }
        *eq = 0;
        if (params_set(p, tok, eq + 1, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            exit(2);
        }
    }
    if (params_validate(p, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
}

struct wu_gsl {
    struct mom_sys *sys;
    int failed;
};

static inline int wu_gsl_rhs(double t, const double y[], double f[], void *ctx)
{
    struct wu_gsl *g = ctx;
    if (g->sys->rhs(g->sys->ctx, t, y, f)) {
        g->failed = 1;
        return GSL_EBADFUNC;
    }
    for (int i = 0; i < g->sys->dim; i++)
        if (!isfinite(f[i])) {
            g->failed = 1;
            return GSL_EBADFUNC;
        }
    return GSL_SUCCESS;
}

/* Integrates sys over the tau values taus[0..n-1] (taus[0] = 0), writing the observed rows;
 * returns the number of rows written before a failure (n when the run completes). */
static inline int wu_integrate(struct mom_sys *sys, int n, const double *taus, struct obs_row *rows)
{
    struct wu_gsl g = {sys, 0};
    gsl_odeiv2_system gs = {wu_gsl_rhs, NULL, (size_t)sys->dim, &g};
    gsl_odeiv2_driver *drv =
        gsl_odeiv2_driver_alloc_y_new(&gs, gsl_odeiv2_step_rk8pd, 1e-4, 1e-10, 1e-10);
    double *y = malloc(sizeof(double) * sys->dim), t = 0;
    int k;
    gsl_set_error_handler_off();
    gsl_odeiv2_driver_set_nmax(drv, 200000); /* a closure gone stiff counts as stopped */
    gsl_odeiv2_driver_set_hmin(drv, 1e-12);
    memcpy(y, sys->y0, sizeof(double) * sys->dim);
    for (k = 0; k < n; k++) {
        if (taus[k] > t && gsl_odeiv2_driver_apply(drv, &t, taus[k], y) != GSL_SUCCESS)
            break;
        if (sys->observe(sys->ctx, y, &rows[k]))
            break;
        rows[k].tau = taus[k];
        if (!(fabs(rows[k].omega11) < 1e6) || !isfinite(rows[k].omega12))
            break;
    }
    gsl_odeiv2_driver_free(drv);
    free(y);
    return k;
}

#endif
