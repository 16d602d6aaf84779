/*
 * params_parse.c: text into parameter values, and the checks of a point as a whole. params_set
 * reads one value by its row of the table (params.c): enums and booleans by their words,
 * numbers against the row's range, and the parenthesised values (activation, teacher,
 * lr_schedule), solver lists and log_grid by their own parsers, each error saying what is
 * allowed and suggesting the nearest word. params_validate then checks what no single value
 * shows: the ranges again (for points built in code), the sample count, the flow's stiffness,
 * and the combinations a solver does not handle. The limits are named in params_impl.h.
 */
#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params_impl.h"

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
        text_suggest(err, errlen, name, params_act_words);
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
        text_suggest(err, errlen, name, params_teacher_words);
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
        for (int i = 0; params_solver_words[i]; i++)
            if (!strcmp(tok, params_solver_words[i]))
                bit = 1u << i;
        if (!bit) {
            seterr(err, errlen, "solvers: '%s' is not a solver (sgd, flow, ode)", tok);
            text_suggest(err, errlen, tok, params_solver_words);
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
    text_suggest(err, errlen, name, params_lr_schedule_words);
    return -1;
}

/* log_grid: on | off (or another of parse_bool's words) | a start tau > 0 (which turns the log
 * grid on) | 0 (off). A number is a start: "1" is tau = 1, not on. */
static int parse_log_grid(struct params *p, const char *value, char *err, size_t errlen)
{
    int b;
    double v;
    if (!parse_double(value, &v)) {
        if (v >= 0) {
            p->log_grid = v > 0;
            p->log_start = v > 0 ? v : 0; /* -0 too */
            return 0;
        }
    } else if (!parse_bool(value, &b)) {
        p->log_grid = b;
        p->log_start = 0;
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
