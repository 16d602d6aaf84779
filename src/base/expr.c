/*
 * expr.c: the expression grammar of expr.h, as a recursive-descent parser into a small tree,
 * and its evaluation. Depth is bounded (EXPR_MAX_DEPTH) so that no input can exhaust the stack,
 * and so are the length of the text (EXPR_MAX_LENGTH) and the count of its terms
 * (EXPR_MAX_NODES): a chain a + b + c ... parses in a loop but makes a left-leaning tree that
 * the evaluation, the name collection and the freeing walk recursively, one level per operator
 * (a chain of 100 000 terms overflowed the stack).
 */
#include "aimsweep/base/expr.h"
#include "aimsweep/base/text.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_DEPTH 64
/* Far above any parameter's expression (tens of characters), far below what the recursive
 * walks of the tree could not take (about 100 bytes of stack a level). */
#define EXPR_MAX_LENGTH 4096
#define EXPR_MAX_NODES 1024
#define EXPR_MAX_NAME 63

enum node_kind { N_NUM, N_NAME, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV, N_POW, N_FUNC };

static const char *const func_names[] = {"log", "log2", "log10", "exp", "sqrt", "abs", NULL};

struct node {
    enum node_kind kind;
    double num;
    int func;
    char name[EXPR_MAX_NAME + 1];
    struct node *a, *b;
};

struct expr {
    struct node *root;
    char *text;
};

struct parser {
    const char *s, *p;
    int depth, nodes;
    char *err;
    size_t errlen;
};

static void node_free(struct node *n)
{
    if (!n)
        return;
    node_free(n->a);
    node_free(n->b);
    free(n);
}

static struct node *perr(struct parser *ps, const char *what)
{
    if (!ps->err[0])
        snprintf(ps->err, ps->errlen, "expression '%.60s%s', column %d: %s", ps->s,
                 strlen(ps->s) > 60 ? "..." : "", (int)(ps->p - ps->s) + 1, what);
    return NULL;
}

static void skip(struct parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

/* A new node over a and b (which it owns), or NULL with the message in ps (out of memory, or
 * one term more than EXPR_MAX_NODES); a and b are freed then. */
static struct node *mk(struct parser *ps, enum node_kind k, struct node *a, struct node *b)
{
    struct node *n = ++ps->nodes > EXPR_MAX_NODES ? NULL : calloc(1, sizeof *n);
    if (!n) {
        if (ps->nodes > EXPR_MAX_NODES) {
            char what[96];
            snprintf(what, sizeof what, "more than %d numbers, names and operators",
                     EXPR_MAX_NODES);
            perr(ps, what);
        } else
            perr(ps, "out of memory");
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->kind = k;
    n->a = a;
    n->b = b;
    return n;
}

static struct node *parse_expr(struct parser *ps);
static struct node *parse_factor(struct parser *ps);

static struct node *parse_primary(struct parser *ps)
{
    skip(ps);
    const char *start = ps->p;
    if (*ps->p == '(') {
        ps->p++;
        struct node *n = parse_expr(ps);
        if (!n)
            return NULL;
        skip(ps);
        if (*ps->p != ')') {
            node_free(n);
            return perr(ps, "expected ')'");
        }
        ps->p++;
        return n;
    }
    if (isdigit((unsigned char)*ps->p) || *ps->p == '.') {
        char *end;
        double v = strtod(ps->p, &end);
        if (end == ps->p || !isfinite(v))
            return perr(ps, "bad number");
        ps->p = end;
        struct node *n = mk(ps, N_NUM, NULL, NULL);
        if (n)
            n->num = v;
        return n ? n : perr(ps, "out of memory");
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        size_t len = (size_t)(ps->p - start);
        if (len > EXPR_MAX_NAME)
            return perr(ps, "name too long");
        char name[EXPR_MAX_NAME + 1];
        memcpy(name, start, len);
        name[len] = 0;
        skip(ps);
        if (*ps->p == '(') {
            int f = -1;
            for (int i = 0; func_names[i]; i++)
                if (!strcmp(func_names[i], name))
                    f = i;
            if (f < 0) {
                ps->p = start;
                return perr(
                    ps, "unknown function (the functions are log, log2, log10, exp, sqrt, abs)");
            }
            ps->p++;
            struct node *arg = parse_expr(ps);
            if (!arg)
                return NULL;
            skip(ps);
            if (*ps->p != ')') {
                node_free(arg);
                return perr(ps, "expected ')' after the function's argument");
            }
            ps->p++;
            struct node *n = mk(ps, N_FUNC, arg, NULL);
            if (!n)
                return perr(ps, "out of memory");
            n->func = f;
            return n;
        }
        struct node *n = mk(ps, N_NAME, NULL, NULL);
        if (!n)
            return perr(ps, "out of memory");
        memcpy(n->name, name, len + 1);
        return n;
    }
    return perr(ps, *ps->p ? "expected a number, a parameter name or '('" : "unexpected end");
}

static struct node *parse_power(struct parser *ps)
{
    struct node *base = parse_primary(ps);
    if (!base)
        return NULL;
    skip(ps);
    if (*ps->p != '^')
        return base;
    ps->p++;
    struct node *ex = parse_factor(ps);
    if (!ex) {
        node_free(base);
        return NULL;
    }
    struct node *n = mk(ps, N_POW, base, ex);
    return n ? n : perr(ps, "out of memory");
}

static struct node *parse_factor(struct parser *ps)
{
    if (++ps->depth > EXPR_MAX_DEPTH)
        return perr(ps, "nested too deeply");
    skip(ps);
    struct node *n;
    if (*ps->p == '-' || *ps->p == '+') {
        int neg = *ps->p == '-';
        ps->p++;
        struct node *a = parse_factor(ps);
        n = !a ? NULL : neg ? mk(ps, N_NEG, a, NULL) : a;
        if (a && !n)
            perr(ps, "out of memory");
    } else
        n = parse_power(ps);
    ps->depth--;
    return n;
}

static struct node *parse_binary(struct parser *ps, int level)
{
    struct node *l = level ? parse_factor(ps) : parse_binary(ps, 1);
    while (l) {
        skip(ps);
        char c = *ps->p;
        enum node_kind k;
        if (level == 0 && (c == '+' || c == '-'))
            k = c == '+' ? N_ADD : N_SUB;
        else if (level == 1 && (c == '*' || c == '/'))
            k = c == '*' ? N_MUL : N_DIV;
        else
            break;
        ps->p++;
        struct node *r = level ? parse_factor(ps) : parse_binary(ps, 1);
        if (!r) {
            node_free(l);
            return NULL;
        }
        l = mk(ps, k, l, r);
        if (!l)
            return perr(ps, "out of memory");
    }
    return l;
}

static struct node *parse_expr(struct parser *ps)
{
    if (++ps->depth > EXPR_MAX_DEPTH)
        return perr(ps, "nested too deeply");
    struct node *n = parse_binary(ps, 0);
    ps->depth--;
    return n;
}

struct expr *expr_compile(const char *text, char *err, size_t errlen)
{
    char local[8];
    if (!err || !errlen) {
        err = local;
        errlen = sizeof local;
    }
    err[0] = 0;
    size_t len = strlen(text);
    if (len > EXPR_MAX_LENGTH) {
        snprintf(err, errlen, "expression '%.40s...' of %zu characters: at most %d are read", text,
                 len, EXPR_MAX_LENGTH);
        return NULL;
    }
    struct parser ps = {text, text, 0, 0, err, errlen};
    struct node *root = parse_expr(&ps);
    if (root) {
        skip(&ps);
        if (*ps.p) {
            perr(&ps, "unexpected text (operators are + - * / ^)");
            node_free(root);
            root = NULL;
        }
    }
    if (!root)
        return NULL;
    struct expr *e = calloc(1, sizeof *e);
    if (!e || !(e->text = strdup(text))) {
        free(e);
        node_free(root);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->root = root;
    return e;
}

static void collect(const struct node *n, const char **names, int max, int *k)
{
    if (!n)
        return;
    if (n->kind == N_NAME) {
        for (int i = 0; i < *k && i < max; i++)
            if (!strcmp(names[i], n->name))
                return;
        if (*k < max)
            names[*k] = n->name;
        (*k)++;
    }
    collect(n->a, names, max, k);
    collect(n->b, names, max, k);
}

int expr_names(const struct expr *e, const char **names, int max)
{
    int k = 0;
    collect(e->root, names, max, &k);
    return k;
}

static int eval(const struct node *n, expr_lookup_fn lookup, void *ctx, double *out, char *err,
                size_t errlen)
{
    double a = 0, b = 0;
    if (n->a && eval(n->a, lookup, ctx, &a, err, errlen))
        return -1;
    if (n->b && eval(n->b, lookup, ctx, &b, err, errlen))
        return -1;
    double v = 0;
    switch (n->kind) {
        case N_NUM: v = n->num; break;
        case N_NAME:
            if (!strcmp(n->name, "pi"))
                v = 3.14159265358979323846;
            else if (!lookup || lookup(ctx, n->name, &v)) {
                snprintf(err, errlen, "unknown name '%s'", n->name);
                return -1;
            }
            break;
        case N_NEG: v = -a; break;
        case N_ADD: v = a + b; break;
        case N_SUB: v = a - b; break;
        case N_MUL: v = a * b; break;
        case N_DIV:
            if (b == 0) {
                snprintf(err, errlen, "division by zero");
                return -1;
            }
            v = a / b;
            break;
        case N_POW: v = pow(a, b); break;
        case N_FUNC:
            switch (n->func) {
                case 0: v = log(a); break;
                case 1: v = log2(a); break;
                case 2: v = log10(a); break;
                case 3: v = exp(a); break;
                case 4: v = sqrt(a); break;
                default: v = fabs(a); break;
            }
            if (!isfinite(v)) {
                char arg[TEXT_DOUBLE_MAX];
                text_double(a, arg, sizeof arg);
                snprintf(err, errlen, "%s(%s) is not a finite number", func_names[n->func], arg);
                return -1;
            }
            break;
    }
    if (!isfinite(v)) {
        snprintf(err, errlen, "the result is not a finite number");
        return -1;
    }
    *out = v;
    return 0;
}

int expr_eval(const struct expr *e, expr_lookup_fn lookup, void *ctx, double *out, char *err,
              size_t errlen)
{
    char msg[256] = "";
    if (eval(e->root, lookup, ctx, out, msg, sizeof msg)) {
        snprintf(err, errlen, "expression '%s': %s", e->text, msg);
        return -1;
    }
    return 0;
}

void expr_destroy(struct expr **e)
{
    if (!e || !*e)
        return;
    node_free((*e)->root);
    free((*e)->text);
    free(*e);
    *e = NULL;
}

int expr_looks_like(const char *t)
{
    while (isspace((unsigned char)*t))
        t++;
    for (const char *c = t; *c; c++) {
        if (isalpha((unsigned char)*c) || *c == '_') {
            /* the exponent of a number: a digit or '.' before, a digit or sign after */
            int exp = (*c == 'e' || *c == 'E') && c > t &&
                      (isdigit((unsigned char)c[-1]) || c[-1] == '.') &&
                      (isdigit((unsigned char)c[1]) || c[1] == '-' || c[1] == '+');
            if (!exp)
                return 1;
        }
        if (c > t && strchr("*/^()", *c))
            return 1;
        if (c > t && (*c == '+' || *c == '-') && c[-1] != 'e' && c[-1] != 'E')
            return 1;
        if (*c == '(')
            return 1;
    }
    return 0;
}
