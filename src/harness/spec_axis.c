/*
 * spec_axis.c: the axes of a sweep spec, apart from the YAML they are read from: building an
 * axis value by value, checking each value with params_set on a scratch point (or compiling it
 * as an expression of other keys), the values of a range {linspace|logspace|range: ...}, the
 * first repeated value of an axis, the check that expressions name only plain keys, `--set`
 * overrides from the command line, and freeing a spec. spec.c walks the YAML document and calls
 * these; spec_impl.h declares what the two share. See spec.h for the format.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/expr.h"
#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"
#include "spec_impl.h"

/* Significant digits of generated range values (linspace, logspace, range). */
#define SPEC_RANGE_DIGITS 15

const char *const spec_range_kinds[] = {"linspace", "logspace", "range", NULL};

int spec_fail(struct spec_walk *w, int line, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(w->err, w->errlen, "%s:%d: key '%s': %s", w->path, line, key, msg);
    else
        snprintf(w->err, w->errlen, "%s:%d: %s", w->path, line, msg);
    return -1;
}

void spec_canonical_key(const char *key, char *out, size_t n)
{
    size_t i = 0;
    for (; key[i] && i + 1 < n; i++)
        out[i] = (char)(key[i] == '-' ? '_' : key[i]);
    out[i] = 0;
}

struct spec_axis *spec_find_axis(struct spec_axis *a, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(a[i].key, key))
            return &a[i];
    return NULL;
}

static void axis_free(struct spec_axis *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->values[i]);
    free(a->values);
    free(a->lines);
    free(a->is_expr);
}

struct spec_axis *spec_axis_new(struct spec_walk *w, struct spec_axis **arr, size_t *n,
                                const char *key, int line)
{
    struct spec_axis *na = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!na) {
        spec_fail(w, line, key, "out of memory");
        return NULL;
    }
    *arr = na;
    struct spec_axis *a = &na[(*n)++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->line = line;
    return a;
}

int spec_axis_push_x(struct spec_walk *w, struct spec_axis *a, const char *value, int line,
                     int is_expr)
{
    char **nv = realloc(a->values, (a->n + 1) * sizeof *nv);
    if (nv)
        a->values = nv;
    int *nl = realloc(a->lines, (a->n + 1) * sizeof *nl);
    if (nl)
        a->lines = nl;
    unsigned char *ne = realloc(a->is_expr, a->n + 1);
    if (ne)
        a->is_expr = ne;
    char *v = strdup(value);
    if (!nv || !nl || !ne || !v) {
        free(v);
        return spec_fail(w, line, a->key, "out of memory");
    }
    a->values[a->n] = v;
    a->lines[a->n] = line;
    a->is_expr[a->n] = (unsigned char)is_expr;
    a->n++;
    return 0;
}

int spec_axis_push(struct spec_walk *w, struct spec_axis *a, const char *value, int line)
{
    return spec_axis_push_x(w, a, value, line, 0);
}

/* An expression as the value of a numeric key: compiles it and checks its names. Returns 0, or
 * -1 after spec_fail(). */
static int check_expr(struct spec_walk *w, const char *key, const char *text, int line)
{
    char msg[256];
    struct expr *e = expr_compile(text, msg, sizeof msg);
    if (!e)
        return spec_fail(w, line, key, "%s", msg);
    const char *names[16];
    int nn = expr_names(e, names, 16), rc = 0;
    for (int i = 0; i < nn && i < 16 && !rc; i++) {
        char canon[64];
        spec_canonical_key(names[i], canon, sizeof canon);
        if (!strcmp(names[i], "pi"))
            continue;
        if (!params_is_numeric(names[i])) {
            char keys[512] = "", hint[96];
            size_t off = 0;
            for (int k = 0; params_keys[k] && off < sizeof keys; k++)
                if (params_is_numeric(params_keys[k]))
                    off += (size_t)snprintf(keys + off, sizeof keys - off, "%s%s", off ? ", " : "",
                                            params_keys[k]);
            rc = spec_fail(
                w, line, key,
                "expression '%s': unknown name '%s'%s; an expression may name the numeric keys %s, and pi",
                text, names[i], params_suggest_key(names[i], hint, sizeof hint), keys);
        } else if (!strcmp(canon, key))
            rc = spec_fail(w, line, key, "expression '%s' names its own key", text);
    }
    expr_destroy(&e);
    return rc;
}

/* Checks one value of a parameter with params_set; returns its canonical text in canon. */
int spec_check_value_x(struct spec_walk *w, const char *key, const char *value, int line,
                       char *canon, size_t n, int *is_expr)
{
    struct params p;
    char msg[256] = "";
    params_default(&p);
    if (is_expr)
        *is_expr = 0;
    if (params_set(&p, key, value, msg, sizeof msg) != 0) {
        /* an expression has an operator or names a numeric key; a lone word ("fast") is a
         * mistyped number and keeps the number's message */
        char word[64];
        const char *w0 = value + strspn(value, " ");
        snprintf(word, sizeof word, "%.*s", (int)strcspn(w0, " "), w0);
        if (is_expr && params_is_numeric(key) && expr_looks_like(value) &&
            (strpbrk(value, "+-*/^(") || params_is_numeric(word) || !strcmp(word, "pi"))) {
            if (check_expr(w, key, value, line))
                return -1;
            *is_expr = 1;
            snprintf(canon, n, "=%s", value); /* the text stands for itself until evaluated */
            return 0;
        }
        return spec_fail(w, line, key, "%s", msg[0] ? msg : "invalid value");
    }
    if (params_get(&p, key, canon, n) < 0)
        return spec_fail(w, line, key, "cannot be read back");
    return 0;
}

int spec_check_value(struct spec_walk *w, const char *key, const char *value, int line, char *canon,
                     size_t n)
{
    return spec_check_value_x(w, key, value, line, canon, n, NULL);
}

/* Rounds to SPEC_RANGE_DIGITS significant digits and writes the shortest text. */
static void range_text(double x, char *buf, size_t n)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*g", SPEC_RANGE_DIGITS, x);
    text_double(strtod(tmp, NULL), buf, n);
}

/* The values of a range as texts in *out (caller frees each and the array): which is one of
 * spec_range_kinds (linspace, logspace, range) with a, b and n or step as written; line is the
 * range's line, vline the line of its list [a, b, n|step]. Integer keys take only integral
 * values. Returns the count, or -1 after spec_fail(). */
long spec_range_values(struct spec_walk *w, const char *key, int which, double a, double b,
                       double c, int line, int vline, char ***out)
{
    const char *kind = spec_range_kinds[which], *form = which == 2 ? "[a, b, step]" : "[a, b, n]";
    *out = NULL;
    long n;
    if (which < 2) {
        if (c != floor(c) || c < 1 || c > SPEC_MAX_POINTS)
            return spec_fail(w, vline, key, "%s %s: n = %g must be an integer from 1 to %d", kind,
                             form, c, SPEC_MAX_POINTS);
        if (which == 1 && !(a > 0 && b > 0))
            return spec_fail(
                w, vline, key,
                "logspace [a, b, n]: a and b must be > 0 (values from a to b, evenly in log)");
        n = (long)c;
    } else {
        if (c == 0 || (b - a) / c <= 0)
            return spec_fail(
                w, vline, key,
                "range [a, b, step]: step %g never gets from %g towards %g (a, a + step, ... while below b)",
                c, a, b);
        double cnt = ceil((b - a) / c - 1e-9);
        if (cnt > SPEC_MAX_POINTS)
            return spec_fail(w, vline, key, "range [a, b, step]: %.0f values, more than %d", cnt,
                             SPEC_MAX_POINTS);
        n = (long)cnt;
    }
    char **vals = calloc((size_t)n, sizeof *vals);
    if (!vals)
        return spec_fail(w, line, key, "out of memory");
    const struct params_key_info *info = params_key_info(key);
    int integral = info->type != PARAMS_REAL;
    for (long i = 0; i < n; i++) {
        double t = n > 1 ? (double)i / (double)(n - 1) : 0, y;
        if (which == 0)
            y = i == n - 1 && n > 1 ? b : a + (b - a) * t;
        else if (which == 1)
            y = i == n - 1 && n > 1 ? b : exp(log(a) + (log(b) - log(a)) * t);
        else
            y = a + (double)i * c;
        char buf[TEXT_DOUBLE_MAX];
        if (integral) {
            if (fabs(y - round(y)) > 1e-9 * fmax(1, fabs(y))) {
                range_text(y, buf, sizeof buf);
                for (long j = 0; j < i; j++)
                    free(vals[j]);
                free(vals);
                return spec_fail(w, vline, key, "%s gives %s, but %s takes integers", kind, buf,
                                 key);
            }
            y = round(y);
        }
        range_text(y, buf, sizeof buf);
        if (!(vals[i] = strdup(buf))) {
            for (long j = 0; j < i; j++)
                free(vals[j]);
            free(vals);
            return spec_fail(w, line, key, "out of memory");
        }
    }
    *out = vals;
    return n;
}
struct keyed {
    const char *key;
    size_t index;
};

static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The first item (in list order) whose text equals an earlier one's: sets *later and
 * *earlier and returns 1, or returns 0 when all differ (-1 when out of memory). Sorting makes
 * it O(n log n): a list of 10^6 seeds is checked in a fraction of a second (the pairwise check
 * took minutes). */
int spec_find_repeat(char *const *texts, size_t n, size_t *later, size_t *earlier)
{
    struct keyed *k = malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < n; i++)
        k[i] = (struct keyed){texts[i], i};
    qsort(k, n, sizeof *k, keyed_cmp);
    int found = 0;
    for (size_t i = 1; i < n; i++)
        if (!strcmp(k[i].key, k[i - 1].key)) {
            /* within a run of equal texts the first is the earliest: k[i] repeats it */
            size_t j = i;
            while (j > 0 && !strcmp(k[j - 1].key, k[i].key))
                j--;
            if (!found || k[i].index < *later) {
                *later = k[i].index;
                *earlier = k[j].index;
                found = 1;
            }
        }
    free(k);
    return found;
}

/* Adds one grid value: checked, not a repeat of an earlier one. canons holds the canonical
 * text of the values so far (a->n of them). */
int spec_grid_value(struct spec_walk *w, struct spec_axis *a, char ***canons, const char *value,
                    int line)
{
    char canon[512];
    int is_expr;
    if (spec_check_value_x(w, a->key, value, line, canon, sizeof canon, &is_expr))
        return -1;
    /* repeats are found once the list is complete (spec_repeat_check) */
    char **nc = realloc(*canons, (a->n + 1) * sizeof *nc);
    if (!nc)
        return spec_fail(w, line, a->key, "out of memory");
    *canons = nc;
    if (!(nc[a->n] = strdup(canon)))
        return spec_fail(w, line, a->key, "out of memory");
    if (spec_axis_push_x(w, a, value, line, is_expr)) {
        free(nc[a->n]);
        return -1;
    }
    return 0;
}

/* After a grid axis is read: the first value that repeats an earlier one, by canonical text.
 * Returns 0, or -1 after spec_fail(). */
int spec_repeat_check(struct spec_walk *w, struct spec_axis *a, char **canons)
{
    size_t later, earlier;
    int r = spec_find_repeat(canons, a->n, &later, &earlier);
    if (r < 0)
        return spec_fail(w, a->line, a->key, "out of memory");
    if (r > 0)
        return spec_fail(w, a->lines[later], a->key, "value '%s' repeats '%s' (line %d)",
                         a->values[later], a->values[earlier], a->lines[earlier]);
    return 0;
}

static const struct spec_axis *axis_of(const struct sweep_spec *s, const char *key)
{
    for (size_t i = 0; i < s->ngrid; i++)
        if (!strcmp(s->grid[i].key, key))
            return &s->grid[i];
    for (size_t i = 0; i < s->nfixed; i++)
        if (!strcmp(s->fixed[i].key, key))
            return &s->fixed[i];
    return NULL;
}

static int has_expr(const struct spec_axis *a)
{
    for (size_t i = 0; a && a->is_expr && i < a->n; i++)
        if (a->is_expr[i])
            return 1;
    return 0;
}

/* An expression may name only keys that hold plain values: every expression is evaluated
 * once per point, after the plain values, so no order among expressions is needed. */
int spec_check_expr_refs(const struct sweep_spec *s, char *err, size_t errlen)
{
    for (int sec = 0; sec < 2; sec++) {
        const struct spec_axis *axes = sec ? s->fixed : s->grid;
        size_t n = sec ? s->nfixed : s->ngrid;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; axes[i].is_expr && j < axes[i].n; j++) {
                if (!axes[i].is_expr[j])
                    continue;
                struct expr *e = expr_compile(axes[i].values[j], NULL, 0);
                const char *names[16];
                int nn = e ? expr_names(e, names, 16) : 0, bad = 0;
                for (int k = 0; k < nn && k < 16 && !bad; k++) {
                    char key[64];
                    spec_canonical_key(names[k], key, sizeof key);
                    const struct spec_axis *o = axis_of(s, key);
                    if (has_expr(o)) {
                        snprintf(
                            err, errlen,
                            "%s:%d: key '%s': expression '%s' names %s, which is itself an expression (line %d); "
                            "expressions may name only keys with plain values",
                            s->path, axes[i].lines[j], axes[i].key, axes[i].values[j], key,
                            o->line);
                        bad = 1;
                    }
                }
                expr_destroy(&e);
                if (bad)
                    return -1;
            }
    }
    return 0;
}

/* The sweep's text with "# --set ASSIGNMENT" appended (malloc'd), for an override of KEY whose
 * grid axis is g (or NULL); NULL with the message when g is part of a zip block, or on memory. */
static char *set_text(const struct sweep_spec *s, const char *assignment, const char *key,
                      const struct spec_axis *g, char *err, size_t errlen)
{
    if (g && g->zip) {
        snprintf(err, errlen,
                 "--set %s: %s is part of a zip block (%s line %d); edit the sweep file instead",
                 assignment, key, s->path, g->line);
        return NULL;
    }
    size_t tl = strlen(s->text);
    char *nt = malloc(tl + strlen(assignment) + 32);
    if (!nt) {
        snprintf(err, errlen, "--set %s: out of memory", assignment);
        return NULL;
    }
    snprintf(nt, tl + strlen(assignment) + 32, "%s%s# --set %s\n", s->text,
             tl && s->text[tl - 1] != '\n' ? "\n" : "", assignment);
    return nt;
}

/* Removes the axis KEY from one list of axes, if it is there. */
static void drop_axis(struct spec_axis *arr, size_t *n, const char *key)
{
    struct spec_axis *a = spec_find_axis(arr, *n, key);
    if (!a)
        return;
    size_t k = (size_t)(a - arr);
    axis_free(a);
    memmove(a, a + 1, (*n - k - 1) * sizeof *a);
    (*n)--;
}

/* --set seeds=N: seeds 1..N, as `seeds: N` at the top of a sweep file (the seed axis last, so
 * that the seeds of one point run next to each other), in place of any seed the file gives. */
static int override_seeds(struct sweep_spec *s, const char *assignment, const char *value,
                          char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (!*value || *end || errno || n < 1 || n > SPEC_MAX_SEEDS) {
        snprintf(err, errlen,
                 "--set %s: seeds is a count, an integer from 1 to %d (seeds 1..N); "
                 "for one seed write --set seed=S",
                 assignment, SPEC_MAX_SEEDS);
        return -1;
    }
    const struct spec_axis *seed_axis = spec_find_axis(s->grid, s->ngrid, "seed");
    char *nt = set_text(s, assignment, "seed", seed_axis, err, errlen);
    if (!nt)
        return -1;
    drop_axis(s->grid, &s->ngrid, "seed");
    drop_axis(s->fixed, &s->nfixed, "seed");
    char msg[256] = "";
    struct spec_walk w = {"--set", NULL, s, msg, sizeof msg, 0, 0, 0};
    struct spec_axis *a = spec_axis_new(&w, &s->grid, &s->ngrid, "seed", 0);
    for (long i = 1; a && i <= n; i++) {
        char buf[24];
        snprintf(buf, sizeof buf, "%ld", i);
        if (spec_axis_push(&w, a, buf, 0))
            a = NULL;
    }
    if (!a) {
        free(nt);
        snprintf(err, errlen, "--set %s: out of memory", assignment);
        return -1;
    }
    free(s->text);
    s->text = nt;
    return 0;
}

int spec_override(struct sweep_spec *s, const char *assignment, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    char key[64], hint[96];
    if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof key) {
        snprintf(err, errlen, "--set '%s': write --set KEY=VALUE (e.g. --set tau_end=2)",
                 assignment);
        return -1;
    }
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
    spec_canonical_key(key, key, sizeof key);
    const char *value = eq + 1;
    if (!strcmp(key, "seeds"))
        return override_seeds(s, assignment, value, err, errlen);
    if (!params_is_key(key)) {
        snprintf(err, errlen,
                 "--set %s: unknown parameter '%s'%s (the keys of aimsweep single --help)",
                 assignment, key, params_suggest_key(key, hint, sizeof hint));
        return -1;
    }
    char msg[1024] = "", canon[512];
    int is_expr = 0;
    struct spec_walk w = {"--set", NULL, s, msg, sizeof msg, 0, 0, 0};
    if (!*value) {
        snprintf(err, errlen, "--set %s: empty value", assignment);
        return -1;
    }
    if (spec_check_value_x(&w, key, value, 0, canon, sizeof canon, &is_expr)) {
        const char *m = strstr(msg, "': ");
        snprintf(err, errlen, "--set %s: %s", assignment, m ? m + 3 : msg);
        return -1;
    }
    struct spec_axis *g = spec_find_axis(s->grid, s->ngrid, key);
    /* the new text first, so that a failure leaves the spec as it was */
    char *nt = set_text(s, assignment, key, g, err, errlen);
    if (!nt)
        return -1;
    struct spec_axis *f = spec_find_axis(s->fixed, s->nfixed, key);
    if (!f) {
        f = spec_axis_new(&w, &s->fixed, &s->nfixed, key, 0);
        if (!f) {
            free(nt);
            snprintf(err, errlen, "--set %s: out of memory", assignment);
            return -1;
        }
    } else {
        axis_free(f);
        struct spec_axis keep = *f;
        memset(f, 0, sizeof *f);
        snprintf(f->key, sizeof f->key, "%s", keep.key);
    }
    f->line = 0;
    if (spec_axis_push_x(&w, f, value, 0, is_expr)) {
        free(nt);
        snprintf(err, errlen, "--set %s: out of memory", assignment);
        return -1;
    }
    if (g)
        drop_axis(s->grid, &s->ngrid, key);
    free(s->text);
    s->text = nt;
    if (spec_check_expr_refs(s, err, errlen))
        return -1;
    return 0;
}

void spec_destroy(struct sweep_spec **sp)
{
    if (!sp || !*sp)
        return;
    struct sweep_spec *s = *sp;
    for (size_t i = 0; i < s->nfixed; i++)
        axis_free(&s->fixed[i]);
    for (size_t i = 0; i < s->ngrid; i++)
        axis_free(&s->grid[i]);
    free(s->fixed);
    free(s->grid);
    free(s->path);
    free(s->name);
    free(s->text);
    free(s);
    *sp = NULL;
}
