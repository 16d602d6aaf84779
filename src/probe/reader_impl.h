/*
 * reader_impl.h: what the safetensors reader (reader.c) and the NumPy readers (reader_npy.c)
 * share: the error message, the tensor list and the checked size arithmetic.
 */
#ifndef AIMSWEEP_PROBE_READER_IMPL_H
#define AIMSWEEP_PROBE_READER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "aimsweep/probe/reader.h"

/* printf into err as "PATH: ..."; always returns PROBE_EBADFILE. */
int rd_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends a tensor (name copied); returns it, or NULL when out of memory. */
struct probe_tensor *rd_add(struct probe_file *f, const char *name, size_t namelen);

/* Bytes per element of d (0 for PROBE_OTHER). */
size_t rd_elsize(enum probe_dtype d);

/* count = product of shape[0..ndim), with every factor >= 0; returns -1 when a factor is
 * negative or the product exceeds PROBE_MAX_ELEMS. */
int rd_count(const int64_t *shape, int ndim, int64_t *count);

/* NumPy: parses one .npy image (bytes [0, len)) into t (name set by the caller). Returns 0 or
 * PROBE_EBADFILE with err set; what = the member's name for messages. */
int rd_npy(const unsigned char *p, size_t len, struct probe_tensor *t, const char *path,
           const char *what, char *err, size_t errlen);

/* The zip archive of an .npz: every member ending in .npy becomes a tensor (its name without
 * ".npy"). Returns 0 or an error code with err set. */
int rd_npz(struct probe_file *f, char *err, size_t errlen);

/* The safetensors file in f->buf. */
int rd_safetensors(struct probe_file *f, char *err, size_t errlen);

#endif
