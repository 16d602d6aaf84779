/*
 * grid.c: expansion of a sweep spec into grid points, as a mixed-radix counter over the
 * axes (the last axis is the fastest digit).
 */
#include "aimsweep/harness/grid.h"

#include "aimsweep/run/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t grid_size(const struct sweep_spec *s)
{
    size_t n = 1;
    for (size_t i = 0; i < s->ngrid; i++)
        n *= s->grid[i].n;
    return n;
}

/* Names the point's grid values in err, e.g. "d=40, lr=0.05". */
static void describe(const struct sweep_spec *s, const size_t *digit, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < s->ngrid && off < n; i++) {
        int w = snprintf(buf + off, n - off, "%s%s=%s", i ? ", " : "", s->grid[i].key,
                         s->grid[i].values[digit[i]]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* A point's checks: its ranges and combinations, and whether it fits in memory. 0 or -1. */
static int point_check(const struct params *p, char *msg, size_t n)
{
    return params_validate(p, msg, n) || worker_check(p, msg, n) ? -1 : 0;
}

/* 1 when key = value alone (over the defaults) fails point_check: then the value itself is
 * out of range, and the error belongs to its line rather than to the combination. */
static int alone_invalid(const char *key, const char *value)
{
    struct params p;
    char msg[512];
    params_default(&p);
    return params_set(&p, key, value, msg, sizeof msg) == 0 && point_check(&p, msg, sizeof msg) != 0;
}

static int blame(const struct sweep_spec *s, const size_t *digit, const char *msg, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->nfixed; i++)
        if (alone_invalid(s->fixed[i].key, s->fixed[i].values[0])) {
            snprintf(err, errlen, "%s:%d: key '%s': %s", s->path, s->fixed[i].lines[0], s->fixed[i].key, msg);
            return 1;
        }
    for (size_t i = 0; i < s->ngrid; i++)
        if (alone_invalid(s->grid[i].key, s->grid[i].values[digit[i]])) {
            snprintf(err, errlen, "%s:%d: key '%s': %s", s->path, s->grid[i].lines[digit[i]], s->grid[i].key, msg);
            return 1;
        }
    return 0;
}

int grid_expand(const struct sweep_spec *s, struct params **out, size_t *n, char *err, size_t errlen)
{
    size_t total = grid_size(s);
    struct params base, *pts = NULL;
    size_t *digit = NULL;
    char msg[512];
    *out = NULL;
    *n = 0;
    params_default(&base);
    for (size_t i = 0; i < s->nfixed; i++)
        if (params_set(&base, s->fixed[i].key, s->fixed[i].values[0], msg, sizeof msg)) {
            snprintf(err, errlen, "%s:%d: key '%s': %s", s->path, s->fixed[i].lines[0], s->fixed[i].key, msg);
            return -1;
        }
    pts = malloc(total * sizeof *pts);
    digit = calloc(s->ngrid + 1, sizeof *digit);
    if (!pts || !digit) {
        snprintf(err, errlen, "%s: out of memory for %zu grid points", s->path, total);
        goto fail;
    }
    for (size_t k = 0; k < total; k++) {
        struct params *p = &pts[k];
        *p = base;
        for (size_t i = 0; i < s->ngrid; i++)
            if (params_set(p, s->grid[i].key, s->grid[i].values[digit[i]], msg, sizeof msg)) {
                snprintf(err, errlen, "%s:%d: key '%s': %s", s->path, s->grid[i].lines[digit[i]],
                         s->grid[i].key, msg);
                goto fail;
            }
        if (point_check(p, msg, sizeof msg)) {
            char where[256];
            if (blame(s, digit, msg, err, errlen))
                goto fail;
            describe(s, digit, where, sizeof where);
            snprintf(err, errlen, "%s:%d: key 'grid': point (%s): %s", s->path, s->grid_line,
                     s->ngrid ? where : "fixed values only", msg);
            goto fail;
        }
        for (size_t i = s->ngrid; i-- > 0;) {
            if (++digit[i] < s->grid[i].n)
                break;
            digit[i] = 0;
        }
    }
    free(digit);
    *out = pts;
    *n = total;
    return 0;
fail:
    free(pts);
    free(digit);
    return -1;
}
