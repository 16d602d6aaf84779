/*
 * params.c: defaults, the parameter table, text parsing, validation and the canonical form of a
 * grid point.
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

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults: a small tied point that shows weak recovery by drift in a few seconds. */
#define PARAMS_DEFAULT_D 100
#define PARAMS_DEFAULT_LR 0.05
#define PARAMS_DEFAULT_INIT_SCALE 0.7
#define PARAMS_DEFAULT_TOKENS 2
#define PARAMS_DEFAULT_WIDTH 1.0
#define PARAMS_DEFAULT_TAU_END 0.5
#define PARAMS_DEFAULT_RECORDS 20
#define PARAMS_DEFAULT_THRESHOLD 0.5
#define PARAMS_DEFAULT_ORDER 4
#define PARAMS_DEFAULT_BETA 1.0
/* Limits that catch typos rather than restrict science. */
#define PARAMS_MIN_D 2
#define PARAMS_MAX_D 100000
#define PARAMS_MAX_RECORDS 1000000
#define PARAMS_MAX_ORDER 16
/* 2^53 - 1: every seed up to it is exact as a double. Not 2^53 itself: 2^53 + 1, read as a
 * double, rounds to 2^53, and would silently become another seed. */
#define PARAMS_MAX_SEED 9007199254740991.0
/* What the solvers can do (the same bounds as the storage-reliability work): lr and
 * weight_decay beyond 1e3 make the explicit flow's step vanish; tied/untied order parameters
 * grow like s0^4, so init_scale 100 reaches the divergence limits before the first step; tau_end
 * between 1e-9 and 1e6. */
#define PARAMS_MAX_LR 1e3
#define PARAMS_MAX_INIT_SCALE 100.0
#define PARAMS_MAX_WEIGHT_DECAY 1e3
#define PARAMS_MIN_TAU_END 1e-9
#define PARAMS_MAX_TAU_END 1e6
/* The student's rank r = round(width d) is at most this many times d. */
#define PARAMS_MAX_RANK_PER_D 4
/* The arguments of the parenthesised values, bounded by what the solvers can do:
 *   wishart rho <= 16: r* = round(rho d) is a matrix dimension (the teacher's d x r* factor);
 *     wishart(1e8) at d = 12 asked for 115 GB and crashed.
 *   softmax beta <= 20: the flow and the ODE grow stiff with beta (d = 12, T = 2, the flow:
 *     0.5 s at beta = 5, 1.1 s at 10, 3.3 s at 20, over a minute at 40; at 1e300 the population
 *     loss is not even computable and SGD stored NaN as done).
 *   Hermite coefficients and goe_shift m within +-1e6: beyond, the loss overflows. */
#define PARAMS_MAX_RHO 16.0
#define PARAMS_MAX_BETA 20.0
#define PARAMS_MAX_COEF 1e6
/* Most SGD samples one run may ask for (tau_end d^2 / lr): the count is kept exactly in a
 * double and in a long (2^53 steps are centuries of computing anyway). */
#define PARAMS_MAX_SAMPLES 9007199254740992.0
/* The flow is integrated explicitly: with weight decay lambda its step is at most ~1/lambda,
 * so it takes at least lambda tau_end steps of d^3 work each (lambda tau_end = 1e5 takes 0.8 s
 * at d = 20, 8000 times that at d = 400). Above this the flow is refused. */
#define PARAMS_MAX_FLOW_STIFFNESS 1e6
/* Untied moment ODE: the highest order whose word system builds in seconds. Order 7 tracks
 * 7673 word classes and spends ~30 s and ~330 MB building its terms before the first step
 * (measured at d = 20; the build does not depend on tau_end). */
#define PARAMS_MAX_ORDER_UNTIED 6
/* ... and with the mean as a stiff state (index uncentred, ode_mean stiff): above this the
 * implicit stepper's finite-difference Jacobian makes a run take many minutes (order 5, d = 60:
 * 688 s to tau = 0.05 against 9.6 s to tau = 0.1 for the same system explicit without the mean),
 * and the moments leave the positive cone at strong recovery (analysis/general_index.md). */
#define PARAMS_MAX_ORDER_UNTIED_MEAN 4

const char *const params_keys[] = {
    "decomposition", "activation", "d", "lr", "init_scale", "tokens", "teacher", "width",
    "weight_decay", "tau_end", "records", "log_grid", "seed", "solvers", "recovery_threshold",
    "order_m", "closure", "ode_noise",
    /* docs/model.md §10-11: written only where not at their default */
    "token_corr", "index", "outputs", "lr_schedule", "init", "init_trace", "ode_mean", "precision",
    NULL};
#define PARAMS_FIRST_OPTIONAL "token_corr"
/* init_trace: a typo guard, t I with |t| <= this */
#define PARAMS_MAX_INIT_TRACE 1e3
/* The most SGD steps a two_phase first phase may take (t_switch d / eta1): beyond it the step
 * count would not fit a long; no run gets near it. */
#define PARAMS_MAX_SWITCH_STEPS 1e15

_Static_assert(sizeof(enum decomp) == sizeof(int) && sizeof(enum closure) == sizeof(int) &&
                   sizeof(enum index_kind) == sizeof(int) &&
                   sizeof(enum outputs_kind) == sizeof(int) &&
                   sizeof(enum init_kind) == sizeof(int) &&
                   sizeof(enum ode_mean_kind) == sizeof(int) &&
                   sizeof(enum precision) == sizeof(int),
               "PARAMS_ENUM fields are stored as int");

static const char *const decomp_words[] = {"direct", "tied", "untied", NULL};
static const char *const closure_words[] = {"auto",          "free_cumulant", "freeze",
                                            "zero",          "spectral",      "spectral_mp",
                                            "free_residual", "flat",          NULL};
static const char *const solver_words[] = {"sgd", "flow", "ode", NULL};
static const char *const act_words[] = {"h1",      "h2",   "h3",   "h4",  "h5",      "h6",
                                        "hermite", "relu", "tanh", "erf", "softmax", NULL};
static const char *const teacher_words[] = {"wishart", "goe", "goe_shift", "goe_mean", NULL};
static const char *const index_words[] = {"centred", "uncentred", NULL};
static const char *const outputs_words[] = {"offdiag", "all", NULL};
static const char *const init_words[] = {"gaussian", "orthogonal", NULL};
static const char *const ode_mean_words[] = {"stiff", "slaved", NULL};
static const char *const precision_words[] = {"double", "single", NULL};
static const char *const lr_schedule_words[] = {"constant", "two_phase", NULL};

#define OFF(f) offsetof(struct params, f)
const struct params_key_info params_info[] = {
    {"decomposition", PARAMS_ENUM, OFF(decomposition), decomp_words, 0, 0, 0,
     "direct | tied | untied",
     "how the student writes S: direct S, tied W W^T/sqrt(r d), untied U V^T/sqrt(r d)"},
    {"activation", PARAMS_TEXT, 0, act_words, 0, 0, 0,
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
    {"teacher", PARAMS_TEXT, 0, teacher_words, 0, 0, 0,
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
     "record times log-spaced from START (on: tau_end/1000) to tau_end instead of evenly"},
    {"seed", PARAMS_SEED, OFF(seed), NULL, 0, PARAMS_MAX_SEED, 0, "integer",
     "seed of the teacher, the initial student and the samples (same seed, same numbers)"},
    {"solvers", PARAMS_TEXT, 0, solver_words, 0, 0, 0, "comma-separated from sgd, flow, ode",
     "sgd: online SGD at finite d; flow: population gradient flow; ode: order-M moment ODE"},
    {"recovery_threshold", PARAMS_REAL, OFF(recovery_threshold), NULL, 0, 1, PARAMS_LO_OPEN,
     "number",
     "weak recovery: the first tau (interpolated) with |m| >= this, m the centred overlap"},
    {"order_m", PARAMS_INT, OFF(order_m), NULL, 1, PARAMS_MAX_ORDER, 0, "integer",
     "M: order of the moment ODE (longest word tracked; Gauss nodes of closure spectral)"},
    {"closure", PARAMS_ENUM, OFF(closure), closure_words, 0, 0, 0,
     "auto | free_cumulant | freeze | zero | spectral | spectral_mp | free_residual | flat",
     "how the ODE fixes the words of length M + 1 (auto: spectral for tied, flat for untied)"},
    {"ode_noise", PARAMS_BOOL, OFF(ode_noise), NULL, 0, 0, 0, "on | off",
     "add the O(eta) drift of the SGD noise to the moment ODE"},
    {"token_corr", PARAMS_REAL, OFF(token_corr), NULL, 0, 1, PARAMS_HI_OPEN, "number",
     "c: token covariance E x_a x_b^T = ((1 - c) delta_ab + c) I"},
    {"index", PARAMS_ENUM, OFF(index), index_words, 0, 0, 0, "centred | uncentred",
     "h_ab = (x_a^T S x_b - C_ab Tr S)/sqrt(d), or x_a^T S x_b/sqrt(d) with mean C_ab Tr S/sqrt(d) (not tied)"},
    {"outputs", PARAMS_ENUM, OFF(outputs), outputs_words, 0, 0, 0, "offdiag | all",
     "the elementwise loss over the entries a != b, or over all of them (the diagonal too)"},
    {"lr_schedule", PARAMS_TEXT, 0, lr_schedule_words, 0, 0, 0,
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

/* A message into err (of size n) when there is room for one; a macro, so that the compiler
 * checks every format against its arguments. */
#define seterr(err, n, ...)                                                                        \
    do {                                                                                           \
        if ((err) && (n))                                                                          \
            (void)snprintf((err), (n), __VA_ARGS__);                                               \
    } while (0)

/* An argument of a parenthesised value against [lo, hi] (lo excluded when lo_open): 0, or -1
 * with "WHAT 'TEXT': NAME = V: must be in RANGE". */
static int arg_range(const char *what, const char *text, const char *name, double v, double lo,
                     double hi, int lo_open, char *err, size_t n)
{
    if ((lo_open ? v > lo : v >= lo) && v <= hi)
        return 0;
    char a[TEXT_DOUBLE_MAX], l[TEXT_DOUBLE_MAX], h[TEXT_DOUBLE_MAX];
    text_double(v, a, sizeof a);
    text_double(lo, l, sizeof l);
    text_double(hi, h, sizeof h);
    seterr(err, n, "%s '%.40s': %s = %s: must be in %s%s, %s]", what, text, name, a,
           lo_open ? "(" : "[", l, h);
    return -1;
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

/* 1 when v lies in the row's range */
static int in_range(const struct params_key_info *k, double v)
{
    if (k->bounds & PARAMS_LO_OPEN ? !(v > k->lo) : !(v >= k->lo))
        return 0;
    if (k->bounds & PARAMS_NO_HI)
        return 1;
    return k->bounds & PARAMS_HI_OPEN ? v < k->hi : v <= k->hi;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return -1;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (*end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "on") || !strcmp(s, "true") || !strcmp(s, "yes")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(s, "0") || !strcmp(s, "off") || !strcmp(s, "false") || !strcmp(s, "no")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* Splits "name(a,b,...)" into name and up to nmax numeric arguments. Returns the number of
 * arguments (0 when there are no parentheses), or -1 on a syntax error; empty parentheses
 * "name()" are an error, so that softmax() never silently means softmax(1). */
static int split_call(const char *s, char *name, size_t nn, double *args, int nmax)
{
    const char *lp = strchr(s, '(');
    size_t len = lp ? (size_t)(lp - s) : strlen(s);
    if (len == 0 || len >= nn)
        return -1;
    memcpy(name, s, len);
    name[len] = 0;
    if (!lp)
        return 0;
    const char *rp = strrchr(s, ')');
    if (!rp || rp < lp || rp[1] || rp == lp + 1)
        return -1;
    int k = 0;
    const char *q = lp + 1;
    while (q < rp) {
        const char *comma = memchr(q, ',', (size_t)(rp - q));
        const char *e = comma ? comma : rp;
        char tmp[64];
        size_t l = (size_t)(e - q);
        if (l == 0 || l >= sizeof tmp || k >= nmax)
            return -1;
        memcpy(tmp, q, l);
        tmp[l] = 0;
        if (parse_double(tmp, &args[k]))
            return -1;
        k++;
        q = comma ? comma + 1 : rp;
        if (comma && q == rp)
            return -1;
    }
    return k;
}

/* The name part of "name(...)" for a suggestion. */
static void call_name(const char *s, char *name, size_t n)
{
    size_t len = strcspn(s, "(");
    if (len >= n)
        len = n - 1;
    memcpy(name, s, len);
    name[len] = 0;
}

int params_parse_act(const char *s, struct act *a, char *err, size_t errlen)
{
    char name[32];
    double args[ACT_MAX_DEGREE + 2];
    int na = split_call(s, name, sizeof name, args, ACT_MAX_DEGREE + 2);
    struct act r;
    memset(&r, 0, sizeof r);
    r.beta = PARAMS_DEFAULT_BETA;
    if (na < 0)
        goto bad;
    if (name[0] == 'h' && name[1] >= '1' && name[1] <= '6' && !name[2] && na == 0 &&
        !strchr(s, '(')) {
        r.kind = ACT_HERMITE;
        r.degree = name[1] - '0';
        r.c[r.degree] = 1.0;
    } else if (!strcmp(name, "hermite")) {
        if (na < 1 || na > ACT_MAX_DEGREE + 1)
            goto bad;
        r.kind = ACT_HERMITE;
        r.degree = -1;
        for (int k = 0; k < na; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "c%d", k);
            if (arg_range("activation", s, nm, args[k], -PARAMS_MAX_COEF, PARAMS_MAX_COEF, 0, err,
                          errlen))
                return -1;
            r.c[k] = args[k];
            if (args[k] != 0.0)
                r.degree = k;
        }
        if (r.degree < 1) {
            seterr(
                err, errlen,
                "activation '%s': a Hermite activation needs a nonzero coefficient of degree >= 1"
                " (hermite(c0,c1,...) = c0 He_0 + c1 He_1 + ...)",
                s);
            return -1;
        }
    } else if (!strcmp(name, "relu") && na == 0 && !strchr(s, '(')) {
        r.kind = ACT_RELU;
    } else if (!strcmp(name, "tanh") && na == 0 && !strchr(s, '(')) {
        r.kind = ACT_TANH;
    } else if (!strcmp(name, "erf") && na == 0 && !strchr(s, '(')) {
        r.kind = ACT_ERF;
    } else if (!strcmp(name, "softmax") && na <= 1) {
        r.kind = ACT_SOFTMAX;
        r.beta = na == 1 ? args[0] : PARAMS_DEFAULT_BETA;
        if (arg_range("activation", s, "softmax beta", r.beta, 0, PARAMS_MAX_BETA, 1, err, errlen))
            return -1;
    } else {
        goto bad;
    }
    *a = r;
    return 0;
bad:
    call_name(s, name, sizeof name);
    seterr(
        err, errlen,
        "activation '%s' is not one of h1..h6, hermite(c0,c1,...) (at most %d coefficients), relu, tanh, erf,"
        " softmax or softmax(beta)",
        s, ACT_MAX_DEGREE + 1);
    if (!strcmp(name, "softmax"))
        seterr(err, errlen,
               "activation '%s': write softmax or softmax(beta) with one number beta > 0", s);
    else if (!strcmp(name, "hermite"))
        seterr(err, errlen, "activation '%s': write hermite(c0,c1,...) with 2 to %d numbers", s,
               ACT_MAX_DEGREE + 1);
    else
        text_suggest(err, errlen, name, act_words);
    return -1;
}

int params_parse_teacher(const char *s, struct teacher_spec *t, char *err, size_t errlen)
{
    char name[32];
    double args[2];
    int na = split_call(s, name, sizeof name, args, 2);
    if (na >= 0 && !strcmp(name, "wishart") && na <= 1) {
        double rho = na == 1 ? args[0] : 0.5;
        if (arg_range("teacher", s, "wishart rho", rho, 0, PARAMS_MAX_RHO, 1, err, errlen))
            return -1;
        t->kind = TEACHER_WISHART;
        t->arg = rho;
        return 0;
    }
    if (na == 0 && !strcmp(name, "goe") && !strchr(s, '(')) {
        t->kind = TEACHER_GOE;
        t->arg = 0;
        return 0;
    }
    if (na == 1 && !strcmp(name, "goe_shift")) {
        if (arg_range("teacher", s, "goe_shift m", args[0], -PARAMS_MAX_COEF, PARAMS_MAX_COEF, 0,
                      err, errlen))
            return -1;
        t->kind = TEACHER_GOE_SHIFT;
        t->arg = args[0];
        return 0;
    }
    if (na == 1 && !strcmp(name, "goe_mean")) {
        t->kind = TEACHER_GOE_MEAN;
        t->arg = args[0] == 0 ? 0.0 : args[0];
        return 0;
    }
    seterr(err, errlen, "teacher '%s' is not one of wishart(rho), goe, goe_shift(m), goe_mean(m)",
           s);
    call_name(s, name, sizeof name);
    if (!strcmp(name, "goe_shift"))
        seterr(err, errlen, "teacher '%s': write goe_shift(m) with one number m", s);
    else if (!strcmp(name, "goe_mean"))
        seterr(err, errlen,
               "teacher '%s': write goe_mean(m) with one number m (the teacher's mean)", s);
    else if (!strcmp(name, "wishart"))
        seterr(err, errlen, "teacher '%s': write wishart or wishart(rho) with one number rho > 0",
               s);
    else
        text_suggest(err, errlen, name, teacher_words);
    return -1;
}

static int parse_solvers(const char *s, unsigned *out, char *err, size_t errlen)
{
    unsigned set = 0;
    char buf[128];
    if (strlen(s) >= sizeof buf) {
        seterr(err, errlen, "solvers: '%.40s...' is too long (comma-separated from sgd, flow, ode)",
               s);
        return -1;
    }
    size_t len = strlen(s);
    memcpy(buf, s, len + 1);
    if (len && (buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,"))) {
        seterr(err, errlen, "solvers: '%s' has an empty item (comma-separated from sgd, flow, ode)",
               s);
        return -1;
    }
    char *save = NULL; /* strtok_r: a caller's own strtok loop over "key=value;..." must survive */
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        unsigned bit = 0;
        for (int i = 0; solver_words[i]; i++)
            if (!strcmp(tok, solver_words[i]))
                bit = 1u << i;
        if (!bit) {
            seterr(err, errlen, "solvers: '%s' is not a solver (sgd, flow, ode)", tok);
            text_suggest(err, errlen, tok, solver_words);
            return -1;
        }
        if (set & bit) {
            seterr(err, errlen, "solvers: '%s' is named twice in '%s'", tok, s);
            return -1;
        }
        set |= bit;
    }
    if (!set) {
        seterr(err, errlen, "solvers: name at least one of sgd, flow, ode");
        return -1;
    }
    *out = set;
    return 0;
}

/* lr_schedule: constant | two_phase(eta1,t_switch) */
static int parse_lr_schedule(struct params *p, const char *value, char *err, size_t errlen)
{
    char name[32];
    double args[2];
    int na = split_call(value, name, sizeof name, args, 2);
    if (na == 0 && !strcmp(name, "constant") && !strchr(value, '(')) {
        p->lr_schedule.kind = LR_CONSTANT;
        p->lr_schedule.eta1 = p->lr_schedule.t_switch = 0;
        return 0;
    }
    if (na == 2 && !strcmp(name, "two_phase")) {
        p->lr_schedule.kind = LR_TWO_PHASE;
        p->lr_schedule.eta1 = args[0];
        p->lr_schedule.t_switch = args[1];
        return 0;
    }
    seterr(err, errlen, "lr_schedule: '%s' is not constant or two_phase(eta1,t_switch)", value);
    call_name(value, name, sizeof name);
    text_suggest(err, errlen, name, lr_schedule_words);
    return -1;
}

/* log_grid: on | off | a start tau > 0 (which turns the log grid on) */
static int parse_log_grid(struct params *p, const char *value, char *err, size_t errlen)
{
    int b;
    double v;
    if (!parse_bool(value, &b)) {
        p->log_grid = b;
        p->log_start = 0;
        return 0;
    }
    if (!parse_double(value, &v) && v > 0) {
        p->log_grid = 1;
        p->log_start = v;
        return 0;
    }
    seterr(err, errlen,
           "log_grid: '%s' is not on, off or a start tau > 0 (the first record time after 0)",
           value);
    return -1;
}

int params_set(struct params *p, const char *key, const char *value, char *err, size_t errlen)
{
    const struct params_key_info *k = params_key_info(key);
    char allowed[160];
    char *base = (char *)p;
    if (!k) {
        char hint[96];
        seterr(err, errlen, "unknown parameter '%s'%s (the keys of aimsweep single --help)", key,
               params_suggest_key(key, hint, sizeof hint));
        return -1;
    }
    params_allowed(k, allowed, sizeof allowed);
    if (!value) {
        seterr(err, errlen, "%s: missing value (%s)", k->key, allowed);
        return -1;
    }
    const char *v = value;
    while (isspace((unsigned char)*v))
        v++;
    if (!*v) {
        seterr(err, errlen, "%s: empty value (%s)", k->key, allowed);
        return -1;
    }
    switch (k->type) {
        case PARAMS_ENUM:
            for (int i = 0; k->choices[i]; i++)
                if (!strcmp(value, k->choices[i])) {
                    memcpy(base + k->offset, &i, sizeof i);
                    return 0;
                }
            seterr(err, errlen, "%s: '%s' is not one of %s", k->key, value, allowed);
            text_suggest(err, errlen, value, k->choices);
            return -1;
        case PARAMS_BOOL: {
            int b;
            if (parse_bool(value, &b)) {
                seterr(err, errlen, "%s: '%s' is not on or off (also 1/0, true/false, yes/no)",
                       k->key, value);
                return -1;
            }
            memcpy(base + k->offset, &b, sizeof b);
            return 0;
        }
        case PARAMS_INT:
        case PARAMS_SEED:
        case PARAMS_REAL: {
            double x;
            if (parse_double(value, &x)) {
                seterr(err, errlen, "%s: '%s' is not a number (%s)", k->key, value, allowed);
                return -1;
            }
            if (k->type != PARAMS_REAL && x != floor(x)) {
                seterr(err, errlen, "%s = %s: not an integer (%s)", k->key, value, allowed);
                return -1;
            }
            if (!in_range(k, x)) {
                seterr(err, errlen, "%s = %s: must be %s", k->key, value, allowed);
                return -1;
            }
            if (k->type == PARAMS_INT) {
                int iv = (int)x;
                memcpy(base + k->offset, &iv, sizeof iv);
            } else if (k->type == PARAMS_SEED) {
                uint64_t sv = (uint64_t)x;
                memcpy(base + k->offset, &sv, sizeof sv);
            } else {
                double z = x == 0 ? 0.0 : x; /* -0 and 0 are one point */
                memcpy(base + k->offset, &z, sizeof z);
            }
            return 0;
        }
        case PARAMS_TEXT:
            if (!strcmp(k->key, "activation"))
                return params_parse_act(value, &p->activation, err, errlen);
            if (!strcmp(k->key, "teacher"))
                return params_parse_teacher(value, &p->teacher, err, errlen);
            if (!strcmp(k->key, "solvers"))
                return parse_solvers(value, &p->solvers, err, errlen);
            if (!strcmp(k->key, "log_grid"))
                return parse_log_grid(p, value, err, errlen);
            if (!strcmp(k->key, "lr_schedule"))
                return parse_lr_schedule(p, value, err, errlen);
            break;
    }
    seterr(err, errlen, "%s: no parser for this key", k->key);
    return -1;
}

int params_validate(const struct params *p, char *err, size_t errlen)
{
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        seterr(err, errlen, __VA_ARGS__);                                                          \
        return -1;                                                                                 \
    } while (0)
    char allowed[160], val[TEXT_DOUBLE_MAX];
    /* every range from the table, so that a point built in code meets the same rules */
    for (int i = 0; params_info[i].key; i++) {
        const struct params_key_info *k = &params_info[i];
        double x;
        if (params_number(p, k->key, &x) == 0 && !in_range(k, x)) {
            text_double(x, val, sizeof val);
            FAIL("%s = %s: must be %s", k->key, val, params_allowed(k, allowed, sizeof allowed));
        }
    }
    char v2[TEXT_DOUBLE_MAX];
    if (params_rank(p) > PARAMS_MAX_RANK_PER_D * p->d) {
        text_double(p->width, val, sizeof val);
        FAIL("width = %s: the rank r = round(width d) must be <= %d d", val, PARAMS_MAX_RANK_PER_D);
    }
    if (p->teacher.kind == TEACHER_WISHART && (int)lround(p->teacher.arg * p->d) < 1) {
        text_double(p->teacher.arg, val, sizeof val);
        text_double(0.5 / p->d, v2, sizeof v2);
        FAIL(
            "teacher wishart(%s): its rank round(rho d) = %ld must be >= 1: at d = %d use rho >= %s",
            val, lround(p->teacher.arg * p->d), p->d, v2);
    }
    if (p->activation.kind == ACT_SOFTMAX &&
        !(p->activation.beta > 0 && p->activation.beta <= PARAMS_MAX_BETA)) {
        text_double(p->activation.beta, val, sizeof val);
        FAIL("activation softmax(%s): beta must be in (0, %g]", val, PARAMS_MAX_BETA);
    }
    if (p->teacher.kind == TEACHER_WISHART && !(p->teacher.arg <= PARAMS_MAX_RHO)) {
        text_double(p->teacher.arg, val, sizeof val);
        FAIL("teacher wishart(%s): rho must be in (0, %g]", val, PARAMS_MAX_RHO);
    }
    /* before the sample count below, which counts the first phase's steps */
    if (p->lr_schedule.kind == LR_TWO_PHASE && p->lr_schedule.eta1 > 0 &&
        p->lr_schedule.t_switch > 0 &&
        !(p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1 <= PARAMS_MAX_SWITCH_STEPS)) {
        text_double(p->lr_schedule.eta1, val, sizeof val);
        text_double(p->lr_schedule.t_switch, v2, sizeof v2);
        FAIL(
            "lr_schedule two_phase(%s,%s): the first phase would take t_switch d/eta1 = %g steps (at most "
            "1e15); raise eta1 or lower t_switch",
            val, v2, p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1);
    }
    if (p->solvers & SOLVER_SGD) {
        /* the number of samples is counted (n = tau d^2 / lr) and must be a real, exact count */
        double n = params_samples(p, p->tau_end);
        text_double(p->lr, val, sizeof val);
        text_double(p->tau_end, v2, sizeof v2);
        if (!(n >= 1))
            FAIL(
                "lr = %s, tau_end = %s: SGD would take tau_end d^2 / lr = %.3g samples (at least 1 needed); "
                "raise tau_end or lower lr",
                val, v2, n);
        if (!(n <= PARAMS_MAX_SAMPLES))
            FAIL(
                "lr = %s, tau_end = %s: SGD would take tau_end d^2 / lr = %.3g samples, more than the limit "
                "2^53 = %.3g; lower tau_end or raise lr",
                val, v2, n, PARAMS_MAX_SAMPLES);
        /* weight decay multiplies the parameters by 1 - lambda lr / d^2 each step */
        if (!(p->weight_decay * p->lr < (double)p->d * p->d)) {
            text_double(p->weight_decay, v2, sizeof v2);
            FAIL(
                "weight_decay = %s, lr = %s: an SGD step multiplies the parameters by 1 - weight_decay lr / d^2 "
                "= %.3g, which must stay > 0 (weight_decay lr < d^2 = %d)",
                v2, val, 1 - p->weight_decay * p->lr / ((double)p->d * p->d), p->d * p->d);
        }
    }
    if ((p->solvers & SOLVER_FLOW) && p->weight_decay * p->tau_end > PARAMS_MAX_FLOW_STIFFNESS) {
        text_double(p->weight_decay, val, sizeof val);
        text_double(p->tau_end, v2, sizeof v2);
        FAIL(
            "weight_decay = %s, tau_end = %s: the flow would need at least weight_decay tau_end = %.3g steps "
            "(at most %.0e); lower either, or drop flow from solvers",
            val, v2, p->weight_decay * p->tau_end, PARAMS_MAX_FLOW_STIFFNESS);
    }
    if ((p->solvers & SOLVER_ODE) && p->decomposition == DECOMP_UNTIED &&
        p->order_m > PARAMS_MAX_ORDER_UNTIED)
        FAIL(
            "order_m = %d: the untied moment ODE supports order_m up to %d (order 7 alone takes ~30 s and "
            "~330 MB to build its word system)",
            p->order_m, PARAMS_MAX_ORDER_UNTIED);
    if ((p->solvers & SOLVER_ODE) && p->decomposition == DECOMP_UNTIED &&
        p->index == INDEX_UNCENTRED && p->ode_mean == ODE_MEAN_STIFF &&
        p->order_m > PARAMS_MAX_ORDER_UNTIED_MEAN)
        FAIL(
            "order_m = %d with index uncentred: the stiff untied moment ODE supports order_m up to %d (order 5 "
            "has 492 states, each Jacobian of the implicit stepper costs 984 right-hand sides, and its moments "
            "leave the positive cone at strong recovery: the run stops there); use order_m 3 or 4, or "
            "ode_mean slaved",
            p->order_m, PARAMS_MAX_ORDER_UNTIED_MEAN);
    if (p->log_grid && p->log_start > 0 && !(p->log_start < p->tau_end)) {
        text_double(p->log_start, val, sizeof val);
        text_double(p->tau_end, v2, sizeof v2);
        FAIL("log_grid = %s: the start of the log grid must be below tau_end = %s", val, v2);
    }
    if ((p->closure == CLOSURE_SPECTRAL || p->closure == CLOSURE_SPECTRAL_MP) &&
        p->decomposition != DECOMP_TIED)
        FAIL(
            "closure %s exists for tied only, not %s (untied: free_cumulant, freeze, zero, free_residual, flat, auto)",
            params_closure_name(p->closure), params_decomp_name(p->decomposition));
    if (p->init_scale == 0 && p->decomposition != DECOMP_DIRECT)
        FAIL("init_scale = 0 is a fixed point of %s SGD: use a positive scale",
             params_decomp_name(p->decomposition));
    /* docs/model.md §10-11 */
    if (p->index == INDEX_UNCENTRED && p->decomposition == DECOMP_TIED)
        FAIL(
            "index uncentred with tied: S = W W^T/kappa >= 0 has Tr S/sqrt(d) = s0^2 sqrt(r), not O(1), so "
            "the mean has no limit; use index centred, or direct or untied");
    if (p->outputs == OUTPUTS_ALL && p->activation.kind == ACT_SOFTMAX)
        FAIL(
            "outputs all with softmax: softmax rows always include the diagonal; outputs applies to "
            "elementwise activations (leave it at offdiag)");
    if (p->init_trace != 0 && p->decomposition != DECOMP_DIRECT) {
        text_double(p->init_trace, val, sizeof val);
        FAIL("init_trace = %s: exists for direct only (tied and untied start from factors), not %s",
             val, params_decomp_name(p->decomposition));
    }
    if (p->init == INIT_ORTHOGONAL && p->decomposition == DECOMP_DIRECT)
        FAIL(
            "init orthogonal: exists for tied and untied (orthogonal columns of W, U, V), not direct");
    if (p->init == INIT_ORTHOGONAL && params_rank(p) > p->d) {
        text_double(p->width, val, sizeof val);
        FAIL(
            "init orthogonal with width = %s: r = %d columns in R^%d cannot be orthogonal; use width <= 1",
            val, params_rank(p), p->d);
    }
    if (p->lr_schedule.kind == LR_TWO_PHASE &&
        !(p->lr_schedule.eta1 > 0 && p->lr_schedule.eta1 <= PARAMS_MAX_LR &&
          p->lr_schedule.t_switch > 0)) {
        text_double(p->lr_schedule.eta1, val, sizeof val);
        text_double(p->lr_schedule.t_switch, v2, sizeof v2);
        FAIL("lr_schedule two_phase(%s,%s): needs 0 < eta1 <= 1000 and t_switch > 0", val, v2);
    }
    if (p->teacher.kind == TEACHER_GOE_MEAN && !(p->teacher.arg * p->teacher.arg < p->d)) {
        text_double(p->teacher.arg, val, sizeof val);
        FAIL(
            "teacher goe_mean(%s): needs m^2 < d (the shift m/sqrt(d) I alone has Tr(S*^2)/d = m^2/d, and the "
            "teacher is normalised to 1)",
            val);
    }
    if ((p->solvers & SOLVER_ODE) && p->ode_noise && params_general_index(p) &&
        p->activation.kind == ACT_SOFTMAX)
        FAIL(
            "ode_noise on with softmax and the general index: the O(eta) noise drift needs E[D_ab D_a'b'] over "
            "entries of different rows, which correlate when token_corr != 0, and softmax's D is a function of a "
            "whole row (derived for elementwise activations only); use ode_noise off");
    if (p->init == INIT_ORTHOGONAL && (p->solvers & SOLVER_ODE) &&
        p->closure == CLOSURE_SPECTRAL_MP)
        FAIL(
            "closure spectral_mp with init orthogonal: the Marchenko-Pastur law is the spectrum of the "
            "Gaussian start; use closure spectral (the run's own spectrum)");
#undef FAIL
    return 0;
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
double params_samples_per_tau(const struct params *p) { return (double)p->d * p->d / p->lr; }

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

double params_samples(const struct params *p, double tau)
{
    if (p->lr_schedule.kind != LR_TWO_PHASE)
        return tau * params_samples_per_tau(p);
    double eta1 = p->lr_schedule.eta1;
    if (tau <= params_switch_tau(p))
        return tau * ((double)p->d * p->d / eta1);
    return tau * params_samples_per_tau(p) + (double)params_switch_steps(p) * (1.0 - eta1 / p->lr);
}

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
        case TEACHER_GOE_MEAN: snprintf(buf, n, "goe_mean(%s)", v); return;
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

void params_lr_schedule_name(const struct lr_schedule *s, char *buf, size_t n)
{
    lr_schedule_name(s, buf, n, 0);
}

const char *params_index_name(enum index_kind k) { return index_words[k == INDEX_UNCENTRED]; }
const char *params_outputs_name(enum outputs_kind k) { return outputs_words[k == OUTPUTS_ALL]; }
const char *params_init_name(enum init_kind k) { return init_words[k == INIT_ORTHOGONAL]; }
const char *params_ode_mean_name(enum ode_mean_kind k)
{
    return ode_mean_words[k == ODE_MEAN_SLAVED];
}

int params_general_index(const struct params *p)
{
    return p->token_corr != 0 || p->index != INDEX_CENTRED || p->outputs != OUTPUTS_OFFDIAG;
}

void params_act_name(const struct act *a, char *buf, size_t n) { act_name(a, buf, n, 0); }

void params_teacher_name(const struct teacher_spec *t, char *buf, size_t n)
{
    teacher_name(t, buf, n, 0);
}

void params_solvers_name(unsigned s, char *buf, size_t n)
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
                params_solvers_name(p->solvers, buf, n);
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
