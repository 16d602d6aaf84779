/*
 * ode.c: the moment ODE solver: the moment system of a model's parameters, integrated by the
 * integrator every system shares (mom.c).
 *
 * Dispatch (decomposition x closure; CLOSURE_AUTO resolved here for tied, in words_system.c for
 * the word hierarchies):
 *   direct            -> the closed system (direct.c; closures play no role, M is ignored)
 *   tied, auto        -> spectral (spectral.c), the exact resummation; with --ode-noise on
 *                        the word hierarchy's auto closure instead (spectral has no noise)
 *   tied, spectral    -> spectral (matched S0 spectrum); spectral_mp: Marchenko-Pastur S0
 *                        (also what spectral takes with ode_init limit)
 *   tied, other       -> word hierarchy (words_system.c)
 *   untied, auto      -> word hierarchy, closure flat at the largest odd order <= M
 *                        (words_system.c)
 *   untied, other     -> word hierarchy
 */
#include "aimsweep/theory/ode.h"

#include <stdio.h>
#include <string.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/theory/direct.h"
#include "aimsweep/theory/spectral.h"
#include "aimsweep/theory/words.h"

/* The closure the ODE of p runs with in *cl (auto without noise is spectral for tied), or -1
 * with the message when p asks for a spectral closure it cannot have: the noiseless exact
 * solution with the noise term, or a spectral form for untied. direct has no closure. */
static int ode_closure(const struct params *p, enum closure *cl, char *err, size_t errlen)
{
    *cl = p->closure;
    if (p->decomposition == DECOMP_TIED && *cl == CLOSURE_AUTO && !p->ode_noise)
        *cl = CLOSURE_SPECTRAL; /* any order >= 1 */
    if (p->decomposition == DECOMP_DIRECT ||
        (*cl != CLOSURE_SPECTRAL && *cl != CLOSURE_SPECTRAL_MP))
        return 0;
    if (p->decomposition == DECOMP_UNTIED) {
        snprintf(err, errlen,
                 "closure %s applies to tied only (untied has no closed spectral form)",
                 params_closure_name(*cl));
        return -1;
    }
    if (p->ode_noise) {
        snprintf(err, errlen,
                 "closure %s is the exact noiseless solution and has no O(eta) noise "
                 "term: use ode_noise off, or closure free_cumulant",
                 params_closure_name(*cl));
        return -1;
    }
    return 0;
}

int ode_check(const struct params *p, char *err, size_t errlen)
{
    enum closure cl;
    if (ode_closure(p, &cl, err, errlen))
        return -1;
    if (p->decomposition == DECOMP_DIRECT || cl == CLOSURE_SPECTRAL || cl == CLOSURE_SPECTRAL_MP)
        return 0;
    return words_check(p, err, errlen);
}

int ode_system_create(const struct model *m, struct mom_sys *sys, char *err, size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    enum closure cl;
    if (ode_closure(&m->p, &cl, err, errlen))
        return -1;
    if (m->p.decomposition == DECOMP_DIRECT)
        return direct_system_create(m, sys, err, errlen);
    if (cl == CLOSURE_SPECTRAL || cl == CLOSURE_SPECTRAL_MP)
        return spectral_system_create(
            m, cl == CLOSURE_SPECTRAL_MP || m->p.ode_init == ODE_INIT_LIMIT, sys, err, errlen);
    return words_system_create(m, sys, err, errlen);
}

int ode_run(const struct model *m, struct traj *out) { return ode_run_stop(m, out, NULL, NULL); }

int ode_run_stop(const struct model *m, struct traj *out, obs_stop_fn stop, void *ctx)
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
    int ret = mom_integrate_stop(&sys, &m->p, 0, NULL, out, stop, ctx);
    if (out->status == RUN_ODE_DIVERGED && sys.why) {
        char why[200];
        sys.why(sys.ctx, why, sizeof why);
        size_t len = strlen(out->error);
        if (why[0] && len + 3 < sizeof out->error)
            snprintf(out->error + len, sizeof out->error - len, ": %s", why);
    }
    mom_sys_destroy(&sys);
    out->wall_s = clock_now_s() - t0;
    return ret;
}
