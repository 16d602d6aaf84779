/* Population loss: closed forms against quadrature, gradients against finite differences,
 * the softmax T = 2 reduction against the general tensor rule, and an exact value for h1. */
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/model/phi.h"
#include "check.h"
#include "test_util.h"

/* (omega11, psi11, omega12) points, all valid covariances. */
static const double pts[][3] = {
    {0.5, 0.5, 0.3}, {1.2, 0.4, 0.85}, {0.3, -0.1, 0.05}, {2.0, 2.0, -1.1}, {0.9, 0.9, 0.0}};
#define NPTS (sizeof pts / sizeof pts[0])

static void fd_check(const char *name, int T, double tol)
{
    struct act a = test_parse_act(name);
    for (size_t i = 0; i < NPTS; i++) {
        struct phi_val v, p, m;
        double x[3] = {pts[i][0], pts[i][1], pts[i][2]};
        CHECK(phi_eval(&a, T, x[0], x[1], x[2], &v) == 0, "%s eval", name);
        double g[3] = {v.d_omega11, v.d_psi11, v.d_omega12}, h = 1e-5;
        for (int k = 0; k < 3; k++) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
            xp[k] += h;
            xm[k] -= h;
            phi_eval(&a, T, xp[0], xp[1], xp[2], &p);
            phi_eval(&a, T, xm[0], xm[1], xm[2], &m);
            char what[96];
            snprintf(what, sizeof what, "%s T=%d point %zu dPhi/dx%d vs finite difference", name, T,
                     i, k);
            CHECK_CLOSE(g[k], (p.phi - m.phi) / (2 * h), tol, tol, what);
        }
    }
}

int main(void)
{
    /* Exact: h1 gives Phi = T(T-1)/2 (omega11 - 2 omega12 + 1). */
    struct act h1 = test_parse_act("h1");
    for (size_t i = 0; i < NPTS; i++) {
        struct phi_val v;
        phi_eval(&h1, 3, pts[i][0], pts[i][1], pts[i][2], &v);
        CHECK_CLOSE(v.phi, 3.0 * (pts[i][0] - 2 * pts[i][2] + 1), 1e-12, 1e-12, "h1 closed value");
        CHECK_CLOSE(v.d_omega11, 3.0, 1e-12, 1e-12, "h1 d/domega11");
        CHECK_CLOSE(v.d_omega12, -6.0, 1e-12, 1e-12, "h1 d/domega12");
    }

    /* Hermite and erf closed forms against Gauss-Hermite quadrature (exact for polynomials). */
    const char *closed[] = {"h1", "h2", "h3", "h4", "h5", "h6", "hermite(0.3,1,0.5,-0.2)", "erf"};
    for (size_t j = 0; j < sizeof closed / sizeof closed[0]; j++) {
        struct act a = test_parse_act(closed[j]);
        for (size_t i = 0; i < NPTS; i++) {
            struct phi_val c, q;
            phi_eval(&a, 2, pts[i][0], pts[i][1], pts[i][2], &c);
            phi_eval_quadrature(&a, 2, pts[i][0], pts[i][2], &q);
            char what[96];
            snprintf(what, sizeof what, "%s point %zu closed vs quadrature", closed[j], i);
            CHECK_CLOSE(c.phi, q.phi, 1e-9, 1e-9, what);
            CHECK_CLOSE(c.d_omega11, q.d_omega11, 1e-8, 1e-8, what);
            CHECK_CLOSE(c.d_omega12, q.d_omega12, 1e-8, 1e-8, what);
        }
    }
    /* relu: the kink slows the quadrature down, so the tolerance is looser; its Price term in
     * omega11 is a Dirac mass the quadrature cannot see, so that one is left to the FD check. */
    struct act relu = test_parse_act("relu");
    for (size_t i = 0; i < NPTS; i++) {
        struct phi_val c, q;
        phi_eval(&relu, 2, pts[i][0], pts[i][1], pts[i][2], &c);
        phi_eval_quadrature(&relu, 2, pts[i][0], pts[i][2], &q);
        CHECK_CLOSE(c.phi, q.phi, 2e-3, 0, "relu closed vs quadrature");
        CHECK_CLOSE(c.d_omega12, q.d_omega12, 5e-3, 0, "relu d/domega12 closed vs quadrature");
    }

    /* Gradients against central differences of Phi. */
    const char *all[] = {"h1",   "h2",   "h3",  "h4",         "h5",          "h6",
                         "relu", "tanh", "erf", "softmax(1)", "softmax(2.5)"};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        fd_check(all[j], 2, 2e-6);
    /* T = 3 uses a 6D tensor rule of 7 nodes per axis: Price's identity holds to its accuracy
     * (about 1e-4), not to rounding. */
    fd_check("softmax(1)", 3, 1e-3);
    fd_check("h3", 4, 2e-6);

    /* Softmax, T = 2: the reduced 2D integral against the 4D tensor rule. */
    struct act sm = test_parse_act("softmax(1.5)");
    for (size_t i = 0; i < NPTS; i++) {
        struct phi_val r, g;
        phi_eval(&sm, 2, pts[i][0], pts[i][1], pts[i][2], &r);
        phi_eval_softmax_general(&sm, 2, pts[i][0], pts[i][1], pts[i][2], &g);
        CHECK_CLOSE(r.phi, g.phi, 1e-6, 0, "softmax reduced vs tensor: phi");
        CHECK_CLOSE(r.d_omega11, g.d_omega11, 1e-5, 0, "softmax reduced vs tensor: d omega11");
        CHECK_CLOSE(r.d_psi11, g.d_psi11, 1e-5, 0, "softmax reduced vs tensor: d psi11");
        CHECK_CLOSE(r.d_omega12, g.d_omega12, 1e-5, 0, "softmax reduced vs tensor: d omega12");
        CHECK(r.err < 1e-8, "softmax stated error %g", r.err);
    }
    /* Softmax at the perfect-recovery point: zero loss. */
    {
        struct phi_val v;
        phi_eval(&sm, 3, 1.0, 1.0, 1.0, &v);
        CHECK(fabs(v.phi) < 1e-10, "softmax loss at S = S*: %g", v.phi);
    }
    /* An invalid covariance is refused. */
    {
        struct phi_val v;
        CHECK(phi_eval(&h1, 2, 0.1, 0.1, 0.9, &v) != 0, "omega12^2 > omega11 accepted");
    }
    return check_done("test_phi");
}
