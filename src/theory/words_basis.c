/*
 * words_basis.c: the word basis of tied and untied (docs/model.md §6-§7): the classes of words under
 * rotation and transposition, their canonical representatives, numbering and names
 * (words.h head comment).
 */
#include "aimsweep/theory/words.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "words_impl.h"

static long words_code(int nl, int len, const int *w)
{
    long c = 0;
    for (int i = 0; i < len; i++)
        c = c * nl + w[i];
    return c;
}

void words_decode(int nl, int len, long c, int *w)
{
    for (int i = len - 1; i >= 0; i--) {
        w[i] = (int)(c % nl);
        c /= nl;
    }
}

/* Lexicographic comparison of rotation k of a (length L) with the string best. */
static int rot_less(const int *a, int L, int k, const int *best)
{
    for (int i = 0; i < L; i++) {
        int x = a[(i + k) % L];
        if (x != best[i])
            return x < best[i];
    }
    return 0;
}

static void canonical_tr(const int *tr, int len, const int *w, int *out)
{
    int t[WORDS_MAX_LEN];
    if (len == 0)
        return;
    memcpy(out, w, sizeof(int) * len);
    for (int i = 0; i < len; i++)
        t[i] = tr[w[len - 1 - i]];
    for (int k = 0; k < len; k++) {
        if (rot_less(w, len, k, out))
            for (int i = 0; i < len; i++)
                out[i] = w[(i + k) % len];
        if (rot_less(t, len, k, out))
            for (int i = 0; i < len; i++)
                out[i] = t[(i + k) % len];
    }
}

void words_canonical(const struct words_basis *b, int len, const int *w, int *out)
{
    canonical_tr(b->tr, len, w, out);
}

struct words_basis *words_basis_create(int decomposition, int maxlen)
{
    struct words_basis *b;
    int nl = decomposition == DECOMP_TIED ? 2 : 5;
    if ((decomposition != DECOMP_TIED && decomposition != DECOMP_UNTIED) || maxlen < 1 ||
        maxlen > (nl == 2 ? WORDS_MAX_LEN : WORDS_UNTIED_MAX_LEN))
        return NULL;
    b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->dec = decomposition;
    b->nl = nl;
    b->maxlen = maxlen;
    for (int i = 0; i < 5; i++)
        b->tr[i] = i;
    if (nl == 5) {
        b->tr[WORDS_S] = WORDS_ST;
        b->tr[WORDS_ST] = WORDS_S;
    }
    long total = 0;
    b->pw[0] = 1;
    for (int L = 1; L <= maxlen; L++)
        b->pw[L] = b->pw[L - 1] * nl;
    for (int L = 0; L <= maxlen; L++)
        total += b->pw[L];
    /* classes <= strings; allocate for the worst case, trimmed never (small) */
    b->len = malloc(sizeof(int) * total);
    b->off = malloc(sizeof(int) * total);
    b->code = malloc(sizeof(long) * total);
    b->stud = malloc(total);
    long letcap = 0;
    for (int L = 0; L <= maxlen; L++)
        letcap += b->pw[L] * L;
    b->let = malloc(letcap > 0 ? letcap : 1);
    if (!b->len || !b->off || !b->code || !b->stud || !b->let)
        goto fail;
    int nc = 0, loff = 0;
    int w[WORDS_MAX_LEN], c[WORDS_MAX_LEN];
    for (int L = 0; L <= maxlen; L++) {
        b->first[L] = nc;
        b->lookup[L] = malloc(sizeof(int) * b->pw[L]);
        if (!b->lookup[L])
            goto fail;
        for (long code = 0; code < b->pw[L]; code++) {
            words_decode(nl, L, code, w);
            canonical_tr(b->tr, L, w, c);
            long cc = words_code(nl, L, c);
            if (cc == code) {
                b->len[nc] = L;
                b->off[nc] = loff;
                b->code[nc] = code;
                int st = 0;
                for (int i = 0; i < L; i++) {
                    b->let[loff++] = (unsigned char)w[i];
                    st |= w[i] != WORDS_P;
                }
                b->stud[nc] = (unsigned char)st;
                b->lookup[L][code] = nc++;
            } else {
                b->lookup[L][code] = b->lookup[L][cc]; /* cc < code: already assigned */
            }
        }
    }
    b->first[maxlen + 1] = nc;
    b->ncls = nc;
    return b;
fail:
    words_basis_destroy(&b);
    return NULL;
}

void words_basis_destroy(struct words_basis **pb)
{
    struct words_basis *b = pb ? *pb : NULL;
    if (!b)
        return;
    for (int L = 0; L <= WORDS_MAX_LEN; L++)
        free(b->lookup[L]);
    free(b->len);
    free(b->off);
    free(b->code);
    free(b->stud);
    free(b->let);
    free(b);
    *pb = NULL;
}

int words_basis_nletters(const struct words_basis *b) { return b->nl; }
int words_basis_count(const struct words_basis *b) { return b->ncls; }

int words_basis_count_len(const struct words_basis *b, int len)
{
    if (len < 0 || len > b->maxlen)
        return 0;
    return b->first[len + 1] - b->first[len];
}

int words_basis_index(const struct words_basis *b, int len, const int *w)
{
    if (len < 0 || len > b->maxlen)
        return -1;
    return b->lookup[len][words_code(b->nl, len, w)];
}

int words_basis_class(const struct words_basis *b, int cls, int *w)
{
    int L = b->len[cls];
    for (int i = 0; i < L; i++)
        w[i] = b->let[b->off[cls] + i];
    return L;
}

void words_class_name(const struct words_basis *b, int cls, char *buf, size_t n)
{
    static const char *names[5] = {"S", "P", "S'", "G", "L"};
    size_t k = 0;
    if (n == 0)
        return;
    buf[0] = 0;
    if (b->len[cls] == 0) {
        snprintf(buf, n, "1");
        return;
    }
    for (int i = 0; i < b->len[cls] && k + 3 < n; i++) {
        const char *s = names[b->let[b->off[cls] + i]];
        size_t l = strlen(s);
        memcpy(buf + k, s, l);
        k += l;
    }
    buf[k] = 0;
}
