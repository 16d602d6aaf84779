/*
 * heads.h: finding the query and key weights of every attention layer in a checkpoint, and
 * cutting them into heads.
 *
 * Recognised without options (each NAME a prefix shared by the pair):
 *   NAME.q_proj.weight + NAME.k_proj.weight     (separate projections, e.g. Hugging Face models)
 *   NAME.query.weight  + NAME.key.weight        (BERT-style)
 *   NAME.in_proj_weight                          (torch.nn.MultiheadAttention: rows [0, E) are
 *                                                 the queries, [E, 2E) the keys, E = rows / 3)
 *   NAME.qkv.weight                              (fused, same row layout as in_proj_weight)
 * With a pattern "Q,K" in which {L} stands for the layer's name (e.g.
 * "blocks.{L}.attn.wq,blocks.{L}.attn.wk") only names matching it are used.
 * Every query matrix is H d_head x d (PyTorch's Linear layout: out x in); head h is rows
 * [h d_head, (h + 1) d_head).
 */
#ifndef AIMSWEEP_PROBE_HEADS_H
#define AIMSWEEP_PROBE_HEADS_H

#include <stdint.h>

#include "aimsweep/probe/reader.h"

struct probe_layer {
    char name[128];               /* the layer's name: the shared prefix, or {L} */
    const struct probe_tensor *q; /* the tensor holding the queries */
    const struct probe_tensor *k; /* and the keys (the same tensor when fused) */
    int64_t q_row0, k_row0;       /* first row of the queries and of the keys */
    int64_t rows;                 /* H d_head */
    int64_t d;                    /* model width (columns) */
};

/* Finds the layers of f in natural order of their names (numbers compared as numbers).
 * pattern may be NULL. *out is malloc'd (free it); returns the number found (0 when none), or -1
 * with err set when a matched pair is inconsistent (shapes differ, not a matrix, a fused
 * tensor whose rows are not a multiple of 3). */
int probe_layers(const struct probe_file *f, const char *pattern, struct probe_layer **out,
                 char *err, size_t errlen);

/* Checks that a layer splits into heads heads; returns d_head, or -1 when rows is not a
 * multiple of heads. */
int64_t probe_head_dim(const struct probe_layer *l, int heads);

#endif
