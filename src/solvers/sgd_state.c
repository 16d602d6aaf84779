/*
 * sgd_state.c: an SGD run's state as bytes, for checkpoints (sgd_state_size, sgd_state_save,
 * sgd_state_restore in sgd.h), and back. The layout of the state is sgd_impl.h.
 */
#include <stdint.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/solvers/sgd.h"
#include "sgd_impl.h"

/* The state between two steps is everything a step reads: the stored matrices and their
 * scales, the closed-form norms, this sample and the next one with their projections, the
 * teacher's projections of this sample, the step count and the generator (whose position is
 * just past the next sample). Saved and restored as they are, the following steps are the
 * same operations on the same bits, so a resumed run is bit for bit the uninterrupted one.
 * The teacher's factor and the scratch buffers are rebuilt or overwritten by a step; the
 * learning rate of the schedule's phase is set again from the step count. The stored matrices
 * are saved row-major also when they are kept paired (kern.h) or, tied's and untied's in single,
 * in bands column by column (sgd_two.c), so that a checkpoint reads back on a machine with or
 * without the AVX-512 kernel, or the float vector kernels. */
#define SGD_STATE_MAGIC 0x32444753u /* "SGD2" */
/* A state whose P holds sgd_sym.c's K: a magic of its own, so that a build from before that path
 * refuses it instead of reading K as S. */
#define SGD_STATE_MAGIC_HALF 0x33444753u /* "SGD3" */
#define SGD_STATE_ARRAYS 11

struct sgd_state_head {
    uint32_t magic;
    int32_t decomposition, single, d, rows, T, k;
    int32_t sym; /* P holds sgd_sym.c's K over bands of this many rows (SGD3; minus that many:
                    in single, the bands column by column), else 0 (SGD2: the padding of the
                    checkpoints from before it) */
    int64_t n;
    double sp, sq, trS, nU, nV;
    struct rng g;
};

/* The state's arrays in a fixed order, as bytes. Returns how many. In precision single the
 * stored matrices are Pf/Qf (P and Q are NULL) and the float copies of this sample and the next
 * one (xf, xnf) go with them; an absent array has length 0. */
static int state_arrays(struct sgd_state *st, void *a[SGD_STATE_ARRAYS],
                        size_t len[SGD_STATE_ARRAYS])
{
    size_t Td = (size_t)st->T * st->d, Tn = (size_t)st->T * st->rows, nP = (size_t)st->rows * st->d;
    size_t nQ = st->s.decomposition == DECOMP_UNTIED ? nP : 0;
    void *arr[SGD_STATE_ARRAYS] = {st->P,  st->Q,   st->Pf, st->Qf, st->x, st->xn,
                                   st->xf, st->xnf, st->pa, st->pb, st->z};
    size_t n[SGD_STATE_ARRAYS] = {st->P ? nP * sizeof(double) : 0,
                                  st->Q ? nQ * sizeof(double) : 0,
                                  st->Pf ? nP * sizeof(float) : 0,
                                  st->Qf ? nQ * sizeof(float) : 0,
                                  Td * sizeof(double),
                                  Td * sizeof(double),
                                  st->xf ? Td * sizeof(float) : 0,
                                  st->xnf ? Td * sizeof(float) : 0,
                                  Tn * sizeof(double),
                                  Tn * sizeof(double),
                                  (size_t)st->T * st->k * sizeof(double)};
    for (int i = 0; i < SGD_STATE_ARRAYS; i++) {
        a[i] = arr[i];
        len[i] = n[i];
    }
    return SGD_STATE_ARRAYS;
}

/* A stored matrix M kept out of row-major order, paired (double, kern.h) or in bands column by
 * column (float, sgd_two.c), to the bytes at out in row-major order, or from those at in (the
 * other NULL); entries of `size` bytes. */
static void copy_rows(const struct sgd_state *st, void *M, size_t size, unsigned char *out,
                      const unsigned char *in)
{
    int n = st->rows, d = st->d;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) {
            size_t at = st->paired ? kern_paired_index(n, d, i, j) : sgd_cols_at(n, d, i, j);
            unsigned char *e = (unsigned char *)M + size * at;
            size_t b = size * ((size_t)i * d + j);
            if (out)
                memcpy(out + b, e, size);
            else
                memcpy(e, in + b, size);
        }
}

/* Whether array i of state_arrays is a stored matrix kept out of row-major order (copy_rows). */
static int out_of_rows(const struct sgd_state *st, int i)
{
    return i < 2 ? st->paired : i < 4 && st->cols;
}

/* What a checkpoint's head says P holds: 0 for S, the band's width for K over row-major bands,
 * minus it for K's bands column by column (single). */
static int32_t sym_tag(const struct sgd_state *st)
{
    return st->sym ? (st->Pf ? -SGD_SYM_BAND : SGD_SYM_BAND) : 0;
}

size_t sgd_state_size(struct sgd_state *st)
{
    void *a[SGD_STATE_ARRAYS];
    size_t len[SGD_STATE_ARRAYS], total = sizeof(struct sgd_state_head);
    int na = state_arrays(st, a, len);
    for (int i = 0; i < na; i++)
        total += len[i];
    return total;
}

void sgd_state_save(struct sgd_state *st, unsigned char *buf)
{
    struct sgd_state_head h;
    sgd_two_flush(st); /* the state as it stands after the step (sgd_two.c) */
    memset(&h, 0, sizeof h);
    h.magic = st->sym ? SGD_STATE_MAGIC_HALF : SGD_STATE_MAGIC;
    h.decomposition = (int32_t)st->s.decomposition;
    h.single = st->single;
    h.d = st->d;
    h.rows = st->rows;
    h.T = st->T;
    h.k = st->k;
    h.sym = sym_tag(st);
    h.n = st->n;
    h.sp = st->sp;
    h.sq = st->sq;
    h.trS = st->trS;
    h.nU = st->nU;
    h.nV = st->nV;
    h.g = st->ahead ? st->gnext : st->g;
    memcpy(buf, &h, sizeof h);
    size_t off = sizeof h;
    void *a[SGD_STATE_ARRAYS];
    size_t len[SGD_STATE_ARRAYS];
    int na = state_arrays(st, a, len);
    for (int i = 0; i < na; i++) {
        if (len[i] && out_of_rows(st, i))
            copy_rows(st, a[i], i < 2 ? sizeof(double) : sizeof(float), buf + off, NULL);
        else if (len[i])
            memcpy(buf + off, a[i], len[i]);
        off += len[i];
    }
}

int sgd_state_restore(struct sgd_state *st, const unsigned char *buf, size_t n)
{
    struct sgd_state_head h;
    if (n != sgd_state_size(st))
        return -1;
    memcpy(&h, buf, sizeof h);
    int half = h.magic == SGD_STATE_MAGIC_HALF;
    if ((h.magic != SGD_STATE_MAGIC && !half) || h.decomposition != (int32_t)st->s.decomposition ||
        h.single != st->single || h.d != st->d || h.rows != st->rows || h.T != st->T ||
        h.k != st->k || h.n < 0 ||
        (half ? h.sym == 0 || h.decomposition != DECOMP_DIRECT ||
                    (h.sym < 0 && (!h.single || h.sym != -SGD_SYM_BAND))
              : h.sym))
        return -1;
    st->n = h.n;
    st->sp = h.sp;
    st->sq = h.sq;
    st->trS = h.trS;
    st->nU = h.nU;
    st->nV = h.nV;
    st->g = h.g;
    st->gnext = h.g;
    st->apos = st->acount = 0; /* draw ahead again from just past xn */
    st->zn_ready = 0;
    st->pending = st->yn_ready = 0; /* nothing deferred; xn's projections made again */
    size_t off = sizeof h;
    void *a[SGD_STATE_ARRAYS];
    size_t len[SGD_STATE_ARRAYS];
    int na = state_arrays(st, a, len);
    for (int i = 0; i < na; i++) {
        if (len[i] && out_of_rows(st, i))
            copy_rows(st, a[i], i < 2 ? sizeof(double) : sizeof(float), NULL, buf + off);
        else if (len[i])
            memcpy(a[i], buf + off, len[i]);
        off += len[i];
    }
    if (h.sym != sym_tag(st)) { /* K into S and S into K (sgd_sym.c), the projections on what P
                                   then holds */
        if (h.sym && sgd_sym_to_full(st, st->paired, h.sym))
            return -1;
        if (st->sym)
            sgd_sym_from_full(st, st->paired);
        sgd_project_current(st);
    }
    st->synced = 0;
    return 0;
}
