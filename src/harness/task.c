/*
 * task.c: canonical text, id and cost of a grid point.
 *
 * Cost model (floating-point operations, turned into seconds with TASK_FLOPS_PER_S):
 *   sgd:  n = tau_end d^2 / lr steps, each O(d r T) for tied/untied (projections W^T x_a and
 *         the rank-T update) and O(d^2 T) for direct: cost ~ 4 n d r T.
 *   flow: d x d matrix products, a few per step, TASK_FLOW_STEPS_PER_TAU steps per unit tau, and
 *         with weight decay lambda at least lambda tau_end steps (the explicit step is ~1/lambda):
 *         cost ~ 8 d^3 steps.
 *   ode:  small systems; a fixed TASK_ODE_FLOPS per unit tau times order_m^3.
 * It only needs to order tasks (largest first) and to bound a task's wall time roughly.
 */
#include "aimsweep/harness/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASK_FLOW_STEPS_PER_TAU 400.0
#define TASK_ODE_FLOPS 2.0e6
#define TASK_TEXT_MAX 8192

int task_make(const struct params *p, struct task *t)
{
    char buf[TASK_TEXT_MAX];
    memset(t, 0, sizeof *t);
    int n = params_canonical(p, buf, sizeof buf);
    if (n < 0 || (size_t)n >= sizeof buf || !(t->text = strdup(buf)))
        return -1;
    t->id = params_task_id(p);
    t->cost = task_cost(p);
    return 0;
}

void task_free(struct task *t)
{
    if (!t)
        return;
    free(t->text);
    t->text = NULL;
}

int task_parse(const char *text, struct params *p, char *err, size_t errlen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    params_default(p);
    int rc = 0;
    for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(err, errlen, "task text: '%s' is not key=value", kv);
            rc = -1;
            break;
        }
        *eq = 0;
        char msg[512] = "";
        if (params_set(p, kv, eq + 1, msg, sizeof msg)) {
            snprintf(err, errlen, "task text: key '%s': %s", kv, msg);
            rc = -1;
            break;
        }
    }
    free(copy);
    if (!rc && params_validate(p, err, errlen))
        rc = -1;
    return rc;
}

double task_cost(const struct params *p)
{
    double d = p->d, r = p->decomposition == DECOMP_DIRECT ? d : params_rank(p);
    double flops = 0;
    if (p->solvers & SOLVER_SGD) {
        double steps = params_samples(p, p->tau_end);
        flops += 4.0 * steps * d * r * p->tokens * (p->decomposition == DECOMP_UNTIED ? 2 : 1);
    }
    if (p->solvers & SOLVER_FLOW)
        flops += 8.0 * d * d * d * ((TASK_FLOW_STEPS_PER_TAU + p->weight_decay) * p->tau_end + 10);
    if (p->solvers & SOLVER_ODE)
        flops += TASK_ODE_FLOPS * (p->tau_end + 1) * p->order_m * p->order_m * p->order_m;
    return flops / TASK_FLOPS_PER_S;
}

void task_id_hex(uint64_t id, char out[17]) { snprintf(out, 17, "%016" PRIx64, id); }

int task_id_parse(const char *hex, uint64_t *id)
{
    char *end;
    if (strlen(hex) != 16)
        return -1;
    unsigned long long v = strtoull(hex, &end, 16);
    if (*end)
        return -1;
    *id = (uint64_t)v;
    return 0;
}
