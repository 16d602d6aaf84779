/*
 * grid.c: expansion of a sweep spec into grid points, as a mixed-radix counter over the
 * dimensions of the grid (the last is the fastest digit). An axis is one dimension, except
 * that the axes of one zip block share a single dimension (their i-th values go together).
 *
 * A point starts from params_default, takes the fixed plain values, then one value of every
 * grid axis; then the expressions (fixed or grid) are evaluated on that point, in file order,
 * and set like any value. Every point is checked with worker_check (the parameter rules and
 * those of the moment ODE); all the points that fail are reported together, grouped by
 * message, so that a sweep is either wholly runnable or refused before anything starts.
 */
#include "aimsweep/harness/grid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/expr.h"
#include "aimsweep/base/text.h"
#include "aimsweep/run/worker.h"

/* How many distinct messages, and points under each, a refusal lists. */
#define GRID_SHOW_MESSAGES 4
#define GRID_SHOW_POINTS 4

/* The dimension of each axis (dim[i]) and the length of each dimension (len[d]); returns the
 * number of dimensions. */
static size_t dims_of(const struct sweep_spec *s, size_t *dim, size_t *len)
{
    size_t nd = 0;
    for (size_t i = 0; i < s->ngrid; i++) {
        size_t d = nd;
        if (s->grid[i].zip)
            for (size_t j = 0; j < i; j++)
                if (s->grid[j].zip == s->grid[i].zip) {
                    d = dim[j];
                    break;
                }
        dim[i] = d;
        if (d == nd)
            len[nd++] = s->grid[i].n;
    }
    return nd;
}

size_t grid_size(const struct sweep_spec *s)
{
    size_t dim[256], len[256], n = 1;
    if (s->ngrid > 256)
        return 0;
    size_t nd = dims_of(s, dim, len);
    for (size_t d = 0; d < nd; d++)
        n *= len[d];
    return n;
}

const char *grid_shape(const struct sweep_spec *s, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->ngrid && off < n; i++) {
        const struct spec_axis *a = &s->grid[i];
        int first = 1, in = 0;
        for (size_t j = 0; j < i; j++)
            in |= a->zip && s->grid[j].zip == a->zip;
        if (in)
            continue;
        if (!a->zip) {
            off += (size_t)snprintf(buf + off, n - off, "%s%zu %s", off ? " x " : "", a->n, a->key);
            continue;
        }
        off += (size_t)snprintf(buf + off, n - off, "%s%zu (", off ? " x " : "", a->n);
        for (size_t j = i; j < s->ngrid && off < n; j++)
            if (s->grid[j].zip == a->zip) {
                off +=
                    (size_t)snprintf(buf + off, n - off, "%s%s", first ? "" : ", ", s->grid[j].key);
                first = 0;
            }
        if (off < n)
            off += (size_t)snprintf(buf + off, n - off, ")");
    }
    if (!s->ngrid)
        snprintf(buf, n, "1 (fixed values only)");
    return buf;
}

/* Where a value came from: "FILE:LINE: key 'K'", or "--set K" for a command-line override. */
static void where(const struct sweep_spec *s, int line, const char *key, char *buf, size_t n)
{
    if (line > 0)
        snprintf(buf, n, "%s:%d: key '%s'", s->path, line, key);
    else
        snprintf(buf, n, "%s: --set %s", s->path, key);
}

/* Names the point's grid values, e.g. "d=40, lr=0.05". */
static void describe(const struct sweep_spec *s, const size_t *digit, const size_t *dim, char *buf,
                     size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->ngrid && off < n; i++) {
        int w = snprintf(buf + off, n - off, "%s%s=%s", i ? ", " : "", s->grid[i].key,
                         s->grid[i].values[digit[dim[i]]]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (!s->ngrid)
        snprintf(buf, n, "fixed values only");
}

/* 1 when key = value alone (over the defaults) fails the rules and the point's own message
 * `why` names the key: then the value itself is at fault, and the error belongs to its line
 * rather than to the combination. (A value that fails alone for another reason, index uncentred
 * over the default tied, is not blamed for a point that fails on something else, untied's
 * order_m.) */
/* Whether text names key as a word (not inside another name: d in 'decomposition'). */
static int names_key(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *at = strstr(text, key); at; at = strstr(at + 1, key)) {
        char before = at > text ? at[-1] : ' ', after = at[kl];
        if (!isalnum((unsigned char)before) && before != '_' && !isalnum((unsigned char)after) &&
            after != '_')
            return 1;
    }
    return 0;
}

static int alone_invalid(const char *key, const char *value, const char *why)
{
    struct params p;
    char msg[512];
    params_default(&p);
    return names_key(why, key) && params_set(&p, key, value, msg, sizeof msg) == 0 &&
           worker_check(&p, msg, sizeof msg) != 0;
}

static int lookup(void *ctx, const char *name, double *v) { return params_number(ctx, name, v); }

/* Evaluates an expression value at p and sets it. Returns 0, or -1 with the message. */
static int set_expr(struct params *p, const char *key, const char *text, char *msg, size_t n)
{
    struct expr *e = expr_compile(text, msg, n);
    double v;
    if (!e)
        return -1;
    int rc = expr_eval(e, lookup, p, &v, msg, n);
    expr_destroy(&e);
    if (rc)
        return -1;
    char num[TEXT_DOUBLE_MAX], inner[256];
    text_double(v, num, sizeof num);
    if (params_set(p, key, num, inner, sizeof inner)) {
        size_t used = (size_t)snprintf(msg, n, "expression '%s' = %s: ", text, num);
        size_t il = strlen(inner);
        if (used + il >= n)
            il = used < n ? n - used - 1 : 0;
        if (used < n) {
            memcpy(msg + used, inner, il);
            msg[used + il] = 0;
        }
        return -1;
    }
    return 0;
}

struct failure {
    char msg[512];
    char where[200]; /* the line it is blamed on, when one value alone is at fault */
    size_t count;
    char points[GRID_SHOW_POINTS][256];
};

int grid_expand(const struct sweep_spec *s, struct params **out, size_t *n, char *err,
                size_t errlen)
{
    size_t total = grid_size(s), nd = 0, nfail = 0, nbad = 0;
    struct params base, *pts = NULL;
    size_t *digit = NULL, *dim = NULL, *len = NULL;
    struct failure *fails = NULL;
    char msg[512], loc[200];
    *out = NULL;
    *n = 0;
    params_default(&base);
    for (size_t i = 0; i < s->nfixed; i++)
        if (!s->fixed[i].is_expr || !s->fixed[i].is_expr[0])
            if (params_set(&base, s->fixed[i].key, s->fixed[i].values[0], msg, sizeof msg)) {
                where(s, s->fixed[i].lines[0], s->fixed[i].key, loc, sizeof loc);
                snprintf(err, errlen, "%s: %s", loc, msg);
                return -1;
            }
    pts = malloc((total ? total : 1) * sizeof *pts);
    digit = calloc(s->ngrid + 1, sizeof *digit);
    dim = calloc(s->ngrid + 1, sizeof *dim);
    len = calloc(s->ngrid + 1, sizeof *len);
    fails = calloc(GRID_SHOW_MESSAGES, sizeof *fails);
    if (!pts || !digit || !dim || !len || !fails) {
        snprintf(err, errlen, "%s: out of memory for %zu grid points", s->path, total);
        goto fail;
    }
    nd = dims_of(s, dim, len);
    for (size_t k = 0; k < total; k++) {
        struct params *p = &pts[k];
        *p = base;
        int bad = 0;
        msg[0] = loc[0] = 0;
        for (size_t i = 0; i < s->ngrid && !bad; i++) {
            const struct spec_axis *a = &s->grid[i];
            size_t j = digit[dim[i]];
            if (!a->is_expr[j] && params_set(p, a->key, a->values[j], msg, sizeof msg)) {
                where(s, a->lines[j], a->key, loc, sizeof loc);
                bad = 1;
            }
        }
        /* expressions, fixed then grid, on the point's plain values */
        for (size_t i = 0; i < s->nfixed && !bad; i++)
            if (s->fixed[i].is_expr && s->fixed[i].is_expr[0] &&
                set_expr(p, s->fixed[i].key, s->fixed[i].values[0], msg, sizeof msg)) {
                where(s, s->fixed[i].lines[0], s->fixed[i].key, loc, sizeof loc);
                bad = 1;
            }
        for (size_t i = 0; i < s->ngrid && !bad; i++) {
            const struct spec_axis *a = &s->grid[i];
            size_t j = digit[dim[i]];
            if (a->is_expr[j] && set_expr(p, a->key, a->values[j], msg, sizeof msg)) {
                where(s, a->lines[j], a->key, loc, sizeof loc);
                bad = 1;
            }
        }
        if (!bad && worker_check(p, msg, sizeof msg)) {
            bad = 1;
            /* one value alone at fault: blame its line */
            for (size_t i = 0; i < s->nfixed && !loc[0]; i++)
                if (!(s->fixed[i].is_expr && s->fixed[i].is_expr[0]) &&
                    alone_invalid(s->fixed[i].key, s->fixed[i].values[0], msg))
                    where(s, s->fixed[i].lines[0], s->fixed[i].key, loc, sizeof loc);
            for (size_t i = 0; i < s->ngrid && !loc[0]; i++) {
                size_t j = digit[dim[i]];
                if (!s->grid[i].is_expr[j] &&
                    alone_invalid(s->grid[i].key, s->grid[i].values[j], msg))
                    where(s, s->grid[i].lines[j], s->grid[i].key, loc, sizeof loc);
            }
        }
        if (bad) {
            nbad++;
            size_t f = 0;
            while (f < nfail &&
                   (strcmp(fails[f].msg, msg) != 0 || strcmp(fails[f].where, loc) != 0))
                f++;
            if (f == nfail && nfail < GRID_SHOW_MESSAGES) {
                snprintf(fails[f].msg, sizeof fails[f].msg, "%s", msg);
                snprintf(fails[f].where, sizeof fails[f].where, "%s", loc);
                nfail++;
            }
            if (f < nfail) {
                if (fails[f].count < GRID_SHOW_POINTS)
                    describe(s, digit, dim, fails[f].points[fails[f].count],
                             sizeof fails[f].points[0]);
                fails[f].count++;
            }
        }
        for (size_t d = nd; d-- > 0;) {
            if (++digit[d] < len[d])
                break;
            digit[d] = 0;
        }
    }
    if (nbad) {
        size_t off = 0;
        err[0] = 0;
        /* one failure blamed on one line, for one point: the plain file:line form */
        if (nfail == 1 && fails[0].where[0] && (nbad == total || total == 1)) {
            snprintf(err, errlen, "%s: %s", fails[0].where, fails[0].msg);
            goto fail;
        }
        off += (size_t)snprintf(err + off, errlen - off,
                                "%s:%d: key 'grid': %zu of %zu points cannot run:", s->path,
                                s->grid_line, nbad, total);
        /* whole entries only, and as many points of an entry as fit: never cut mid-word, and
         * room kept for the closing count */
        size_t shown = 0, room = errlen > 64 ? errlen - 64 : 0;
        for (size_t f = 0; f < nfail && off < room; f++) {
            char head[900];
            int hl = snprintf(head, sizeof head, "\n  %s%s%s (%zu point%s:", fails[f].where,
                              fails[f].where[0] ? ": " : "", fails[f].msg, fails[f].count,
                              fails[f].count == 1 ? "" : "s");
            if (hl < 0 || off + (size_t)hl + 300 > room)
                break;
            off += (size_t)snprintf(err + off, errlen - off, "%s", head);
            size_t q = 0;
            for (; q < fails[f].count && q < GRID_SHOW_POINTS; q++) {
                size_t pl = strlen(fails[f].points[q]) + 4;
                if (q > 0 && off + pl + 8 > room)
                    break;
                off += (size_t)snprintf(err + off, errlen - off, "%s (%s)", q ? "," : "",
                                        fails[f].points[q]);
            }
            off +=
                (size_t)snprintf(err + off, errlen - off, "%s)", fails[f].count > q ? ", ..." : "");
            shown += fails[f].count;
        }
        if (shown < nbad)
            snprintf(err + off, errlen - off, "\n  and %zu more points with other messages",
                     nbad - shown);
        goto fail;
    }
    free(digit);
    free(dim);
    free(len);
    free(fails);
    *out = pts;
    *n = total;
    return 0;
fail:
    free(pts);
    free(digit);
    free(dim);
    free(len);
    free(fails);
    return -1;
}
