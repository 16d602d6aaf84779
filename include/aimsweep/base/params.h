/*
 * params.h: the parameters of one grid point, as docs/model.md names them.
 *
 * A grid point is a plain struct. It is filled from defaults, then key by key from text
 * (`params_set`, shared by the `aimsweep single` flags and the sweep files, so both accept
 * exactly the same keys and values), then checked (`params_validate`). Its canonical text
 * (`params_canonical`: fixed key order, normalised numbers) is what a task id hashes, so two
 * spellings of one point ("0.050" and "5e-2") are the same task.
 *
 * Keys are snake_case (`init_scale`); `params_set` also accepts the dashed spelling of the
 * command line (`init-scale`).
 *
 * Every key has one row in the parameter table (`params_info`): its type, its allowed values or
 * range, how a value is written and a one-line meaning. The help of `aimsweep single`, the
 * "did you mean" of every message and every range check read that table, so a new key gets all
 * of them by adding its row. Numbers in the canonical text are written in their shortest
 * round-trip form ("0.05"); the task id hashes the form of earlier versions ("%.17g"), so the
 * id of a point never changed when the text did.
 */
#ifndef AIMSWEEP_PARAMS_H
#define AIMSWEEP_PARAMS_H

#include <stddef.h>
#include <stdint.h>

enum decomp { DECOMP_DIRECT = 0, DECOMP_TIED = 1, DECOMP_UNTIED = 2 };

enum act_kind { ACT_HERMITE = 0, ACT_RELU, ACT_TANH, ACT_ERF, ACT_SOFTMAX };

#define ACT_MAX_DEGREE 8
/* Largest number of tokens T. */
#define PARAMS_MAX_TOKENS 16

/* An output map Y(h). Hermite activations (h1..h6, hermite(...)) keep their coefficients in
 * the probabilists' basis: sigma = sum_k c[k] He_k, degree = highest k with c[k] != 0. */
struct act {
    enum act_kind kind;
    int degree;
    double c[ACT_MAX_DEGREE + 1];
    double beta; /* softmax inverse temperature */
};

enum teacher_kind { TEACHER_WISHART = 0, TEACHER_GOE, TEACHER_GOE_SHIFT, TEACHER_GOE_MEAN };

struct teacher_spec {
    enum teacher_kind kind;
    double arg; /* rho* for wishart, m for goe_shift and goe_mean, unused for goe */
};

/* The general index (docs/model.md §10): the attention index h_ab = (x_a^T S x_b - C_ab Tr S)/sqrt(d)
 * (centred) or x_a^T S x_b/sqrt(d) (uncentred), tokens with E x_a x_b^T = C_ab I,
 * C = (1 - c) I + c 1 1^T, and the loss over the off-diagonal entries or all of them. */
enum index_kind { INDEX_CENTRED = 0, INDEX_UNCENTRED };
enum outputs_kind { OUTPUTS_OFFDIAG = 0, OUTPUTS_ALL };

/* The options of docs/model.md §11. */
enum lr_kind { LR_CONSTANT = 0, LR_TWO_PHASE };
struct lr_schedule {
    enum lr_kind kind;
    double eta1;     /* two_phase: the rate while t = d tau < t_switch */
    double t_switch; /* two_phase: in units of the fast clock t = d tau */
};
enum init_kind { INIT_GAUSSIAN = 0, INIT_ORTHOGONAL };

/* How the moment ODE carries the mean mu = Tr S/sqrt(d): as a stiff state variable (rate d)
 * or slaved to the slow manifold mu*(q), Phi_mu(mu*, q) = 0. */
enum ode_mean_kind { ODE_MEAN_STIFF = 0, ODE_MEAN_SLAVED };

/* Where the moment ODE starts (docs/model.md §7, §12): the traces of the run's own initial
 * matrices (matched), or their d -> infinity limits, the exactly uninformative start m(0) = 0
 * (limit: direct Omega11 = Psi11 = s0^2 + t^2, Omega12 = t t2, t1 = t with t = init_trace; tied's
 * spectral closure with the Marchenko-Pastur law for S0; the word hierarchies with every
 * initial word from free probability, lengths 1 and 2 included). */
enum ode_init_kind { ODE_INIT_MATCHED = 0, ODE_INIT_LIMIT };

/* Solvers, as a bit set. */
enum { SOLVER_SGD = 1u, SOLVER_FLOW = 2u, SOLVER_ODE = 4u };
#define SOLVER_COUNT 3

/* Closures of the order-M moment ODE (docs/model.md §7). CLOSURE_AUTO picks the documented
 * default for the decomposition (src/theory/ode.c): spectral for tied; for untied, and for tied
 * with ode_noise, flat at the largest odd order <= M (free_cumulant when M < 3). */
enum closure {
    CLOSURE_AUTO = 0,
    CLOSURE_FREE_CUMULANT,
    CLOSURE_FREEZE,        /* naive: the length-(M+1) moment frozen at its tau = 0 value */
    CLOSURE_ZERO,          /* naive: the length-(M+1) mixed moment set to zero */
    CLOSURE_SPECTRAL,      /* tied only: docs/model.md §7b, S0 spectrum matched to the run's own */
    CLOSURE_SPECTRAL_MP,   /* tied only: the same with the Marchenko-Pastur law for S0 (d -> inf) */
    CLOSURE_FREE_RESIDUAL, /* words: free cumulants of the residuals X - c0 - c1 P */
    CLOSURE_FLAT           /* words: flat extension of the moment matrix; both in words_closure.c */
};

/* How SGD stores the student (src/solvers/sgd.c): double, or float with double sums. */
enum precision { PRECISION_DOUBLE = 0, PRECISION_SINGLE };

struct params {
    enum decomp decomposition;
    struct act activation;
    int d;
    double lr;
    double init_scale;
    int tokens;
    struct teacher_spec teacher;
    double width;
    double weight_decay;
    double tau_end;
    int records;
    int log_grid;     /* records log-spaced in tau (1) or linear (0) */
    double log_start; /* log_grid: the first tau > 0 recorded; 0 = tau_end / 1000 */
    uint64_t seed;
    unsigned solvers;
    double recovery_threshold;
    int order_m;
    enum closure closure;
    int ode_noise; /* O(eta) SGD-noise correction in the ODE (docs/model.md §6) */
    /* docs/model.md §10-11. At their defaults these keys are left out of the canonical text, so
     * that every point that existed before them keeps its task id. */
    double token_corr; /* c in [0, 1) */
    enum index_kind index;
    enum outputs_kind outputs;
    struct lr_schedule lr_schedule;
    enum init_kind init;
    double init_trace; /* direct: t I added to the initial S */
    enum ode_mean_kind ode_mean;
    enum precision precision; /* SGD's parameters in double or single precision */
    enum ode_init_kind ode_init;
};

/* The parameter table. */
enum params_type {
    PARAMS_ENUM, /* one word of `choices`, stored as an int (the enum's value = its index) */
    PARAMS_INT,  /* an integer in [lo, hi], stored as an int */
    PARAMS_SEED, /* an integer in [lo, hi], stored as a uint64_t */
    PARAMS_REAL, /* a finite number in the range of lo, hi and `bounds`, stored as a double */
    PARAMS_BOOL, /* on/off (also 1/0, true/false, yes/no), stored as an int */
    PARAMS_TEXT  /* a syntax of its own (activation, teacher, solvers, log_grid) */
};
/* bounds of a PARAMS_REAL: lo excluded, hi excluded, no upper bound */
enum { PARAMS_LO_OPEN = 1u, PARAMS_HI_OPEN = 2u, PARAMS_NO_HI = 4u };

struct params_key_info {
    const char *key;
    enum params_type type;
    size_t offset;              /* of the field in struct params (not PARAMS_TEXT) */
    const char *const *choices; /* PARAMS_ENUM: the words in enum order, NULL-terminated */
    double lo, hi;              /* PARAMS_INT, PARAMS_SEED, PARAMS_REAL */
    unsigned bounds;            /* PARAMS_REAL: PARAMS_LO_OPEN | PARAMS_HI_OPEN | PARAMS_NO_HI */
    const char *syntax;         /* how a value is written (help and messages) */
    const char *help;           /* what it means, in one line */
};

/* The rows, in params_keys order, ending with a row whose key is NULL. */
extern const struct params_key_info params_info[];

/* The row of a key (snake_case or dashed), or NULL. */
const struct params_key_info *params_key_info(const char *key);

/* What values a key takes, e.g. "an integer from 2 to 100000", "a number > 0",
 * "direct | tied | untied". Returns buf. */
const char *params_allowed(const struct params_key_info *k, char *buf, size_t n);

/* For a word that is not a key: " (did you mean 'X'?)" or "". Returns buf. */
const char *params_suggest_key(const char *word, char *buf, size_t n);

/* 1 for keys whose value is a number (PARAMS_INT, PARAMS_SEED, PARAMS_REAL): the keys an
 * expression may name and compute. */
int params_is_numeric(const char *key);

/* The number held by a numeric key at p; -1 for other keys. */
int params_number(const struct params *p, const char *key, double *value);

/* Defaults: a small point that runs in seconds. */
void params_default(struct params *p);

/* Sets one parameter from text. Returns 0, or -1 with a message in err (unknown key, bad
 * value). The value of `solvers` is a comma-separated list ("sgd,flow"). */
int params_set(struct params *p, const char *key, const char *value, char *err, size_t errlen);

/* 1 if key names a parameter (snake_case or dashed), else 0. */
int params_is_key(const char *key);

/* The canonical names of all parameter keys, NULL-terminated, in canonical order. */
extern const char *const params_keys[];

/* Checks ranges and combinations. Returns 0, or -1 with a message in err. */
int params_validate(const struct params *p, char *err, size_t errlen);

/* Writes the value of one key in canonical text form. Returns the length written (as
 * snprintf), or -1 for an unknown key. */
int params_get(const struct params *p, const char *key, char *buf, size_t n);

/* Canonical text "key=value;key=value;..." over every key in params_keys order, leaving out the
 * keys of docs/model.md §10-11 (token_corr and after) where they hold their default. Returns the
 * length (as snprintf). */
int params_canonical(const struct params *p, char *buf, size_t n);

/* 64-bit FNV-1a hash of the canonical text as earlier versions wrote it (numbers with "%.17g"),
 * so that a point keeps its id: the task id. The seed is part of the text. */
uint64_t params_task_id(const struct params *p);

/* Text names (the other parameters' texts: params_get). */
const char *params_decomp_name(enum decomp d);
const char *params_closure_name(enum closure c);

/* 1 when the point uses the general index of docs/model.md §10 (token_corr != 0, uncentred, or
 * outputs all), 0 for the special case of §1-9. */
int params_general_index(const struct params *p);

/* Parsers used by params_set, exposed for tests. Return 0 or -1 with err. */
int params_parse_act(const char *s, struct act *a, char *err, size_t errlen);
int params_parse_teacher(const char *s, struct teacher_spec *t, char *err, size_t errlen);

/* Information exponent of an elementwise Hermite activation (lowest k >= 1 with c_k != 0),
 * 0 when it has none or is not Hermite. */
int params_info_exponent(const struct act *a);
/* 1 when the loss cannot tell S from -S, so that weak recovery counts |m| (docs/model.md §8):
 * every index is linear in S (h(-S) = -h(S), centred or not, any token_corr and outputs), so the
 * loss is invariant under S -> -S exactly when Y(-h) = Y(h), i.e. an even sigma: a Hermite
 * series with every odd coefficient zero (He_k(-x) = (-1)^k He_k(x)). 0 (the sign is
 * identifiable, m < 0 is the opposite of recovery) for any series with an odd term, relu, tanh,
 * erf, and softmax (softmax_b(-beta h) is not softmax_b(beta h) for beta > 0 and T >= 2). */
int params_act_sign_symmetric(const struct act *a);

/* r = round(width * d), at least 1. */
int params_rank(const struct params *p);

/* The time scale of docs/model.md: tau counts samples in units of d^2/eta, n = tau d^2 / eta, and
 * the learning-rate schedule (docs/model.md §11; derivation in params.c). params_samples(p, tau) is the samples after time tau: tau d^2/lr (rounded in that
 * order, so every caller gets the same double for the same tau) for constant, and for
 * two_phase tau d^2/eta1 up to the switch, then tau d^2/lr + n1 (1 - eta1/lr), equal to the
 * constant form bit for bit when eta1 = lr. SGD takes llround of it as its step target.
 * params_switch_steps is n1, the SGD steps taken at eta1 (0 for constant); params_switch_tau
 * the time the rate changes, n1 eta1/d^2 (+inf for constant); params_rate the rate in force at
 * tau (eta1 before the switch, lr from it on). */
double params_samples(const struct params *p, double tau);
/* params_samples as the moment ODE rounds it: tau d^2/eta as (tau d) d/eta, where
 * params_samples takes tau (d^2/eta). The two may differ in the last bit; the ODE's samples
 * column has always been rounded so, and keeps its bits. */
double params_samples_ode(const struct params *p, double tau);
long params_switch_steps(const struct params *p);
double params_switch_tau(const struct params *p);
double params_rate(const struct params *p, double tau);

#endif
