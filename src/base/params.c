/*
 * params.c: the parameter table and what reads it: the keys and their rows (type, range,
 * syntax, help), the defaults, key lookup, the derived quantities of a point (the rank, the
 * learning-rate schedule and the samples from tau), the names of the enum values and the
 * canonical form of a grid point with its task id. Turning text into values and checking a
 * point as a whole (params_set, params_validate) is params_parse.c; the defaults, limits and
 * word lists both use are in params_impl.h.
 *
 * Every value goes through params_set, whether it comes from a command-line flag or a sweep
 * file, so the two accept the same spellings. Numbers are written back in their shortest
 * round-trip form (text_double): the canonical text of "0.050" and "5e-2" is "0.05". The task
 * id hashes the canonical text as it was first defined, with "%.17g" numbers
 * ("0.050000000000000003"), so that every point keeps the id it had (tests/ids.txt holds ids of
 * that time); both forms read back to the same doubles.
 *
 * The keys of docs/model.md §10-11 (from token_corr on in params_keys) came after the first
 * databases: the canonical text names them only where they differ from their default, so that
 * every task id computed before them is still the id of the same point.
 */
#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "params_impl.h"

const char *const params_keys[] = {
    "decomposition", "activation", "d", "lr", "init_scale", "tokens", "teacher", "width",
    "weight_decay", "tau_end", "records", "log_grid", "seed", "solvers", "recovery_threshold",
    "order_m", "closure", "ode_noise",
    /* docs/model.md §10-11: written only where not at their default */
    "token_corr", "index", "outputs", "lr_schedule", "init", "init_trace", "ode_mean", "precision",
    "ode_init", NULL};
#define PARAMS_FIRST_OPTIONAL "token_corr"

_Static_assert(sizeof(enum decomp) == sizeof(int) && sizeof(enum closure) == sizeof(int) &&
                   sizeof(enum index_kind) == sizeof(int) &&
                   sizeof(enum outputs_kind) == sizeof(int) &&
                   sizeof(enum init_kind) == sizeof(int) &&
                   sizeof(enum ode_mean_kind) == sizeof(int) &&
                   sizeof(enum precision) == sizeof(int) &&
                   sizeof(enum ode_init_kind) == sizeof(int),
               "PARAMS_ENUM fields are stored as int");

static const char *const decomp_words[] = {"direct", "tied", "untied", NULL};
static const char *const closure_words[] = {"auto",          "free_cumulant", "freeze",
                                            "zero",          "spectral",      "spectral_mp",
                                            "free_residual", "flat",          NULL};
const char *const params_solver_words[] = {"sgd", "flow", "ode", NULL};
const char *const params_act_words[] = {"h1",      "h2",   "h3",   "h4",  "h5",      "h6",
                                        "hermite", "relu", "tanh", "erf", "softmax", NULL};
const char *const params_teacher_words[] = {"wishart", "goe", "goe_shift", "goe_mean", NULL};
static const char *const index_words[] = {"centred", "uncentred", NULL};
static const char *const outputs_words[] = {"offdiag", "all", NULL};
static const char *const init_words[] = {"gaussian", "orthogonal", NULL};
static const char *const ode_mean_words[] = {"stiff", "slaved", NULL};
static const char *const precision_words[] = {"double", "single", NULL};
static const char *const ode_init_words[] = {"matched", "limit", NULL};
const char *const params_lr_schedule_words[] = {"constant", "two_phase", NULL};

#define OFF(f) offsetof(struct params, f)
const struct params_key_info params_info[] = {
    {"decomposition", PARAMS_ENUM, OFF(decomposition), decomp_words, 0, 0, 0,
     "direct | tied | untied",
     "how the student writes S: direct S, tied W W^T/sqrt(r d), untied U V^T/sqrt(r d)"},
    {"activation", PARAMS_TEXT, 0, params_act_words, 0, 0, 0,
     "h1..h6 | hermite(c0,c1,...) | relu | tanh | erf | softmax(beta)",
     "output map Y: sigma on each off-diagonal index entry h_ab, or softmax(beta) over each row"},
    {"d", PARAMS_INT, OFF(d), NULL, PARAMS_MIN_D, PARAMS_MAX_D, 0, "integer",
     "dimension of a token (S and S* are d x d)"},
    {"lr", PARAMS_REAL, OFF(lr), NULL, 0, PARAMS_MAX_LR, PARAMS_LO_OPEN, "number",
     "learning rate eta; each SGD sample advances time tau by eta/d^2"},
    {"init_scale", PARAMS_REAL, OFF(init_scale), NULL, 0, PARAMS_MAX_INIT_SCALE, 0, "number",
     "s0: initial student entries N(0, s0^2) (tied/untied), s0 times a GOE matrix (direct)"},
    {"tokens", PARAMS_INT, OFF(tokens), NULL, 2, PARAMS_MAX_TOKENS, 0, "integer",
     "T: tokens per sample (the attention index is T x T)"},
    {"teacher", PARAMS_TEXT, 0, params_teacher_words, 0, 0, 0,
     "wishart(rho) | goe | goe_shift(m) | goe_mean(m)",
     "the target S*, Tr(S*^2)/d = 1: Wishart of rank round(rho d), GOE, GOE + m I, GOE + (m/sqrt(d)) I (mean m)"},
    {"width", PARAMS_REAL, OFF(width), NULL, 0, PARAMS_MAX_RANK_PER_D, PARAMS_LO_OPEN, "number",
     "rho: the student's rank r = round(rho d) (tied, untied)"},
    {"weight_decay", PARAMS_REAL, OFF(weight_decay), NULL, 0, PARAMS_MAX_WEIGHT_DECAY, 0, "number",
     "lambda: each parameter decays at rate lambda per unit tau (factor 1 - lambda eta/d^2 a step)"},
    {"tau_end", PARAMS_REAL, OFF(tau_end), NULL, PARAMS_MIN_TAU_END, PARAMS_MAX_TAU_END, 0,
     "number", "the time tau = n eta/d^2 at which a run ends (n samples)"},
    {"records", PARAMS_INT, OFF(records), NULL, 1, PARAMS_MAX_RECORDS, 0, "integer",
     "record times after tau = 0: each solver stores records + 1 rows"},
    {"log_grid", PARAMS_TEXT, 0, NULL, 0, 0, 0, "on | off | START",
     "record times log-spaced from START (a number; on: tau_end/1000) to tau_end instead of evenly"},
    {"seed", PARAMS_SEED, OFF(seed), NULL, 0, PARAMS_MAX_SEED, 0, "integer",
     "seed of the teacher, the initial student and the samples (same seed, same numbers)"},
    {"solvers", PARAMS_TEXT, 0, params_solver_words, 0, 0, 0, "comma-separated from sgd, flow, ode",
     "sgd: online SGD at finite d; flow: population gradient flow; ode: order-M moment ODE"},
    {"recovery_threshold", PARAMS_REAL, OFF(recovery_threshold), NULL, 0, 1, PARAMS_LO_OPEN,
     "number",
     "weak recovery: the first tau (interpolated) with m >= this, m the centred overlap (|m| for an even activation)"},
    {"order_m", PARAMS_INT, OFF(order_m), NULL, 1, PARAMS_MAX_ORDER, 0, "integer",
     "M: order of the moment ODE (longest word tracked; Gauss nodes of closure spectral)"},
    {"closure", PARAMS_ENUM, OFF(closure), closure_words, 0, 0, 0,
     "auto | free_cumulant | freeze | zero | spectral | spectral_mp | free_residual | flat",
     "how the ODE fixes the words of length M + 1 (auto: spectral for tied, flat at the largest odd order <= M for untied and for tied with ode_noise on, free_cumulant when M < 3)"},
    {"ode_noise", PARAMS_BOOL, OFF(ode_noise), NULL, 0, 0, 0, "on | off",
     "add the O(eta) drift of the SGD noise to the moment ODE"},
    {"token_corr", PARAMS_REAL, OFF(token_corr), NULL, 0, 1, PARAMS_HI_OPEN, "number",
     "c: token covariance E x_a x_b^T = ((1 - c) delta_ab + c) I"},
    {"index", PARAMS_ENUM, OFF(index), index_words, 0, 0, 0, "centred | uncentred",
     "h_ab = (x_a^T S x_b - C_ab Tr S)/sqrt(d), or x_a^T S x_b/sqrt(d) with mean C_ab Tr S/sqrt(d) (not tied)"},
    {"outputs", PARAMS_ENUM, OFF(outputs), outputs_words, 0, 0, 0, "offdiag | all",
     "the elementwise loss over the entries a != b, or over all of them (the diagonal too)"},
    {"lr_schedule", PARAMS_TEXT, 0, params_lr_schedule_words, 0, 0, 0,
     "constant | two_phase(eta1,t_switch)",
     "the rate: lr throughout, or eta1 while t = d tau < t_switch, then lr"},
    {"init", PARAMS_ENUM, OFF(init), init_words, 0, 0, 0, "gaussian | orthogonal",
     "tied/untied initial factors: i.i.d. Gaussian, or orthogonal columns at the same scale (width <= 1)"},
    {"init_trace", PARAMS_REAL, OFF(init_trace), NULL, -PARAMS_MAX_INIT_TRACE,
     PARAMS_MAX_INIT_TRACE, 0, "number", "direct: t I added to the initial S"},
    {"ode_mean", PARAMS_ENUM, OFF(ode_mean), ode_mean_words, 0, 0, 0, "stiff | slaved",
     "the ODE's mean Tr S/sqrt(d): a stiff state variable, or slaved to the minimum of Phi in it"},
    {"precision", PARAMS_ENUM, OFF(precision), precision_words, 0, 0, 0, "double | single",
     "how SGD stores the student: double, or float with the sums in double (half the bytes a step)"},
    {"ode_init", PARAMS_ENUM, OFF(ode_init), ode_init_words, 0, 0, 0, "matched | limit",
     "the ODE's initial moments: the traces of the run's own matrices, or their d -> infinity limits (m(0) = 0 exactly)"},
    {NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL}};
#undef OFF

void params_default(struct params *p)
{
    memset(p, 0, sizeof *p);
    p->decomposition = DECOMP_TIED;
    p->activation.kind = ACT_HERMITE;
    p->activation.degree = 1;
    p->activation.c[1] = 1.0;
    p->activation.beta = PARAMS_DEFAULT_BETA;
    p->d = PARAMS_DEFAULT_D;
    p->lr = PARAMS_DEFAULT_LR;
    p->init_scale = PARAMS_DEFAULT_INIT_SCALE;
    p->tokens = PARAMS_DEFAULT_TOKENS;
    p->teacher.kind = TEACHER_WISHART;
    p->teacher.arg = 0.5;
    p->width = PARAMS_DEFAULT_WIDTH;
    p->weight_decay = 0.0;
    p->tau_end = PARAMS_DEFAULT_TAU_END;
    p->records = PARAMS_DEFAULT_RECORDS;
    p->log_grid = 0;
    p->log_start = 0;
    p->seed = 1;
    p->solvers = SOLVER_SGD | SOLVER_FLOW;
    p->recovery_threshold = PARAMS_DEFAULT_THRESHOLD;
    p->order_m = PARAMS_DEFAULT_ORDER;
    p->closure = CLOSURE_AUTO;
    p->ode_noise = 0;
    p->token_corr = 0.0;
    p->index = INDEX_CENTRED;
    p->outputs = OUTPUTS_OFFDIAG;
    p->lr_schedule.kind = LR_CONSTANT;
    p->init = INIT_GAUSSIAN;
    p->init_trace = 0.0;
    p->ode_mean = ODE_MEAN_STIFF;
}

/* key with '-' mapped to '_' into buf; returns buf */
static const char *norm_key(const char *key, char *buf, size_t n)
{
    size_t i = 0;
    for (; key[i] && i + 1 < n; i++)
        buf[i] = (char)(key[i] == '-' ? '_' : key[i]);
    buf[i] = 0;
    return buf;
}

const struct params_key_info *params_key_info(const char *key)
{
    char k[64];
    if (strlen(key) >= sizeof k)
        return NULL;
    norm_key(key, k, sizeof k);
    for (int i = 0; params_info[i].key; i++)
        if (!strcmp(params_info[i].key, k))
            return &params_info[i];
    return NULL;
}

int params_is_key(const char *key) { return params_key_info(key) != NULL; }

const char *params_suggest_key(const char *word, char *buf, size_t n)
{
    char k[64];
    if (n)
        buf[0] = 0;
    if (strlen(word) < sizeof k)
        text_suggest(buf, n, norm_key(word, k, sizeof k), params_keys);
    return buf;
}

int params_is_numeric(const char *key)
{
    const struct params_key_info *k = params_key_info(key);
    return k && (k->type == PARAMS_INT || k->type == PARAMS_SEED || k->type == PARAMS_REAL);
}

int params_number(const struct params *p, const char *key, double *value)
{
    const struct params_key_info *k = params_key_info(key);
    const char *base = (const char *)p;
    if (!k)
        return -1;
    switch (k->type) {
        case PARAMS_INT: {
            int v;
            memcpy(&v, base + k->offset, sizeof v);
            *value = v;
            return 0;
        }
        case PARAMS_SEED: {
            uint64_t v;
            memcpy(&v, base + k->offset, sizeof v);
            *value = (double)v;
            return 0;
        }
        case PARAMS_REAL: memcpy(value, base + k->offset, sizeof *value); return 0;
        default: return -1;
    }
}

const char *params_allowed(const struct params_key_info *k, char *buf, size_t n)
{
    char lo[TEXT_DOUBLE_MAX], hi[TEXT_DOUBLE_MAX];
    text_double(k->lo, lo, sizeof lo);
    text_double(k->hi, hi, sizeof hi);
    switch (k->type) {
        case PARAMS_INT:
        case PARAMS_SEED: snprintf(buf, n, "an integer from %s to %s", lo, hi); break;
        case PARAMS_REAL:
            if (k->bounds & PARAMS_NO_HI)
                snprintf(buf, n, "a number %s %s", k->bounds & PARAMS_LO_OPEN ? ">" : ">=", lo);
            else
                snprintf(buf, n, "a number in %c%s, %s%c", k->bounds & PARAMS_LO_OPEN ? '(' : '[',
                         lo, hi, k->bounds & PARAMS_HI_OPEN ? ')' : ']');
            break;
        default: snprintf(buf, n, "%s", k->syntax); break;
    }
    return buf;
}

int params_rank(const struct params *p)
{
    double w = p->width * p->d;
    if (!(w >= 1))
        return 1;
    if (w > (double)PARAMS_MAX_RANK_PER_D * p->d)
        w = (double)PARAMS_MAX_RANK_PER_D * p->d; /* params_validate refuses this; never overflow */
    return (int)lround(w);
}

/* The learning-rate schedule (docs/model.md §4, §11). two_phase(eta1, t_switch): step i (from 0)
 * starts at tau_i = i eta1/d^2 while in the first phase and runs at eta1 when
 * t_i = d tau_i < t_switch, i.e. i < t_switch d/eta1: the first n1 = ceil(t_switch d/eta1)
 * steps. The first phase ends at tau_sw = n1 eta1/d^2 (at or just after t_switch/d), and then
 * tau = tau_sw + (n - n1) lr/d^2, so
 *   n(tau) = tau d^2/eta1                                      (tau <= tau_sw)
 *          = n1 + (tau - tau_sw) d^2/lr = tau d^2/lr + n1 (1 - eta1/lr)   (tau > tau_sw),
 * continuous at tau_sw; with eta1 = lr, eta1/lr is exactly 1 and both branches are tau d^2/lr
 * to the last bit, so two_phase(lr, t) reproduces constant. */

long params_switch_steps(const struct params *p)
{
    double x = p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1;
    if (p->lr_schedule.kind != LR_TWO_PHASE || !(x >= 0 && x <= PARAMS_MAX_SWITCH_STEPS))
        return 0; /* constant, or a schedule params_validate refuses */
    return (long)ceil(x);
}

double params_switch_tau(const struct params *p)
{
    if (p->lr_schedule.kind != LR_TWO_PHASE)
        return INFINITY;
    return (double)params_switch_steps(p) * p->lr_schedule.eta1 / ((double)p->d * p->d);
}

double params_rate(const struct params *p, double tau)
{
    return p->lr_schedule.kind == LR_TWO_PHASE && tau < params_switch_tau(p) ? p->lr_schedule.eta1
                                                                             : p->lr;
}

/* tau d^2/eta, rounded as tau (d^2/eta) (SGD and the flow) or, with ode, as (tau d) d/eta (the
 * moment ODE, which has always rounded so): the two differ by an ulp at some tau, and each
 * solver's samples column keeps the bits it had. */
static double samples_at_rate(const struct params *p, double tau, double eta, int ode)
{
    return ode ? tau * (double)p->d * p->d / eta : tau * ((double)p->d * p->d / eta);
}

static double samples(const struct params *p, double tau, int ode)
{
    if (p->lr_schedule.kind != LR_TWO_PHASE)
        return samples_at_rate(p, tau, p->lr, ode);
    double eta1 = p->lr_schedule.eta1;
    if (tau <= params_switch_tau(p))
        return samples_at_rate(p, tau, eta1, ode);
    return samples_at_rate(p, tau, p->lr, ode) +
           (double)params_switch_steps(p) * (1.0 - eta1 / p->lr);
}

double params_samples(const struct params *p, double tau) { return samples(p, tau, 0); }

double params_samples_ode(const struct params *p, double tau) { return samples(p, tau, 1); }

const char *params_decomp_name(enum decomp d)
{
    return (unsigned)d < sizeof decomp_words / sizeof *decomp_words - 1 ? decomp_words[d] : "?";
}

const char *params_closure_name(enum closure c)
{
    return (unsigned)c < sizeof closure_words / sizeof *closure_words - 1 ? closure_words[c] : "?";
}

/* A number in the canonical text: shortest round trip, or "%.17g" for the hashed form. */
static int num(char *buf, size_t n, double x, int legacy)
{
    return legacy ? snprintf(buf, n, "%.17g", x) : text_double(x, buf, n);
}

static void act_name(const struct act *a, char *buf, size_t n, int legacy)
{
    char v[TEXT_DOUBLE_MAX];
    switch (a->kind) {
        case ACT_HERMITE: {
            int single = a->c[a->degree] == 1.0 && a->degree <= 6;
            for (int k = 0; k < a->degree; k++)
                if (a->c[k] != 0)
                    single = 0;
            if (single) {
                snprintf(buf, n, "h%d", a->degree);
                return;
            }
            size_t used = (size_t)snprintf(buf, n, "hermite(");
            for (int k = 0; k <= a->degree && used < n; k++) {
                num(v, sizeof v, a->c[k], legacy);
                used += (size_t)snprintf(buf + used, n - used, "%s%s", k ? "," : "", v);
            }
            if (used < n)
                snprintf(buf + used, n - used, ")");
            return;
        }
        case ACT_RELU: snprintf(buf, n, "relu"); return;
        case ACT_TANH: snprintf(buf, n, "tanh"); return;
        case ACT_ERF: snprintf(buf, n, "erf"); return;
        case ACT_SOFTMAX:
            num(v, sizeof v, a->beta, legacy);
            snprintf(buf, n, "softmax(%s)", v);
            return;
    }
}

static void teacher_name(const struct teacher_spec *t, char *buf, size_t n, int legacy)
{
    char v[TEXT_DOUBLE_MAX];
    num(v, sizeof v, t->arg, legacy);
    switch (t->kind) {
        case TEACHER_WISHART: snprintf(buf, n, "wishart(%s)", v); return;
        case TEACHER_GOE: snprintf(buf, n, "goe"); return;
        case TEACHER_GOE_SHIFT: snprintf(buf, n, "goe_shift(%s)", v); return;
        case TEACHER_GOE_MEAN:
            /* The id's text (legacy) names the definition of schema 8, the goe draw's own trace
             * removed (mu* = m exactly): a task of the earlier goe_mean (mu* = m + O(1/sqrt(d)))
             * keeps its old id, so its rows are never taken for the new teacher's. */
            snprintf(buf, n, legacy ? "goe_mean_traceless(%s)" : "goe_mean(%s)", v);
            return;
    }
}

static void lr_schedule_name(const struct lr_schedule *s, char *buf, size_t n, int legacy)
{
    char a[TEXT_DOUBLE_MAX], b[TEXT_DOUBLE_MAX];
    if (s->kind != LR_TWO_PHASE) {
        snprintf(buf, n, "constant");
        return;
    }
    num(a, sizeof a, s->eta1, legacy);
    num(b, sizeof b, s->t_switch, legacy);
    snprintf(buf, n, "two_phase(%s,%s)", a, b);
}

int params_general_index(const struct params *p)
{
    return p->token_corr != 0 || p->index != INDEX_CENTRED || p->outputs != OUTPUTS_OFFDIAG;
}

/* The solvers' text: sgd,flow,ode or the part of it chosen. */
static void solvers_name(unsigned s, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s", s & SOLVER_SGD ? "sgd" : "",
             (s & SOLVER_SGD) && (s & (SOLVER_FLOW | SOLVER_ODE)) ? "," : "",
             s & SOLVER_FLOW ? "flow" : "", (s & SOLVER_FLOW) && (s & SOLVER_ODE) ? "," : "",
             s & SOLVER_ODE ? "ode" : "");
}

static int get_value(const struct params *p, const char *key, char *buf, size_t n, int legacy)
{
    const struct params_key_info *k = params_key_info(key);
    const char *base = (const char *)p;
    if (!k)
        return -1;
    switch (k->type) {
        case PARAMS_ENUM: {
            int i;
            memcpy(&i, base + k->offset, sizeof i);
            return snprintf(buf, n, "%s", k->choices[i]);
        }
        case PARAMS_BOOL: {
            int b;
            memcpy(&b, base + k->offset, sizeof b);
            return snprintf(buf, n, "%s", b ? "on" : "off");
        }
        case PARAMS_INT: {
            int i;
            memcpy(&i, base + k->offset, sizeof i);
            return snprintf(buf, n, "%d", i);
        }
        case PARAMS_SEED: {
            uint64_t v;
            memcpy(&v, base + k->offset, sizeof v);
            return snprintf(buf, n, "%llu", (unsigned long long)v);
        }
        case PARAMS_REAL: {
            double x;
            memcpy(&x, base + k->offset, sizeof x);
            return num(buf, n, x, legacy);
        }
        case PARAMS_TEXT:
            if (!strcmp(k->key, "activation"))
                act_name(&p->activation, buf, n, legacy);
            else if (!strcmp(k->key, "teacher"))
                teacher_name(&p->teacher, buf, n, legacy);
            else if (!strcmp(k->key, "solvers"))
                solvers_name(p->solvers, buf, n);
            else if (!strcmp(k->key, "lr_schedule"))
                lr_schedule_name(&p->lr_schedule, buf, n, legacy);
            else if (!strcmp(k->key, "log_grid")) {
                if (p->log_grid && p->log_start > 0)
                    return num(buf, n, p->log_start, legacy);
                return snprintf(buf, n, "%s", p->log_grid ? "on" : "off");
            } else
                return -1;
            return (int)strlen(buf);
    }
    return -1;
}

int params_get(const struct params *p, const char *key, char *buf, size_t n)
{
    return get_value(p, key, buf, n, 0);
}

static int canonical(const struct params *p, char *buf, size_t n, int legacy)
{
    size_t used = 0;
    char val[256], dval[256];
    struct params def;
    params_default(&def);
    int optional = 0;
    for (int i = 0; params_keys[i]; i++) {
        get_value(p, params_keys[i], val, sizeof val, legacy);
        optional |= !strcmp(params_keys[i], PARAMS_FIRST_OPTIONAL);
        if (optional) {
            get_value(&def, params_keys[i], dval, sizeof dval, legacy);
            if (!strcmp(val, dval))
                continue;
        }
        int w = snprintf(buf + (used < n ? used : n), used < n ? n - used : 0, "%s%s=%s",
                         i ? ";" : "", params_keys[i], val);
        used += (size_t)w;
    }
    return (int)used;
}

int params_canonical(const struct params *p, char *buf, size_t n)
{
    return canonical(p, buf, n, 0);
}

uint64_t params_task_id(const struct params *p)
{
    char buf[2048];
    canonical(p, buf, sizeof buf, 1);
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *c = (const unsigned char *)buf; *c; c++) {
        h ^= *c;
        h *= 1099511628211ULL;
    }
    return h & ((1ULL << 63) - 1); /* fits SQLite's signed INTEGER */
}

int params_info_exponent(const struct act *a)
{
    if (a->kind != ACT_HERMITE)
        return 0;
    for (int k = 1; k <= a->degree; k++)
        if (a->c[k] != 0)
            return k;
    return 0;
}

int params_act_sign_symmetric(const struct act *a)
{
    if (a->kind != ACT_HERMITE)
        return 0;
    for (int k = 1; k <= a->degree; k += 2)
        if (a->c[k] != 0)
            return 0;
    return 1;
}
