/*
 * spec_impl.h: declarations shared by the two files of the sweep-file reader and by no one
 * else: spec.c walks the YAML document, spec_axis.c builds and checks the axes it finds (values
 * checked with params_set, ranges, repeats, expressions, `--set`). The interface is
 * include/aimsweep/harness/spec.h.
 */
#ifndef AIMSWEEP_HARNESS_SPEC_IMPL_H
#define AIMSWEEP_HARNESS_SPEC_IMPL_H

#include <stddef.h>
#include <yaml.h>

#include "aimsweep/harness/spec.h"

/* The state of one read: the document being walked (NULL for `--set`), the spec being built,
 * the caller's error buffer and the lines of `seeds` and `solvers` (0 until seen). */
/* Largest seed count `seeds: N` (and `--set seeds=N`) accepts. */
#define SPEC_MAX_SEEDS 1000000

struct spec_walk {
    const char *path;
    yaml_document_t *doc;
    struct sweep_spec *s;
    char *err;
    size_t errlen;
    int seeds_line, solvers_line;
    int nzip;
};

/* The range kinds of a grid key, in the order spec_range_values numbers them. */
extern const char *const spec_range_kinds[];

/* Writes "PATH:LINE: key 'KEY': message" (or without the key when key is NULL) into w->err;
 * returns -1. */
int spec_fail(struct spec_walk *w, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* key with '-' written as '_' (at most n - 1 characters). */
void spec_canonical_key(const char *key, char *out, size_t n);

/* The axis of key among a[0..n), or NULL. */
struct spec_axis *spec_find_axis(struct spec_axis *a, size_t n, const char *key);

/* Appends an empty axis for key to *arr (n entries) and returns it, or NULL after spec_fail().
 * Pointers into *arr are invalid afterwards. */
struct spec_axis *spec_axis_new(struct spec_walk *w, struct spec_axis **arr, size_t *n,
                                const char *key, int line);

/* Appends one value (copied) to an axis, marked as an expression when is_expr; returns 0, or -1
 * after spec_fail(). spec_axis_push is the same with is_expr = 0. */
int spec_axis_push_x(struct spec_walk *w, struct spec_axis *a, const char *value, int line,
                     int is_expr);
int spec_axis_push(struct spec_walk *w, struct spec_axis *a, const char *value, int line);

/* Checks one value of key with params_set and writes its canonical text into canon. With
 * is_expr non-NULL a numeric key may also take an expression of other numeric keys (*is_expr =
 * 1, canon "=TEXT"). Returns 0, or -1 after spec_fail(). spec_check_value takes no
 * expressions. */
int spec_check_value_x(struct spec_walk *w, const char *key, const char *value, int line,
                       char *canon, size_t n, int *is_expr);
int spec_check_value(struct spec_walk *w, const char *key, const char *value, int line, char *canon,
                     size_t n);

/* The values of a range (see spec_axis.c). */
long spec_range_values(struct spec_walk *w, const char *key, int which, double a, double b,
                       double c, int line, int vline, char ***out);

/* The first of texts[0..n) (in list order) equal to an earlier one: 1 with *later and
 * *earlier set, 0 when all differ, -1 when out of memory. */
int spec_find_repeat(char *const *texts, size_t n, size_t *later, size_t *earlier);

/* Adds one grid value to a, checked; *canons (a->n entries, caller frees) collects the
 * canonical texts for spec_repeat_check. Returns 0, or -1 after spec_fail(). */
int spec_grid_value(struct spec_walk *w, struct spec_axis *a, char ***canons, const char *value,
                    int line);

/* After a grid axis is read: fails on the first value that repeats an earlier one by canonical
 * text. Returns 0, or -1 after spec_fail(). */
int spec_repeat_check(struct spec_walk *w, struct spec_axis *a, char **canons);

/* Fails (-1, message "PATH:LINE: ..." in err) when an expression names a key that is itself an
 * expression; returns 0 otherwise. */
int spec_check_expr_refs(const struct sweep_spec *s, char *err, size_t errlen);

#endif
