/* Reproducibility: the same parameters give the same numbers bit for bit, whatever ran before
 * or in between; another seed gives other numbers; a run's samples do not depend on where the
 * stream is entered. */
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/model/rng.h"
#include "aimsweep/run/worker.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"
#include "paths.h"

static void params_for(struct params *p, const char *decomp, uint64_t seed)
{
    char err[256];
    params_default(p);
    params_set(p, "decomposition", decomp, err, sizeof err);
    params_set(p, "activation", "h2", err, sizeof err);
    p->d = 40;
    p->tau_end = 0.1;
    p->records = 5;
    p->seed = seed;
}

static int same(const struct task_result *a, const struct task_result *b)
{
    if (a->nsolvers != b->nsolvers)
        return 0;
    for (int i = 0; i < a->nsolvers; i++)
        if (a->traj[i].n != b->traj[i].n ||
            memcmp(a->traj[i].rows, b->traj[i].rows, sizeof(struct obs_row) * (size_t)a->traj[i].n))
            return 0;
    return 1;
}

int main(void)
{
    test_path_start();
    const char *decomps[] = {"direct", "tied", "untied"};
    for (int i = 0; i < 3; i++) {
        struct params p, q;
        struct task_result r1, r2, other, r3;
        params_for(&p, decomps[i], 9);
        params_for(&q, decomps[(i + 1) % 3], 4);
        CHECK(!worker_run(&p, &r1, NULL, NULL), "%s: first run failed", decomps[i]);
        CHECK(!worker_run(&q, &other, NULL, NULL), "%s: the run between failed", decomps[i]);
        CHECK(!worker_run(&p, &r2, NULL, NULL), "%s: rerun failed", decomps[i]);
        CHECK(same(&r1, &r2), "%s: rerun differs", decomps[i]);
        p.seed = 10;
        CHECK(!worker_run(&p, &r3, NULL, NULL), "%s: run at seed 10 failed", decomps[i]);
        CHECK(!same(&r1, &r3), "%s: another seed gives the same numbers", decomps[i]);
        worker_result_free(&r1);
        worker_result_free(&r2);
        worker_result_free(&r3);
        worker_result_free(&other);
    }
    /* Step 8 of a run equals the reference step on sample 7 drawn from the stream entered at
     * its address: the stream is addressed, not sequential. */
    struct params p;
    params_for(&p, "tied", 3);
    struct model *m = model_create(&p);
    struct sgd_state *a = sgd_state_create(m);
    sgd_steps(a, 7);
    size_t n = (size_t)m->d * m->r;
    struct student s;
    student_init_copy(&s, m);
    memcpy(s.A, sgd_student(a)->A, sizeof(double) * n);
    struct rng g;
    double x[2 * 40];
    rng_init(&g, p.seed, STREAM_SGD, (uint32_t)m->d);
    rng_seek_normal(&g, 7 * 2 * 40);
    rng_normals(&g, x, 80);
    CHECK(sgd_reference_step(&p, &s, m->teacher, x) == 0, "sgd_reference_step: out of memory");
    sgd_steps(a, 1);
    double dmax = 0;
    for (size_t i = 0; i < n; i++)
        dmax = fmax(dmax, fabs(s.A[i] - sgd_student(a)->A[i]));
    CHECK(dmax < 1e-12, "step 8 from the addressed stream differs by %g", dmax);
    student_free(&s);
    sgd_state_destroy(&a);
    model_destroy(&m);
    return check_done("test_repro");
}
