/*
 * cli_probe.c: `aimsweep probe CHECKPOINT...`: the order parameters of every attention head of
 * trained checkpoints, Theorem 1's check on them, printed and, with --db, stored in the `probe`
 * table of a database (docs/probe.md).
 *
 * The checkpoints are one run; each one's step comes from its safetensors metadata ("step"),
 * else from the last number in its file name, else from its place on the command line. The
 * numerics are src/probe/; the table is cli_probe_db.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/text.h"
#include "aimsweep/cli/args.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/probe/gauss.h"
#include "aimsweep/probe/heads.h"
#include "aimsweep/probe/reader.h"
#include "aimsweep/probe/stats.h"
#include "cli_probe.h"

/* Defaults: token pairs of Theorem 1's check, tokens per sample, the regime's bound on the
 * predicted Kolmogorov distance of an entry from the normal law. */
#define PROBE_DEFAULT_PAIRS 10000
#define PROBE_DEFAULT_TOKENS 4
#define PROBE_DEFAULT_KS_MAX 0.01
#define PROBE_MAX_FILES 100000

static void probe_usage(FILE *f)
{
    fprintf(
        f,
        "usage: aimsweep probe CHECKPOINT... [--db FILE] [--run NAME] [--heads H] [--pattern Q,K]\n"
        "                      [--teacher FILE[:NAME]] [--pairs N] [--tokens T] [--token-corr C]\n"
        "                      [--seed S] [--ks-max X] [--format table|csv]\n\n"
        "  Reads the query and key weights of every attention layer of safetensors (F32, F16, BF16,\n"
        "  F64), .npy or .npz checkpoints, and for each head S = W_Q^T W_K / sqrt(d_head) prints\n"
        "  mu, Omega11, Psi11, the symmetric share, ||S||_op/||S||_F, the effective rank and\n"
        "  Theorem 1's check on Gaussian tokens (docs/probe.md).\n\n"
        "  --db FILE        store the rows in FILE's `probe` and `probe_pair` tables (created if\n"
        "                   missing; a results database or a new file)\n"
        "  --run NAME       the run's name in the table [the first checkpoint's folder]\n"
        "  --heads H        heads per layer [the checkpoint's metadata \"heads\"; else required]\n"
        "  --pattern Q,K    tensor names with {L} for the layer, e.g. 'b.{L}.wq,b.{L}.wk'\n"
        "                   [q_proj/k_proj, query/key, in_proj_weight, qkv]\n"
        "  --teacher F[:N]  a d x d teacher S* (.npy, or tensor N of a file): Omega12 and overlap\n"
        "  --pairs N        token pairs of the check per layer, 0 for none [%d]\n"
        "  --tokens T       tokens per sample, 2..16 [%d]\n"
        "  --token-corr C   token correlation c in [0, 1) [0]\n"
        "  --seed S         the tokens' seed [1]\n"
        "  --ks-max X       a head is in the regime when its predicted Kolmogorov distance is <= X\n"
        "                   [%g]\n"
        "  --format F       table (aligned) or csv [table]\n\n"
        "  Exit status 0, 1 when the database cannot be written, 2 for a bad flag or file.\n",
        PROBE_DEFAULT_PAIRS, PROBE_DEFAULT_TOKENS, PROBE_DEFAULT_KS_MAX);
}

/* The last run of digits in path's file name, or -1. */
static long long step_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long step = -1;
    for (const char *p = base; *p;) {
        if (*p >= '0' && *p <= '9') {
            char *end;
            errno = 0;
            long long x = strtoll(p, &end, 10);
            if (!errno)
                step = x;
            p = end;
        } else
            p++;
    }
    return step;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !(x >= lo && x <= hi))
        return -1;
    *out = x;
    return 0;
}

/* The teacher: FILE, or FILE:NAME. Returns a malloc'd d x d matrix, or NULL with err set. */
static double *load_teacher(const char *spec, int *d, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", spec);
    const char *name = NULL;
    char *colon = strrchr(path, ':');
    if (colon) {
        *colon = 0;
        name = colon + 1;
    }
    struct probe_file *f;
    if (probe_open(path, &f, err, errlen))
        return NULL;
    const struct probe_tensor *t = name ? probe_find(f, name) : (f->n == 1 ? &f->t[0] : NULL);
    double *S = NULL;
    if (!t)
        snprintf(err, errlen, "%.900s: no tensor %.100s", path, name ? name : "(one expected)");
    else if (t->ndim != 2 || t->shape[0] != t->shape[1] || t->dtype == PROBE_OTHER)
        snprintf(err, errlen, "%.900s: the teacher must be a square float matrix", path);
    else if ((S = malloc((size_t)t->count * sizeof *S))) {
        *d = (int)t->shape[0];
        probe_rows_f64(t, 0, t->shape[0], S);
    }
    probe_close(&f);
    return S;
}

static void put(FILE *out, int csv, double x)
{
    char b[TEXT_DOUBLE_MAX];
    if (csv) {
        text_double(x, b, sizeof b);
        fprintf(out, ",%s", isnan(x) ? "" : b);
    } else
        fprintf(out, " %10.4g", x);
}

/* One layer's weights, pair matrices and per-head results. */
struct layer_bufs {
    double *wq, *wk, *om, *ps;
    struct probe_head *hs;
    struct probe_t1_head *t1;
};

static void bufs_free(struct layer_bufs *b)
{
    free(b->wq);
    free(b->wk);
    free(b->om);
    free(b->ps);
    free(b->hs);
    free(b->t1);
    memset(b, 0, sizeof *b);
}

/* Buffers for n rows of width d in H heads (the previous layer's freed); 0 or -1. */
static int bufs_alloc(struct layer_bufs *b, int n, int d, int H)
{
    bufs_free(b);
    b->wq = malloc((size_t)n * d * sizeof *b->wq);
    b->wk = malloc((size_t)n * d * sizeof *b->wk);
    b->om = malloc((size_t)H * H * sizeof *b->om);
    b->ps = malloc((size_t)H * H * sizeof *b->ps);
    b->hs = calloc((size_t)H, sizeof *b->hs);
    b->t1 = calloc((size_t)H, sizeof *b->t1);
    return b->wq && b->wk && b->om && b->ps && b->hs && b->t1 ? 0 : -1;
}

/* One checkpoint: every layer, every head. Returns 0, 2 (bad file or options), 1 (database). */
static int probe_one(const struct probe_opts *o, const char *path, int index, FILE *out,
                     struct probe_db *db)
{
    char err[1024];
    struct probe_file *f = NULL;
    struct probe_layer *ls = NULL;
    struct probe_tokens tk = {0};
    struct layer_bufs b = {0};
    int rc = 2;
    if (probe_open(path, &f, err, sizeof err)) {
        fprintf(stderr, "aimsweep probe: %s\n", err);
        return 2;
    }
    long long step = f->meta_step >= 0 ? f->meta_step : step_from_name(path);
    if (step < 0)
        step = index;
    int nl = probe_layers(f, o->pattern, &ls, err, sizeof err);
    if (nl < 0) {
        fprintf(stderr, "aimsweep probe: %s: %s\n", path, err);
        goto out;
    }
    if (nl == 0) {
        fprintf(stderr,
                "aimsweep probe: %s: no query and key weights found (names like *.q_proj.weight, "
                "*.query.weight, *.in_proj_weight, *.qkv.weight; --pattern for others)\n",
                path);
        goto out;
    }
    int H = o->heads > 0 ? o->heads : (int)f->meta_heads;
    if (H < 1) {
        fprintf(stderr, "aimsweep probe: %s: how many heads per layer? give --heads H\n", path);
        goto out;
    }
    for (int L = 0; L < nl; L++) {
        const struct probe_layer *l = &ls[L];
        int64_t dh64 = probe_head_dim(l, H);
        if (dh64 < 1 || l->d > 65536 || l->rows > 65536) {
            fprintf(stderr,
                    "aimsweep probe: %s: layer '%s' has %lld query rows, not a multiple of %d "
                    "heads (or too large)\n",
                    path, l->name, (long long)l->rows, H);
            goto out;
        }
        int dh = (int)dh64, d = (int)l->d, n = (int)l->rows;
        if (o->teacher && o->teacher_d != d) {
            fprintf(stderr, "aimsweep probe: the teacher is %d x %d but layer '%s' has width %d\n",
                    o->teacher_d, o->teacher_d, l->name, d);
            goto out;
        }
        if (bufs_alloc(&b, n, d, H)) {
            fprintf(stderr, "aimsweep probe: out of memory\n");
            rc = 1;
            goto out;
        }
        if (probe_rows_f64(l->q, l->q_row0, n, b.wq) || probe_rows_f64(l->k, l->k_row0, n, b.wk)) {
            fprintf(stderr, "aimsweep probe: %s: layer '%s': the weights are not a float type\n",
                    path, l->name);
            goto out;
        }
        for (size_t i = 0; i < (size_t)n * d; i++)
            if (!isfinite(b.wq[i]) || !isfinite(b.wk[i])) {
                fprintf(stderr,
                        "aimsweep probe: %s: layer '%s': a query or key weight is not finite "
                        "(row %zu, column %zu)\n",
                        path, l->name, i / (size_t)d, i % (size_t)d);
                goto out;
            }
        for (int k = 0; k < H; k++)
            if (probe_head_stats(b.wq + (size_t)k * dh * d, b.wk + (size_t)k * dh * d, dh, d,
                                 o->teacher, o->token_corr, &b.hs[k])) {
                fprintf(stderr, "aimsweep probe: out of memory or LAPACK failure\n");
                rc = 1;
                goto out;
            }
        if (probe_pairs(b.wq, b.wk, H, dh, d, b.om, b.ps)) {
            rc = 1;
            goto out;
        }
        struct probe_t1_layer lay = {NAN, NAN, NAN, -1};
        for (int k = 0; k < H; k++)
            b.t1[k] = (struct probe_t1_head){NAN, NAN, NAN, NAN, NAN};
        if (o->pairs > 0) {
            if (tk.d != d) {
                probe_tokens_free(&tk);
                long N =
                    (o->pairs + (long)o->tokens * o->tokens - 1) / ((long)o->tokens * o->tokens);
                if (probe_tokens_draw(&tk, d, o->tokens, N < 2 ? 2 : N, o->token_corr, o->seed)) {
                    fprintf(stderr, "aimsweep probe: out of memory for the tokens\n");
                    rc = 1;
                    goto out;
                }
            }
            if (probe_t1_layer(&tk, b.wq, b.wk, H, dh, b.hs, b.om, b.ps, b.t1, &lay)) {
                rc = 1;
                goto out;
            }
        }
        for (int k = 0; k < H; k++) {
            const struct probe_head *h = &b.hs[k];
            int in = h->ks_pred <= o->ks_max;
            if (o->csv)
                fprintf(out, "%s,%lld,%d,%s,%d,%d,%d", o->run, step, L, l->name, k, d, dh);
            else
                fprintf(out, "%6lld %3d %3d %5d %4d", step, L, k, d, dh);
            const double v[] = {h->mu,         h->omega11,  h->psi11,   h->sym_share,
                                h->rank_ratio, h->eff_rank, h->omega12, h->kurt_pred,
                                b.t1[k].kurt,  h->ks_pred,  b.t1[k].ks, b.t1[k].mean_z,
                                b.t1[k].cov_z, lay.z_crit};
            for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
                put(out, o->csv, v[i]);
            fprintf(out, o->csv ? ",%d,%d\n" : " %4d %4d\n", lay.pass, in);
            if (db && probe_db_head(db, o, step, path, L, l->name, k, d, dh, h, &b.t1[k], &lay, in))
                rc = 1;
        }
        if (db && probe_db_pairs(db, o->run, step, L, H, b.om, b.ps))
            rc = 1;
        if (rc == 1)
            goto out;
    }
    rc = 0;
out:
    probe_tokens_free(&tk);
    bufs_free(&b);
    free(ls);
    probe_close(&f);
    return rc;
}

int cli_probe(int argc, char **argv)
{
    static const char *const known[] = {"db",     "run",    "heads",      "pattern", "teacher",
                                        "pairs",  "tokens", "token-corr", "seed",    "ks-max",
                                        "format", "help",   NULL};
    struct probe_opts o = {.pairs = PROBE_DEFAULT_PAIRS,
                           .tokens = PROBE_DEFAULT_TOKENS,
                           .seed = 1,
                           .ks_max = PROBE_DEFAULT_KS_MAX};
    struct cli_seen seen = {0};
    const char **files = calloc((size_t)argc, sizeof *files);
    const char *teacher = NULL, *db_path = NULL;
    char run[256] = "", err[1024];
    int nf = 0, rc = 2;
    struct probe_db *db = NULL;
    if (!files)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            probe_usage(stdout);
            free(files);
            return 0;
        }
        if (strncmp(a, "--", 2)) {
            if (cli_nonempty("probe", "checkpoint", a))
                goto out;
            files[nf++] = a;
            continue;
        }
        const char *flag = a + 2;
        int k = 0;
        while (known[k] && strcmp(known[k], flag))
            k++;
        if (!known[k] || !strcmp(flag, "help")) {
            rc = cli_unknown("probe", a, known);
            goto out;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "aimsweep probe: %s needs a value\n", a);
            goto out;
        }
        const char *v = argv[++i];
        double x;
        if (cli_once(&seen, "probe", flag) || cli_nonempty("probe", a, v))
            goto out;
        if (!strcmp(flag, "db"))
            db_path = v;
        else if (!strcmp(flag, "run"))
            snprintf(run, sizeof run, "%s", v);
        else if (!strcmp(flag, "pattern")) {
            const char *comma = strchr(v, ',');
            if (!comma || !strstr(v, "{L}") || !strstr(comma, "{L}") || strstr(v, "{L}") > comma) {
                fprintf(stderr, "aimsweep probe: --pattern needs two names with {L}, e.g. "
                                "'blocks.{L}.wq,blocks.{L}.wk'\n");
                goto out;
            }
            o.pattern = v;
        } else if (!strcmp(flag, "teacher"))
            teacher = v;
        else if (!strcmp(flag, "format")) {
            if (strcmp(v, "csv") && strcmp(v, "table")) {
                fprintf(stderr, "aimsweep probe: --format is table or csv, not '%s'\n", v);
                goto out;
            }
            o.csv = !strcmp(v, "csv");
        } else if (!strcmp(flag, "heads") || !strcmp(flag, "tokens") || !strcmp(flag, "pairs") ||
                   !strcmp(flag, "seed")) {
            double hi = !strcmp(flag, "heads") ? 4096 : !strcmp(flag, "tokens") ? 16 : 1e12;
            double lo = !strcmp(flag, "heads") ? 1 : !strcmp(flag, "tokens") ? 2 : 0;
            if (parse_num(v, lo, hi, &x) || x != floor(x)) {
                fprintf(stderr, "aimsweep probe: %s wants an integer in [%g, %g], not '%s'\n", a,
                        lo, hi, v);
                goto out;
            }
            if (!strcmp(flag, "heads"))
                o.heads = (int)x;
            else if (!strcmp(flag, "tokens"))
                o.tokens = (int)x;
            else if (!strcmp(flag, "pairs"))
                o.pairs = (long)x;
            else
                o.seed = (uint64_t)x;
        } else if (!strcmp(flag, "token-corr")) {
            if (parse_num(v, 0, 0.999999, &x)) {
                fprintf(stderr, "aimsweep probe: --token-corr wants c in [0, 1), not '%s'\n", v);
                goto out;
            }
            o.token_corr = x;
        } else {
            if (parse_num(v, 0, 1, &x)) {
                fprintf(stderr, "aimsweep probe: --ks-max wants a number in [0, 1], not '%s'\n", v);
                goto out;
            }
            o.ks_max = x;
        }
    }
    if (!nf) {
        fprintf(stderr, "aimsweep probe: no checkpoint given\n");
        probe_usage(stderr);
        goto out;
    }
    if (teacher && !(o.teacher = load_teacher(teacher, &o.teacher_d, err, sizeof err))) {
        fprintf(stderr, "aimsweep probe: --teacher: %s\n", err);
        goto out;
    }
    if (!*run) {
        /* The first checkpoint's folder. */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", files[0]);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            const char *b = strrchr(dir, '/');
            snprintf(run, sizeof run, "%.255s", b ? b + 1 : dir);
        } else
            snprintf(run, sizeof run, ".");
    }
    o.run = run;
    if (db_path && (rc = probe_db_open(&db, db_path)))
        goto out;
    FILE *out = stdout;
    if (o.csv)
        fprintf(out, "run,step,layer,layer_name,head,d,d_head,mu,omega11,psi11,sym_share,"
                     "rank_ratio,eff_rank,omega12,kurt_pred,kurt,ks_pred,ks,mean_z,cov_z,z_crit,"
                     "law_ok,in_regime\n");
    else
        fprintf(out,
                "  step   L   h     d   dh         mu    omega11      psi11  sym_share rank_ratio"
                "   eff_rank    omega12  kurt_pred       kurt    ks_pred         ks     mean_z"
                "      cov_z     z_crit  law   in\n");
    rc = 0;
    for (int i = 0; i < nf && !rc; i++)
        rc = probe_one(&o, files[i], i, out, db);
    if (db) {
        int crc = probe_db_close(&db, rc == 0);
        if (!rc)
            rc = crc;
    }
out:
    free(o.teacher);
    free(files);
    return rc;
}
