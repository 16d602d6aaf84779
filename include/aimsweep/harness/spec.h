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
 */
#ifndef AIMSWEEP_SPEC_H
#define AIMSWEEP_SPEC_H

#include <stddef.h>

/* The most grid points a sweep may expand to. */
#define SPEC_MAX_POINTS 1000000

/* One key with its values, as written. */
struct spec_axis {
    char key[64];   /* canonical (snake_case) key */
    int line;       /* 1-based line of the key */
    size_t n;
    char **values;  /* n texts, as params_set takes them */
    int *lines;     /* 1-based line of each value */
};

struct sweep_spec {
    char *path;
    char *name;
    char *text;               /* the file, verbatim (stored with the sweep) */
    struct spec_axis *fixed;  /* each with n == 1 */
    size_t nfixed;
    struct spec_axis *grid;   /* each with n >= 1; `seeds` is the axis `seed` */
    size_t ngrid;
    int grid_line;            /* line of `grid:` (or 1) */
};

/* Reads and checks a sweep file. Returns 0 and a new spec in *out, or -1 with a one-line
 * message "FILE:LINE: ..." in err and *out = NULL. The caller owns *out (spec_destroy). */
int spec_load(const char *path, struct sweep_spec **out, char *err, size_t errlen);

/* Same from text in memory; path only names the source in messages. */
int spec_parse(const char *path, const char *text, size_t len, struct sweep_spec **out, char *err,
               size_t errlen);

/* Frees a spec; accepts NULL, sets *s = NULL. */
void spec_destroy(struct sweep_spec **s);

#endif
