/*
 * ckpt.c: checkpoint files (see ckpt.h).
 *
 * Layout (host byte order; checkpoints are read back on the machine type that wrote them):
 *   char magic[8] "AIMCKPT1", u64 task id, u64 text hash, u32 ntraj, u32 unused,
 *   per trajectory: i32 solver, i32 status, i32 nrows, i32 unused, f64 diverged_at_samples,
 *                   f64 wall_s, char error[256], nrows x 8 f64 (the obs_row fields),
 *   u64 state length, the state bytes,
 *   u64 FNV-1a of everything before it.
 */
#include "aimsweep/run/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char ckpt_magic[8] = {'A', 'I', 'M', 'C', 'K', 'P', 'T', '1'};
#define CKPT_ERROR_LEN 256
#define CKPT_MAX_ROWS 100000000

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * FNV_PRIME;
    return h;
}

uint64_t ckpt_text_hash(const char *text) { return fnv(FNV_OFFSET, text, strlen(text)); }

struct out {
    int fd, bad;
    uint64_t h;
};

static void put(struct out *o, const void *p, size_t n)
{
    const unsigned char *c = p;
    o->h = fnv(o->h, p, n);
    while (!o->bad && n > 0) {
        ssize_t w = write(o->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->bad = errno ? errno : EIO;
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

int ckpt_write(const char *path, uint64_t id, uint64_t text_hash, const struct traj *trajs,
               int ntraj, const void *state, size_t state_len, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    struct out o = {open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), 0, FNV_OFFSET};
    if (o.fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    uint32_t n32 = (uint32_t)ntraj, zero = 0;
    put(&o, ckpt_magic, sizeof ckpt_magic);
    put(&o, &id, 8);
    put(&o, &text_hash, 8);
    put(&o, &n32, 4);
    put(&o, &zero, 4);
    for (int i = 0; i < ntraj; i++) {
        const struct traj *t = &trajs[i];
        int32_t head[4] = {t->solver, (int32_t)t->status, t->n, 0};
        char e[CKPT_ERROR_LEN];
        memset(e, 0, sizeof e);
        snprintf(e, sizeof e, "%s", t->error);
        put(&o, head, sizeof head);
        put(&o, &t->diverged_at_samples, 8);
        put(&o, &t->wall_s, 8);
        put(&o, e, sizeof e);
        for (int k = 0; k < t->n; k++) {
            const struct obs_row *r = &t->rows[k];
            double v[8] = {r->tau,     r->samples, r->omega11, r->psi11,
                           r->omega12, r->trace,   r->overlap, r->loss};
            put(&o, v, sizeof v);
        }
    }
    uint64_t sl = state ? state_len : 0;
    put(&o, &sl, 8);
    if (sl)
        put(&o, state, sl);
    uint64_t h = o.h;
    put(&o, &h, 8);
    if (!o.bad && fsync(o.fd) != 0)
        o.bad = errno;
    if (close(o.fd) != 0 && !o.bad)
        o.bad = errno;
    if (!o.bad && rename(tmp, path) != 0)
        o.bad = errno;
    if (o.bad) {
        snprintf(err, errlen, "%s: cannot write a checkpoint: %s", path, strerror(o.bad));
        unlink(tmp);
        return -1;
    }
    return 0;
}

struct in {
    const unsigned char *p;
    size_t n, off;
};

static int get(struct in *b, void *dst, size_t n)
{
    if (b->n - b->off < n)
        return -1;
    memcpy(dst, b->p + b->off, n);
    b->off += n;
    return 0;
}

void ckpt_free(struct ckpt *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ntraj; i++)
        traj_free(&c->traj[i]);
    free(c->state);
    memset(c, 0, sizeof *c);
}

int ckpt_read(const char *path, uint64_t id, uint64_t text_hash, struct ckpt *c, char *err,
              size_t errlen)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = NULL;
    struct stat sb;
    int rc = -1;
    const char *why = "truncated";
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < 40) {
        why = "too short to be a checkpoint";
        goto out;
    }
    buf = malloc((size_t)sb.st_size);
    if (!buf || fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
        why = "cannot read it";
        goto out;
    }
    struct in b = {buf, (size_t)sb.st_size, 0};
    uint64_t want;
    memcpy(&want, buf + b.n - 8, 8);
    if (memcmp(buf, ckpt_magic, sizeof ckpt_magic) != 0) {
        why = "not an aimsweep checkpoint (or of another format version)";
        goto out;
    }
    if (fnv(FNV_OFFSET, buf, b.n - 8) != want) {
        why = "checksum mismatch (corrupt)";
        goto out;
    }
    b.n -= 8;
    b.off = sizeof ckpt_magic;
    uint64_t fid, fh;
    uint32_t n32, pad;
    if (get(&b, &fid, 8) || get(&b, &fh, 8) || get(&b, &n32, 4) || get(&b, &pad, 4))
        goto out;
    if (fid != id || fh != text_hash) {
        why = "belongs to another task";
        goto out;
    }
    if (n32 > SOLVER_COUNT) {
        why = "malformed";
        goto out;
    }
    for (uint32_t i = 0; i < n32; i++) {
        int32_t head[4];
        double dv, ws;
        char e[CKPT_ERROR_LEN];
        if (get(&b, head, sizeof head) || get(&b, &dv, 8) || get(&b, &ws, 8) ||
            get(&b, e, sizeof e))
            goto out;
        if (head[2] < 0 || head[2] > CKPT_MAX_ROWS ||
            traj_init(&c->traj[i], head[0], head[2] + 1)) {
            why = "malformed";
            goto out;
        }
        c->ntraj = (int)i + 1;
        struct traj *t = &c->traj[i];
        t->status = (enum run_status)head[1];
        t->diverged_at_samples = dv;
        t->wall_s = ws;
        e[sizeof e - 1] = 0;
        snprintf(t->error, sizeof t->error, "%s", e);
        for (int k = 0; k < head[2]; k++) {
            double v[8];
            if (get(&b, v, sizeof v))
                goto out;
            /* mu is not stored: worker_run_ctl sets it from trace for every record */
            struct obs_row r = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0};
            if (traj_push(t, &r))
                goto out;
        }
    }
    uint64_t sl;
    if (get(&b, &sl, 8) || sl != b.n - b.off)
        goto out;
    if (sl) {
        if (!(c->state = malloc(sl)))
            goto out;
        get(&b, c->state, sl);
        c->state_len = sl;
    }
    rc = 0;
out:
    if (rc) {
        snprintf(err, errlen, "checkpoint %s refused: %s", path, why);
        ckpt_free(c);
    }
    free(buf);
    fclose(f);
    return rc;
}
