/* The kernels' paths (kern.h) against each other, in one process (kern_use), for every path this
 * CPU runs: direct, tied and untied in double and single at T = 2 (the vector kernels) and one
 * T = 3 point each.
 *
 * Trajectories: the same point run by SGD on each path; every record's overlap m, Omega11,
 * Omega12, Psi11 and loss within PATH_TOL_DOUBLE (double) or PATH_TOL_SINGLE (single) of the
 * widest path's (docs/building.md states these bounds). The paths add the same products in other
 * orders (the portable loops) and draw their normals through glibc's vector log, sin and cos of
 * other widths (every path: a normal within a few units of the last place), so a run on one
 * path is a run of the same samples perturbed at the rounding level, and SGD carries such a
 * perturbation along without amplifying it much over these runs (measured at tau = 0.3 and at
 * the 0.15 run here: at most 2.7e-15 in double, 3.7e-8 in single, where the portable loops add
 * every product in double and the vector kernels 128 of them in float; docs/building.md).
 *
 * Checkpoints: a state stepped 600 steps on path A and saved loads into a state of the same
 * model made on path B (the double state is in the paired layout on avx512, row-major on avx2 and
 * portable), and holds the same student; its own save gives the same bytes where both keep S in
 * the same form (direct keeps half of the symmetric S where the two-step pass runs, on avx512 in
 * double and on the vector paths in single, and writes S from that half, so a whole S that is
 * not symmetric to the last bit comes back symmetrized: the student then agrees within 1e-15 of
 * its largest entry in double, 4 float units (2^-22) in single); then both go on 600 steps, each
 * on its own path, and stay within the tolerance above.
 *
 * Planted: the AVX2 float pass with half its partial sums dropped moves single's m by far more
 * than PATH_TOL_SINGLE (the trajectory checks of single on avx2 fail); a restore that ignored the
 * layout of the path fails the bytes check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/kern.h"
#include "aimsweep/model/model.h"
#include "aimsweep/model/obs.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"

#define PATH_TOL_DOUBLE 1e-12
#define PATH_TOL_SINGLE 1e-5

static const char *const paths[] = {"avx512", "avx2", "portable"};
enum { NPATHS = 3 };

static void point(struct params *p, const char *decomp, const char *prec, int T, int d)
{
    char err[256], v[16];
    params_default(p);
    CHECK(params_set(p, "decomposition", decomp, err, sizeof err) == 0, "%s", err);
    CHECK(params_set(p, "precision", prec, err, sizeof err) == 0, "%s", err);
    snprintf(v, sizeof v, "%d", T);
    CHECK(params_set(p, "tokens", v, err, sizeof err) == 0, "%s", err);
    p->d = d;
    p->lr = 0.05;
    p->tau_end = 0.15;
    p->records = 6;
    p->seed = 5;
}

static double worst_row(const struct obs_row *a, const struct obs_row *b)
{
    double x[] = {a->overlap - b->overlap, a->omega11 - b->omega11, a->omega12 - b->omega12,
                  a->psi11 - b->psi11, a->loss - b->loss};
    double w = 0;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        w = fmax(w, fabs(x[i]));
    return w;
}

/* SGD's trajectory of p on path `path` into t (traj_init done here). */
static int run_on(const char *path, const struct params *p, struct traj *t)
{
    CHECK(kern_use(path) == 0, "kern_use(%s)", path);
    struct model *m = model_create(p);
    traj_init(t, SOLVER_SGD, p->records + 1);
    int rc = m ? sgd_run(m, t, NULL, NULL) : -1;
    model_destroy(&m);
    return rc;
}

static void trajectories(const char *decomp, const char *prec, int T, int d, int np)
{
    struct params p;
    point(&p, decomp, prec, T, d);
    double tol = strcmp(prec, "single") ? PATH_TOL_DOUBLE : PATH_TOL_SINGLE;
    struct traj ref;
    CHECK(run_on(paths[3 - np], &p, &ref) == 0 && ref.n == p.records + 1, "%s run", paths[3 - np]);
    for (int k = 3 - np + 1; k < NPATHS; k++) {
        struct traj t;
        CHECK(run_on(paths[k], &p, &t) == 0 && t.n == ref.n, "%s run", paths[k]);
        double w = 0;
        for (int r = 0; r < t.n && r < ref.n; r++)
            w = fmax(w, worst_row(&t.rows[r], &ref.rows[r]));
        printf("%-7s %-6s T=%d d=%d: %-8s against %-6s largest difference %.3g\n", decomp, prec, T,
               d, paths[k], paths[3 - np], w);
        CHECK(w <= tol, "%s %s T=%d: %s against %s differ by %.3g (bound %.3g)", decomp, prec, T,
              paths[k], paths[3 - np], w, tol);
        traj_free(&t);
    }
    traj_free(&ref);
}

static double student_diff(struct sgd_state *a, struct sgd_state *b, const char *pa, const char *pb)
{
    CHECK_TRUE(kern_use(pa) == 0);
    const struct student *sa = sgd_student(a);
    size_t n = (size_t)sa->d * (sa->decomposition == DECOMP_DIRECT ? (size_t)sa->d : (size_t)sa->r);
    double *copy = malloc(2 * n * sizeof *copy);
    if (!copy)
        return INFINITY;
    memcpy(copy, sa->A, n * sizeof *copy);
    if (sa->B)
        memcpy(copy + n, sa->B, n * sizeof *copy);
    CHECK_TRUE(kern_use(pb) == 0);
    const struct student *sb = sgd_student(b);
    double w = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        w = fmax(w, fabs(sb->A[i] - copy[i]));
        top = fmax(top, fabs(copy[i]));
        if (sb->B)
            w = fmax(w, fabs(sb->B[i] - copy[n + i]));
    }
    free(copy);
    return w / top;
}

static void checkpoints(const char *decomp, const char *prec, const char *pa, const char *pb)
{
    struct params p;
    point(&p, decomp, prec, 2, 64);
    double tol = strcmp(prec, "single") ? PATH_TOL_DOUBLE : PATH_TOL_SINGLE;
    CHECK_TRUE(kern_use(pa) == 0);
    struct model *m = model_create(&p);
    struct sgd_state *a = m ? sgd_state_create(m) : NULL;
    CHECK(a != NULL, "state on %s", pa);
    if (!a) {
        model_destroy(&m);
        return;
    }
    sgd_steps(a, 600);
    size_t n = sgd_state_size(a);
    unsigned char *bytes = malloc(n), *again = NULL;
    sgd_state_save(a, bytes);
    CHECK_TRUE(kern_use(pb) == 0);
    struct sgd_state *b = sgd_state_create(m);
    size_t nb = b ? sgd_state_size(b) : 0;
    CHECK(b && nb == n && sgd_state_restore(b, bytes, n) == 0,
          "%s %s: a checkpoint of %s (%zu bytes) refused on %s (%zu bytes)", decomp, prec, pa, n,
          pb, nb);
    if (b && nb == n && (again = malloc(n)) != NULL) {
        sgd_state_save(b, again);
        double w0 = student_diff(a, b, pa, pb), tol0 = strcmp(prec, "single") ? 1e-15 : 0x1p-22;
        CHECK(w0 <= tol0, "%s %s: %s's checkpoint restored on %s holds another student (%.3g)",
              decomp, prec, pa, pb, w0);
        CHECK_TRUE(kern_use(pa) == 0);
        int same_form = sgd_symmetric(a);
        CHECK_TRUE(kern_use(pb) == 0);
        same_form = same_form == sgd_symmetric(b);
        CHECK(!same_form || !memcmp(bytes, again, n),
              "%s %s: %s's checkpoint saved again on %s differs", decomp, prec, pa, pb);
        CHECK_TRUE(kern_use(pb) == 0);
        sgd_steps(b, 600);
        CHECK_TRUE(kern_use(pa) == 0);
        sgd_steps(a, 600);
        double w = student_diff(a, b, pa, pb);
        printf("%-7s %-6s checkpoint of %-8s resumed on %-8s: students after 600 more steps differ "
               "by %.3g of the largest entry\n",
               decomp, prec, pa, pb, w);
        CHECK(w <= tol, "%s %s: %s resumed on %s drifts by %.3g", decomp, prec, pa, pb, w);
    }
    free(again);
    free(bytes);
    CHECK_TRUE(kern_use(pb) == 0);
    sgd_state_destroy(&b);
    CHECK_TRUE(kern_use(pa) == 0);
    sgd_state_destroy(&a);
    model_destroy(&m);
}

int main(void)
{
    int np = 0;
    for (int k = 0; k < NPATHS; k++)
        np += kern_path_runs(paths[k]) == 1;
    printf("paths this CPU runs: %d (widest %s)\n", np, paths[3 - np]);
    if (np < 2) {
        printf("skipped: one path only\n");
        return 77;
    }
    const char *decomps[] = {"direct", "tied", "untied"}, *precs[] = {"double", "single"};
    for (int di = 0; di < 3; di++)
        for (int pi = 0; pi < 2; pi++) {
            trajectories(decomps[di], precs[pi], 2, 66, np);
            trajectories(decomps[di], precs[pi], 3, 41, np);
            for (int a = 3 - np; a < NPATHS; a++)
                for (int b = 3 - np; b < NPATHS; b++)
                    if (a != b)
                        checkpoints(decomps[di], precs[pi], paths[a], paths[b]);
        }
    return check_done("test_paths");
}
