/*
 * heads.c: the attention layers of a checkpoint, by the names of their query and key weights
 * (heads.h lists the namings).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/probe/heads.h"

/* Name pairs recognised by their suffix; fused ones have the same suffix twice. */
static const struct {
    const char *q, *k;
} suffixes[] = {{".q_proj.weight", ".k_proj.weight"},
                {".query.weight", ".key.weight"},
                {".in_proj_weight", ".in_proj_weight"},
                {".qkv.weight", ".qkv.weight"},
                {NULL, NULL}};

/* If s ends with suf, the length of what precedes it, else -1. */
static long prefix_len(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n > m && !strcmp(s + n - m, suf) ? (long)(n - m) : -1;
}

/* If name matches "PRE{L}SUF", the length of {L}'s text (>= 1) and its start, else -1. */
static long match_pattern(const char *name, const char *pat, size_t patlen, const char **at)
{
    const char *L = strstr(pat, "{L}");
    if (!L || L >= pat + patlen)
        return -1;
    size_t pre = (size_t)(L - pat), suf = patlen - pre - 3, n = strlen(name);
    if (n < pre + suf + 1 || strncmp(name, pat, pre) || strncmp(name + n - suf, L + 3, suf))
        return -1;
    *at = name + pre;
    return (long)(n - pre - suf);
}

/* Natural order: runs of digits compared as numbers. */
static int natural_cmp(const void *a, const void *b)
{
    const char *s = ((const struct probe_layer *)a)->name,
               *t = ((const struct probe_layer *)b)->name;
    while (*s && *t) {
        if (isdigit((unsigned char)*s) && isdigit((unsigned char)*t)) {
            char *es, *et;
            unsigned long long x = strtoull(s, &es, 10), y = strtoull(t, &et, 10);
            if (x != y)
                return x < y ? -1 : 1;
            s = es;
            t = et;
            continue;
        }
        if (*s != *t)
            return (unsigned char)*s - (unsigned char)*t;
        s++;
        t++;
    }
    return (unsigned char)*s - (unsigned char)*t;
}

static int add_layer(struct probe_layer **ls, int *n, const char *name, size_t nlen,
                     const struct probe_tensor *q, const struct probe_tensor *k, int fused,
                     char *err, size_t errlen)
{
    if (q->ndim != 2 || k->ndim != 2) {
        snprintf(err, errlen, "'%s': query and key weights must be matrices (%d and %d dimensions)",
                 q->name, q->ndim, k->ndim);
        return -1;
    }
    struct probe_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%.*s", (int)(nlen < sizeof l.name ? nlen : sizeof l.name - 1),
             name);
    l.q = q;
    l.k = k;
    l.d = q->shape[1];
    if (fused) {
        if (q->shape[0] % 3) {
            snprintf(err, errlen, "'%s': a fused query-key-value weight needs 3E rows, it has %lld",
                     q->name, (long long)q->shape[0]);
            return -1;
        }
        l.rows = q->shape[0] / 3;
        l.k_row0 = l.rows;
    } else {
        if (q->shape[0] != k->shape[0] || q->shape[1] != k->shape[1]) {
            snprintf(err, errlen, "'%s' is %lld x %lld but '%s' is %lld x %lld", q->name,
                     (long long)q->shape[0], (long long)q->shape[1], k->name,
                     (long long)k->shape[0], (long long)k->shape[1]);
            return -1;
        }
        l.rows = q->shape[0];
    }
    if (l.rows < 1 || l.d < 1) {
        snprintf(err, errlen, "'%s': an empty weight", q->name);
        return -1;
    }
    struct probe_layer *m = realloc(*ls, (size_t)(*n + 1) * sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *ls = m;
    m[(*n)++] = l;
    return 0;
}

int probe_layers(const struct probe_file *f, const char *pattern, struct probe_layer **out,
                 char *err, size_t errlen)
{
    struct probe_layer *ls = NULL;
    int n = 0;
    *out = NULL;
    const char *comma = pattern ? strchr(pattern, ',') : NULL;
    for (int i = 0; i < f->n; i++) {
        const struct probe_tensor *q = &f->t[i];
        if (pattern) {
            const char *at = NULL, *kat = NULL;
            long len = match_pattern(q->name, pattern, (size_t)(comma - pattern), &at);
            if (len < 0)
                continue;
            for (int j = 0; j < f->n; j++) {
                long kl = match_pattern(f->t[j].name, comma + 1, strlen(comma + 1), &kat);
                if (kl == len && at && kat && !strncmp(at, kat, (size_t)len)) {
                    if (add_layer(&ls, &n, at, (size_t)len, q, &f->t[j], 0, err, errlen))
                        goto fail;
                    break;
                }
            }
            continue;
        }
        for (int s = 0; suffixes[s].q; s++) {
            long pl = prefix_len(q->name, suffixes[s].q);
            if (pl < 0)
                continue;
            int fused = !strcmp(suffixes[s].q, suffixes[s].k);
            const struct probe_tensor *k = NULL;
            if (fused)
                k = q;
            else {
                char kname[1024];
                if (snprintf(kname, sizeof kname, "%.*s%s", (int)pl, q->name, suffixes[s].k) <
                    (int)sizeof kname)
                    k = probe_find(f, kname);
            }
            if (k && add_layer(&ls, &n, q->name, (size_t)pl, q, k, fused, err, errlen))
                goto fail;
            break;
        }
    }
    if (n > 1)
        qsort(ls, (size_t)n, sizeof *ls, natural_cmp);
    *out = ls;
    return n;
fail:
    free(ls);
    return -1;
}

int64_t probe_head_dim(const struct probe_layer *l, int heads)
{
    if (heads < 1 || l->rows % heads)
        return -1;
    return l->rows / heads;
}
