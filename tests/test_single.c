/* precision single against precision double: the same grid point (same teacher, same initial
 * student, same samples) stepped n times each way, for every decomposition and every family of
 * activation (Hermite of degree 1, 2 and a mixed hermite(...), relu, tanh, erf, softmax), with
 * odd sizes (the kernels' tails), three tokens (the portable loops), a width below one and weight
 * decay (the scales), a run past SGD_RESYNC steps (the fold and the traces of the resync), and
 * the general index (correlated tokens, every output entry, uncentred for direct and untied).
 *
 * The tolerance. A single-precision step rounds each stored entry to float once per update
 * after at most two float operations, plus once per fold of the scale: at most C_ROUND = 4 unit
 * roundoffs u = 2^-24 of the entry's magnitude per step (the corrections are O(eta/d) of the
 * entry, their rounding is far smaller). The projections and the indices carry the rounding of
 * their float inputs, which enters the next correction multiplied by eta/d: of the same order per
 * step. These roundings are independent from step to step with mean zero, so over n steps they
 * add up in quadrature, to C_ROUND sqrt(n) u relative to the largest entry, as long as the
 * linearised step does not amplify them; over tau = n eta/d^2 it amplifies them by at most
 * e^{L tau}, with L of order one for these points (tau <= 0.4 here), which C_GROWTH = e covers.
 * So: max |A_single - A_double| <= C_GROWTH C_ROUND sqrt(n) u max |A_double| (the worst case, all
 * roundings of one sign, would be n in place of sqrt(n); what is seen is 0.8-2.0 sqrt(n) u, a
 * fifth of the tolerance or less). Planted (tried): projecting the next sample from the current
 * sample's float tokens fails every comparison by 10^3-10^4 tolerances; dropping direct's
 * diagonal term (mu trD/sqrt(d)) I in single precision fails softmax, the only activation here
 * with a diagonal output (trD = 0 for the elementwise ones), by 650 tolerances. Blind spot:
 * the correction is O(eta/d) of an entry, so an error in it below u d/eta relative (rounding
 * the coefficients to 16 bits, say) is invisible here; kern_f32's test covers the kernels. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/model/model.h"
#include "aimsweep/solvers/sgd.h"
#include "check.h"
#include "paths.h"

#define C_ROUND 4.0
#define C_GROWTH 2.718281828459045

static double maxabs(const double *a, size_t n)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        v = fmax(v, fabs(a[i]));
    return v;
}

/* The largest entry difference between the two students, relative to the double's largest entry. */
static double rel_diff(const struct student *a, const struct student *b)
{
    size_t n = a->decomposition == DECOMP_DIRECT ? (size_t)a->d * a->d : (size_t)a->d * a->r;
    double e = 0, ref = maxabs(a->A, n);
    for (size_t i = 0; i < n; i++)
        e = fmax(e, fabs(a->A[i] - b->A[i]));
    if (a->B) {
        ref = fmax(ref, maxabs(a->B, n));
        for (size_t i = 0; i < n; i++)
            e = fmax(e, fabs(a->B[i] - b->B[i]));
    }
    return e / ref;
}

/* extra: NULL, or "key=value;key=value" set after the others (the general index) */
static void one_x(const char *dec, const char *act, int d, int T, double width, double wd, long n,
                  const char *extra);

static void one(const char *dec, const char *act, int d, int T, double width, double wd, long n)
{
    one_x(dec, act, d, T, width, wd, n, NULL);
}

static void one_x(const char *dec, const char *act, int d, int T, double width, double wd, long n,
                  const char *extra)
{
    struct params p;
    char err[256];
    params_default(&p);
    int ok = !params_set(&p, "decomposition", dec, err, sizeof err) &&
             !params_set(&p, "activation", act, err, sizeof err);
    p.d = d;
    p.tokens = T;
    p.width = width;
    p.weight_decay = wd;
    p.lr = 0.05;
    p.seed = 5;
    if (extra) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", extra);
        for (char *save = NULL, *kv = strtok_r(buf, ";", &save); ok && kv;
             kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            ok = eq && (*eq = 0, !params_set(&p, kv, eq + 1, err, sizeof err));
        }
    }
    ok = ok && !params_validate(&p, err, sizeof err);
    CHECK(ok, "%s %s: %s", dec, act, err);
    if (!ok)
        return;
    struct params q = p;
    q.precision = PRECISION_SINGLE;
    struct model *md = model_create(&p), *ms = model_create(&q);
    struct sgd_state *sd = sgd_state_create(md), *ss = sgd_state_create(ms);
    int dd = sgd_steps(sd, n), ds = sgd_steps(ss, n);
    CHECK(!dd && !ds, "%s %s d=%d: diverged (double %d, single %d)", dec, act, d, dd, ds);
    double e = rel_diff(sgd_student(sd), sgd_student(ss)),
           tol = C_GROWTH * C_ROUND * sqrt((double)n) * FLT_EPSILON / 2;
    /* the run must have moved: otherwise equal students prove nothing */
    struct student s0;
    student_init_copy(&s0, md);
    double moved = rel_diff(sgd_student(sd), &s0);
    student_free(&s0);
    CHECK(
        e <= tol && moved > 100 * tol,
        "%s %s d=%d T=%d width=%g wd=%g n=%ld: single differs by %.3g (tolerance %.3g, moved %.3g)",
        dec, act, d, T, width, wd, n, e, tol, moved);
    if (getenv("AIMSWEEP_TEST_VERBOSE"))
        printf("%s %s d=%d T=%d n=%ld: %.3g of tolerance (%.3g sqrt(n) u), moved %.3g\n", dec, act,
               d, T, n, e / tol, e / (sqrt((double)n) * FLT_EPSILON / 2), moved);
    sgd_state_destroy(&sd);
    sgd_state_destroy(&ss);
    model_destroy(&md);
    model_destroy(&ms);
}

int main(void)
{
    test_path_start();
    const char *decs[] = {"direct", "tied", "untied"};
    const char *acts[] = {"h1", "h2", "hermite(0,1,0.5,0.2)", "relu", "tanh", "erf", "softmax(1)"};
    for (int i = 0; i < 3; i++) {
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            one(decs[i], acts[a], 37, 2, 1.0, 0.0, 400);
        one(decs[i], "h2", 40, 3, 0.5, 0.5, 400);  /* portable loops, r < d, weight decay */
        one(decs[i], "h1", 24, 2, 1.0, 0.5, 4500); /* past SGD_RESYNC */
        /* the general index: correlated tokens, all outputs, uncentred where allowed */
        one_x(decs[i], "h1", 37, 2, 1.0, 0.0, 400,
              i == 1 ? "token_corr=0.3;outputs=all" : "token_corr=0.3;outputs=all;index=uncentred");
    }
    return check_done("test_single");
}
