/*
 * reader.h: weight tensors from checkpoint files: safetensors (an 8-byte little-endian header
 * length, a JSON header, raw little-endian tensors), NumPy .npy (versions 1-3) and .npz (a zip of
 * .npy files, stored or deflated).
 *
 * A file is read whole into memory and checked before anything is handed out: every tensor's
 * extent must lie inside the file and match its dtype and shape, sizes must not overflow, the
 * header must be valid UTF-8 (safetensors) or ASCII (npy) and at most PROBE_MAX_HEADER bytes.
 * A file that fails a check is refused with a message and PROBE_EBADFILE; nothing is read out
 * of bounds.
 */
#ifndef AIMSWEEP_PROBE_READER_H
#define AIMSWEEP_PROBE_READER_H

#include <stddef.h>
#include <stdint.h>

/* Largest header accepted (safetensors JSON, npy dict): 16 MiB. */
#define PROBE_MAX_HEADER (16u << 20)
/* Most dimensions of one tensor. */
#define PROBE_MAX_DIM 8
/* Largest tensor, in elements (2^34). */
#define PROBE_MAX_ELEMS ((int64_t)1 << 34)

/* Return codes: 0 success, PROBE_EIO when the file cannot be read, PROBE_EBADFILE when its
 * contents are malformed (the command exits 2 for both: the user named the file). */
#define PROBE_EIO 1
#define PROBE_EBADFILE 2

enum probe_dtype { PROBE_F16, PROBE_BF16, PROBE_F32, PROBE_F64, PROBE_OTHER };

struct probe_tensor {
    char *name;
    enum probe_dtype dtype;
    int big_endian; /* npy '>' */
    int fortran;    /* npy fortran_order: column-major bytes */
    int ndim;
    int64_t shape[PROBE_MAX_DIM];
    int64_t count;              /* product of the shape */
    const unsigned char *bytes; /* count elements, inside the file's buffer */
};

struct probe_file {
    char *path;
    unsigned char *buf; /* the whole file */
    size_t len;
    unsigned char **owned; /* inflated npz members */
    int nowned;
    struct probe_tensor *t;
    int n;
    long long meta_step;  /* safetensors __metadata__ "step", or -1 */
    long long meta_heads; /* safetensors __metadata__ "heads", or -1 */
};

/* Opens and checks path (the format from its first bytes: "\x93NUMPY", "PK\3\4", else
 * safetensors). On success *out owns everything (free with probe_close). On failure *out is NULL
 * and err holds a message naming the file; returns PROBE_EIO or PROBE_EBADFILE. */
int probe_open(const char *path, struct probe_file **out, char *err, size_t errlen);

/* Parses a file already in memory (buf is taken over and freed by probe_close, also on failure).
 * What probe_open does after reading. */
int probe_parse(const char *path, unsigned char *buf, size_t len, struct probe_file **out,
                char *err, size_t errlen);

void probe_close(struct probe_file **f);

/* The tensor named name, or NULL. */
const struct probe_tensor *probe_find(const struct probe_file *f, const char *name);

/* Copies rows [r0, r0 + nr) of a tensor seen as a matrix (shape[0] rows, the other dimensions
 * flattened into columns), as doubles in row-major order, into out (nr * cols). Returns 0, or -1
 * when the dtype is not a float type or the rows are out of range. */
int probe_rows_f64(const struct probe_tensor *t, int64_t r0, int64_t nr, double *out);

/* The number of columns of a tensor seen as a matrix (1 for a vector or scalar). */
int64_t probe_cols(const struct probe_tensor *t);

/* The dtype's name ("F32", ...). */
const char *probe_dtype_name(enum probe_dtype d);

#endif
