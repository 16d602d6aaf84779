/*
 * reader.c: opening a checkpoint, the safetensors format, and turning stored elements into
 * doubles.
 *
 * safetensors (https://github.com/huggingface/safetensors): bytes [0, 8) are N, a little-endian
 * u64; bytes [8, 8 + N) a UTF-8 JSON object mapping each tensor's name to {"dtype", "shape",
 * "data_offsets": [begin, end]} (offsets into the data that follows the header), and an optional
 * "__metadata__" object of strings. Checks: N <= PROBE_MAX_HEADER and 8 + N <= file length; the
 * JSON parses (jansson refuses invalid UTF-8 and, with JSON_REJECT_DUPLICATES, repeated names);
 * shapes are arrays of non-negative integers whose product fits; begin <= end <= data length
 * and end - begin = count * element size for the dtypes with a known size. Tensors of a dtype
 * this reader does not convert (integers, F8) are kept with PROBE_OTHER and refused only when a
 * caller asks for their values.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "reader_impl.h"

int rd_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
    if (err && errlen) {
        int k = snprintf(err, errlen, "%s: ", path);
        if (k >= 0 && (size_t)k < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return PROBE_EBADFILE;
}

struct probe_tensor *rd_add(struct probe_file *f, const char *name, size_t namelen)
{
    struct probe_tensor *t = realloc(f->t, (size_t)(f->n + 1) * sizeof *t);
    if (!t)
        return NULL;
    f->t = t;
    t = &f->t[f->n];
    memset(t, 0, sizeof *t);
    t->name = malloc(namelen + 1);
    if (!t->name)
        return NULL;
    memcpy(t->name, name, namelen);
    t->name[namelen] = 0;
    f->n++;
    return t;
}

size_t rd_elsize(enum probe_dtype d)
{
    switch (d) {
        case PROBE_F16:
        case PROBE_BF16: return 2;
        case PROBE_F32: return 4;
        case PROBE_F64: return 8;
        default: return 0;
    }
}

int rd_count(const int64_t *shape, int ndim, int64_t *count)
{
    int64_t c = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || shape[i] > PROBE_MAX_ELEMS)
            return -1;
        if (shape[i] == 0)
            c = 0;
        else if (c > PROBE_MAX_ELEMS / shape[i])
            return -1;
        else
            c *= shape[i];
    }
    *count = c;
    return 0;
}

const char *probe_dtype_name(enum probe_dtype d)
{
    static const char *const names[] = {"F16", "BF16", "F32", "F64", "other"};
    return names[d];
}

/* The size of a safetensors dtype this reader does not convert, so that its extent can be
 * checked all the same; 0 when unknown (then only begin <= end is checked). */
static size_t other_size(const char *s)
{
    static const struct {
        const char *name;
        size_t size;
    } known[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2},
                 {"U16", 2},  {"I32", 4}, {"U32", 4}, {"I64", 8},     {"U64", 8},     {NULL, 0}};
    for (int i = 0; known[i].name; i++)
        if (!strcmp(s, known[i].name))
            return known[i].size;
    return 0;
}

/* A JSON integer that is >= 0, or -1. */
static int64_t json_nonneg(const json_t *v)
{
    if (!json_is_integer(v))
        return -1;
    json_int_t x = json_integer_value(v);
    return x < 0 ? -1 : (int64_t)x;
}

/* A metadata string holding a non-negative decimal integer, or -1. */
static long long meta_int(const json_t *meta, const char *key)
{
    const json_t *v = json_object_get(meta, key);
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < 0)
        return -1;
    return x;
}

static int st_tensor(struct probe_file *f, const char *name, const json_t *v,
                     const unsigned char *data, size_t dlen, char *err, size_t errlen)
{
    const char *P = f->path;
    if (!json_is_object(v))
        return rd_fail(err, errlen, P, "tensor '%s': its header entry is not an object", name);
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
        json_array_size(off) != 2)
        return rd_fail(err, errlen, P,
                       "tensor '%s': needs a dtype string, a shape array and two data_offsets",
                       name);
    if (json_array_size(sh) > PROBE_MAX_DIM)
        return rd_fail(err, errlen, P, "tensor '%s': more than %d dimensions", name, PROBE_MAX_DIM);
    struct probe_tensor *t = rd_add(f, name, strlen(name));
    if (!t)
        return rd_fail(err, errlen, P, "out of memory");
    const char *ds = json_string_value(dt);
    t->dtype = !strcmp(ds, "F16")    ? PROBE_F16
               : !strcmp(ds, "BF16") ? PROBE_BF16
               : !strcmp(ds, "F32")  ? PROBE_F32
               : !strcmp(ds, "F64")  ? PROBE_F64
                                     : PROBE_OTHER;
    t->ndim = (int)json_array_size(sh);
    for (int i = 0; i < t->ndim; i++)
        if ((t->shape[i] = json_nonneg(json_array_get(sh, (size_t)i))) < 0)
            return rd_fail(err, errlen, P, "tensor '%s': dimension %d is not an integer >= 0", name,
                           i);
    if (rd_count(t->shape, t->ndim, &t->count))
        return rd_fail(err, errlen, P, "tensor '%s': its shape's size overflows", name);
    int64_t b = json_nonneg(json_array_get(off, 0)), e = json_nonneg(json_array_get(off, 1));
    if (b < 0 || e < 0 || b > e || (uint64_t)e > dlen)
        return rd_fail(err, errlen, P,
                       "tensor '%s': data_offsets [%lld, %lld] lie outside the %zu data bytes",
                       name, (long long)b, (long long)e, dlen);
    size_t es = t->dtype == PROBE_OTHER ? other_size(ds) : rd_elsize(t->dtype);
    if (es && (uint64_t)(e - b) != (uint64_t)t->count * es)
        return rd_fail(err, errlen, P,
                       "tensor '%s': %lld bytes between its offsets, its shape and %s need %llu",
                       name, (long long)(e - b), ds, (unsigned long long)t->count * es);
    t->bytes = data + b;
    return 0;
}

int rd_safetensors(struct probe_file *f, char *err, size_t errlen)
{
    const char *P = f->path;
    if (f->len < 8)
        return rd_fail(err, errlen, P, "too short for a safetensors file (%zu bytes)", f->len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | f->buf[i];
    if (n > PROBE_MAX_HEADER)
        return rd_fail(err, errlen, P,
                       "its header claims %llu bytes, more than the %u accepted: not a safetensors "
                       "file, or a damaged one",
                       (unsigned long long)n, PROBE_MAX_HEADER);
    if (n > f->len - 8)
        return rd_fail(err, errlen, P,
                       "its header claims %llu bytes but the file has %zu after the length: "
                       "truncated",
                       (unsigned long long)n, f->len - 8);
    json_error_t je;
    json_t *root = json_loadb((const char *)f->buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rd_fail(err, errlen, P, "its JSON header does not parse (%s, at byte %d)", je.text,
                       je.position);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = rd_fail(err, errlen, P, "its JSON header is not an object");
        goto out;
    }
    const unsigned char *data = f->buf + 8 + n;
    size_t dlen = f->len - 8 - (size_t)n;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "__metadata__")) {
            if (!json_is_object(v)) {
                rc = rd_fail(err, errlen, P, "__metadata__ is not an object");
                goto out;
            }
            f->meta_step = meta_int(v, "step");
            f->meta_heads = meta_int(v, "heads");
            continue;
        }
        if ((rc = st_tensor(f, key, v, data, dlen, err, errlen)))
            goto out;
    }
out:
    json_decref(root);
    return rc;
}

int probe_parse(const char *path, unsigned char *buf, size_t len, struct probe_file **out,
                char *err, size_t errlen)
{
    *out = NULL;
    struct probe_file *f = calloc(1, sizeof *f);
    if (!f) {
        free(buf);
        return rd_fail(err, errlen, path, "out of memory");
    }
    f->buf = buf;
    f->len = len;
    f->meta_step = f->meta_heads = -1;
    f->path = strdup(path);
    int rc;
    if (!f->path)
        rc = rd_fail(err, errlen, path, "out of memory");
    else if (len >= 6 && !memcmp(buf, "\x93NUMPY", 6)) {
        struct probe_tensor *t = rd_add(f, "", 0);
        rc = t ? rd_npy(buf, len, t, path, "the array", err, errlen)
               : rd_fail(err, errlen, path, "out of memory");
    } else if (len >= 4 && !memcmp(buf, "PK\3\4", 4))
        rc = rd_npz(f, err, errlen);
    else
        rc = rd_safetensors(f, err, errlen);
    if (rc) {
        probe_close(&f);
        return rc;
    }
    *out = f;
    return 0;
}

int probe_open(const char *path, struct probe_file **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return PROBE_EIO;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = PROBE_EIO;
    if (fseek(fp, 0, SEEK_END) || ftell(fp) < 0) {
        snprintf(err, errlen, "%s: cannot read: not a regular file", path);
        goto fail;
    }
    len = (size_t)ftell(fp);
    rewind(fp);
    /* A safetensors header that claims too much is refused before the file is read. */
    unsigned char head[8];
    if (len >= 8 && fread(head, 1, 8, fp) == 8 && memcmp(head, "\x93NUMPY", 6) &&
        memcmp(head, "PK\3\4", 4)) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--)
            n = n << 8 | head[i];
        if (n > PROBE_MAX_HEADER) {
            fclose(fp);
            return rd_fail(err, errlen, path,
                           "its header claims %llu bytes, more than the %u accepted: not a "
                           "safetensors file, or a damaged one",
                           (unsigned long long)n, PROBE_MAX_HEADER);
        }
    }
    rewind(fp);
    buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory for %zu bytes", path, len);
        goto fail;
    }
    if (fread(buf, 1, len, fp) != len) {
        snprintf(err, errlen, "%s: read error", path);
        goto fail;
    }
    fclose(fp);
    return probe_parse(path, buf, len, out, err, errlen);
fail:
    free(buf);
    fclose(fp);
    return rc;
}

void probe_close(struct probe_file **fp)
{
    struct probe_file *f = fp ? *fp : NULL;
    if (!f)
        return;
    for (int i = 0; i < f->n; i++)
        free(f->t[i].name);
    for (int i = 0; i < f->nowned; i++)
        free(f->owned[i]);
    free(f->owned);
    free(f->t);
    free(f->buf);
    free(f->path);
    free(f);
    *fp = NULL;
}

const struct probe_tensor *probe_find(const struct probe_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name))
            return &f->t[i];
    return NULL;
}

int64_t probe_cols(const struct probe_tensor *t)
{
    int64_t c = 1;
    for (int i = 1; i < t->ndim; i++)
        c *= t->shape[i];
    return c;
}

static double half_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp(m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp(m + 1024, e - 25);
    return s ? -v : v;
}

/* Element k (in storage order) of t as a double. */
static double elem(const struct probe_tensor *t, int64_t k)
{
    size_t es = rd_elsize(t->dtype);
    const unsigned char *p = t->bytes + (size_t)k * es;
    unsigned char b[8];
    for (size_t i = 0; i < es; i++)
        b[i] = t->big_endian ? p[es - 1 - i] : p[i];
    switch (t->dtype) {
        case PROBE_F16: return half_to_double((uint16_t)(b[0] | b[1] << 8));
        case PROBE_BF16: {
            uint32_t u = (uint32_t)(b[0] | b[1] << 8) << 16;
            float x;
            memcpy(&x, &u, 4);
            return x;
        }
        case PROBE_F32: {
            uint32_t u =
                (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            float x;
            memcpy(&x, &u, 4);
            return x;
        }
        case PROBE_F64: {
            uint64_t u = 0;
            for (int i = 7; i >= 0; i--)
                u = u << 8 | b[i];
            double x;
            memcpy(&x, &u, 8);
            return x;
        }
        default: return NAN;
    }
}

int probe_rows_f64(const struct probe_tensor *t, int64_t r0, int64_t nr, double *out)
{
    if (t->dtype == PROBE_OTHER || t->ndim < 1 || r0 < 0 || nr < 0 || r0 + nr > t->shape[0])
        return -1;
    int64_t cols = probe_cols(t);
    if (!t->fortran || t->ndim < 2) {
        if (t->dtype == PROBE_F32 && !t->big_endian) {
            const unsigned char *p = t->bytes + (size_t)(r0 * cols) * 4;
            for (int64_t k = 0; k < nr * cols; k++) {
                float x;
                memcpy(&x, p + 4 * k, 4);
                out[k] = x;
            }
            return 0;
        }
        for (int64_t k = 0; k < nr * cols; k++)
            out[k] = elem(t, r0 * cols + k);
        return 0;
    }
    /* Fortran order: element (i0, i1, ..., ik) is stored at i0 + s0 (i1 + s1 (i2 + ...)). The
     * columns of the matrix view are the C-order flattening of (i1..ik). */
    for (int64_t c = 0; c < cols; c++) {
        int64_t rest = c, off = 0, stride = t->shape[0];
        int64_t idx[PROBE_MAX_DIM];
        for (int d = t->ndim - 1; d >= 1; d--) {
            idx[d] = rest % t->shape[d];
            rest /= t->shape[d];
        }
        for (int d = 1; d < t->ndim; d++) {
            off += idx[d] * stride;
            stride *= t->shape[d];
        }
        for (int64_t r = 0; r < nr; r++)
            out[r * cols + c] = elem(t, off + r0 + r);
    }
    return 0;
}
