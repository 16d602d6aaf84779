/*
 * task.c: canonical text, id and cost of a grid point.
 *
 * Cost model (floating-point operations, turned into seconds with TASK_FLOPS_PER_S):
 *   sgd:  n = params_samples(tau_end) steps (tau_end d^2 / lr for a constant rate), each O(d r T) for tied/untied (projections W^T x_a and
 *         the rank-T update) and O(d^2 T) for direct: cost ~ 4 n d r T.
 *   flow: d x d matrix products, a few per step, TASK_FLOW_STEPS_PER_TAU steps per unit tau, and
 *         with weight decay lambda at least lambda tau_end steps (the explicit step is ~1/lambda):
 *         cost ~ 8 d^3 steps.
 *   ode:  small systems; a fixed TASK_ODE_FLOPS per unit tau times order_m^3, plus the set-up of
 *         the system from the run's own d x d matrices (ode.c's dispatch), which grows as d^3
 *         and dominates at large d (the integration does not grow with d: tied, d = 640 and
 *         1280, tau_end 0.001 and 0.3 take the same time within 5 %):
 *           direct: nothing (0.02 s at d = 1280);
 *           tied, spectral (auto without noise) and spectral_mp: GSL's symmetric eigenvalues of
 *                 S* (d x d) and, for spectral, of the n x n Gram matrix W0^T W0/kappa
 *                 (n = min(r, d)), TASK_EIG_FLOPS (d^3 + n^3); and that Gram matrix, n^2 d/2
 *                 multiply-adds in a loop whose inner index strides r doubles through W0:
 *                 TASK_GRAM_FLOPS_HOT each while the 2d pages one (i, j) pair touches fit in
 *                 the TLB, TASK_GRAM_FLOPS_COLD beyond (stride 8r >= TASK_PAGE_BYTES and
 *                 2d > TASK_TLB_PAGES). Measured alone (CPU s of gsl_eigen_symm and of that
 *                 loop, one core, on an Intel Xeon): eigenvalues 0.38 ns d^3 at d = 320, 640,
 *                 0.75 ns at 1280; the loop 1.2, 1.8 and 11.4 ns per multiply-add at d = 320,
 *                 640, 1280. The whole set-up against the model's (test_harness, d = 400) was
 *                 1.11 there and 0.73-0.96 on an AMD EPYC (Zen 5): TASK_EIG_FLOPS and
 *                 TASK_GRAM_FLOPS_HOT sit between the two machines (the model says 1.22);
 *           word hierarchy (tied with other closures, untied): the exact initial traces,
 *                 2 d^3 flops per d x d product (words_init_products of the resolved order),
 *                 at BLAS speed, TASK_BLAS_SPEEDUP times TASK_FLOPS_PER_S, while 2 P d^3 <=
 *                 WORDS_EXACT_FLOPS; beyond, the free values from the lengths <= 2,
 *                 TASK_WORDS_FREE_PRODUCTS products. OpenBLAS 0.3.21's dgemm ran at 41-53
 *                 Gflop/s on the Intel Xeon and about 21 on the Zen 5 (whose cores it drives
 *                 with its Haswell kernels); the set-up against the model's (test_harness,
 *                 untied, d = 400) was 1.93 there and 2.8-3.9 here: the speed-up sits between
 *                 (the model says 2.4).
 *   the model (every task, once, whatever its solvers; task_cost_model): the teacher, the
 *         student's start and LAPACK's eigendecomposition of S* (model.c): TASK_MODEL_FLOPS
 *         d^3. Measured: direct ODE tasks (the model alone) 0.03, 0.27, 1.99 CPU s at d = 320,
 *         640, 1280, i.e. 0.95-1.0 ns d^3.
 *   Phi:  every solver also evaluates the population loss (docs/model.md §5) and its gradient, at
 *         a cost that d does not change and that dominates for softmax with T >= 3 tokens (a
 *         2T-dimensional integral) and for tanh (a 2-D trapezoidal rule):
 *           flow: one evaluation per stage of the Runge-Kutta (8,9) step, TASK_RK_STAGES, and
 *                 at least one step per record interval: 13 (records + TASK_PHI_STEPS_0 +
 *                 (TASK_PHI_STEPS_PER_TAU + lambda) tau_end) evaluations;
 *           ode:  the same with TASK_ODE_PHI_STEPS_PER_TAU;
 *           sgd:  the loss at each record, records + 1.
 *         One evaluation (phi.c's rules, mirrored here): softmax, T = 2, and tanh: Mehler's
 *         series (phi_mehler.c; a 2-D trapezoidal rule outside its range), TASK_PHI_FLOPS_SM2 and
 *         TASK_PHI_FLOPS_TANH; softmax, T >= 3: the tensor Gauss-Hermite rule on n and n - 1
 *         nodes in 2T dimensions, n the largest with n^(2T) <= TASK_PHI_TENSOR_POINTS, P =
 *         n^(2T) + (n - 1)^(2T) points of TASK_PHI_FLOPS_POINT T flops each, or Monte Carlo,
 *         TASK_PHI_MC_SAMPLES samples of TASK_PHI_FLOPS_SAMPLE T flops, when n < 4; Hermite,
 *         relu, erf: closed forms, nothing.
 *         Calibrated with one process on this project's 2-core machine (CPU seconds of
 *         phi_eval at TASK_FLOPS_PER_S): softmax(1) T = 2: 0.041 ms, T = 3: 10.3 ms, T = 4:
 *         6.8 ms, T = 5, 8, 16: 32, 46, 105 ms; tanh 0.087 ms; counts of evaluations from CPU
 *         times of `single` at d = 20, records 20, tau_end 0.5 and 2 (flow: 320 to 400, ode: 350
 *         to 620).
 *         softmax(beta): the loss grows steeper with beta and the adaptive steps of the flow
 *         and the ODE shorter: TASK_SOFTMAX_STEPS_C (beta - 1)^TASK_SOFTMAX_STEPS_P more steps
 *         per unit tau (task_softmax_steps; none for beta <= 1), each of TASK_RK_STAGES loss
 *         evaluations. Fitted (least squares in logs) to CPU seconds of `single` at d = 20,
 *         tau_end 0.1, records 5, each run's evaluations counted at the seconds per evaluation
 *         of its beta = 1 twin: ode T = 3: 1.31, 3.25, 62.7 s at beta = 1, 5, 20 (157 and 4971
 *         more steps per unit tau; the fit 207 and 3964); ode T = 4: 0.81, 2.90, 41.3 s (274,
 *         5301); flow T = 3: 1.06, 2.90, 26.6 s (181, 2502); flow T = 4: 0.74, 2.42, 27.4 s
 *         (236, 3744): within a factor 1.6 of each. The flow's d x d products do not take these
 *         steps (d = 200, T = 2: 0.13 and 0.40 s at beta = 1 and 20, the model 0.54 and 0.76).
 *         Checked at tau_end 0.5, records 20: ode T = 3, beta = 5 took 12.2 s, the model's count
 *         says 15.9 s. T = 2 leaves Mehler's series for the trapezoidal rule at large beta, which
 *         this does not count (ode: 0.005, 0.058, 0.14 s a run at beta = 1, 5, 20; the model
 *         0.03, 0.04, 0.30).
 * The nominal model orders tasks (largest first); a database's finished tasks correct it
 * (task_cost_learn below): per solver, decomposition and activation, by the factor between the
 * measured and the nominal time, so that plans and ETAs of a running study come from this
 * machine's own measurements.
 */
#include "aimsweep/harness/task.h"
#include "aimsweep/theory/words.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASK_FLOW_STEPS_PER_TAU 400.0
#define TASK_ODE_FLOPS 2.0e6
/* The population loss's share (see above). */
#define TASK_RK_STAGES 13.0
#define TASK_PHI_STEPS_0 5.0
#define TASK_PHI_STEPS_PER_TAU 4.0
#define TASK_ODE_PHI_STEPS_PER_TAU 6.0
#define TASK_PHI_FLOPS_SM2 2.5e5
#define TASK_PHI_FLOPS_TANH 5.2e5
#define TASK_PHI_TENSOR_POINTS 131072.0 /* phi.c's PHI_TENSOR_MAX_POINTS */
#define TASK_PHI_MC_SAMPLES 131072.0    /* phi.c's PHI_MC_SAMPLES */
#define TASK_PHI_FLOPS_POINT 140.0
#define TASK_PHI_FLOPS_SAMPLE 300.0
#define TASK_SOFTMAX_STEPS_C 14.9
#define TASK_SOFTMAX_STEPS_P 1.9
#define TASK_TEXT_MAX 8192
/* The set-ups of the model and of the moment ODE (see above), in flops at TASK_FLOPS_PER_S. */
#define TASK_MODEL_FLOPS 6.0
#define TASK_EIG_FLOPS 2.1
#define TASK_GRAM_FLOPS_HOT 6.3
#define TASK_GRAM_FLOPS_COLD 68.0
#define TASK_PAGE_BYTES 4096.0
#define TASK_TLB_PAGES 1536.0
#define TASK_BLAS_SPEEDUP 5.0
#define TASK_WORDS_FREE_PRODUCTS 4.0
/* Word systems whose product counts task_ode_setup_flops has looked up: (decomposition, order,
 * closure) -> products (the basis is the same for every d). */
#define TASK_WORDS_CACHE 64

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

double task_phi_flops(const struct params *p)
{
    const struct act *a = &p->activation;
    double T = p->tokens;
    if (a->kind == ACT_TANH)
        return TASK_PHI_FLOPS_TANH;
    if (a->kind != ACT_SOFTMAX)
        return 0;
    if (p->tokens == 2)
        return TASK_PHI_FLOPS_SM2;
    int n = 2;
    while (pow(n + 1, 2 * T) <= TASK_PHI_TENSOR_POINTS)
        n++;
    if (n < 4)
        return TASK_PHI_MC_SAMPLES * TASK_PHI_FLOPS_SAMPLE * T;
    return (pow(n, 2 * T) + pow(n - 1, 2 * T)) * TASK_PHI_FLOPS_POINT * T;
}

/* The Runge-Kutta steps per unit tau that softmax(beta) adds to the flow and the ODE (above). */
static double task_softmax_steps(const struct params *p)
{
    const struct act *a = &p->activation;
    if (a->kind != ACT_SOFTMAX || !(a->beta > 1))
        return 0;
    return TASK_SOFTMAX_STEPS_C * pow(a->beta - 1, TASK_SOFTMAX_STEPS_P);
}

/* words_init_products(p), remembered per (decomposition, order_m, closure, ode_noise): plans
 * cost thousands of points of a few systems. -1 when it fails. */
static long words_products_cached(const struct params *p)
{
    static struct words_products {
        int dec, M, closure, noise;
        long np;
    } cache[TASK_WORDS_CACHE];
    static int n;
    for (int i = 0; i < n; i++)
        if (cache[i].dec == (int)p->decomposition && cache[i].M == p->order_m &&
            cache[i].closure == (int)p->closure && cache[i].noise == p->ode_noise)
            return cache[i].np;
    long np = words_init_products(p);
    if (n < TASK_WORDS_CACHE)
        cache[n++] = (struct words_products){(int)p->decomposition, p->order_m, (int)p->closure,
                                             p->ode_noise, np};
    return np;
}

double task_ode_setup_flops(const struct params *p)
{
    double d = p->d, r = params_rank(p), n = r < d ? r : d;
    if (p->decomposition == DECOMP_DIRECT)
        return 0;
    int spectral = p->decomposition == DECOMP_TIED &&
                   ((p->closure == CLOSURE_AUTO && !p->ode_noise) ||
                    p->closure == CLOSURE_SPECTRAL || p->closure == CLOSURE_SPECTRAL_MP);
    if (spectral) {
        if (p->closure == CLOSURE_SPECTRAL_MP)
            return TASK_EIG_FLOPS * d * d * d;
        int cold = 8.0 * r >= TASK_PAGE_BYTES && 2.0 * d > TASK_TLB_PAGES;
        return TASK_EIG_FLOPS * (d * d * d + n * n * n) +
               n * n * d / 2 * (cold ? TASK_GRAM_FLOPS_COLD : TASK_GRAM_FLOPS_HOT);
    }
    double np = (double)words_products_cached(p), flops = 2.0 * np * d * d * d;
    if (np < 0)
        return 0;
    if (flops > WORDS_EXACT_FLOPS && p->init != INIT_ORTHOGONAL)
        flops = 2.0 * TASK_WORDS_FREE_PRODUCTS * d * d * d;
    return flops / TASK_BLAS_SPEEDUP;
}

double task_cost_model(const struct params *p)
{
    double d = p->d;
    return TASK_MODEL_FLOPS * d * d * d / TASK_FLOPS_PER_S;
}

double task_cost_solver(const struct params *p, int solver)
{
    double d = p->d, r = p->decomposition == DECOMP_DIRECT ? d : params_rank(p);
    double flops = 0, phi = task_phi_flops(p), recs = p->records;
    if (solver == SOLVER_SGD) {
        double steps = params_samples(p, p->tau_end);
        flops = 4.0 * steps * d * r * p->tokens * (p->decomposition == DECOMP_UNTIED ? 2 : 1);
        flops += (recs + 1) * phi;
    } else if (solver == SOLVER_FLOW) {
        flops = 8.0 * d * d * d * ((TASK_FLOW_STEPS_PER_TAU + p->weight_decay) * p->tau_end + 10);
        flops += TASK_RK_STAGES * phi *
                 (recs + TASK_PHI_STEPS_0 +
                  (TASK_PHI_STEPS_PER_TAU + p->weight_decay + task_softmax_steps(p)) * p->tau_end);
    } else if (solver == SOLVER_ODE) {
        flops = TASK_ODE_FLOPS * (p->tau_end + 1) * p->order_m * p->order_m * p->order_m;
        flops += task_ode_setup_flops(p);
        flops += TASK_RK_STAGES * phi *
                 (recs + TASK_PHI_STEPS_0 +
                  (TASK_ODE_PHI_STEPS_PER_TAU + task_softmax_steps(p)) * p->tau_end);
    }
    return flops / TASK_FLOPS_PER_S;
}

double task_cost(const struct params *p)
{
    double c = task_cost_model(p);
    for (int sv = SOLVER_SGD; sv <= SOLVER_ODE; sv <<= 1)
        if (p->solvers & (unsigned)sv)
            c += task_cost_solver(p, sv);
    return c;
}

/* ---- the learned correction ----
 * For each solver, decomposition and activation, the geometric mean of measured / nominal over
 * the finished solver runs of a database (summary.wall_s against task_cost_solver). A key with
 * fewer than TASK_LEARN_MIN runs falls back to (solver, decomposition), then to the solver, then
 * to 1. The geometric mean, because the errors of the nominal model are factors. */
#define TASK_LEARN_MIN 3

static int cm_level(const struct cost_entry *e, int solver, int decomp, const char *act)
{
    if (e->solver != solver)
        return -1;
    if (e->decomposition < 0)
        return 1;
    if (e->decomposition != decomp)
        return -1;
    if (!e->activation[0])
        return 2;
    return strcmp(e->activation, act) ? -1 : 3;
}

/* The index of the entry for the key, added when missing; -1 when out of memory. (Indices,
 * not pointers: adding an entry may move the array.) */
static long cm_find(struct cost_model *cm, int solver, int decomp, const char *act)
{
    for (size_t i = 0; i < cm->n; i++) {
        const struct cost_entry *e = &cm->e[i];
        if (e->solver == solver && e->decomposition == decomp && !strcmp(e->activation, act))
            return (long)i;
    }
    if (cm->n == cm->cap) {
        size_t cap = cm->cap ? 2 * cm->cap : 32;
        struct cost_entry *ne = realloc(cm->e, cap * sizeof *ne);
        if (!ne)
            return -1;
        cm->e = ne;
        cm->cap = cap;
    }
    struct cost_entry *e = &cm->e[cm->n];
    memset(e, 0, sizeof *e);
    e->solver = solver;
    e->decomposition = decomp;
    snprintf(e->activation, sizeof e->activation, "%s", act);
    return (long)cm->n++;
}

int task_cost_learn(struct cost_model *cm, const struct params *p, int solver, double wall_s)
{
    double nominal = task_cost_solver(p, solver);
    if (!(nominal > 0) || !(wall_s > 0))
        return 0;
    char act[64];
    params_get(p, "activation", act, sizeof act);
    double l = log(wall_s / nominal);
    long k[3] = {cm_find(cm, solver, -1, ""), cm_find(cm, solver, (int)p->decomposition, ""),
                 cm_find(cm, solver, (int)p->decomposition, act)};
    for (int i = 0; i < 3; i++) {
        if (k[i] < 0)
            return -1;
        cm->e[k[i]].sum_log += l;
        cm->e[k[i]].n++;
    }
    return 0;
}

double task_cost_factor(const struct cost_model *cm, const struct params *p, int solver)
{
    char act[64];
    params_get(p, "activation", act, sizeof act);
    const struct cost_entry *best = NULL;
    int lv = 0;
    for (size_t i = 0; cm && i < cm->n; i++) {
        int l = cm_level(&cm->e[i], solver, (int)p->decomposition, act);
        if (l > lv && cm->e[i].n >= TASK_LEARN_MIN) {
            lv = l;
            best = &cm->e[i];
        }
    }
    return best ? exp(best->sum_log / best->n) : 1.0;
}

double task_cost_learned(const struct cost_model *cm, const struct params *p)
{
    double c = task_cost_model(p);
    for (int sv = SOLVER_SGD; sv <= SOLVER_ODE; sv <<= 1)
        if (p->solvers & (unsigned)sv)
            c += task_cost_solver(p, sv) * task_cost_factor(cm, p, sv);
    return c;
}

void task_cost_model_free(struct cost_model *cm)
{
    free(cm->e);
    memset(cm, 0, sizeof *cm);
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
