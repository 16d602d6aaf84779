/*
 * grid.h: the grid points of a sweep spec. Each point starts from params_default, takes the
 * fixed values, then one value of every grid axis; every combination once, and each point
 * passes params_validate.
 */
#ifndef AIMSWEEP_GRID_H
#define AIMSWEEP_GRID_H

#include <stddef.h>

#include "aimsweep/base/params.h"
#include "aimsweep/harness/spec.h"

/* The number of grid points (the product of the axis lengths). */
size_t grid_size(const struct sweep_spec *s);

/* The grid's shape in words: "2 decomposition x 3 (d, lr) x 2 seed" (a zip block in
 * parentheses), or "1 (fixed values only)". Returns buf. */
const char *grid_shape(const struct sweep_spec *s, char *buf, size_t n);

/* Expands the grid. Returns 0 with a new array of *n points in *out (the caller frees it),
 * or -1 with "FILE:LINE: key 'K': message" (one value at fault) or "FILE:LINE: key 'grid': N of M
 * points cannot run:" and the messages with their points, one per line, in err and *out = NULL.
 * The last axis varies fastest; the axes of a zip block vary together. */
int grid_expand(const struct sweep_spec *s, struct params **out, size_t *n, char *err,
                size_t errlen);

#endif
