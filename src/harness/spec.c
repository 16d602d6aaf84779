/*
 * spec.c: reads a sweep file with libyaml's document API (the whole tree with line marks),
 * then walks it: the top-level keys, the grid and fixed sections, zip blocks, lists (with
 * hermite(0,1) rejoined), ranges, seeds and solvers, the file's size, depth and YAML syntax
 * errors in plain words. Every value found goes to spec_axis.c, which checks it with params_set
 * on a scratch point, so that each error can name its line and key. See spec.h for the format.
 */
#include "aimsweep/harness/spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"
#include "spec_impl.h"

/* Deepest nesting of lists and mappings a sweep file may have (it needs 3 or 4: the file's
 * mapping, grid's mapping, a zip block, a list). Checked on the event stream before the tree is
 * built, so that a file nested 10^5 deep is refused at once instead of loaded. */
#define SPEC_MAX_DEPTH 16
/* Largest sweep file read. */
#define SPEC_MAX_BYTES ((size_t)16 << 20)

static const char *const top_keys[] = {"name", "grid", "fixed", "seeds", "solvers", NULL};

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

/* {linspace|logspace|range: [a, b, n|step]}: the values as texts in *out (caller frees each and
 * the array). Returns the count, or -1 after spec_fail(). */
static long expand_range(struct spec_walk *w, const char *key, const yaml_node_t *map, char ***out)
{
    *out = NULL;
    int line = line_of(map);
    if (map->data.mapping.pairs.top - map->data.mapping.pairs.start != 1)
        return spec_fail(
            w, line, key,
            "a range is one of {linspace: [a, b, n]}, {logspace: [a, b, n]}, {range: [a, b, step]}");
    yaml_node_t *k = yaml_document_get_node(w->doc, map->data.mapping.pairs.start->key);
    yaml_node_t *v = yaml_document_get_node(w->doc, map->data.mapping.pairs.start->value);
    const char *kind = k->type == YAML_SCALAR_NODE ? scalar(k) : "";
    int which = -1;
    for (int i = 0; spec_range_kinds[i]; i++)
        if (!strcmp(kind, spec_range_kinds[i]))
            which = i;
    if (which < 0) {
        char hint[64] = "";
        text_suggest(hint, sizeof hint, kind, spec_range_kinds);
        return spec_fail(
            w, line_of(k), key,
            "'%s' is not a range%s: write {linspace: [a, b, n]}, {logspace: [a, b, n]} or {range: [a, b, step]}",
            kind, hint);
    }
    const char *form = which == 2 ? "[a, b, step]" : "[a, b, n]";
    if (!params_is_numeric(key))
        return spec_fail(w, line, key, "%s needs a numeric key; %s takes a list of values", kind,
                         key);
    double x[3];
    int nx = 0;
    if (v->type != YAML_SEQUENCE_NODE)
        return spec_fail(w, line_of(v), key, "%s takes three numbers %s", kind, form);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        char *end;
        if (nx == 3 || s->type != YAML_SCALAR_NODE)
            return spec_fail(w, line_of(v), key, "%s takes three numbers %s", kind, form);
        x[nx] = strtod(scalar(s), &end);
        if (!*scalar(s) || *end || !isfinite(x[nx]))
            return spec_fail(w, line_of(s), key, "%s %s: '%s' is not a number", kind, form,
                             scalar(s));
        nx++;
    }
    if (nx != 3)
        return spec_fail(w, line_of(v), key, "%s takes three numbers %s, got %d", kind, form, nx);
    return spec_range_values(w, key, which, x[0], x[1], x[2], line, line_of(v), out);
}

/* The line (1-based) of byte offset off in text. */
static int line_at(const char *text, size_t len, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < len; i++)
        line += text[i] == '\n';
    return line;
}

/* Parentheses opened and not closed in s (negative when more close than open). */
static int paren_balance(const char *s)
{
    int b = 0;
    for (; *s; s++)
        b += (*s == '(') - (*s == ')');
    return b;
}

/* Adds key -> values to the grid (list = 1) or fixed (list = 0) section; zip > 0 puts a grid
 * axis into that zip block, and then *canons_out takes the axis's canonical texts (a->n of them,
 * the caller's to free) for the block's own repeat check. */
static int add_param(struct spec_walk *w, const yaml_node_t *knode, const yaml_node_t *vnode,
                     int list, int zip, char ***canons_out)
{
    const char *raw = scalar(knode);
    char key[64];
    int kline = line_of(knode);
    if (strlen(raw) >= sizeof key || !params_is_key(raw)) {
        char hint[96];
        if (!strcmp(raw, "seeds"))
            return spec_fail(w, kline, raw,
                             "seeds goes at the top level (or write seed under grid or fixed)");
        return spec_fail(w, kline, raw,
                         "unknown parameter%s (the keys are those of `aimsweep single --help`)",
                         params_suggest_key(raw, hint, sizeof hint));
    }
    spec_canonical_key(raw, key, sizeof key);
    if (!strcmp(key, "seed") && w->seeds_line)
        return spec_fail(w, kline, key, "given both here and as `seeds` (line %d)", w->seeds_line);
    if (!strcmp(key, "solvers") && w->solvers_line)
        return spec_fail(w, kline, key, "given both here and as top-level `solvers` (line %d)",
                         w->solvers_line);
    struct spec_axis *other = spec_find_axis(w->s->grid, w->s->ngrid, key);
    if (!other)
        other = spec_find_axis(w->s->fixed, w->s->nfixed, key);
    if (other)
        return spec_fail(w, kline, key,
                         "given twice (also on line %d); a key sits in grid or in fixed, not both",
                         other->line);
    if (is_null(vnode))
        return spec_fail(w, kline, key, "missing value");

    struct spec_axis *a = list ? spec_axis_new(w, &w->s->grid, &w->s->ngrid, key, kline)
                               : spec_axis_new(w, &w->s->fixed, &w->s->nfixed, key, kline);
    if (!a)
        return -1;
    a->zip = zip;
    char canon[512];
    if (!list) {
        int is_expr;
        if (vnode->type != YAML_SCALAR_NODE)
            return spec_fail(w, line_of(vnode), key,
                             "fixed values are single values, got %s (lists go under grid)",
                             node_kind(vnode));
        if (spec_check_value_x(w, key, scalar(vnode), line_of(vnode), canon, sizeof canon,
                               &is_expr))
            return -1;
        return spec_axis_push_x(w, a, scalar(vnode), line_of(vnode), is_expr);
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
                rc = spec_grid_value(w, a, &canons, vals[i], line_of(vnode));
            free(vals[i]);
        }
        free(vals);
        goto out;
    }
    if (vnode->type != YAML_SEQUENCE_NODE)
        return spec_fail(
            w, line_of(vnode), key,
            "grid values are lists like [a, b] or ranges like {linspace: [a, b, n]}, got %s (single values go under fixed)",
            node_kind(vnode));
    size_t nitems = (size_t)(vnode->data.sequence.items.top - vnode->data.sequence.items.start);
    if (nitems == 0)
        return spec_fail(w, line_of(vnode), key,
                         "empty list: a grid axis needs at least one value");
    char *joined = NULL;
    for (yaml_node_item_t *it = vnode->data.sequence.items.start;
         it < vnode->data.sequence.items.top && !rc; it++) {
        yaml_node_t *v = yaml_document_get_node(w->doc, *it);
        if (v->type != YAML_SCALAR_NODE) {
            rc =
                spec_fail(w, line_of(v), key, "list items are single values, got %s", node_kind(v));
            break;
        }
        if (is_null(v)) {
            rc = spec_fail(w, line_of(v), key, "empty list item");
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
                rc = spec_fail(w, line_of(v), key, "out of memory");
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
                    rc = spec_fail(w, line_of(v), key, "out of memory");
                    break;
                }
                joined = nj;
                joined[used++] = ',';
                memcpy(joined + used, scalar(nx), more + 1);
                used += more;
            }
            if (!rc && paren_balance(joined) != 0)
                rc = spec_fail(w, line_of(v), key, "'%.100s': a '(' without its ')'", joined);
            if (rc)
                break;
            text = joined;
        }
        rc = spec_grid_value(w, a, &canons, text, line_of(v));
    }
    free(joined);
out:
    if (!rc && zip) { /* a zip's axes may repeat values: its tuples may not (walk_zip) */
        *canons_out = canons;
        return 0;
    }
    if (!rc)
        rc = spec_repeat_check(w, a, canons);
    for (size_t j = 0; canons && j < a->n; j++)
        free(canons[j]);
    free(canons);
    return rc;
}

/* The first position of a zip block whose na axes hold, value by value, the canonical texts
 * (cs[k], n each) of an earlier position's (the same points twice). One list may repeat a value
 * (closure [spectral, spectral, free_cumulant] beside order_m [1, 2, 2]); a whole tuple may not.
 * ax is the block's first axis. Returns 0, or -1 after spec_fail(). */
static int zip_repeat_check(struct spec_walk *w, const char *name, const struct spec_axis *ax,
                            char ***cs, size_t na)
{
    size_t n = ax->n, later, earlier;
    char **tuples = calloc(n ? n : 1, sizeof *tuples);
    if (!tuples)
        return spec_fail(w, ax->line, name, "out of memory");
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) { /* the texts joined by \x1f */
        size_t len = 0;
        for (size_t k = 0; k < na; k++)
            len += strlen(cs[k][i]) + 1;
        if (!(tuples[i] = malloc(len + 1)))
            r = -1;
        for (size_t k = 0, at = 0; tuples[i] && k < na; k++)
            at += (size_t)sprintf(tuples[i] + at, "%s\x1f", cs[k][i]);
    }
    if (r == 0)
        r = spec_find_repeat(tuples, n, &later, &earlier);
    int rc = 0;
    if (r < 0)
        rc = spec_fail(w, ax->line, name, "out of memory");
    else if (r > 0)
        rc = spec_fail(w, ax->lines[later], name,
                       "value %zu of the zip (%s = %s, ...) repeats value %zu (line %d): the same "
                       "points twice",
                       later + 1, ax->key, ax->values[later], earlier + 1, ax->lines[earlier]);
    for (size_t i = 0; i < n; i++)
        free(tuples[i]);
    free(tuples);
    return rc;
}

/* zip: KEY: [values], ... under grid: axes of one length that vary together. */
static int walk_zip(struct spec_walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    const char *name = scalar(k);
    if (v->type != YAML_MAPPING_NODE || v->data.mapping.pairs.top == v->data.mapping.pairs.start)
        return spec_fail(
            w, line_of(v), name,
            "a zip block is a mapping of parameter: [values] (the lists go together), got %s",
            node_kind(v));
    int zip = ++w->nzip, rc = 0;
    size_t first = w->s->ngrid, na = 0;
    /* each axis's canonical texts, from add_param, for the repeat check of the tuples */
    char ***cs =
        calloc((size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start), sizeof *cs);
    if (!cs)
        return spec_fail(w, line_of(v), name, "out of memory");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *pk = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *pv = yaml_document_get_node(w->doc, p->value);
        if (pk->type != YAML_SCALAR_NODE) {
            rc = spec_fail(w, line_of(pk), name, "keys must be parameter names, got %s",
                           node_kind(pk));
            break;
        }
        if ((rc = add_param(w, pk, pv, 1, zip, &cs[na])))
            break;
        na++;
    }
    const struct spec_axis *a0 = &w->s->grid[first];
    for (size_t i = first + 1; !rc && i < w->s->ngrid; i++) {
        const struct spec_axis *a = &w->s->grid[i];
        if (a->n != a0->n)
            rc = spec_fail(
                w, a->line, name,
                "lists of unequal length: %s has %zu values (line %d), %s has %zu; the values of a zip go together, one from each list",
                a0->key, a0->n, a0->line, a->key, a->n);
    }
    if (!rc)
        rc = zip_repeat_check(w, name, a0, cs, na);
    for (size_t k = 0; k < na; k++) {
        for (size_t i = 0; i < w->s->grid[first + k].n; i++)
            free(cs[k][i]);
        free(cs[k]);
    }
    free(cs);
    return rc;
}

static int walk_section(struct spec_walk *w, const yaml_node_t *sec, const char *name, int list)
{
    if (is_null(sec))
        return spec_fail(w, line_of(sec), name, "empty section");
    if (sec->type != YAML_MAPPING_NODE)
        return spec_fail(w, line_of(sec), name, "must be a mapping of parameter: value, got %s",
                         node_kind(sec));
    if (sec->data.mapping.pairs.top == sec->data.mapping.pairs.start)
        return spec_fail(w, line_of(sec), name, "empty section");
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return spec_fail(w, line_of(k), name, "keys must be parameter names, got %s",
                             node_kind(k));
        if (!strncmp(scalar(k), "zip", 3) && !params_is_key(scalar(k))) {
            if (!list)
                return spec_fail(w, line_of(k), scalar(k), "zip blocks go under grid");
            if (walk_zip(w, k, v))
                return -1;
            continue;
        }
        if (add_param(w, k, v, list, 0, NULL))
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

static int walk_seeds(struct spec_walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    int kline = line_of(k);
    if (spec_find_axis(w->s->grid, w->s->ngrid, "seed") ||
        spec_find_axis(w->s->fixed, w->s->nfixed, "seed"))
        return spec_fail(w, kline, "seeds", "the seed is already given under grid or fixed");
    w->seeds_line = kline;
    if (is_null(v))
        return spec_fail(w, kline, "seeds", "missing value");
    struct spec_axis *a = spec_axis_new(w, &w->s->grid, &w->s->ngrid, "seed", kline);
    if (!a)
        return -1;
    char buf[32], canon[64];
    if (v->type == YAML_SCALAR_NODE) {
        long n;
        if (parse_seed_count(scalar(v), &n) || n < 1 || n > SPEC_MAX_SEEDS)
            return spec_fail(w, line_of(v), "seeds",
                             "a count must be an integer from 1 to %d (seeds 1..N), got '%s'",
                             SPEC_MAX_SEEDS, scalar(v));
        for (long i = 1; i <= n; i++) {
            snprintf(buf, sizeof buf, "%ld", i);
            if (spec_axis_push(w, a, buf, line_of(v)))
                return -1;
        }
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return spec_fail(w, line_of(v), "seeds", "must be a count or a list of seeds, got %s",
                         node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return spec_fail(w, line_of(v), "seeds", "empty list");
    size_t nitems = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start), got = 0;
    char **canons = calloc(nitems, sizeof *canons);
    if (!canons)
        return spec_fail(w, kline, "seeds", "out of memory");
    int rc = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s)) {
            rc = spec_fail(w, line_of(s), "seeds", "list items are seeds (integers), got %s",
                           node_kind(s));
            break;
        }
        if ((rc = spec_check_value(w, "seed", scalar(s), line_of(s), canon, sizeof canon)))
            break;
        if (!(canons[got] = strdup(canon))) {
            rc = spec_fail(w, line_of(s), "seeds", "out of memory");
            break;
        }
        got++;
        if ((rc = spec_axis_push(w, a, scalar(s), line_of(s))))
            break;
    }
    if (!rc) {
        size_t later, earlier;
        int r = spec_find_repeat(canons, got, &later, &earlier);
        if (r < 0)
            rc = spec_fail(w, kline, "seeds", "out of memory");
        else if (r > 0)
            rc = spec_fail(w, a->lines[later], "seeds", "seed %s appears twice (also on line %d)",
                           a->values[later], a->lines[earlier]);
    }
    for (size_t j = 0; j < nitems; j++)
        free(canons[j]);
    free(canons);
    return rc;
}

static int walk_solvers(struct spec_walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
    int kline = line_of(k);
    if (spec_find_axis(w->s->grid, w->s->ngrid, "solvers") ||
        spec_find_axis(w->s->fixed, w->s->nfixed, "solvers"))
        return spec_fail(w, kline, "solvers", "already given under grid or fixed");
    w->solvers_line = kline;
    if (is_null(v))
        return spec_fail(w, kline, "solvers", "missing value");
    if (v->type != YAML_SEQUENCE_NODE)
        return spec_fail(w, line_of(v), "solvers", "must be a list like [sgd, flow, ode], got %s",
                         node_kind(v));
    if (v->data.sequence.items.top == v->data.sequence.items.start)
        return spec_fail(w, line_of(v), "solvers",
                         "empty list: name at least one of sgd, flow, ode");
    char joined[256] = "", canon[256], seen[8][32];
    int nseen = 0;
    size_t off = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *s = yaml_document_get_node(w->doc, *it);
        if (s->type != YAML_SCALAR_NODE || is_null(s))
            return spec_fail(w, line_of(s), "solvers", "list items are solver names, got %s",
                             node_kind(s));
        if (strchr(scalar(s), ','))
            return spec_fail(w, line_of(s), "solvers", "one solver per list item, got '%s'",
                             scalar(s));
        if (spec_check_value(w, "solvers", scalar(s), line_of(s), canon, sizeof canon))
            return -1;
        for (int j = 0; j < nseen; j++)
            if (!strcmp(seen[j], canon))
                return spec_fail(w, line_of(s), "solvers", "solver '%s' listed twice", scalar(s));
        if (nseen < 8)
            snprintf(seen[nseen++], sizeof seen[0], "%.31s", canon);
        int n = snprintf(joined + off, sizeof joined - off, "%s%s", off ? "," : "", scalar(s));
        if (n < 0 || (size_t)n >= sizeof joined - off)
            return spec_fail(w, line_of(s), "solvers", "list too long");
        off += (size_t)n;
    }
    if (spec_check_value(w, "solvers", joined, line_of(v), canon, sizeof canon))
        return -1;
    struct spec_axis *a = spec_axis_new(w, &w->s->fixed, &w->s->nfixed, "solvers", kline);
    return a ? spec_axis_push(w, a, joined, line_of(v)) : -1;
}

static int walk_root(struct spec_walk *w, const yaml_node_t *root)
{
    const yaml_node_t *grid = NULL, *fixed = NULL, *gridk = NULL, *fixedk = NULL;
    const yaml_node_t *seedsk = NULL, *seeds = NULL, *solvk = NULL, *solv = NULL;
    if (root->type != YAML_MAPPING_NODE)
        return spec_fail(
            w, line_of(root), NULL,
            "a sweep file is a mapping with keys name, grid, fixed, seeds, solvers; got %s",
            node_kind(root));
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return spec_fail(w, line_of(k), NULL, "top-level keys must be names, got %s",
                             node_kind(k));
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
                return spec_fail(w, line_of(k), "name", "given twice");
            if (v->type != YAML_SCALAR_NODE || is_null(v) || !*scalar(v))
                return spec_fail(w, line_of(v), "name", "must be a non-empty string, got %s",
                                 is_null(v) ? "nothing" : node_kind(v));
            if (!(w->s->name = strdup(scalar(v))))
                return spec_fail(w, line_of(v), "name", "out of memory");
            continue;
        } else if (params_is_key(key))
            return spec_fail(w, line_of(k), key,
                             "parameters go under grid (a list) or fixed (one value)");
        else {
            char hint[64] = "";
            text_suggest(hint, sizeof hint, key, top_keys);
            return spec_fail(w, line_of(k), key,
                             "unknown key%s (expected name, grid, fixed, seeds, solvers)", hint);
        }
        if (*slot)
            return spec_fail(w, line_of(k), key, "given twice (also on line %d)", line_of(*kslot));
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
    struct spec_axis *sa = spec_find_axis(w->s->grid, w->s->ngrid, "seed");
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

int spec_parse(const char *path, const char *text, size_t len, struct sweep_spec **out, char *err,
               size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_doc = 0, rc = -1;
    struct sweep_spec *s = calloc(1, sizeof *s);
    struct spec_walk w = {path, &doc, s, err, errlen, 0, 0, 0};
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
    if (spec_check_expr_refs(s, err, errlen))
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
