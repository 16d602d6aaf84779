/*
 * expr.h: per-point expressions of a sweep ("0.5 / log(d)"), read by a tiny grammar of its
 * own (no eval, no shell, nothing but arithmetic):
 *
 *     expr    := term (('+' | '-') term)*
 *     term    := factor (('*' | '/') factor)*
 *     factor  := ('-' | '+') factor | power
 *     power   := primary ('^' factor)?          right-associative: 2^3^2 = 2^9
 *     primary := NUMBER | NAME | NAME '(' expr ')' | '(' expr ')'
 *
 * NAME is a numeric parameter key (its value at the point) or the constant pi; the functions
 * are log (natural), log2, log10, exp, sqrt, abs. Evaluation fails on division by zero and on
 * any non-finite result (log of 0, sqrt of a negative number), with a message that says which.
 */
#ifndef AIMSWEEP_EXPR_H
#define AIMSWEEP_EXPR_H

#include <stddef.h>

struct expr;

/* Looks up the value of a name; returns 0, or -1 when the name is unknown. */
typedef int (*expr_lookup_fn)(void *ctx, const char *name, double *value);

/* Compiles text. Returns a new expression (expr_destroy), or NULL with a message naming the
 * column of the mistake in err. Names are not looked up here: see expr_names. */
struct expr *expr_compile(const char *text, char *err, size_t errlen);

/* The names the expression uses (not the functions), in order of appearance, at most max;
 * returns how many there are (which may exceed max). The strings belong to e. */
int expr_names(const struct expr *e, const char **names, int max);

/* Evaluates. Returns 0 with *out, or -1 with a message in err. */
int expr_eval(const struct expr *e, expr_lookup_fn lookup, void *ctx, double *out, char *err,
              size_t errlen);

/* Frees; accepts NULL and sets *e = NULL. */
void expr_destroy(struct expr **e);

/* 1 when text is more than a plain number: it holds a letter other than an exponent's 'e', or
 * an operator after its first character. A value of a numeric key that is not a number but
 * looks like this is read as an expression. */
int expr_looks_like(const char *text);

#endif
