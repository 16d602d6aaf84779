/*
 * probe_fuzz.c: mutation fuzzing of the checkpoint readers (src/probe/reader*.c, heads.c).
 * usage: probe_fuzz CASES SEED FILE...
 * Each case takes one of the valid FILEs, applies 1-8 mutations (bit flips, bytes set to 0x00
 * 0x7f 0x80 0xff, a 32- or 64-bit field overwritten with a boundary value, bytes inserted or
 * deleted, truncation, a digit of the header changed), parses the result in memory and reads
 * every tensor it accepts and every layer it finds. Run under the ASan/UBSan build
 * (-DAIMSWEEP_SANITIZE=ON) any out-of-bounds access or undefined behaviour aborts; the program
 * prints how many cases were accepted and refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/probe/heads.h"
#include "aimsweep/probe/reader.h"

static uint64_t state;
static uint64_t next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)n + 64);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static size_t mutate(unsigned char *b, size_t len, size_t cap)
{
    static const uint64_t vals[] = {0,          1,          0x7f,       0x80,
                                    0xff,       0x7fffffff, 0xffffffff, 0x80000000,
                                    UINT64_MAX, 1ull << 40, 100000000};
    int k = 1 + (int)(next() % 8);
    for (int i = 0; i < k && len > 0; i++) {
        size_t at = next() % len;
        switch (next() % 8) {
            case 0: b[at] ^= (unsigned char)(1u << (next() % 8)); break;
            case 1: b[at] = (unsigned char)vals[next() % 5]; break;
            case 2: {
                uint64_t v = vals[next() % (sizeof vals / sizeof vals[0])];
                size_t w = next() % 2 ? 4 : 8;
                for (size_t j = 0; j < w && at + j < len; j++)
                    b[at + j] = (unsigned char)(v >> (8 * j));
                break;
            }
            case 3: /* delete a run */ {
                size_t n = 1 + next() % 16;
                if (at + n > len)
                    n = len - at;
                memmove(b + at, b + at + n, len - at - n);
                len -= n;
                break;
            }
            case 4: /* insert bytes */ {
                size_t n = 1 + next() % 8;
                if (len + n > cap)
                    break;
                memmove(b + at + n, b + at, len - at);
                for (size_t j = 0; j < n; j++)
                    b[at + j] = (unsigned char)next();
                len += n;
                break;
            }
            case 5: len = at; break;
            case 6: /* a digit in the first 512 bytes (shapes, offsets, header lengths) */ {
                size_t lim = len < 512 ? len : 512;
                for (size_t j = 0; j < lim; j++) {
                    size_t p = (at + j) % lim;
                    if (b[p] >= '0' && b[p] <= '9') {
                        b[p] = (unsigned char)('0' + next() % 10);
                        break;
                    }
                }
                break;
            }
            default: b[at] = (unsigned char)next();
        }
    }
    return len;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: probe_fuzz CASES SEED FILE...\n");
        return 2;
    }
    long cases = strtol(argv[1], NULL, 10);
    state = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    int nf = argc - 3;
    unsigned char **files = calloc((size_t)nf, sizeof *files);
    size_t *lens = calloc((size_t)nf, sizeof *lens);
    for (int i = 0; i < nf; i++)
        if (!(files[i] = slurp(argv[3 + i], &lens[i]))) {
            fprintf(stderr, "probe_fuzz: cannot read %s\n", argv[3 + i]);
            return 2;
        }
    long accepted = 0, refused = 0, values = 0;
    for (long c = 0; c < cases; c++) {
        int i = (int)(next() % (uint64_t)nf);
        size_t cap = lens[i] + 64;
        unsigned char *b = malloc(cap);
        memcpy(b, files[i], lens[i]);
        size_t len = mutate(b, lens[i], cap);
        /* An exactly sized buffer, so that ASan sees any read past its end. */
        unsigned char *exact = malloc(len ? len : 1);
        memcpy(exact, b, len);
        free(b);
        struct probe_file *f = NULL;
        char err[512];
        if (probe_parse("fuzz", exact, len, &f, err, sizeof err)) {
            refused++;
            continue;
        }
        accepted++;
        for (int t = 0; t < f->n; t++) {
            const struct probe_tensor *x = &f->t[t];
            if (x->dtype == PROBE_OTHER || x->ndim < 1 || x->count > (1 << 22))
                continue;
            double *out = malloc((size_t)(x->count ? x->count : 1) * sizeof *out);
            if (!probe_rows_f64(x, 0, x->shape[0], out))
                values += x->count;
            free(out);
        }
        struct probe_layer *ls = NULL;
        int nl = probe_layers(f, NULL, &ls, err, sizeof err);
        for (int l = 0; l < nl; l++) {
            int64_t n = ls[l].rows, d = ls[l].d;
            if (n * d > (1 << 22))
                continue;
            double *w = malloc((size_t)(n * d) * sizeof *w);
            probe_rows_f64(ls[l].q, ls[l].q_row0, n, w);
            probe_rows_f64(ls[l].k, ls[l].k_row0, n, w);
            free(w);
        }
        free(ls);
        probe_close(&f);
    }
    for (int i = 0; i < nf; i++)
        free(files[i]);
    free(files);
    free(lens);
    printf("probe_fuzz: %ld cases, %ld accepted, %ld refused, %ld values read, 0 crashes\n", cases,
           accepted, refused, values);
    return 0;
}
