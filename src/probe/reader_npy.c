/*
 * reader_npy.c: NumPy's .npy and .npz files.
 *
 * .npy (numpy/lib/format.py): "\x93NUMPY", major and minor version bytes, the header length (a
 * little-endian u16 for version 1, u32 for versions 2 and 3), then that many bytes of a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and
 * a newline, then the raw elements. Read here: descr '<f2' '<f4' '<f8' and their '>' forms ('|'
 * and '=' are refused: a float has a byte order), either order, any shape up to PROBE_MAX_DIM
 * dimensions. The header must be printable ASCII and the data exactly count * element size bytes.
 *
 * .npz: a zip archive (APPNOTE.TXT) of .npy members, written by np.savez (stored) or
 * np.savez_compressed (deflated); NumPy writes its local headers with zip64 extra fields. The
 * central directory is found through the end record (zip64 end record when present) and each
 * member through its local header; every offset and size is checked against the file. A
 * deflated member is inflated with zlib (raw deflate) into exactly its stated size, refused when
 * that size exceeds deflate's largest ratio (1032:1) over the compressed size, and its CRC-32 is
 * checked.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "reader_impl.h"

/* Most members of one archive. */
#define NPZ_MAX_MEMBERS 65536
/* deflate's largest compression ratio. */
#define NPZ_MAX_RATIO 1032

struct lex {
    const char *p, *end;
};

static void skip_ws(struct lex *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\n' || *l->p == '\t'))
        l->p++;
}

static int eat(struct lex *l, char c)
{
    skip_ws(l);
    if (l->p < l->end && *l->p == c) {
        l->p++;
        return 1;
    }
    return 0;
}

/* A quoted string (' or "), without escapes; [*s, *s + *n). */
static int lex_str(struct lex *l, const char **s, size_t *n)
{
    skip_ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
        return -1;
    char q = *l->p++;
    const char *b = l->p;
    while (l->p < l->end && *l->p != q)
        if (*l->p++ == '\\')
            return -1;
    if (l->p >= l->end)
        return -1;
    *s = b;
    *n = (size_t)(l->p - b);
    l->p++;
    return 0;
}

static int lex_word(struct lex *l, const char *w)
{
    skip_ws(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && !memcmp(l->p, w, n)) {
        l->p += n;
        return 1;
    }
    return 0;
}

/* A tuple of non-negative integers: (), (3,), (3, 4). */
static int lex_shape(struct lex *l, int64_t *shape, int *ndim)
{
    if (!eat(l, '('))
        return -1;
    *ndim = 0;
    for (;;) {
        if (eat(l, ')'))
            return 0;
        if (*ndim >= PROBE_MAX_DIM)
            return -1;
        skip_ws(l);
        int64_t x = 0;
        int digits = 0;
        while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
            if (x > (INT64_MAX - 9) / 10)
                return -1;
            x = 10 * x + (*l->p++ - '0');
            digits++;
        }
        if (!digits)
            return -1;
        shape[(*ndim)++] = x;
        if (!eat(l, ',')) {
            if (!eat(l, ')'))
                return -1;
            return 0;
        }
    }
}

int rd_npy(const unsigned char *p, size_t len, struct probe_tensor *t, const char *path,
           const char *what, char *err, size_t errlen)
{
    if (len < 10 || memcmp(p, "\x93NUMPY", 6))
        return rd_fail(err, errlen, path, "%s is not a .npy image", what);
    int major = p[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)p[8] | (size_t)p[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return rd_fail(err, errlen, path, "%s: truncated .npy header", what);
        hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
        start = 12;
    } else
        return rd_fail(err, errlen, path, "%s: .npy version %d.%d is not one NumPy writes", what,
                       major, p[7]);
    if (hlen > PROBE_MAX_HEADER)
        return rd_fail(err, errlen, path, "%s: its .npy header claims %zu bytes, more than %u",
                       what, hlen, PROBE_MAX_HEADER);
    if (hlen > len - start)
        return rd_fail(err, errlen, path, "%s: truncated inside its .npy header", what);
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = p[start + i];
        if (c >= 127 || (c < 32 && c != '\n' && c != '\t'))
            return rd_fail(err, errlen, path,
                           "%s: its .npy header has a byte 0x%02x that is not "
                           "printable ASCII",
                           what, c);
    }
    struct lex l = {(const char *)p + start, (const char *)p + start + hlen};
    int have_descr = 0, have_order = 0, have_shape = 0;
    const char *descr = NULL;
    size_t dn = 0;
    if (!eat(&l, '{'))
        goto syntax;
    while (!eat(&l, '}')) {
        const char *k;
        size_t kn;
        if (lex_str(&l, &k, &kn) || !eat(&l, ':'))
            goto syntax;
        if (kn == 5 && !memcmp(k, "descr", 5)) {
            if (have_descr++ || lex_str(&l, &descr, &dn))
                goto syntax;
        } else if (kn == 13 && !memcmp(k, "fortran_order", 13)) {
            if (have_order++)
                goto syntax;
            if (lex_word(&l, "True"))
                t->fortran = 1;
            else if (!lex_word(&l, "False"))
                goto syntax;
        } else if (kn == 5 && !memcmp(k, "shape", 5)) {
            if (have_shape++ || lex_shape(&l, t->shape, &t->ndim))
                goto syntax;
        } else
            goto syntax;
        if (!eat(&l, ',')) {
            if (!eat(&l, '}'))
                goto syntax;
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        goto syntax;
    if (dn != 3 || (descr[0] != '<' && descr[0] != '>') || descr[1] != 'f' ||
        (descr[2] != '2' && descr[2] != '4' && descr[2] != '8'))
        return rd_fail(err, errlen, path,
                       "%s: dtype '%.*s' is not read (float16/32/64 with a byte order: <f2 <f4 "
                       "<f8 >f2 >f4 >f8)",
                       what, (int)(dn < 16 ? dn : 16), descr);
    t->big_endian = descr[0] == '>';
    t->dtype = descr[2] == '2' ? PROBE_F16 : descr[2] == '4' ? PROBE_F32 : PROBE_F64;
    if (rd_count(t->shape, t->ndim, &t->count))
        return rd_fail(err, errlen, path, "%s: its shape's size overflows", what);
    size_t need = (size_t)t->count * rd_elsize(t->dtype), have = len - start - hlen;
    if (need != have)
        return rd_fail(err, errlen, path, "%s: its shape and dtype need %zu data bytes, it has %zu",
                       what, need, have);
    t->bytes = p + start + hlen;
    return 0;
syntax:
    return rd_fail(err, errlen, path, "%s: its .npy header is not the dict NumPy writes", what);
}

static uint32_t u16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t u32(const unsigned char *p) { return u16(p) | u16(p + 2) << 16; }
static uint64_t u64(const unsigned char *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }

/* The zip64 extended information of an extra field: replaces the values equal to 0xFFFFFFFF,
 * in the order uncompressed size, compressed size, local header offset. Returns -1 when the
 * field is too short for what it must hold. */
static int zip64_extra(const unsigned char *x, size_t n, uint64_t *usize, uint64_t *csize,
                       uint64_t *off)
{
    while (n >= 4) {
        uint32_t id = u16(x), sz = u16(x + 2);
        if (sz > n - 4)
            return -1;
        if (id == 1) {
            const unsigned char *q = x + 4;
            size_t left = sz;
            uint64_t *v[3] = {usize, csize, off};
            for (int i = 0; i < 3; i++) {
                if (*v[i] != 0xFFFFFFFFu)
                    continue;
                if (left < 8)
                    return -1;
                *v[i] = u64(q);
                q += 8;
                left -= 8;
            }
            return 0;
        }
        x += 4 + sz;
        n -= 4 + sz;
    }
    return 0;
}

/* The member's bytes: inside the file when stored, else inflated into a new buffer kept by f. */
static int npz_member(struct probe_file *f, const char *name, uint32_t method, uint32_t crc,
                      uint64_t csize, uint64_t usize, uint64_t off, const unsigned char **data,
                      size_t *dlen, char *err, size_t errlen)
{
    const char *P = f->path;
    if (off > f->len || f->len - off < 30 || u32(f->buf + off) != 0x04034b50)
        return rd_fail(err, errlen, P, "npz member '%s': no local header at offset %llu", name,
                       (unsigned long long)off);
    uint64_t start = off + 30 + u16(f->buf + off + 26) + u16(f->buf + off + 28);
    if (start > f->len || csize > f->len - start)
        return rd_fail(err, errlen, P,
                       "npz member '%s': %llu bytes at %llu run past the file's end", name,
                       (unsigned long long)csize, (unsigned long long)start);
    const unsigned char *src = f->buf + start;
    if (method == 0) {
        if (csize != usize)
            return rd_fail(err, errlen, P, "npz member '%s': stored with two different sizes",
                           name);
        if (usize > UINT_MAX || crc32(0L, src, (uInt)usize) != crc)
            return rd_fail(err, errlen, P, "npz member '%s': CRC-32 mismatch", name);
        *data = src;
        *dlen = (size_t)usize;
        return 0;
    }
    if (method != 8)
        return rd_fail(err, errlen, P, "npz member '%s': compression method %u is not read", name,
                       method);
    if (usize > csize * NPZ_MAX_RATIO + 64 || usize > (uint64_t)PROBE_MAX_ELEMS * 8 ||
        csize > UINT_MAX || usize > UINT_MAX)
        return rd_fail(err, errlen, P,
                       "npz member '%s': claims %llu bytes from %llu compressed, more than deflate "
                       "can give",
                       name, (unsigned long long)usize, (unsigned long long)csize);
    unsigned char **o = realloc(f->owned, (size_t)(f->nowned + 1) * sizeof *o);
    if (!o)
        return rd_fail(err, errlen, P, "out of memory");
    f->owned = o;
    unsigned char *dst = malloc(usize ? usize : 1);
    if (!dst)
        return rd_fail(err, errlen, P, "npz member '%s': out of memory for %llu bytes", name,
                       (unsigned long long)usize);
    f->owned[f->nowned++] = dst;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
        return rd_fail(err, errlen, P, "zlib cannot start");
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)csize;
    z.next_out = dst;
    z.avail_out = (uInt)usize;
    int zr = inflate(&z, Z_FINISH);
    uLong got = z.total_out;
    inflateEnd(&z);
    if (zr != Z_STREAM_END || got != usize)
        return rd_fail(err, errlen, P,
                       "npz member '%s': its deflated data is damaged or not %llu bytes long", name,
                       (unsigned long long)usize);
    if (crc32(0L, dst, (uInt)usize) != crc)
        return rd_fail(err, errlen, P, "npz member '%s': CRC-32 mismatch", name);
    *data = dst;
    *dlen = (size_t)usize;
    return 0;
}

int rd_npz(struct probe_file *f, char *err, size_t errlen)
{
    const char *P = f->path;
    const unsigned char *b = f->buf;
    size_t len = f->len;
    if (len < 22)
        return rd_fail(err, errlen, P, "too short for a zip archive");
    /* The end record: its signature, searched backwards over the longest comment. */
    size_t eocd = 0;
    int found = 0;
    for (size_t i = len - 22 + 1; i-- > 0 && len - i <= 22 + 65535;)
        if (u32(b + i) == 0x06054b50 && i + 22 + u16(b + i + 20) == len) {
            eocd = i;
            found = 1;
            break;
        }
    if (!found)
        return rd_fail(err, errlen, P, "a zip archive without its end record: truncated");
    uint64_t count = u16(b + eocd + 10), cdsize = u32(b + eocd + 12), cdoff = u32(b + eocd + 16);
    if (eocd >= 20 && u32(b + eocd - 20) == 0x07064b50) {
        uint64_t z64 = u64(b + eocd - 20 + 8);
        if (z64 > len || len - z64 < 56 || u32(b + z64) != 0x06064b50)
            return rd_fail(err, errlen, P, "its zip64 end record is not where it says");
        count = u64(b + z64 + 32);
        cdsize = u64(b + z64 + 40);
        cdoff = u64(b + z64 + 48);
    }
    if (count > NPZ_MAX_MEMBERS || cdoff > len || cdsize > len - cdoff)
        return rd_fail(err, errlen, P, "its central directory lies outside the file");
    uint64_t p = cdoff;
    for (uint64_t m = 0; m < count; m++) {
        if (p > cdoff + cdsize || cdoff + cdsize - p < 46 || u32(b + p) != 0x02014b50)
            return rd_fail(err, errlen, P, "its central directory is damaged (entry %llu)",
                           (unsigned long long)m);
        uint32_t method = u16(b + p + 10), crc = u32(b + p + 16);
        uint64_t csize = u32(b + p + 20), usize = u32(b + p + 24);
        size_t nlen = u16(b + p + 28), xlen = u16(b + p + 30), clen = u16(b + p + 32);
        uint64_t off = u32(b + p + 42);
        if (46 + nlen + xlen + clen > cdoff + cdsize - p)
            return rd_fail(err, errlen, P, "its central directory is damaged (entry %llu)",
                           (unsigned long long)m);
        if (zip64_extra(b + p + 46 + nlen, xlen, &usize, &csize, &off))
            return rd_fail(err, errlen, P, "a zip64 field of entry %llu is too short",
                           (unsigned long long)m);
        char name[256];
        size_t show = nlen < sizeof name - 1 ? nlen : sizeof name - 1;
        for (size_t i = 0; i < show; i++) {
            unsigned char c = b[p + 46 + i];
            name[i] = (char)(c >= 32 && c < 127 ? c : '?');
        }
        name[show] = 0;
        p += 46 + nlen + xlen + clen;
        if (nlen < 4 || nlen >= sizeof name || strcmp(name + nlen - 4, ".npy"))
            continue; /* not an array */
        const unsigned char *data = NULL;
        size_t dlen = 0;
        int rc = npz_member(f, name, method, crc, csize, usize, off, &data, &dlen, err, errlen);
        if (rc)
            return rc;
        struct probe_tensor *t = rd_add(f, name, nlen - 4);
        if (!t)
            return rd_fail(err, errlen, P, "out of memory");
        if ((rc = rd_npy(data, dlen, t, P, t->name, err, errlen)))
            return rc;
    }
    return 0;
}
