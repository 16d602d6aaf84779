/*
 * params.c: defaults, text parsing, validation and the canonical form of a grid point.
 *
 * Every value goes through params_set, whether it comes from a command-line flag or a sweep
 * file, so the two accept the same spellings. Numbers are written back with "%.17g", which
 * round-trips a double exactly: the canonical text of "0.050" and "5e-2" is the same.
 *
 * The keys of MODEL.md §10-11 (from token_corr on in params_keys) came after the first
 * databases: the canonical text names them only where they differ from their default, so that
 * every task id computed before them is still the id of the same point.
 */
#include "aimsweep/base/params.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
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
#define PARAMS_MAX_D 100000
#define PARAMS_MAX_RECORDS 1000000
#define PARAMS_MAX_ORDER 16

const char *const params_keys[] = {
    "decomposition", "activation", "d", "lr", "init_scale", "tokens", "teacher", "width",
    "weight_decay", "tau_end", "records", "log_grid", "seed", "solvers", "recovery_threshold",
    "order_m", "closure", "ode_noise",
    /* MODEL.md §10-11: written only where not at their default */
    "token_corr", "index", "outputs", "lr_schedule", "init", "init_trace", "ode_mean", NULL};
#define PARAMS_FIRST_OPTIONAL "token_corr"
/* token_corr must stay below 1: C = (1 - c) I + c 1 1^T is singular at c = 1. */
#define PARAMS_MAX_TOKEN_CORR 1.0
/* The most SGD steps a two_phase first phase may take (t_switch d / eta1): beyond it the step
 * count would not fit a long; no run gets near it. */
#define PARAMS_MAX_SWITCH_STEPS 1e15

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

static void seterr(char *err, size_t n, const char *fmt, const char *a, const char *b)
{
    if (err && n)
        snprintf(err, n, fmt, a, b);
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

int params_is_key(const char *key)
{
    char k[64];
    norm_key(key, k, sizeof k);
    for (int i = 0; params_keys[i]; i++)
        if (!strcmp(params_keys[i], k))
            return 1;
    return 0;
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

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    double v;
    if (parse_double(s, &v) || v != floor(v) || v < (double)lo || v > (double)hi)
        return -1;
    *out = (long long)v;
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
 * arguments (0 when there are no parentheses), or -1 on a syntax error. */
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
    if (!rp || rp < lp || rp[1])
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
    if (name[0] == 'h' && name[1] >= '1' && name[1] <= '6' && !name[2] && na == 0) {
        r.kind = ACT_HERMITE;
        r.degree = name[1] - '0';
        r.c[r.degree] = 1.0;
    } else if (!strcmp(name, "hermite")) {
        if (na < 1 || na > ACT_MAX_DEGREE + 1)
            goto bad;
        r.kind = ACT_HERMITE;
        r.degree = -1;
        for (int k = 0; k < na; k++) {
            r.c[k] = args[k];
            if (args[k] != 0.0)
                r.degree = k;
        }
        if (r.degree < 1) {
            seterr(err, errlen, "activation '%s': a Hermite activation needs a nonzero coefficient of degree >= 1%s", s, "");
            return -1;
        }
    } else if (!strcmp(name, "relu") && na == 0) {
        r.kind = ACT_RELU;
    } else if (!strcmp(name, "tanh") && na == 0) {
        r.kind = ACT_TANH;
    } else if (!strcmp(name, "erf") && na == 0) {
        r.kind = ACT_ERF;
    } else if (!strcmp(name, "softmax") && na <= 1) {
        r.kind = ACT_SOFTMAX;
        r.beta = na == 1 ? args[0] : PARAMS_DEFAULT_BETA;
        if (!(r.beta > 0)) {
            seterr(err, errlen, "activation '%s': softmax(beta) needs beta > 0%s", s, "");
            return -1;
        }
    } else {
        goto bad;
    }
    *a = r;
    return 0;
bad:
    seterr(err, errlen,
           "activation '%s' is not one of h1..h6, hermite(c0,c1,...) (at most %s coefficients), relu, tanh, erf, softmax(beta)",
           s, "9");
    return -1;
}

int params_parse_teacher(const char *s, struct teacher_spec *t, char *err, size_t errlen)
{
    char name[32];
    double args[2];
    int na = split_call(s, name, sizeof name, args, 2);
    if (na >= 0 && !strcmp(name, "wishart") && na <= 1) {
        t->kind = TEACHER_WISHART;
        t->arg = na == 1 ? args[0] : 0.5;
        if (!(t->arg > 0)) {
            seterr(err, errlen, "teacher '%s': wishart(rho) needs rho > 0%s", s, "");
            return -1;
        }
        return 0;
    }
    if (na == 0 && !strcmp(name, "goe")) {
        t->kind = TEACHER_GOE;
        t->arg = 0;
        return 0;
    }
    if (na == 1 && !strcmp(name, "goe_shift")) {
        t->kind = TEACHER_GOE_SHIFT;
        t->arg = args[0];
        return 0;
    }
    if (na == 1 && !strcmp(name, "goe_mean")) {
        t->kind = TEACHER_GOE_MEAN;
        t->arg = args[0] == 0 ? 0.0 : args[0];
        return 0;
    }
    seterr(err, errlen, "teacher '%s' is not one of wishart(rho), goe, goe_shift(m), goe_mean(m)%s", s, "");
    return -1;
}

static int parse_solvers(const char *s, unsigned *out)
{
    unsigned set = 0;
    char buf[128];
    size_t n = strlen(s);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n + 1);
    char *save = NULL; /* strtok_r: a caller's own strtok loop over "key=value;..." must survive */
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        if (!strcmp(tok, "sgd"))
            set |= SOLVER_SGD;
        else if (!strcmp(tok, "flow"))
            set |= SOLVER_FLOW;
        else if (!strcmp(tok, "ode"))
            set |= SOLVER_ODE;
        else
            return -1;
    }
    if (!set)
        return -1;
    *out = set;
    return 0;
}

int params_set(struct params *p, const char *key, const char *value, char *err, size_t errlen)
{
    char k[64];
    norm_key(key, k, sizeof k);
    double v;
    long long iv;
    if (!value) {
        seterr(err, errlen, "%s: missing value%s", key, "");
        return -1;
    }
    if (!strcmp(k, "decomposition")) {
        if (!strcmp(value, "direct"))
            p->decomposition = DECOMP_DIRECT;
        else if (!strcmp(value, "tied"))
            p->decomposition = DECOMP_TIED;
        else if (!strcmp(value, "untied"))
            p->decomposition = DECOMP_UNTIED;
        else
            goto bad;
        return 0;
    }
    if (!strcmp(k, "activation"))
        return params_parse_act(value, &p->activation, err, errlen);
    if (!strcmp(k, "teacher"))
        return params_parse_teacher(value, &p->teacher, err, errlen);
    if (!strcmp(k, "solvers")) {
        if (parse_solvers(value, &p->solvers))
            goto bad;
        return 0;
    }
    if (!strcmp(k, "closure")) {
        if (!strcmp(value, "auto"))
            p->closure = CLOSURE_AUTO;
        else if (!strcmp(value, "free_cumulant"))
            p->closure = CLOSURE_FREE_CUMULANT;
        else if (!strcmp(value, "freeze"))
            p->closure = CLOSURE_FREEZE;
        else if (!strcmp(value, "zero"))
            p->closure = CLOSURE_ZERO;
        else if (!strcmp(value, "spectral"))
            p->closure = CLOSURE_SPECTRAL;
        else if (!strcmp(value, "spectral_mp"))
            p->closure = CLOSURE_SPECTRAL_MP;
        else if (!strcmp(value, "free_residual"))
            p->closure = CLOSURE_FREE_RESIDUAL;
        else if (!strcmp(value, "flat"))
            p->closure = CLOSURE_FLAT;
        else
            goto bad;
        return 0;
    }
    if (!strcmp(k, "index")) {
        if (!strcmp(value, "centred") || !strcmp(value, "centered"))
            p->index = INDEX_CENTRED;
        else if (!strcmp(value, "uncentred") || !strcmp(value, "uncentered"))
            p->index = INDEX_UNCENTRED;
        else {
            seterr(err, errlen, "index: bad value '%s' (centred or uncentred)", value, "");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "outputs")) {
        if (!strcmp(value, "offdiag"))
            p->outputs = OUTPUTS_OFFDIAG;
        else if (!strcmp(value, "all"))
            p->outputs = OUTPUTS_ALL;
        else {
            seterr(err, errlen, "outputs: bad value '%s' (offdiag or all)", value, "");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "init")) {
        if (!strcmp(value, "gaussian"))
            p->init = INIT_GAUSSIAN;
        else if (!strcmp(value, "orthogonal"))
            p->init = INIT_ORTHOGONAL;
        else {
            seterr(err, errlen, "init: bad value '%s' (gaussian or orthogonal)", value, "");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "ode_mean")) {
        if (!strcmp(value, "stiff"))
            p->ode_mean = ODE_MEAN_STIFF;
        else if (!strcmp(value, "slaved"))
            p->ode_mean = ODE_MEAN_SLAVED;
        else {
            seterr(err, errlen, "ode_mean: bad value '%s' (stiff or slaved)", value, "");
            return -1;
        }
        return 0;
    }
    if (!strcmp(k, "lr_schedule")) {
        char name[32];
        double args[2];
        int na = split_call(value, name, sizeof name, args, 2);
        if (na == 0 && !strcmp(name, "constant")) {
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
        seterr(err, errlen, "lr_schedule: bad value '%s' (constant or two_phase(eta1,t_switch))", value, "");
        return -1;
    }
    if (!strcmp(k, "ode_noise") || !strcmp(k, "log_grid")) {
        int b;
        if (parse_bool(value, &b))
            goto bad;
        *(!strcmp(k, "ode_noise") ? &p->ode_noise : &p->log_grid) = b;
        return 0;
    }
    if (!strcmp(k, "d") || !strcmp(k, "tokens") || !strcmp(k, "records") || !strcmp(k, "order_m")) {
        if (parse_int(value, -(1LL << 40), 1LL << 40, &iv))
            goto bad;
        if (iv < -1000000000LL || iv > 1000000000LL)
            goto bad;
        int *dst = !strcmp(k, "d") ? &p->d : !strcmp(k, "tokens") ? &p->tokens
                   : !strcmp(k, "records") ? &p->records : &p->order_m;
        *dst = (int)iv;
        return 0;
    }
    if (!strcmp(k, "seed")) {
        if (parse_int(value, 0, (1LL << 53), &iv))
            goto bad;
        p->seed = (uint64_t)iv;
        return 0;
    }
    double *dst = !strcmp(k, "lr") ? &p->lr
                  : !strcmp(k, "init_scale") ? &p->init_scale
                  : !strcmp(k, "width") ? &p->width
                  : !strcmp(k, "weight_decay") ? &p->weight_decay
                  : !strcmp(k, "tau_end") ? &p->tau_end
                  : !strcmp(k, "recovery_threshold") ? &p->recovery_threshold
                  : !strcmp(k, "token_corr") ? &p->token_corr
                  : !strcmp(k, "init_trace") ? &p->init_trace : NULL;
    if (!dst) {
        seterr(err, errlen, "unknown parameter '%s'%s", key, "");
        return -1;
    }
    if (parse_double(value, &v))
        goto bad;
    *dst = v == 0 ? 0.0 : v; /* -0 and 0 are one point */
    return 0;
bad:
    seterr(err, errlen, "%s: bad value '%s'", key, value);
    return -1;
}

int params_validate(const struct params *p, char *err, size_t errlen)
{
#define FAIL(...)                                                                               \
    do {                                                                                        \
        if (err && errlen)                                                                      \
            snprintf(err, errlen, __VA_ARGS__);                                                 \
        return -1;                                                                              \
    } while (0)
    if (p->d < 2 || p->d > PARAMS_MAX_D)
        FAIL("d = %d: must be between 2 and %d", p->d, PARAMS_MAX_D);
    if (!(p->lr > 0))
        FAIL("lr = %g: must be > 0", p->lr);
    if (!(p->init_scale >= 0))
        FAIL("init_scale = %g: must be >= 0", p->init_scale);
    if (p->tokens < 2 || p->tokens > PARAMS_MAX_TOKENS)
        FAIL("tokens = %d: must be between 2 and %d", p->tokens, PARAMS_MAX_TOKENS);
    if (!(p->width > 0) || params_rank(p) > 4 * p->d)
        FAIL("width = %g: must be > 0 and give a rank r = round(width d) <= 4d", p->width);
    if (!(p->weight_decay >= 0))
        FAIL("weight_decay = %g: must be >= 0", p->weight_decay);
    if (!(p->tau_end > 0))
        FAIL("tau_end = %g: must be > 0", p->tau_end);
    if (p->records < 1 || p->records > PARAMS_MAX_RECORDS)
        FAIL("records = %d: must be between 1 and %d", p->records, PARAMS_MAX_RECORDS);
    if (!(p->recovery_threshold > 0 && p->recovery_threshold <= 1))
        FAIL("recovery_threshold = %g: must be in (0, 1]", p->recovery_threshold);
    if (p->order_m < 1 || p->order_m > PARAMS_MAX_ORDER)
        FAIL("order_m = %d: must be between 1 and %d", p->order_m, PARAMS_MAX_ORDER);
    if (p->teacher.kind == TEACHER_WISHART && (int)lround(p->teacher.arg * p->d) < 1)
        FAIL("teacher wishart(%g): rank round(rho d) must be >= 1", p->teacher.arg);
    if ((p->closure == CLOSURE_SPECTRAL || p->closure == CLOSURE_SPECTRAL_MP) &&
        p->decomposition != DECOMP_TIED)
        FAIL("closure %s exists for tied only, not %s", params_closure_name(p->closure),
             params_decomp_name(p->decomposition));
    if (p->init_scale == 0 && p->decomposition != DECOMP_DIRECT)
        FAIL("init_scale = 0 is a fixed point of %s SGD: use a positive scale",
             params_decomp_name(p->decomposition));
    /* MODEL.md §10-11 */
    if (!(p->token_corr >= 0 && p->token_corr < PARAMS_MAX_TOKEN_CORR))
        FAIL("token_corr = %g: must be in [0, 1) (C = (1 - c) I + c 1 1^T is singular at c = 1)",
             p->token_corr);
    if (p->index == INDEX_UNCENTRED && p->decomposition == DECOMP_TIED)
        FAIL("index uncentred with tied: S = W W^T/kappa >= 0 has Tr S/sqrt(d) = s0^2 sqrt(r), not O(1), so "
             "the mean has no limit; use index centred, or direct or untied");
    if (p->outputs == OUTPUTS_ALL && p->activation.kind == ACT_SOFTMAX)
        FAIL("outputs all with softmax: softmax rows always include the diagonal; outputs applies to "
             "elementwise activations (leave it at offdiag)");
    if (p->init_trace != 0 && p->decomposition != DECOMP_DIRECT)
        FAIL("init_trace = %g: exists for direct only (tied and untied start from factors), not %s",
             p->init_trace, params_decomp_name(p->decomposition));
    if (p->init == INIT_ORTHOGONAL && p->decomposition == DECOMP_DIRECT)
        FAIL("init orthogonal: exists for tied and untied (orthogonal columns of W, U, V), not direct%s", "");
    if (p->init == INIT_ORTHOGONAL && params_rank(p) > p->d)
        FAIL("init orthogonal with width = %g: r = %d columns in R^%d cannot be orthogonal; use width <= 1",
             p->width, params_rank(p), p->d);
    if (p->lr_schedule.kind == LR_TWO_PHASE &&
        !(p->lr_schedule.eta1 > 0 && p->lr_schedule.t_switch > 0))
        FAIL("lr_schedule two_phase(%g,%g): needs eta1 > 0 and t_switch > 0", p->lr_schedule.eta1,
             p->lr_schedule.t_switch);
    if (p->lr_schedule.kind == LR_TWO_PHASE &&
        !(p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1 <= PARAMS_MAX_SWITCH_STEPS))
        FAIL("lr_schedule two_phase(%g,%g): the first phase would take t_switch d/eta1 = %g steps (at most "
             "1e15); raise eta1 or lower t_switch", p->lr_schedule.eta1, p->lr_schedule.t_switch,
             p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1);
    if (p->teacher.kind == TEACHER_GOE_MEAN && !(p->teacher.arg * p->teacher.arg < p->d))
        FAIL("teacher goe_mean(%g): needs m^2 < d (the shift m/sqrt(d) I alone has Tr(S*^2)/d = m^2/d, and the "
             "teacher is normalised to 1)", p->teacher.arg);
    if (p->init == INIT_ORTHOGONAL && (p->solvers & SOLVER_ODE) && p->closure == CLOSURE_SPECTRAL_MP)
        FAIL("closure spectral_mp with init orthogonal: the Marchenko-Pastur law is the spectrum of the "
             "Gaussian start; use closure spectral (the run's own spectrum)%s", "");
    if ((p->solvers & SOLVER_ODE) && p->decomposition == DECOMP_TIED && params_general_index(p))
        FAIL("the moment ODE for tied handles token_corr 0, index centred and outputs offdiag only (direct and "
             "untied have the general index); drop ode from solvers (sgd and flow handle it)%s", "");
    if ((p->solvers & SOLVER_ODE) && p->ode_noise && params_general_index(p))
        FAIL("ode_noise on with the general index: the O(eta) noise drift is derived for token_corr 0, centred, "
             "offdiag only; use ode_noise off%s", "");
#undef FAIL
    return 0;
}

int params_rank(const struct params *p)
{
    long r = lround(p->width * p->d);
    return r < 1 ? 1 : (int)r;
}

/* The learning-rate schedule (MODEL.md §4, §11). two_phase(eta1, t_switch): step i (from 0)
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
    if (p->lr_schedule.kind != LR_TWO_PHASE)
        return 0;
    return (long)ceil(p->lr_schedule.t_switch * p->d / p->lr_schedule.eta1);
}

double params_switch_tau(const struct params *p)
{
    if (p->lr_schedule.kind != LR_TWO_PHASE)
        return INFINITY;
    return (double)params_switch_steps(p) * p->lr_schedule.eta1 / ((double)p->d * p->d);
}

double params_rate(const struct params *p, double tau)
{
    return p->lr_schedule.kind == LR_TWO_PHASE && tau < params_switch_tau(p) ? p->lr_schedule.eta1 : p->lr;
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
    switch (d) {
    case DECOMP_DIRECT: return "direct";
    case DECOMP_TIED: return "tied";
    case DECOMP_UNTIED: return "untied";
    }
    return "?";
}

const char *params_closure_name(enum closure c)
{
    switch (c) {
    case CLOSURE_AUTO: return "auto";
    case CLOSURE_FREE_CUMULANT: return "free_cumulant";
    case CLOSURE_FREEZE: return "freeze";
    case CLOSURE_ZERO: return "zero";
    case CLOSURE_SPECTRAL: return "spectral";
    case CLOSURE_SPECTRAL_MP: return "spectral_mp";
    case CLOSURE_FREE_RESIDUAL: return "free_residual";
    case CLOSURE_FLAT: return "flat";
    }
    return "?";
}

void params_act_name(const struct act *a, char *buf, size_t n)
{
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
        for (int k = 0; k <= a->degree && used < n; k++)
            used += (size_t)snprintf(buf + used, n - used, "%s%.17g", k ? "," : "", a->c[k]);
        if (used < n)
            snprintf(buf + used, n - used, ")");
        return;
    }
    case ACT_RELU: snprintf(buf, n, "relu"); return;
    case ACT_TANH: snprintf(buf, n, "tanh"); return;
    case ACT_ERF: snprintf(buf, n, "erf"); return;
    case ACT_SOFTMAX: snprintf(buf, n, "softmax(%.17g)", a->beta); return;
    }
}

void params_teacher_name(const struct teacher_spec *t, char *buf, size_t n)
{
    switch (t->kind) {
    case TEACHER_WISHART: snprintf(buf, n, "wishart(%.17g)", t->arg); return;
    case TEACHER_GOE: snprintf(buf, n, "goe"); return;
    case TEACHER_GOE_SHIFT: snprintf(buf, n, "goe_shift(%.17g)", t->arg); return;
    case TEACHER_GOE_MEAN: snprintf(buf, n, "goe_mean(%.17g)", t->arg); return;
    }
}

const char *params_index_name(enum index_kind k) { return k == INDEX_UNCENTRED ? "uncentred" : "centred"; }
const char *params_outputs_name(enum outputs_kind k) { return k == OUTPUTS_ALL ? "all" : "offdiag"; }
const char *params_init_name(enum init_kind k) { return k == INIT_ORTHOGONAL ? "orthogonal" : "gaussian"; }
const char *params_ode_mean_name(enum ode_mean_kind k) { return k == ODE_MEAN_SLAVED ? "slaved" : "stiff"; }

void params_lr_schedule_name(const struct lr_schedule *s, char *buf, size_t n)
{
    if (s->kind == LR_TWO_PHASE)
        snprintf(buf, n, "two_phase(%.17g,%.17g)", s->eta1, s->t_switch);
    else
        snprintf(buf, n, "constant");
}

int params_general_index(const struct params *p)
{
    return p->token_corr != 0 || p->index != INDEX_CENTRED || p->outputs != OUTPUTS_OFFDIAG;
}

void params_solvers_name(unsigned s, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s", s & SOLVER_SGD ? "sgd" : "",
             (s & SOLVER_SGD) && (s & (SOLVER_FLOW | SOLVER_ODE)) ? "," : "",
             s & SOLVER_FLOW ? "flow" : "", (s & SOLVER_FLOW) && (s & SOLVER_ODE) ? "," : "",
             s & SOLVER_ODE ? "ode" : "");
}

int params_get(const struct params *p, const char *key, char *buf, size_t n)
{
    char k[64];
    norm_key(key, k, sizeof k);
    if (!strcmp(k, "decomposition"))
        return snprintf(buf, n, "%s", params_decomp_name(p->decomposition));
    if (!strcmp(k, "activation")) {
        params_act_name(&p->activation, buf, n);
        return (int)strlen(buf);
    }
    if (!strcmp(k, "teacher")) {
        params_teacher_name(&p->teacher, buf, n);
        return (int)strlen(buf);
    }
    if (!strcmp(k, "solvers")) {
        params_solvers_name(p->solvers, buf, n);
        return (int)strlen(buf);
    }
    if (!strcmp(k, "closure"))
        return snprintf(buf, n, "%s", params_closure_name(p->closure));
    if (!strcmp(k, "ode_noise"))
        return snprintf(buf, n, "%s", p->ode_noise ? "on" : "off");
    if (!strcmp(k, "index"))
        return snprintf(buf, n, "%s", params_index_name(p->index));
    if (!strcmp(k, "outputs"))
        return snprintf(buf, n, "%s", params_outputs_name(p->outputs));
    if (!strcmp(k, "init"))
        return snprintf(buf, n, "%s", params_init_name(p->init));
    if (!strcmp(k, "ode_mean"))
        return snprintf(buf, n, "%s", params_ode_mean_name(p->ode_mean));
    if (!strcmp(k, "lr_schedule")) {
        params_lr_schedule_name(&p->lr_schedule, buf, n);
        return (int)strlen(buf);
    }
    if (!strcmp(k, "log_grid"))
        return snprintf(buf, n, "%s", p->log_grid ? "on" : "off");
    if (!strcmp(k, "d"))
        return snprintf(buf, n, "%d", p->d);
    if (!strcmp(k, "tokens"))
        return snprintf(buf, n, "%d", p->tokens);
    if (!strcmp(k, "records"))
        return snprintf(buf, n, "%d", p->records);
    if (!strcmp(k, "order_m"))
        return snprintf(buf, n, "%d", p->order_m);
    if (!strcmp(k, "seed"))
        return snprintf(buf, n, "%llu", (unsigned long long)p->seed);
    const double *v = !strcmp(k, "lr") ? &p->lr
                      : !strcmp(k, "init_scale") ? &p->init_scale
                      : !strcmp(k, "width") ? &p->width
                      : !strcmp(k, "weight_decay") ? &p->weight_decay
                      : !strcmp(k, "tau_end") ? &p->tau_end
                      : !strcmp(k, "recovery_threshold") ? &p->recovery_threshold
                      : !strcmp(k, "token_corr") ? &p->token_corr
                      : !strcmp(k, "init_trace") ? &p->init_trace : NULL;
    if (!v)
        return -1;
    return snprintf(buf, n, "%.17g", *v);
}

int params_canonical(const struct params *p, char *buf, size_t n)
{
    size_t used = 0;
    char val[256], dval[256];
    struct params def;
    params_default(&def);
    int optional = 0;
    for (int i = 0; params_keys[i]; i++) {
        params_get(p, params_keys[i], val, sizeof val);
        optional |= !strcmp(params_keys[i], PARAMS_FIRST_OPTIONAL);
        if (optional) {
            params_get(&def, params_keys[i], dval, sizeof dval);
            if (!strcmp(val, dval))
                continue;
        }
        int w = snprintf(buf + (used < n ? used : n), used < n ? n - used : 0, "%s%s=%s",
                         i ? ";" : "", params_keys[i], val);
        used += (size_t)w;
    }
    return (int)used;
}

uint64_t params_task_id(const struct params *p)
{
    char buf[2048];
    params_canonical(p, buf, sizeof buf);
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
