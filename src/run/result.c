/*
 * result.c: serialisation of struct task_result (see result.h).
 *
 * Layout: u32 magic, u32 nsolvers, f64 wall_s, str task_error, then per solver:
 *   i32 solver, i32 status, f64 diverged_at_samples, f64 wall_s, str error,
 *   summary (i32 solver, i32 status, f64 tau_wr, samples_wr, final_overlap, final_loss,
 *   max_gap_to_sgd, mu_star), u32 nrows, nrows x 9 f64 (the obs_row fields in order).
 * str = u32 length + bytes (no terminator).
 */
#include "aimsweep/run/result.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RESULT_MAGIC 0x41494d32u /* "AIM2" */
#define RESULT_ROW_FIELDS 9

struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int bad;
};

static void put(struct wbuf *b, const void *src, size_t n)
{
    if (b->bad || n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *np = realloc(b->p, cap);
        if (!np) {
            b->bad = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(struct wbuf *b, uint32_t v) { put(b, &v, sizeof v); }
static void put_i32(struct wbuf *b, int32_t v) { put(b, &v, sizeof v); }
static void put_f64(struct wbuf *b, double v) { put(b, &v, sizeof v); }
static void put_str(struct wbuf *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    put_u32(b, n);
    put(b, s, n);
}

int result_pack(const struct task_result *r, const char *task_error, unsigned char **buf,
                size_t *len)
{
    struct wbuf b = {0};
    int ns = r ? r->nsolvers : 0;
    *buf = NULL;
    *len = 0;
    put_u32(&b, RESULT_MAGIC);
    put_u32(&b, (uint32_t)ns);
    put_f64(&b, r ? r->wall_s : 0);
    put_str(&b, task_error);
    for (int i = 0; i < ns; i++) {
        const struct traj *t = &r->traj[i];
        const struct solver_summary *s = &r->sum[i];
        put_i32(&b, t->solver);
        put_i32(&b, (int32_t)t->status);
        put_f64(&b, t->diverged_at_samples);
        put_f64(&b, t->wall_s);
        put_str(&b, t->error);
        put_i32(&b, s->solver);
        put_i32(&b, (int32_t)s->status);
        put_f64(&b, s->tau_wr);
        put_f64(&b, s->samples_wr);
        put_f64(&b, s->final_overlap);
        put_f64(&b, s->final_loss);
        put_f64(&b, s->max_gap_to_sgd);
        put_f64(&b, s->mu_star);
        put_u32(&b, (uint32_t)t->n);
        for (int k = 0; k < t->n; k++) {
            const struct obs_row *o = &t->rows[k];
            double v[RESULT_ROW_FIELDS] = {o->tau,   o->samples, o->omega11, o->psi11, o->omega12,
                                           o->trace, o->overlap, o->loss,    o->mu};
            put(&b, v, sizeof v);
        }
    }
    if (b.bad) {
        free(b.p);
        return -1;
    }
    *buf = b.p;
    *len = b.n;
    return 0;
}

struct rbuf {
    const unsigned char *p;
    size_t n, off;
    int bad;
};

static void get(struct rbuf *b, void *dst, size_t n)
{
    if (b->bad || n > b->n - b->off) {
        b->bad = 1;
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, b->p + b->off, n);
    b->off += n;
}

static uint32_t get_u32(struct rbuf *b)
{
    uint32_t v;
    get(b, &v, sizeof v);
    return v;
}
static int32_t get_i32(struct rbuf *b)
{
    int32_t v;
    get(b, &v, sizeof v);
    return v;
}
static double get_f64(struct rbuf *b)
{
    double v;
    get(b, &v, sizeof v);
    return v;
}
static void get_str(struct rbuf *b, char *dst, size_t cap)
{
    uint32_t n = get_u32(b);
    if (b->bad || n > b->n - b->off) {
        b->bad = 1;
        if (cap)
            dst[0] = 0;
        return;
    }
    size_t k = n < cap ? n : (cap ? cap - 1 : 0);
    if (cap) {
        memcpy(dst, b->p + b->off, k);
        dst[k] = 0;
    }
    b->off += n;
}

int result_unpack(const unsigned char *buf, size_t len, struct task_result *r, char *task_error,
                  size_t errlen)
{
    struct rbuf b = {buf, len, 0, 0};
    memset(r, 0, sizeof *r);
    if (get_u32(&b) != RESULT_MAGIC)
        return -1;
    uint32_t ns = get_u32(&b);
    if (ns > SOLVER_COUNT)
        return -1;
    r->wall_s = get_f64(&b);
    get_str(&b, task_error, errlen);
    for (uint32_t i = 0; i < ns && !b.bad; i++) {
        struct traj *t = &r->traj[i];
        struct solver_summary *s = &r->sum[i];
        int32_t solver = get_i32(&b), status = get_i32(&b);
        double div = get_f64(&b), wall = get_f64(&b);
        char err[sizeof t->error];
        get_str(&b, err, sizeof err);
        s->solver = get_i32(&b);
        s->status = (enum run_status)get_i32(&b);
        s->tau_wr = get_f64(&b);
        s->samples_wr = get_f64(&b);
        s->final_overlap = get_f64(&b);
        s->final_loss = get_f64(&b);
        s->max_gap_to_sgd = get_f64(&b);
        s->mu_star = get_f64(&b);
        uint32_t nrows = get_u32(&b);
        if (b.bad || (size_t)nrows > (b.n - b.off) / (RESULT_ROW_FIELDS * sizeof(double)) ||
            traj_init(t, solver, nrows ? (int)nrows : 1) != 0) {
            b.bad = 1;
            break;
        }
        r->nsolvers = (int)i + 1;
        t->status = (enum run_status)status;
        t->diverged_at_samples = div;
        t->wall_s = wall;
        memcpy(t->error, err, sizeof err);
        for (uint32_t k = 0; k < nrows; k++) {
            double v[RESULT_ROW_FIELDS];
            get(&b, v, sizeof v);
            struct obs_row o = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
            if (traj_push(t, &o) != 0) {
                b.bad = 1;
                break;
            }
        }
    }
    if (b.bad || b.off != b.n) {
        worker_result_free(r);
        memset(r, 0, sizeof *r);
        return -1;
    }
    return 0;
}
