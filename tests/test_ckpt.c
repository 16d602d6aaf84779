/* Checkpoints: a task stopped any number of times and resumed from its checkpoint gives the
 * trajectories of an uninterrupted run bit for bit (SGD, flow and the ODE after them, every
 * decomposition, weight decay on so that SGD's stored scales are not 1, untied with
 * token_corr 0.3 and the uncentred index, precision single, a two_phase schedule); so does a resume from
 * a checkpoint written on the wall-clock schedule and left behind by a killed job. A corrupt,
 * truncated or foreign checkpoint is refused with a message and the task runs from the start,
 * again giving the uninterrupted numbers. Planted errors: not saving the generator's position,
 * a scale, the float matrices of precision single, the schedule's phase or the flow's step size
 * makes the "resumed" checks fail (the next samples or steps
 * differ); a checkpoint accepted for another task makes the "foreign" checks fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aimsweep/run/ckpt.h"
#include "aimsweep/run/worker.h"
#include "check.h"
#include "paths.h"

/* decomp "untied+index": untied with the general index (correlated tokens, the uncentred index),
 * whose token mixing and mean must survive a checkpoint too; "X+single": precision single, whose
 * float matrices and token copies are the state; "direct+two_phase": a learning-rate schedule whose
 * switch falls inside SGD, so that a resume must find the phase's rate again. (The stop callback
 * is polled on a wall-clock period, so where a stop falls depends on speed: direct and untied
 * SGD are long enough here to be stopped in the middle every time.) */
static void params_for(struct params *p, const char *decomp, uint64_t seed)
{
    char err[256], base[32];
    params_default(p);
    snprintf(base, sizeof base, "%s", decomp);
    char *plus = strchr(base, '+');
    if (plus)
        *plus = 0;
    params_set(p, "decomposition", base, err, sizeof err);
    if (strstr(decomp, "+index")) {
        CHECK(params_set(p, "token_corr", "0.3", err, sizeof err) == 0, "token_corr: %s", err);
        CHECK(params_set(p, "index", "uncentred", err, sizeof err) == 0, "index: %s", err);
    }
    if (strstr(decomp, "+single"))
        CHECK(params_set(p, "precision", "single", err, sizeof err) == 0, "precision: %s", err);
    if (strstr(decomp, "+two_phase"))
        CHECK(params_set(p, "lr_schedule", "two_phase(0.2,0.25)", err, sizeof err) == 0,
              "lr_schedule: %s", err);
    params_set(p, "activation", "h2", err, sizeof err);
    params_set(p, "solvers", "sgd,flow,ode", err, sizeof err);
    p->d = 32;
    p->lr = 0.05;
    p->weight_decay = 0.5;
    p->tau_end = 0.6;
    p->records = 6;
    p->seed = seed;
}

static int same(const struct task_result *a, const struct task_result *b)
{
    if (a->nsolvers != b->nsolvers)
        return 0;
    for (int i = 0; i < a->nsolvers; i++)
        if (a->traj[i].status != b->traj[i].status || a->traj[i].n != b->traj[i].n ||
            memcmp(a->traj[i].rows, b->traj[i].rows, sizeof(struct obs_row) * (size_t)a->traj[i].n))
            return 0;
    return 1;
}

/* Stops on poll number `at` (counting from 1); with `copy_to`, copies the checkpoint file
 * there at that poll instead of stopping (a job killed right after a periodic checkpoint). */
struct stopper {
    long polls, at;
    const char *path, *copy_to;
};

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[65536];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        fwrite(buf, 1, n, b);
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

static int stop_at(void *ctx)
{
    struct stopper *s = ctx;
    if (++s->polls != s->at)
        return 0;
    if (s->copy_to) {
        copy_file(s->path, s->copy_to);
        return 0;
    }
    return 1;
}

static int run_ctl(const struct params *p, struct task_result *r, const char *path, long at,
                   double every, const char *copy_to, char *note, size_t nn)
{
    struct stopper s = {0, at, path, copy_to};
    struct worker_ctl wc;
    memset(&wc, 0, sizeof wc);
    wc.stop = stop_at;
    wc.stop_ctx = &s;
    wc.ckpt_path = path;
    wc.ckpt_every_s = every;
    int rc = worker_run_ctl(p, r, &wc);
    if (note)
        snprintf(note, nn, "%s", wc.note);
    return rc;
}

static int interrupted(const struct task_result *r)
{
    for (int i = 0; i < r->nsolvers; i++)
        if (r->traj[i].status == RUN_INTERRUPTED)
            return 1;
    return 0;
}

int main(void)
{
    test_path_start();
    char dir[] = "/tmp/aimsweep-ckpt-XXXXXX", path[256], copy[256];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/task.ckpt", dir);
    snprintf(copy, sizeof copy, "%s/kept.ckpt", dir);
    const char *decomps[] = {
        "direct",        "tied",          "untied",         "untied+index",
        "direct+single", "untied+single", "tied+two_phase", "direct+two_phase"};
    for (int i = 0; i < (int)(sizeof decomps / sizeof *decomps); i++) {
        struct params p;
        struct task_result ref, r;
        params_for(&p, decomps[i], 5);
        CHECK(worker_run(&p, &ref, NULL, NULL) == 0, "reference");
        /* 1. stopped again and again, at polls spread over SGD, flow and the ODE */
        long steps[] = {1, 1, 3, 2, 5, 1, 4, 7, 2, 9, 3, 6}; /* the first two inside SGD */
        int segments = 0, rc = 0;
        unlink(path);
        for (;;) {
            rc = run_ctl(&p, &r, path, segments < 12 ? steps[segments] : -1, 0, NULL, NULL, 0);
            segments++;
            if (rc || !interrupted(&r) || segments > 20)
                break;
            CHECK(access(path, F_OK) == 0, "%s: a stopped task left no checkpoint", decomps[i]);
            worker_result_free(&r);
        }
        CHECK(rc == 0 && segments > 5, "%s: %d segments", decomps[i], segments);
        CHECK(same(&ref, &r),
              "%s: resumed %d times, trajectories differ from the uninterrupted run", decomps[i],
              segments - 1);
        CHECK(access(path, F_OK) != 0, "%s: checkpoint not removed when the task finished",
              decomps[i]);
        worker_result_free(&r);

        /* 2. periodic checkpoints; the job "dies" after the one written at poll 30: resume from it */
        unlink(path);
        CHECK(run_ctl(&p, &r, path, 30, 1e-9, copy, NULL, 0) == 0, "periodic run");
        CHECK(same(&ref, &r), "%s: a run writing periodic checkpoints differs", decomps[i]);
        worker_result_free(&r);
        CHECK(access(copy, F_OK) == 0, "%s: no periodic checkpoint was written", decomps[i]);
        rename(copy, path);
        struct ckpt c;
        char err[512];
        CHECK(ckpt_read(path, params_task_id(&p), 0, &c, err, sizeof err) == -1,
              "%s: a wrong text hash accepted", decomps[i]);
        char note[512];
        CHECK(run_ctl(&p, &r, path, -1, 0, NULL, note, sizeof note) == 0 && !note[0], "resume: %s",
              note);
        CHECK(same(&ref, &r), "%s: resumed from a periodic checkpoint, trajectories differ",
              decomps[i]);
        worker_result_free(&r);

        /* 3. corrupt, truncated and foreign checkpoints are refused; the task reruns from the start */
        struct params q;
        params_for(&q, decomps[i], 6);
        for (int kind = 0; kind < 3; kind++) {
            unlink(path);
            run_ctl(kind == 2 ? &q : &p, &r, path, 20, 0, NULL, NULL, 0);
            worker_result_free(&r);
            CHECK(access(path, F_OK) == 0, "no checkpoint to spoil");
            if (kind == 0) { /* flip one byte in the middle */
                FILE *f = fopen(path, "r+b");
                fseek(f, 0, SEEK_END);
                long n = ftell(f);
                fseek(f, n / 2, SEEK_SET);
                int ch = fgetc(f);
                fseek(f, n / 2, SEEK_SET);
                fputc(ch ^ 0x40, f);
                fclose(f);
            } else if (kind == 1) {
                FILE *f = fopen(path, "r+b");
                fseek(f, 0, SEEK_END);
                long n = ftell(f);
                fclose(f);
                CHECK(truncate(path, n - 100) == 0, "truncate");
            }
            CHECK(run_ctl(&p, &r, path, -1, 0, NULL, note, sizeof note) == 0,
                  "run after a bad checkpoint");
            CHECK(strstr(note, "refused") != NULL, "%s: bad checkpoint %d not refused (note '%s')",
                  decomps[i], kind, note);
            CHECK(same(&ref, &r), "%s: after a refused checkpoint (%d) the numbers differ",
                  decomps[i], kind);
            worker_result_free(&r);
        }
        worker_result_free(&ref);
    }
    unlink(path);
    unlink(copy);
    rmdir(dir);
    return check_done("test_ckpt");
}
