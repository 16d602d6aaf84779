/*
 * spec.c: reads a sweep file with libyaml's document API (the whole tree with line marks),
 * then walks it, checking every value with params_set on a scratch point so that each error
 * can name its line and key. See spec.h for the format.
 */
#include "aimsweep/harness/spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "aimsweep/base/params.h"

/* Largest seed count `seeds: N` accepts. */
#define SPEC_MAX_SEEDS 1000000

struct walk {
    const char *path;
    yaml_document_t *doc;
    struct sweep_spec *s;
    char *err;
    size_t errlen;
    int seeds_line, solvers_line;
};

static int fail(struct walk *w, int line, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    /* clang 14's analyzer takes ap for uninitialised here, after va_start */
    vsnprintf(msg, sizeof msg, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
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
}

static struct spec_axis *axis_new(struct walk *w, struct spec_axis **arr, size_t *n, const char *key,
                                  int line)
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

static int axis_push(struct walk *w, struct spec_axis *a, const char *value, int line)
{
    char **nv = realloc(a->values, (a->n + 1) * sizeof *nv);
    if (nv)
        a->values = nv;
    int *nl = realloc(a->lines, (a->n + 1) * sizeof *nl);
    if (nl)
        a->lines = nl;
    char *v = strdup(value);
    if (!nv || !nl || !v) {
        free(v);
        return fail(w, line, a->key, "out of memory");
    }
    a->values[a->n] = v;
    a->lines[a->n] = line;
    a->n++;
    return 0;
}

/* Checks one value of a parameter with params_set; returns its canonical text in canon. */
static int check_value(struct walk *w, const char *key, const char *value, int line, char *canon,
                       size_t n)
{
    struct params p;
    char msg[256] = "";
    params_default(&p);
    if (params_set(&p, key, value, msg, sizeof msg) != 0)
        return fail(w, line, key, "%s", msg[0] ? msg : "invalid value");
    if (params_get(&p, key, canon, n) < 0)
        return fail(w, line, key, "cannot be read back");
    return 0;
}

/* Adds key -> values to the grid (list = 1) or fixed (list = 0) section. */
static int add_param(struct walk *w, const yaml_node_t *knode, const yaml_node_t *vnode, int list)
{
    const char *raw = scalar(knode);
    char key[64];
    int kline = line_of(knode);
    if (strlen(raw) >= sizeof key || !params_is_key(raw))
        return fail(w, kline, raw, "unknown parameter (the keys are those of `aimsweep single`)");
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
        return fail(w, kline, key, "given twice (also on line %d); a key sits in grid or in fixed, not both",
                    other->line);
    if (is_null(vnode))
        return fail(w, kline, key, "missing value");

    struct spec_axis *a = list ? axis_new(w, &w->s->grid, &w->s->ngrid, key, kline)
                               : axis_new(w, &w->s->fixed, &w->s->nfixed, key, kline);
    if (!a)
        return -1;
    char canon[512];
    if (!list) {
        if (vnode->type != YAML_SCALAR_NODE)
            return fail(w, line_of(vnode), key, "fixed values are single values, got %s (lists go under grid)",
                        node_kind(vnode));
        if (check_value(w, key, scalar(vnode), line_of(vnode), canon, sizeof canon))
            return -1;
        return axis_push(w, a, scalar(vnode), line_of(vnode));
    }
    if (vnode->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(vnode), key, "grid values are lists like [a, b], got %s (single values go under fixed)",
                    node_kind(vnode));
    size_t nitems = (size_t)(vnode->data.sequence.items.top - vnode->data.sequence.items.start);
    if (nitems == 0)
        return fail(w, line_of(vnode), key, "empty list: a grid axis needs at least one value");
    char **canons = calloc(nitems, sizeof *canons);
    if (!canons)
        return fail(w, kline, key, "out of memory");
    int rc = 0;
    size_t k = 0;
    for (yaml_node_item_t *it = vnode->data.sequence.items.start; it < vnode->data.sequence.items.top; it++, k++) {
        yaml_node_t *v = yaml_document_get_node(w->doc, *it);
        if (v->type != YAML_SCALAR_NODE) {
            rc = fail(w, line_of(v), key, "list items are single values, got %s", node_kind(v));
            break;
        }
        if (is_null(v)) {
            rc = fail(w, line_of(v), key, "empty list item");
            break;
        }
        if ((rc = check_value(w, key, scalar(v), line_of(v), canon, sizeof canon)))
            break;
        for (size_t j = 0; j < k; j++)
            if (!strcmp(canons[j], canon)) {
                rc = fail(w, line_of(v), key, "value '%s' repeats '%s' (line %d)", scalar(v), a->values[j],
                          a->lines[j]);
                break;
            }
        if (rc)
            break;
        if (!(canons[k] = strdup(canon)) || (rc = axis_push(w, a, scalar(v), line_of(v)))) {
            if (!rc)
                rc = fail(w, line_of(v), key, "out of memory");
            break;
        }
    }
    for (size_t j = 0; j < nitems; j++)
        free(canons[j]);
    free(canons);
    return rc;
}

static int walk_section(struct walk *w, const yaml_node_t *sec, const char *name, int list)
{
    if (is_null(sec))
        return fail(w, line_of(sec), name, "empty section");
    if (sec->type != YAML_MAPPING_NODE)
        return fail(w, line_of(sec), name, "must be a mapping of parameter: value, got %s", node_kind(sec));
    if (sec->data.mapping.pairs.top == sec->data.mapping.pairs.start)
        return fail(w, line_of(sec), name, "empty section");
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail(w, line_of(k), name, "keys must be parameter names, got %s", node_kind(k));
        if (add_param(w, k, v, list))
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
            return fail(w, line_of(v), "seeds", "a count must be an integer from 1 to %d (seeds 1..N), got '%s'",
                        SPEC_MAX_SEEDS, scalar(v));
        for (long i = 1; i <= n; i++) {
            snprintf(buf, sizeof buf, "%ld", i);
            if (axis_push(w, a, buf, line_of(v)))
                return -1;
        }
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(v), "seeds", "must be a count or a list of seeds, got %s", node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return fail(w, line_of(v), "seeds", "empty list");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s))
            return fail(w, line_of(s), "seeds", "list items are seeds (integers), got %s", node_kind(s));
        if (check_value(w, "seed", scalar(s), line_of(s), canon, sizeof canon))
            return -1;
        for (size_t j = 0; j < a->n; j++) {
            char c2[64];
            if (!check_value(w, "seed", a->values[j], a->lines[j], c2, sizeof c2) && !strcmp(c2, canon))
                return fail(w, line_of(s), "seeds", "seed %s appears twice", scalar(s));
        }
        if (axis_push(w, a, scalar(s), line_of(s)))
            return -1;
    }
    return 0;
}

static int walk_solvers(struct walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    int kline = line_of(k);
    if (find_axis(w->s->grid, w->s->ngrid, "solvers") || find_axis(w->s->fixed, w->s->nfixed, "solvers"))
        return fail(w, kline, "solvers", "already given under grid or fixed");
    w->solvers_line = kline;
    if (is_null(v))
        return fail(w, kline, "solvers", "missing value");
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(w, line_of(v), "solvers", "must be a list like [sgd, flow, ode], got %s", node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return fail(w, line_of(v), "solvers", "empty list: name at least one of sgd, flow, ode");
    char joined[256] = "", canon[256], seen[8][32];
    int nseen = 0;
    size_t off = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s))
            return fail(w, line_of(s), "solvers", "list items are solver names, got %s", node_kind(s));
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
        return fail(w, line_of(root), NULL, "a sweep file is a mapping with keys name, grid, fixed, seeds, solvers; got %s",
                    node_kind(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
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
            return fail(w, line_of(k), key, "parameters go under grid (a list) or fixed (one value)");
        else
            return fail(w, line_of(k), key, "unknown key (expected name, grid, fixed, seeds, solvers)");
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

int spec_parse(const char *path, const char *text, size_t len, struct sweep_spec **out, char *err,
               size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_doc = 0, rc = -1;
    struct sweep_spec *s = calloc(1, sizeof *s);
    struct walk w = {path, &doc, s, err, errlen, 0, 0};
    *out = NULL;
    if (!s || !(s->path = strdup(path)) || !(s->text = malloc(len + 1))) {
        snprintf(err, errlen, "%s: out of memory", path);
        spec_destroy(&s);
        return -1;
    }
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->grid_line = 1;
    if (memchr(text, 0, len)) {
        snprintf(err, errlen, "%s:1: not a text file (contains NUL bytes)", path);
        spec_destroy(&s);
        return -1;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        const char *ctx = parser.context ? parser.context : "";
        snprintf(err, errlen, "%s:%d: YAML syntax error: %s%s%s", path, (int)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "unreadable", *ctx ? " " : "", ctx);
        goto out;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || is_null(root)) {
        snprintf(err, errlen, "%s:1: empty sweep file (expected keys name, grid, fixed, seeds, solvers)", path);
        goto out;
    }
    {
        yaml_document_t doc2;
        if (!yaml_parser_load(&parser, &doc2)) {
            snprintf(err, errlen, "%s:%d: YAML syntax error: %s", path, (int)parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "unreadable");
            goto out;
        }
        yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
        int line2 = r2 ? line_of(r2) : 0;
        yaml_document_delete(&doc2);
        if (r2) {
            snprintf(err, errlen, "%s:%d: a sweep file holds one YAML document, found a second", path, line2);
            goto out;
        }
    }
    if (walk_root(&w, root))
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
        snprintf(err, errlen, "%s:%d: key 'grid': %.0f grid points, more than the limit %d", path, s->grid_line,
                 points, SPEC_MAX_POINTS);
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
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap)
            break;
        if (cap >= (size_t)16 << 20) {
            free(buf);
            fclose(f);
            snprintf(err, errlen, "%s: sweep file larger than 16 MiB", path);
            return -1;
        }
        char *nb = realloc(buf, cap *= 2);
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
