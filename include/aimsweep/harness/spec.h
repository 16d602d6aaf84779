/*
 * spec.h: sweep files. A sweep file is YAML:
 *
 *     name: phase-h            # a string (default: the file's base name)
 *     grid:                    # parameter -> list of values; every combination is a point
 *       decomposition: [direct, tied]
 *       d: [40, 80]
 *     fixed:                   # parameter -> one value
 *       tau_end: 0.2
 *     seeds: 3                 # a count N (seeds 1..N) or a list [7, 11]
 *     solvers: [sgd, flow]     # a list
 *
 * Keys are the parameter keys of params.h (snake_case or dashed). Every value is checked
 * here with params_set, the same parser `aimsweep single` uses, so that an error names the
 * file, the line and the key: "FILE:LINE: key 'x': message". A key may sit in grid or in
 * fixed, not both; `seeds` stands for the key `seed` and `solvers` for `solvers`.
 *
 * Grids researchers write:
 *   - a numeric grid key may take a range instead of a list: {linspace: [a, b, n]} (n evenly
 *     spaced values from a to b), {logspace: [a, b, n]} (n values from a to b, evenly spaced
 *     in log), {range: [a, b, step]} (a, a + step, ... while below b, as Python's range);
 *     values are rounded to 15 significant digits, so that 0.1 + 0.2 is 0.3;
 *   - a `zip:` mapping under grid (or several: any key starting with zip) holds lists of one
 *     length whose values go together: the i-th d with the i-th lr;
 *   - the value of a numeric key may be an expression of other numeric keys, evaluated for
 *     each point with the grammar of expr.h: lr: "0.5 / (d * log(d))";
 *   - spec_override applies `--set KEY=VALUE` of the command line over the file.
 */
#ifndef AIMSWEEP_SPEC_H
#define AIMSWEEP_SPEC_H

#include <stddef.h>

/* The most grid points a sweep may expand to. */
#define SPEC_MAX_POINTS 1000000

/* One key with its values, as written. */
struct spec_axis {
    char key[64]; /* canonical (snake_case) key */
    int line;     /* 1-based line of the key */
    size_t n;
    char **values; /* n texts, as params_set takes them */
    int *lines;    /* 1-based line of each value */
    unsigned char
        *is_expr; /* per value: 1 when it is an expression (expr.h), evaluated per point */
    int zip;      /* 0, or the zip block (1, 2, ...) whose axes vary together */
};

struct sweep_spec {
    char *path;
    char *name;
    char *text;              /* the file, verbatim (stored with the sweep) */
    struct spec_axis *fixed; /* each with n == 1 */
    size_t nfixed;
    struct spec_axis *grid; /* each with n >= 1; `seeds` is the axis `seed` */
    size_t ngrid;
    int grid_line; /* line of `grid:` (or 1) */
};

/* Reads and checks a sweep file. Returns 0 and a new spec in *out, or -1 with a one-line
 * message "FILE:LINE: ..." in err and *out = NULL. The caller owns *out (spec_destroy). */
int spec_load(const char *path, struct sweep_spec **out, char *err, size_t errlen);

/* Same from text in memory; path only names the source in messages. */
int spec_parse(const char *path, const char *text, size_t len, struct sweep_spec **out, char *err,
               size_t errlen);

/* Applies one `--set KEY=VALUE` from the command line: the key takes this one value for every
 * point (a grid axis of that key is dropped; an axis inside a zip block cannot be). The
 * override is appended to the stored text as a comment. Returns 0, or -1 with
 * "--set KEY=VALUE: message" in err. */
int spec_override(struct sweep_spec *s, const char *assignment, char *err, size_t errlen);

/* Frees a spec; accepts NULL, sets *s = NULL. */
void spec_destroy(struct sweep_spec **s);

#endif
