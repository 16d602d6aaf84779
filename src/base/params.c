/*
 * params.c: defaults, text parsing, validation and the canonical form of a grid point.
 *
 * Every value goes through params_set, whether it comes from a command-line flag or a sweep
 * file, so the two accept the same spellings. Numbers are written back with "%.17g", which
 * round-trips a double exactly: the canonical text of "0.050" and "5e-2" is the same.
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
/* Largest seed: SQLite stores it as a signed 64-bit integer. */
#define PARAMS_MAX_SEED 9223372036854775807ULL
/* Above 2^53 a double no longer holds every integer: a seed written as a decimal fraction or
 * with an exponent is taken only up to there (plain digits go up to PARAMS_MAX_SEED). */
#define PARAMS_EXACT_DOUBLE 9007199254740992.0
/* Most SGD samples one run may ask for (tau_end d^2 / lr): the count is kept exactly in a
 * double and in a long, and 2^53 steps are centuries of computing anyway. */
#define PARAMS_MAX_SAMPLES 9007199254740992.0
/* Untied moment ODE: the highest order whose word system builds in seconds. Order 7 tracks
 * 7673 word classes and spends ~30 s and ~330 MB building its terms before the first step
 * (measured at d = 20; the build does not depend on tau_end). */
#define PARAMS_MAX_ORDER_UNTIED 6
/* The flow is integrated explicitly: with weight decay lambda its step is at most ~1/lambda,
 * so it takes at least lambda tau_end steps of d^3 work each (lambda tau_end = 1e5 takes 0.8 s
 * at d = 20, 8000 times that at d = 400). Above this the flow is refused. */
#define PARAMS_MAX_FLOW_STIFFNESS 1e6

/*
 * The range of every numeric value, in one table: params_set refuses a value outside it with
 * the range in the message, params_validate checks it again, and `aimsweep single --help`
 * can print it. The bounds are what the solvers can do, not what the science may want:
 *   d <= 1e5: the teacher alone is d^2 doubles (80 GB at the bound); the memory of a whole
 *     task is estimated before it runs (worker_check).
 *   init_scale <= 100: tied/untied order parameters grow like s0^4; at 100 they reach the
 *     divergence thresholds of limits.h before the first step.
 *   width <= 4, wishart rho <= 16: r = round(width d) and r* = round(rho d) are matrix
 *     dimensions (d x r arrays), so they are bounded by a multiple of d.
 *   weight_decay <= 1e3: the flow is explicit (Runge-Kutta); its step shrinks like 1/lambda,
 *     so lambda tau_end is its number of steps at least.
 *   softmax beta <= 20: the flow and the ODE grow stiff with beta (d = 12, T = 2, the
 *     flow: 0.5 s at beta = 5, 1.1 s at 10, 3.3 s at 20, over a minute at 40; at 1e300 the
 *     population loss is not even computable).
 *   Hermite coefficients |c_k| <= 1e6, goe_shift |m| <= 1e6: beyond, the loss overflows.
 */
static const struct params_range ranges[] = {
    {"d", 2, 100000, 0, 1},
    {"lr", 0, 1e3, 1, 0},
    {"init_scale", 0, 100, 0, 0},
    {"tokens", 2, PARAMS_MAX_TOKENS, 0, 1},
    {"width", 0, 4, 1, 0},
    {"weight_decay", 0, 1e3, 0, 0},
    {"tau_end", 1e-9, 1e6, 0, 0},
    {"records", 1, 1000000, 0, 1},
    {"recovery_threshold", 0, 1, 1, 0},
    {"order_m", 1, 16, 0, 1},
    {"seed", 0, 9.223372036854775807e18, 0, 1},
    {"softmax_beta", 0, 20, 1, 0},
    {"hermite_coefficient", -1e6, 1e6, 0, 0},
    {"wishart_rho", 0, 16, 1, 0},
    {"goe_shift_m", -1e6, 1e6, 0, 0},
    {NULL, 0, 0, 0, 0}};

const struct params_range *params_range_of(const char *key)
{
    char k[64];
    size_t i = 0;
    for (; key[i] && i + 1 < sizeof k; i++)
        k[i] = key[i] == '-' ? '_' : key[i];
    k[i] = 0;
    for (const struct params_range *r = ranges; r->key; r++)
        if (!strcmp(r->key, k))
            return r;
    return NULL;
}

void params_format_number(double v, char *buf, size_t n)
{
    /* the shortest of %.15g .. %.17g that reads back as v */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int params_range_text(const struct params_range *r, char *buf, size_t n)
{
    char lo[32], hi[32];
    if (!strcmp(r->key, "seed"))
        return snprintf(buf, n, "[0, %llu]", (unsigned long long)PARAMS_MAX_SEED);
    params_format_number(r->lo, lo, sizeof lo);
    params_format_number(r->hi, hi, sizeof hi);
    if (r->integer)
        return snprintf(buf, n, "an integer from %s to %s", lo, hi);
    return snprintf(buf, n, "%s%s, %s]", r->lo_open ? "(" : "[", lo, hi);
}

int params_in_range(const struct params_range *r, double v)
{
    return (r->lo_open ? v > r->lo : v >= r->lo) && v <= r->hi;
}

/* "NAME = VALUE: must be RANGE" into err for a value outside its range. Returns -1. */
static int range_fail(const struct params_range *r, const char *name, double v, char *err, size_t n)
{
    char val[32], rt[96];
    params_format_number(v, val, sizeof val);
    params_range_text(r, rt, sizeof rt);
    if (err && n)
        snprintf(err, n, "%s = %s: must be %s%s", name, val, r->integer ? "" : "in ", rt);
    return -1;
}

/* Checks v against the range of key (a key of the table); -1 with a message when outside. */
static int check_range(const char *key, const char *name, double v, char *err, size_t n)
{
    const struct params_range *r = params_range_of(key);
    if (!r || params_in_range(r, v))
        return 0;
    return range_fail(r, name, v, err, n);
}

const char *const params_keys[] = {
    "decomposition", "activation", "d", "lr", "init_scale", "tokens", "teacher", "width",
    "weight_decay", "tau_end", "records", "log_grid", "seed", "solvers", "recovery_threshold",
    "order_m", "closure", "ode_noise", NULL};

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

/* A seed: plain digits up to PARAMS_MAX_SEED, read exactly; any other spelling of a number
 * ("1e3", "12.0") only below 2^53, where a double holds every integer, so that no seed is ever
 * silently replaced by a neighbour. */
static int parse_seed(const char *s, uint64_t *out, char *err, size_t n)
{
    const char *q = s;
    while (isspace((unsigned char)*q))
        q++;
    size_t nd = strspn(q, "0123456789");
    const char *e = q + nd;
    while (isspace((unsigned char)*e))
        e++;
    if (nd > 0 && !*e) {
        errno = 0;
        unsigned long long v = strtoull(q, NULL, 10);
        if (errno == ERANGE || v > PARAMS_MAX_SEED) {
            if (err && n)
                snprintf(err, n, "seed = %.40s: must be in [0, %llu]", q, (unsigned long long)PARAMS_MAX_SEED);
            return -1;
        }
        *out = v;
        return 0;
    }
    double v;
    if (parse_double(s, &v) || v != floor(v) || v < 0) {
        if (err && n)
            snprintf(err, n, "seed: bad value '%.40s' (must be an integer in [0, %llu])", s,
                     (unsigned long long)PARAMS_MAX_SEED);
        return -1;
    }
    if (v >= PARAMS_EXACT_DOUBLE) { /* 2^53 itself may be 2^53 + 1 rounded */
        if (err && n)
            snprintf(err, n, "seed = %.40s: above 2^53 a seed must be written as plain digits (a number with a "
                     "fraction or an exponent is not exact there)", s);
        return -1;
    }
    *out = (uint64_t)v;
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
            char name_k[96];
            snprintf(name_k, sizeof name_k, "activation '%.40s': coefficient c%d", s, k);
            if (check_range("hermite_coefficient", name_k, args[k], err, errlen))
                return -1;
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
        char nm[96];
        snprintf(nm, sizeof nm, "activation '%.40s': softmax beta", s);
        if (check_range("softmax_beta", nm, r.beta, err, errlen))
            return -1;
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
        double rho = na == 1 ? args[0] : 0.5;
        char nm[96];
        snprintf(nm, sizeof nm, "teacher '%.40s': wishart rho", s);
        if (check_range("wishart_rho", nm, rho, err, errlen))
            return -1;
        t->arg = rho;
        return 0;
    }
    if (na == 0 && !strcmp(name, "goe")) {
        t->kind = TEACHER_GOE;
        t->arg = 0;
        return 0;
    }
    if (na == 1 && !strcmp(name, "goe_shift")) {
        char nm[96];
        snprintf(nm, sizeof nm, "teacher '%.40s': goe_shift m", s);
        if (check_range("goe_shift_m", nm, args[0], err, errlen))
            return -1;
        t->kind = TEACHER_GOE_SHIFT;
        t->arg = args[0];
        return 0;
    }
    seterr(err, errlen, "teacher '%s' is not one of wishart(rho), goe, goe_shift(m)%s", s, "");
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
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
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
    if (!strcmp(k, "ode_noise") || !strcmp(k, "log_grid")) {
        int b;
        if (parse_bool(value, &b))
            goto bad;
        *(!strcmp(k, "ode_noise") ? &p->ode_noise : &p->log_grid) = b;
        return 0;
    }
    if (!strcmp(k, "d") || !strcmp(k, "tokens") || !strcmp(k, "records") || !strcmp(k, "order_m")) {
        if (parse_double(value, &v) || v != floor(v))
            goto bad_int;
        if (check_range(k, k, v, err, errlen))
            return -1;
        int *dst = !strcmp(k, "d") ? &p->d : !strcmp(k, "tokens") ? &p->tokens
                   : !strcmp(k, "records") ? &p->records : &p->order_m;
        *dst = (int)v; /* in range, so it fits */
        return 0;
    }
    if (!strcmp(k, "seed")) {
        uint64_t seed;
        if (parse_seed(value, &seed, err, errlen))
            return -1;
        p->seed = seed;
        return 0;
    }
    double *dst = !strcmp(k, "lr") ? &p->lr
                  : !strcmp(k, "init_scale") ? &p->init_scale
                  : !strcmp(k, "width") ? &p->width
                  : !strcmp(k, "weight_decay") ? &p->weight_decay
                  : !strcmp(k, "tau_end") ? &p->tau_end
                  : !strcmp(k, "recovery_threshold") ? &p->recovery_threshold : NULL;
    if (!dst) {
        seterr(err, errlen, "unknown parameter '%s'%s", key, "");
        return -1;
    }
    if (parse_double(value, &v))
        goto bad_number;
    if (check_range(k, k, v, err, errlen))
        return -1;
    *dst = v;
    return 0;
bad:
    seterr(err, errlen, "%s: bad value '%s'", key, value);
    return -1;
bad_int: {
    char rt[96];
    params_range_text(params_range_of(k), rt, sizeof rt);
    if (err && errlen)
        snprintf(err, errlen, "%s: bad value '%s' (must be %s)", key, value, rt);
    return -1;
}
bad_number: {
    char rt[96];
    params_range_text(params_range_of(k), rt, sizeof rt);
    if (err && errlen)
        snprintf(err, errlen, "%s: bad value '%s' (must be a finite number in %s)", key, value, rt);
    return -1;
}
}

int params_validate(const struct params *p, char *err, size_t errlen)
{
#define FAIL(...)                                                                               \
    do {                                                                                        \
        if (err && errlen)                                                                      \
            snprintf(err, errlen, __VA_ARGS__);                                                 \
        return -1;                                                                              \
    } while (0)
    /* every value against its range (a struct filled without params_set, or a task text) */
    const struct {
        const char *key;
        double v;
    } vals[] = {{"d", p->d}, {"lr", p->lr}, {"init_scale", p->init_scale}, {"tokens", p->tokens},
                {"width", p->width}, {"weight_decay", p->weight_decay}, {"tau_end", p->tau_end},
                {"records", p->records}, {"recovery_threshold", p->recovery_threshold},
                {"order_m", p->order_m}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (check_range(vals[i].key, vals[i].key, vals[i].v, err, errlen))
            return -1;
    if (p->activation.kind == ACT_SOFTMAX &&
        check_range("softmax_beta", "activation: softmax beta", p->activation.beta, err, errlen))
        return -1;
    if (p->teacher.kind == TEACHER_WISHART &&
        check_range("wishart_rho", "teacher: wishart rho", p->teacher.arg, err, errlen))
        return -1;
    char a[32], b[32];
    if (p->teacher.kind == TEACHER_WISHART && p->teacher.arg * p->d < 0.5) {
        params_format_number(p->teacher.arg, a, sizeof a);
        FAIL("teacher wishart(%s): at d = %d its rank round(rho d) is 0; rho must be in [1/(2d), 16] = "
             "[%.4g, 16]", a, p->d, 0.5 / p->d);
    }
    if (p->solvers & SOLVER_SGD) {
        /* the number of samples is counted (n = tau d^2 / lr) and must be a real, exact count */
        double n = params_samples(p, p->tau_end);
        params_format_number(p->lr, a, sizeof a);
        params_format_number(p->tau_end, b, sizeof b);
        if (!(n >= 1))
            FAIL("lr = %s, tau_end = %s: SGD would take tau_end d^2 / lr = %.3g samples (at least 1 needed); "
                 "raise tau_end or lower lr", a, b, n);
        if (!(n <= PARAMS_MAX_SAMPLES))
            FAIL("lr = %s, tau_end = %s: SGD would take tau_end d^2 / lr = %.3g samples, more than the limit "
                 "2^53 = %.3g; lower tau_end or raise lr", a, b, n, PARAMS_MAX_SAMPLES);
        /* weight decay multiplies the parameters by 1 - lambda lr / d^2 each step */
        if (!(p->weight_decay * p->lr < (double)p->d * p->d)) {
            params_format_number(p->weight_decay, b, sizeof b);
            FAIL("weight_decay = %s, lr = %s: an SGD step multiplies the parameters by 1 - weight_decay lr / d^2 "
                 "= %.3g, which must stay > 0 (weight_decay lr < d^2 = %d)", b, a,
                 1 - p->weight_decay * p->lr / ((double)p->d * p->d), p->d * p->d);
        }
    }
    if ((p->solvers & SOLVER_FLOW) && p->weight_decay * p->tau_end > PARAMS_MAX_FLOW_STIFFNESS) {
        params_format_number(p->weight_decay, a, sizeof a);
        params_format_number(p->tau_end, b, sizeof b);
        FAIL("weight_decay = %s, tau_end = %s: the flow would need at least weight_decay tau_end = %.3g steps "
             "(at most %.0e); lower either, or drop flow from solvers", a, b, p->weight_decay * p->tau_end,
             PARAMS_MAX_FLOW_STIFFNESS);
    }
    if ((p->solvers & SOLVER_ODE) && p->decomposition == DECOMP_UNTIED && p->order_m > PARAMS_MAX_ORDER_UNTIED)
        FAIL("order_m = %d: the untied moment ODE supports orders 1 to %d (order 7 alone takes ~30 s and "
             "~330 MB to build its word system)", p->order_m, PARAMS_MAX_ORDER_UNTIED);
    if ((p->closure == CLOSURE_SPECTRAL || p->closure == CLOSURE_SPECTRAL_MP) &&
        p->decomposition != DECOMP_TIED)
        FAIL("closure %s exists for tied only, not %s", params_closure_name(p->closure),
             params_decomp_name(p->decomposition));
    if (p->init_scale == 0 && p->decomposition != DECOMP_DIRECT)
        FAIL("init_scale = 0 is a fixed point of %s SGD: use a positive scale",
             params_decomp_name(p->decomposition));
#undef FAIL
    return 0;
}

int params_rank(const struct params *p)
{
    double w = p->width * p->d;
    if (!(w >= 1))
        return 1;
    if (w > 4.0 * p->d)
        w = 4.0 * p->d; /* params_validate refuses this; never overflow */
    return (int)lround(w);
}

double params_samples_per_tau(const struct params *p) { return (double)p->d * p->d / p->lr; }

double params_samples(const struct params *p, double tau) { return tau * params_samples_per_tau(p); }

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
    }
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
                      : !strcmp(k, "recovery_threshold") ? &p->recovery_threshold : NULL;
    if (!v)
        return -1;
    return snprintf(buf, n, "%.17g", *v);
}

int params_canonical(const struct params *p, char *buf, size_t n)
{
    size_t used = 0;
    char val[256];
    for (int i = 0; params_keys[i]; i++) {
        params_get(p, params_keys[i], val, sizeof val);
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
