/*
 * spec.c: reads a sweep file with libyaml's document API (the whole tree with line marks),
 * then walks it, checking every value with params_set on a scratch point so that each error
 * can name its line and key. See spec.h for the format.
 */
#include "aimsweep/harness/spec.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "aimsweep/base/expr.h"
#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"

/* Largest seed count `seeds: N` accepts. */
#define SPEC_MAX_SEEDS 1000000
/* Deepest nesting of lists and mappings a sweep file may have (it needs 3 or 4: the file's
 * mapping, grid's mapping, a zip block, a list). Checked on the event stream before the tree is
 * built, so that a file nested 10^5 deep is refused at once instead of loaded. */
#define SPEC_MAX_DEPTH 16
/* Largest sweep file read. */
#define SPEC_MAX_BYTES ((size_t)16 << 20)
/* Significant digits of generated range values (linspace, logspace, range). */
#define SPEC_RANGE_DIGITS 15

static const char *const top_keys[] = {"name", "grid", "fixed", "seeds", "solvers", NULL};
static const char *const range_kinds[] = {"linspace", "logspace", "range", NULL};

struct walk {
    const char *path;
    yaml_document_t *doc;
    struct sweep_spec *s;
    char *err;
    size_t errlen;
    int seeds_line, solvers_line;
    int nzip;
};

static int fail(struct walk *w, int line, const char *key, const char *fmt, ...)
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

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
        case YAML_SCALAR_NODE: return "a single value";
        case YAML_SEQUENCE_NODE: return "a list";
        case YAML_MAPPING_NODE: return "a mapping";
        default: return "empty";
    }
}

/* A plain scalar that YAML reads as null: `key:` with nothing, `~`, `null`. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static void canonical_key(const char *key, char *out, size_t n)
{
    size_t i = 0;
    for (; key[i] && i + 1 < n; i++)
        out[i] = (char)(key[i] == '-' ? '_' : key[i]);
    out[i] = 0;
}

static struct spec_axis *find_axis(struct spec_axis *a, size_t n, const char *key)
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

static struct spec_axis *axis_new(struct walk *w, struct spec_axis **arr, size_t *n,
                                  const char *key, int line)
{
    struct spec_axis *na = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!na) {
        fail(w, line, key, "out of memory");
        return NULL;
    }
    *arr = na;
    struct spec_axis *a = &na[(*n)++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->line = line;
    return a;
}

static int axis_push_x(struct walk *w, struct spec_axis *a, const char *value, int line,
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
        return fail(w, line, a->key, "out of memory");
    }
    a->values[a->n] = v;
    a->lines[a->n] = line;
    a->is_expr[a->n] = (unsigned char)is_expr;
    a->n++;
    return 0;
}

static int axis_push(struct walk *w, struct spec_axis *a, const char *value, int line)
{
    return axis_push_x(w, a, value, line, 0);
}

/* An expression as the value of a numeric key: compiles it and checks its names. Returns 0, or
 * -1 after fail(). */
static int check_expr(struct walk *w, const char *key, const char *text, int line)
{
    char msg[256];
    struct expr *e = expr_compile(text, msg, sizeof msg);
    if (!e)
        return fail(w, line, key, "%s", msg);
    const char *names[16];
    int nn = expr_names(e, names, 16), rc = 0;
    for (int i = 0; i < nn && i < 16 && !rc; i++) {
        char canon[64];
        canonical_key(names[i], canon, sizeof canon);
        if (!strcmp(names[i], "pi"))
            continue;
        if (!params_is_numeric(names[i])) {
            char keys[512] = "", hint[96];
            size_t off = 0;
            for (int k = 0; params_keys[k] && off < sizeof keys; k++)
                if (params_is_numeric(params_keys[k]))
                    off += (size_t)snprintf(keys + off, sizeof keys - off, "%s%s", off ? ", " : "",
                                            params_keys[k]);
            rc = fail(
                w, line, key,
                "expression '%s': unknown name '%s'%s; an expression may name the numeric keys %s, and pi",
                text, names[i], params_suggest_key(names[i], hint, sizeof hint), keys);
        } else if (!strcmp(canon, key))
            rc = fail(w, line, key, "expression '%s' names its own key", text);
    }
    expr_destroy(&e);
    return rc;
}

/* Checks one value of a parameter with params_set; returns its canonical text in canon. */
static int check_value_x(struct walk *w, const char *key, const char *value, int line, char *canon,
                         size_t n, int *is_expr)
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
        return fail(w, line, key, "%s", msg[0] ? msg : "invalid value");
    }
    if (params_get(&p, key, canon, n) < 0)
        return fail(w, line, key, "cannot be read back");
    return 0;
}

static int check_value(struct walk *w, const char *key, const char *value, int line, char *canon,
                       size_t n)
{
    return check_value_x(w, key, value, line, canon, n, NULL);
}

/* Rounds to SPEC_RANGE_DIGITS significant digits and writes the shortest text. */
static void range_text(double x, char *buf, size_t n)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*g", SPEC_RANGE_DIGITS, x);
    text_double(strtod(tmp, NULL), buf, n);
}

/* {linspace|logspace|range: [a, b, n|step]}: the values as texts in *out (caller frees each and
 * the array). Returns the count, or -1 after fail(). */
static long expand_range(struct walk *w, const char *key, const yaml_node_t *map, char ***out)
{
    *out = NULL;
    int line = line_of(map);
    if (map->data.mapping.pairs.top - map->data.mapping.pairs.start != 1)
        return fail(
            w, line, key,
            "a range is one of {linspace: [a, b, n]}, {logspace: [a, b, n]}, {range: [a, b, step]}");
    yaml_node_t *k = yaml_document_get_node(w->doc, map->data.mapping.pairs.start->key);
    yaml_node_t *v = yaml_document_get_node(w->doc, map->data.mapping.pairs.start->value);
    const char *kind = k->type == YAML_SCALAR_NODE ? scalar(k) : "";
    int which = -1;
    for (int i = 0; range_kinds[i]; i++)
        if (!strcmp(kind, range_kinds[i]))
            which = i;
    if (which < 0) {
        char hint[64] = "";
        text_suggest(hint, sizeof hint, kind, range_kinds);
        return fail(
            w, line_of(k), key,
            "'%s' is not a range%s: write {linspace: [a, b, n]}, {logspace: [a, b, n]} or {range: [a, b, step]}",
            kind, hint);
    }
    const char *form = which == 2 ? "[a, b, step]" : "[a, b, n]";
    if (!params_is_numeric(key))
        return fail(w, line, key, "%s needs a numeric key; %s takes a list of values", kind, key);
    double x[3];
    int nx = 0;
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(v), key, "%s takes three numbers %s", kind, form);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        char *end;
        if (nx == 3 || s->type != YAML_SCALAR_NODE)
            return fail(w, line_of(v), key, "%s takes three numbers %s", kind, form);
        x[nx] = strtod(scalar(s), &end);
        if (!*scalar(s) || *end || !isfinite(x[nx]))
            return fail(w, line_of(s), key, "%s %s: '%s' is not a number", kind, form, scalar(s));
        nx++;
    }
    if (nx != 3)
        return fail(w, line_of(v), key, "%s takes three numbers %s, got %d", kind, form, nx);
    double a = x[0], b = x[1], c = x[2];
    long n;
    if (which < 2) {
        if (c != floor(c) || c < 1 || c > SPEC_MAX_POINTS)
            return fail(w, line_of(v), key, "%s %s: n = %g must be an integer from 1 to %d", kind,
                        form, c, SPEC_MAX_POINTS);
        if (which == 1 && !(a > 0 && b > 0))
            return fail(
                w, line_of(v), key,
                "logspace [a, b, n]: a and b must be > 0 (values from a to b, evenly in log)");
        n = (long)c;
    } else {
        if (c == 0 || (b - a) / c <= 0)
            return fail(
                w, line_of(v), key,
                "range [a, b, step]: step %g never gets from %g towards %g (a, a + step, ... while below b)",
                c, a, b);
        double cnt = ceil((b - a) / c - 1e-9);
        if (cnt > SPEC_MAX_POINTS)
            return fail(w, line_of(v), key, "range [a, b, step]: %.0f values, more than %d", cnt,
                        SPEC_MAX_POINTS);
        n = (long)cnt;
    }
    char **vals = calloc((size_t)n, sizeof *vals);
    if (!vals)
        return fail(w, line, key, "out of memory");
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
                return fail(w, line_of(v), key, "%s gives %s, but %s takes integers", kind, buf,
                            key);
            }
            y = round(y);
        }
        range_text(y, buf, sizeof buf);
        if (!(vals[i] = strdup(buf))) {
            for (long j = 0; j < i; j++)
                free(vals[j]);
            free(vals);
            return fail(w, line, key, "out of memory");
        }
    }
    *out = vals;
    return n;
}

/* The line (1-based) of byte offset off in text. */
static int line_at(const char *text, size_t len, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += text[i] == '\n';
    return line;
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
static int find_repeat(char *const *texts, size_t n, size_t *later, size_t *earlier)
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

/* Parentheses opened and not closed in s (negative when more close than open). */
static int paren_balance(const char *s)
{
    int b = 0;
    for (; *s; s++)
        b += (*s == '(') - (*s == ')');
    return b;
}

/* Adds one grid value: checked, not a repeat of an earlier one. canons holds the canonical
 * text of the values so far (a->n of them). */
static int grid_value(struct walk *w, struct spec_axis *a, char ***canons, const char *value,
                      int line)
{
    char canon[512];
    int is_expr;
    if (check_value_x(w, a->key, value, line, canon, sizeof canon, &is_expr))
        return -1;
    /* repeats are found once the list is complete (repeat_check) */
    char **nc = realloc(*canons, (a->n + 1) * sizeof *nc);
    if (!nc)
        return fail(w, line, a->key, "out of memory");
    *canons = nc;
    if (!(nc[a->n] = strdup(canon)))
        return fail(w, line, a->key, "out of memory");
    if (axis_push_x(w, a, value, line, is_expr)) {
        free(nc[a->n]);
        return -1;
    }
    return 0;
}

/* After a grid axis is read: the first value that repeats an earlier one, by canonical text.
 * Returns 0, or -1 after fail(). */
static int repeat_check(struct walk *w, struct spec_axis *a, char **canons)
{
    size_t later, earlier;
    int r = find_repeat(canons, a->n, &later, &earlier);
    if (r < 0)
        return fail(w, a->line, a->key, "out of memory");
    if (r > 0)
        return fail(w, a->lines[later], a->key, "value '%s' repeats '%s' (line %d)",
                    a->values[later], a->values[earlier], a->lines[earlier]);
    return 0;
}

/* Adds key -> values to the grid (list = 1) or fixed (list = 0) section; zip > 0 puts a grid
 * axis into that zip block. */
static int add_param(struct walk *w, const yaml_node_t *knode, const yaml_node_t *vnode, int list,
                     int zip)
{
    const char *raw = scalar(knode);
    char key[64];
    int kline = line_of(knode);
    if (strlen(raw) >= sizeof key || !params_is_key(raw)) {
        char hint[96];
        if (!strcmp(raw, "seeds"))
            return fail(w, kline, raw,
                        "seeds goes at the top level (or write seed under grid or fixed)");
        return fail(w, kline, raw,
                    "unknown parameter%s (the keys are those of `aimsweep single --help`)",
                    params_suggest_key(raw, hint, sizeof hint));
    }
    canonical_key(raw, key, sizeof key);
    if (!strcmp(key, "seed") && w->seeds_line)
        return fail(w, kline, key, "given both here and as `seeds` (line %d)", w->seeds_line);
    if (!strcmp(key, "solvers") && w->solvers_line)
        return fail(w, kline, key, "given both here and as top-level `solvers` (line %d)",
                    w->solvers_line);
    struct spec_axis *other = find_axis(w->s->grid, w->s->ngrid, key);
    if (!other)
        other = find_axis(w->s->fixed, w->s->nfixed, key);
    if (other)
        return fail(w, kline, key,
                    "given twice (also on line %d); a key sits in grid or in fixed, not both",
                    other->line);
    if (is_null(vnode))
        return fail(w, kline, key, "missing value");

    struct spec_axis *a = list ? axis_new(w, &w->s->grid, &w->s->ngrid, key, kline)
                               : axis_new(w, &w->s->fixed, &w->s->nfixed, key, kline);
    if (!a)
        return -1;
    a->zip = zip;
    char canon[512];
    if (!list) {
        int is_expr;
        if (vnode->type != YAML_SCALAR_NODE)
            return fail(w, line_of(vnode), key,
                        "fixed values are single values, got %s (lists go under grid)",
                        node_kind(vnode));
        if (check_value_x(w, key, scalar(vnode), line_of(vnode), canon, sizeof canon, &is_expr))
            return -1;
        return axis_push_x(w, a, scalar(vnode), line_of(vnode), is_expr);
    }
    char **canons = NULL;
    int rc = 0;
    if (vnode->type == YAML_MAPPING_NODE) {
        char **vals;
        long nv = expand_range(w, key, vnode, &vals);
        if (nv < 0)
            return -1;
        for (long i = 0; i < nv; i++) {
            if (!rc)
                rc = grid_value(w, a, &canons, vals[i], line_of(vnode));
            free(vals[i]);
        }
        free(vals);
        goto out;
    }
    if (vnode->type != YAML_SEQUENCE_NODE)
        return fail(
            w, line_of(vnode), key,
            "grid values are lists like [a, b] or ranges like {linspace: [a, b, n]}, got %s (single values go under fixed)",
            node_kind(vnode));
    size_t nitems = (size_t)(vnode->data.sequence.items.top - vnode->data.sequence.items.start);
    if (nitems == 0)
        return fail(w, line_of(vnode), key, "empty list: a grid axis needs at least one value");
    char *joined = NULL;
    for (yaml_node_item_t *it = vnode->data.sequence.items.start;
         it < vnode->data.sequence.items.top && !rc; it++) {
        yaml_node_t *v = yaml_document_get_node(w->doc, *it);
        if (v->type != YAML_SCALAR_NODE) {
            rc = fail(w, line_of(v), key, "list items are single values, got %s", node_kind(v));
            break;
        }
        if (is_null(v)) {
            rc = fail(w, line_of(v), key, "empty list item");
            break;
        }
        const char *text = scalar(v);
        /* [hermite(0,1)] reads in YAML as the two items "hermite(0" and "1)": a plain item with
         * an open parenthesis takes the following items up to the closing one */
        if (vnode->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE &&
            v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && paren_balance(text) > 0) {
            size_t used = strlen(text), cap = used + 1;
            free(joined);
            if (!(joined = strdup(text))) {
                rc = fail(w, line_of(v), key, "out of memory");
                break;
            }
            while (paren_balance(joined) > 0 && it + 1 < vnode->data.sequence.items.top) {
                yaml_node_t *nx = yaml_document_get_node(w->doc, *(it + 1));
                if (nx->type != YAML_SCALAR_NODE ||
                    nx->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                    break;
                it++;
                size_t more = strlen(scalar(nx));
                cap += more + 1;
                char *nj = realloc(joined, cap);
                if (!nj) {
                    rc = fail(w, line_of(v), key, "out of memory");
                    break;
                }
                joined = nj;
                joined[used++] = ',';
                memcpy(joined + used, scalar(nx), more + 1);
                used += more;
            }
            if (!rc && paren_balance(joined) != 0)
                rc = fail(w, line_of(v), key, "'%.100s': a '(' without its ')'", joined);
            if (rc)
                break;
            text = joined;
        }
        rc = grid_value(w, a, &canons, text, line_of(v));
    }
    free(joined);
out:
    if (!rc)
        rc = repeat_check(w, a, canons);
    for (size_t j = 0; canons && j < a->n; j++)
        free(canons[j]);
    free(canons);
    return rc;
}

/* zip: KEY: [values], ... under grid: axes of one length that vary together. */
static int walk_zip(struct walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    const char *name = scalar(k);
    if (v->type != YAML_MAPPING_NODE || v->data.mapping.pairs.top == v->data.mapping.pairs.start)
        return fail(
            w, line_of(v), name,
            "a zip block is a mapping of parameter: [values] (the lists go together), got %s",
            node_kind(v));
    int zip = ++w->nzip;
    size_t first = w->s->ngrid;
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *pk = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *pv = yaml_document_get_node(w->doc, p->value);
        if (pk->type != YAML_SCALAR_NODE)
            return fail(w, line_of(pk), name, "keys must be parameter names, got %s",
                        node_kind(pk));
        if (add_param(w, pk, pv, 1, zip))
            return -1;
    }
    const struct spec_axis *a0 = &w->s->grid[first];
    for (size_t i = first + 1; i < w->s->ngrid; i++) {
        const struct spec_axis *a = &w->s->grid[i];
        if (a->n != a0->n)
            return fail(
                w, a->line, name,
                "lists of unequal length: %s has %zu values (line %d), %s has %zu; the values of a zip go together, one from each list",
                a0->key, a0->n, a0->line, a->key, a->n);
    }
    return 0;
}

static int walk_section(struct walk *w, const yaml_node_t *sec, const char *name, int list)
{
    if (is_null(sec))
        return fail(w, line_of(sec), name, "empty section");
    if (sec->type != YAML_MAPPING_NODE)
        return fail(w, line_of(sec), name, "must be a mapping of parameter: value, got %s",
                    node_kind(sec));
    if (sec->data.mapping.pairs.top == sec->data.mapping.pairs.start)
        return fail(w, line_of(sec), name, "empty section");
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail(w, line_of(k), name, "keys must be parameter names, got %s", node_kind(k));
        if (!strncmp(scalar(k), "zip", 3) && !params_is_key(scalar(k))) {
            if (!list)
                return fail(w, line_of(k), scalar(k), "zip blocks go under grid");
            if (walk_zip(w, k, v))
                return -1;
            continue;
        }
        if (add_param(w, k, v, list, 0))
            return -1;
    }
    return 0;
}

static int parse_seed_count(const char *s, long *n)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno)
        return -1;
    *n = v;
    return 0;
}

static int walk_seeds(struct walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    int kline = line_of(k);
    if (find_axis(w->s->grid, w->s->ngrid, "seed") || find_axis(w->s->fixed, w->s->nfixed, "seed"))
        return fail(w, kline, "seeds", "the seed is already given under grid or fixed");
    w->seeds_line = kline;
    if (is_null(v))
        return fail(w, kline, "seeds", "missing value");
    struct spec_axis *a = axis_new(w, &w->s->grid, &w->s->ngrid, "seed", kline);
    if (!a)
        return -1;
    char buf[32], canon[64];
    if (v->type == YAML_SCALAR_NODE) {
        long n;
        if (parse_seed_count(scalar(v), &n) || n < 1 || n > SPEC_MAX_SEEDS)
            return fail(w, line_of(v), "seeds",
                        "a count must be an integer from 1 to %d (seeds 1..N), got '%s'",
                        SPEC_MAX_SEEDS, scalar(v));
        for (long i = 1; i <= n; i++) {
            snprintf(buf, sizeof buf, "%ld", i);
            if (axis_push(w, a, buf, line_of(v)))
                return -1;
        }
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(v), "seeds", "must be a count or a list of seeds, got %s",
                    node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return fail(w, line_of(v), "seeds", "empty list");
    size_t nitems = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start), got = 0;
    char **canons = calloc(nitems, sizeof *canons);
    if (!canons)
        return fail(w, kline, "seeds", "out of memory");
    int rc = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s)) {
            rc = fail(w, line_of(s), "seeds", "list items are seeds (integers), got %s",
                      node_kind(s));
            break;
        }
        if ((rc = check_value(w, "seed", scalar(s), line_of(s), canon, sizeof canon)))
            break;
        if (!(canons[got] = strdup(canon))) {
            rc = fail(w, line_of(s), "seeds", "out of memory");
            break;
        }
        got++;
        if ((rc = axis_push(w, a, scalar(s), line_of(s))))
            break;
    }
    if (!rc) {
        size_t later, earlier;
        int r = find_repeat(canons, got, &later, &earlier);
        if (r < 0)
            rc = fail(w, kline, "seeds", "out of memory");
        else if (r > 0)
            rc = fail(w, a->lines[later], "seeds", "seed %s appears twice (also on line %d)",
                      a->values[later], a->lines[earlier]);
    }
    for (size_t j = 0; j < nitems; j++)
        free(canons[j]);
    free(canons);
    return rc;
}

static int walk_solvers(struct walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    int kline = line_of(k);
    if (find_axis(w->s->grid, w->s->ngrid, "solvers") ||
        find_axis(w->s->fixed, w->s->nfixed, "solvers"))
        return fail(w, kline, "solvers", "already given under grid or fixed");
    w->solvers_line = kline;
    if (is_null(v))
        return fail(w, kline, "solvers", "missing value");
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(v), "solvers", "must be a list like [sgd, flow, ode], got %s",
                    node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return fail(w, line_of(v), "solvers", "empty list: name at least one of sgd, flow, ode");
    char joined[256] = "", canon[256], seen[8][32];
    int nseen = 0;
    size_t off = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s))
            return fail(w, line_of(s), "solvers", "list items are solver names, got %s",
                        node_kind(s));
        if (strchr(scalar(s), ','))
            return fail(w, line_of(s), "solvers", "one solver per list item, got '%s'", scalar(s));
        if (check_value(w, "solvers", scalar(s), line_of(s), canon, sizeof canon))
            return -1;
        for (int j = 0; j < nseen; j++)
            if (!strcmp(seen[j], canon))
                return fail(w, line_of(s), "solvers", "solver '%s' listed twice", scalar(s));
        if (nseen < 8)
            snprintf(seen[nseen++], sizeof seen[0], "%.31s", canon);
        int n = snprintf(joined + off, sizeof joined - off, "%s%s", off ? "," : "", scalar(s));
        if (n < 0 || (size_t)n >= sizeof joined - off)
            return fail(w, line_of(s), "solvers", "list too long");
        off += (size_t)n;
    }
    if (check_value(w, "solvers", joined, line_of(v), canon, sizeof canon))
        return -1;
    struct spec_axis *a = axis_new(w, &w->s->fixed, &w->s->nfixed, "solvers", kline);
    return a ? axis_push(w, a, joined, line_of(v)) : -1;
}

static int walk_root(struct walk *w, const yaml_node_t *root)
{
    const yaml_node_t *grid = NULL, *fixed = NULL, *gridk = NULL, *fixedk = NULL;
    const yaml_node_t *seedsk = NULL, *seeds = NULL, *solvk = NULL, *solv = NULL;
    if (root->type != YAML_MAPPING_NODE)
        return fail(w, line_of(root), NULL,
                    "a sweep file is a mapping with keys name, grid, fixed, seeds, solvers; got %s",
                    node_kind(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail(w, line_of(k), NULL, "top-level keys must be names, got %s", node_kind(k));
        const char *key = scalar(k);
        const yaml_node_t **slot = NULL, **kslot = NULL;
        if (!strcmp(key, "grid"))
            slot = &grid, kslot = &gridk;
        else if (!strcmp(key, "fixed"))
            slot = &fixed, kslot = &fixedk;
        else if (!strcmp(key, "seeds"))
            slot = &seeds, kslot = &seedsk;
        else if (!strcmp(key, "solvers"))
            slot = &solv, kslot = &solvk;
        else if (!strcmp(key, "name")) {
            if (w->s->name)
                return fail(w, line_of(k), "name", "given twice");
            if (v->type != YAML_SCALAR_NODE || is_null(v) || !*scalar(v))
                return fail(w, line_of(v), "name", "must be a non-empty string, got %s",
                            is_null(v) ? "nothing" : node_kind(v));
            if (!(w->s->name = strdup(scalar(v))))
                return fail(w, line_of(v), "name", "out of memory");
            continue;
        } else if (params_is_key(key))
            return fail(w, line_of(k), key,
                        "parameters go under grid (a list) or fixed (one value)");
        else {
            char hint[64] = "";
            text_suggest(hint, sizeof hint, key, top_keys);
            return fail(w, line_of(k), key,
                        "unknown key%s (expected name, grid, fixed, seeds, solvers)", hint);
        }
        if (*slot)
            return fail(w, line_of(k), key, "given twice (also on line %d)", line_of(*kslot));
        *slot = v;
        *kslot = k;
    }
    /* seeds and solvers first, so a clash with grid/fixed names the later line either way */
    if (seeds && walk_seeds(w, seedsk, seeds))
        return -1;
    if (solv && walk_solvers(w, solvk, solv))
        return -1;
    if (grid) {
        w->s->grid_line = line_of(gridk);
        if (walk_section(w, grid, "grid", 1))
            return -1;
    }
    if (fixed && walk_section(w, fixed, "fixed", 0))
        return -1;
    /* seeds vary fastest: the seeds of one point run next to each other in file order */
    struct spec_axis *sa = find_axis(w->s->grid, w->s->ngrid, "seed");
    if (sa && seeds) {
        struct spec_axis tmp = *sa;
        size_t k = (size_t)(sa - w->s->grid);
        memmove(sa, sa + 1, (w->s->ngrid - k - 1) * sizeof *sa);
        w->s->grid[w->s->ngrid - 1] = tmp;
    }
    return 0;
}

/* "FILE:LINE:COL: YAML syntax error: ..." in plain words. A tab on the line of the mistake (or
 * the line before, where libyaml often notices it late) is named: YAML indents with spaces only,
 * and libyaml's own words for it ("found character that cannot start any token") do not say so. */
static void yaml_syntax_error(const char *path, const char *text, size_t len,
                              const yaml_parser_t *ps, char *err, size_t errlen)
{
    int line = (int)ps->problem_mark.line + 1, col = (int)ps->problem_mark.column + 1;
    const char *problem = ps->problem ? ps->problem : "unreadable";
    if (ps->error == YAML_READER_ERROR) {
        /* invalid UTF-8, a control character: libyaml gives a byte offset, not a mark */
        snprintf(err, errlen, "%s:%d: not readable text: %s (byte 0x%02x at offset %zu)", path,
                 line_at(text, len, ps->problem_offset), problem,
                 (unsigned)ps->problem_value & 0xff, ps->problem_offset);
        return;
    }
    const char *ctx = ps->context ? ps->context : "";
    /* find the text of lines line-1 and line */
    const char *p = text, *end = text + len, *prev = NULL, *cur = NULL;
    for (int l = 1; p < end && l <= line; l++) {
        if (l == line - 1)
            prev = p;
        if (l == line)
            cur = p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    int tab_line = 0;
    const char *cands[2] = {cur, prev};
    for (int i = 0; i < 2 && !tab_line; i++) {
        if (!cands[i])
            continue;
        const char *nl = memchr(cands[i], '\n', (size_t)(end - cands[i]));
        if (memchr(cands[i], '\t', (size_t)((nl ? nl : end) - cands[i])))
            tab_line = i == 0 ? line : line - 1;
    }
    if (tab_line) {
        snprintf(
            err, errlen,
            "%s:%d: YAML syntax error: a tab character; YAML indents with spaces only: replace the tab by spaces",
            path, tab_line);
        return;
    }
    const char *hint = "";
    if (strstr(problem, "expected ',' or ']'"))
        hint = " (a '[' without its ']'?)";
    else if (strstr(problem, "expected ',' or '}'"))
        hint = " (a '{' without its '}'?)";
    else if (strstr(problem, "mapping values are not allowed"))
        hint = " (a missing space after ':' or a value that needs quotes?)";
    else if (strstr(problem, "did not find expected key") ||
             strstr(problem, "expected <block end>"))
        hint = " (indentation: keys of one mapping start in the same column)";
    snprintf(err, errlen, "%s:%d: YAML syntax error (column %d): %s%s%s%s", path, line, col,
             problem, *ctx ? " " : "", ctx, hint);
}

/* Refuses a file nested deeper than SPEC_MAX_DEPTH, reading events only up to that depth.
 * Syntax errors are left to the loader, which reports them the same way. */
static int check_depth(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, rc = 0;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev))
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > SPEC_MAX_DEPTH) {
                snprintf(
                    err, errlen,
                    "%s:%d: lists and mappings nested more than %d deep (a sweep file needs 3 or 4)",
                    path, (int)ev.start_mark.line + 1, SPEC_MAX_DEPTH);
                rc = -1;
            }
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT)
            depth--;
        yaml_event_delete(&ev);
        if (rc || t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&parser);
    return rc;
}

static char *default_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *n = strdup(b);
    if (n) {
        char *dot = strrchr(n, '.');
        if (dot && dot != n)
            *dot = 0;
    }
    return n;
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
static int check_expr_refs(const struct sweep_spec *s, char *err, size_t errlen)
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
                    canonical_key(names[k], key, sizeof key);
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
    canonical_key(key, key, sizeof key);
    const char *value = eq + 1;
    if (!params_is_key(key)) {
        snprintf(err, errlen,
                 "--set %s: unknown parameter '%s'%s (the keys of aimsweep single --help)",
                 assignment, key, params_suggest_key(key, hint, sizeof hint));
        return -1;
    }
    char msg[1024] = "", canon[512];
    int is_expr = 0;
    struct walk w = {"--set", NULL, s, msg, sizeof msg, 0, 0, 0};
    if (!*value) {
        snprintf(err, errlen, "--set %s: empty value", assignment);
        return -1;
    }
    if (check_value_x(&w, key, value, 0, canon, sizeof canon, &is_expr)) {
        const char *m = strstr(msg, "': ");
        snprintf(err, errlen, "--set %s: %s", assignment, m ? m + 3 : msg);
        return -1;
    }
    struct spec_axis *g = find_axis(s->grid, s->ngrid, key);
    if (g && g->zip) {
        snprintf(err, errlen,
                 "--set %s: %s is part of a zip block (%s line %d); edit the sweep file instead",
                 assignment, key, s->path, g->line);
        return -1;
    }
    /* the new text first, so that a failure leaves the spec as it was */
    size_t tl = strlen(s->text);
    char *nt = malloc(tl + strlen(assignment) + 32);
    if (!nt) {
        snprintf(err, errlen, "--set %s: out of memory", assignment);
        return -1;
    }
    snprintf(nt, tl + strlen(assignment) + 32, "%s%s# --set %s\n", s->text,
             tl && s->text[tl - 1] != '\n' ? "\n" : "", assignment);
    struct spec_axis *f = find_axis(s->fixed, s->nfixed, key);
    if (!f) {
        f = axis_new(&w, &s->fixed, &s->nfixed, key, 0);
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
    if (axis_push_x(&w, f, value, 0, is_expr)) {
        free(nt);
        snprintf(err, errlen, "--set %s: out of memory", assignment);
        return -1;
    }
    if (g) {
        size_t k = (size_t)(g - s->grid);
        axis_free(g);
        memmove(g, g + 1, (s->ngrid - k - 1) * sizeof *g);
        s->ngrid--;
    }
    free(s->text);
    s->text = nt;
    if (check_expr_refs(s, err, errlen))
        return -1;
    return 0;
}

int spec_parse(const char *path, const char *text, size_t len, struct sweep_spec **out, char *err,
               size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_doc = 0, rc = -1;
    struct sweep_spec *s = calloc(1, sizeof *s);
    struct walk w = {path, &doc, s, err, errlen, 0, 0, 0};
    *out = NULL;
    if (!s || !(s->path = strdup(path)) || !(s->text = malloc(len + 1))) {
        snprintf(err, errlen, "%s: out of memory", path);
        spec_destroy(&s);
        return -1;
    }
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->grid_line = 1;
    const char *nul = memchr(text, 0, len);
    if (nul) {
        snprintf(err, errlen, "%s:%d: not a text file (contains NUL bytes)", path,
                 line_at(text, len, (size_t)(nul - text)));
        spec_destroy(&s);
        return -1;
    }
    if (check_depth(path, text, len, err, errlen)) {
        spec_destroy(&s);
        return -1;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_syntax_error(path, text, len, &parser, err, errlen);
        goto out;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || is_null(root)) {
        snprintf(err, errlen,
                 "%s:1: empty sweep file (expected keys name, grid, fixed, seeds, solvers)", path);
        goto out;
    }
    {
        yaml_document_t doc2;
        if (!yaml_parser_load(&parser, &doc2)) {
            yaml_syntax_error(path, text, len, &parser, err, errlen);
            goto out;
        }
        yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
        int line2 = r2 ? line_of(r2) : 0;
        yaml_document_delete(&doc2);
        if (r2) {
            snprintf(err, errlen, "%s:%d: a sweep file holds one YAML document, found a second",
                     path, line2);
            goto out;
        }
    }
    if (walk_root(&w, root))
        goto out;
    if (check_expr_refs(s, err, errlen))
        goto out;
    if (!s->name && !(s->name = default_name(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    if (!s->ngrid && !s->nfixed) {
        snprintf(err, errlen, "%s:1: nothing to sweep: give at least grid or fixed", path);
        goto out;
    }
    double points = 1;
    for (size_t i = 0; i < s->ngrid; i++)
        points *= (double)s->grid[i].n;
    if (points > SPEC_MAX_POINTS) {
        snprintf(err, errlen, "%s:%d: key 'grid': %.0f grid points, more than the limit %d", path,
                 s->grid_line, points, SPEC_MAX_POINTS);
        goto out;
    }
    rc = 0;
out:
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc)
        spec_destroy(&s);
    *out = s;
    return rc;
}

int spec_load(const char *path, struct sweep_spec **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open sweep file: %s", path, strerror(errno));
        return -1;
    }
    /* read up to one byte past the limit: a file of exactly SPEC_MAX_BYTES is accepted */
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len > SPEC_MAX_BYTES) {
            free(buf);
            fclose(f);
            snprintf(err, errlen, "%s: sweep file larger than %zu MiB", path, SPEC_MAX_BYTES >> 20);
            return -1;
        }
        if (len < cap)
            break;
        size_t ncap = cap * 2 > SPEC_MAX_BYTES + 1 ? SPEC_MAX_BYTES + 1 : cap * 2;
        char *nb = realloc(buf, cap = ncap);
        if (!nb) {
            free(buf);
            buf = NULL;
        } else
            buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read sweep file", path);
        return -1;
    }
    int rc = spec_parse(path, buf, len, out, err, errlen);
    free(buf);
    return rc;
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
