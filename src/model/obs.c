/*
 * obs.c: the tau grid, trajectories, the centred overlap and weak recovery.
 *
 * Weak recovery reads the overlap with its sign unless the loss cannot tell S from -S
 * (params_act_sign_symmetric, docs/model.md §8). Why: the index is linear in S, so
 * l(-S) = 1/2 sum (Y(-h(S)) - y)^2, which is l(S) for every sample exactly when Y(-h) = Y(h).
 * For an even sigma, S and -S have the same loss and the same dynamics (direct: g(-S) = -g(S)),
 * and -S* is as good a fit as S*: |m| is the measure. For any other output map the population
 * loss has odd powers of Omega12 (Mehler: E sigma(u) sigma(w) = sum_k a_k b_k k! rho^k with
 * rho = Omega12/sqrt(Omega11), a_k and b_k the He_k coefficients of sigma(sqrt(Omega11) z) and
 * sigma(z); a_K b_K != 0 for the top odd degree K of a polynomial, a_1 b_1 != 0 for relu, tanh,
 * erf), m < 0 raises the loss (h3: -6 Omega12^3 per ordered entry), and a run with m <= -threshold has
 * learned the opposite of the teacher: it is not recovery. softmax(beta): the same, its linear
 * response in h being odd.
 */
#include "aimsweep/model/obs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Log grids start three decades below tau_end unless log_grid names the start. */
#define OBS_LOG_DECADES 3.0

enum task_status run_status_task(enum run_status s)
{
    switch (s) {
        case RUN_OK: return TASK_DONE;
        case RUN_DIVERGED: return TASK_DIVERGED;
        case RUN_ODE_DIVERGED: return TASK_ODE_DIVERGED;
        case RUN_INTERRUPTED: return TASK_INTERRUPTED;
        case RUN_TIMEOUT: return TASK_TIMEOUT;
        case RUN_ERROR: break;
    }
    return TASK_ERROR;
}

int obs_ctl_stop(const struct obs_ctl *c) { return c && c->stop ? c->stop(c->stop_ctx) : 0; }

const char *run_status_name(enum run_status s) { return task_status_name(run_status_task(s)); }

const char *obs_solver_name(int solver)
{
    switch (solver) {
        case SOLVER_SGD: return "sgd";
        case SOLVER_FLOW: return "flow";
        case SOLVER_ODE: return "ode";
    }
    return "?";
}

void obs_tau_grid(const struct params *p, double *taus)
{
    int R = p->records;
    taus[0] = 0;
    for (int k = 1; k <= R; k++) {
        if (p->log_grid && R > 1 && p->log_start > 0) /* from the start given, geometric */
            taus[k] = p->log_start * pow(p->tau_end / p->log_start, (double)(k - 1) / (R - 1));
        else if (p->log_grid && R > 1)
            taus[k] = p->tau_end * pow(10.0, -OBS_LOG_DECADES * (double)(R - k) / (R - 1));
        else
            taus[k] = p->tau_end * (double)k / R;
    }
    taus[R] = p->tau_end;
}

int traj_init(struct traj *t, int solver, int cap)
{
    memset(t, 0, sizeof *t);
    t->solver = solver;
    t->diverged_at_samples = -1;
    t->rows = malloc(sizeof(struct obs_row) * (size_t)(cap > 0 ? cap : 1));
    t->cap = t->rows ? (cap > 0 ? cap : 1) : 0;
    return t->rows ? 0 : -1;
}

int traj_push(struct traj *t, const struct obs_row *row)
{
    if (t->n == t->cap) {
        int nc = t->cap ? 2 * t->cap : 16;
        struct obs_row *r = realloc(t->rows, sizeof *r * (size_t)nc);
        if (!r)
            return -1;
        t->rows = r;
        t->cap = nc;
    }
    t->rows[t->n++] = *row;
    return 0;
}

void traj_free(struct traj *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = t->cap = 0;
}

double obs_overlap(double omega11, double omega12, double t1, double t2)
{
    double num = omega12 - t1 * t2;
    double den = (omega11 - t1 * t1) * (1 - t2 * t2);
    if (!(den > 0))
        return 0;
    return num / sqrt(den);
}

double obs_recovery_overlap(double m, int sign_symmetric) { return sign_symmetric ? fabs(m) : m; }

int obs_recovery(const struct traj *t, int sign_symmetric, double threshold, double *tau,
                 double *samples)
{
    for (int i = 0; i < t->n; i++) {
        const struct obs_row *r = &t->rows[i];
        double m = obs_recovery_overlap(r->overlap, sign_symmetric);
        if (!(m >= threshold))
            continue;
        double m0 = i > 0 ? obs_recovery_overlap(t->rows[i - 1].overlap, sign_symmetric) : NAN;
        if (!isfinite(m0)) { /* record 0, or no finite record before: the record itself */
            *tau = r->tau;
            *samples = round(r->samples);
            return 0;
        }
        /* the overlap crosses the threshold between records i - 1 (below) and i (at or above) */
        const struct obs_row *q = &t->rows[i - 1];
        double f = (threshold - m0) / (m - m0);
        *tau = q->tau + f * (r->tau - q->tau);
        *samples = round(q->samples + f * (r->samples - q->samples));
        return 0;
    }
    return -1;
}

double obs_tau_wr(const struct traj *t, int sign_symmetric, double threshold)
{
    double tau, n;
    return obs_recovery(t, sign_symmetric, threshold, &tau, &n) ? -1 : tau;
}
