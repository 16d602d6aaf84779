/* The O(eta) SGD-noise correction of the direct ODE (docs/model.md §6, docs/noise.md): at eta = 0.05
 * the ODE with the correction is closer to SGD than without it. Each seed's ODE starts from that
 * seed's own initial matrices; the error is the seed-averaged bias of the ODE against SGD,
 * max over records, on omega11 (and psi11 for softmax, whose SGD breaks the symmetry of S). */
#include <math.h>
#include <stdlib.h>

#include "aimsweep/model/model.h"
#include "aimsweep/solvers/sgd.h"
#include "aimsweep/theory/ode.h"
#include "check.h"

#define NSEED 6
#define NREC 10

static void compare(const char *act, int d)
{
    double bias[2][NREC + 1][2] = {{{0}}}; /* [noise][record][omega11, psi11] */
    for (int s = 0; s < NSEED; s++) {
        struct params p;
        char err[256];
        params_default(&p);
        params_set(&p, "decomposition", "direct", err, sizeof err);
        params_set(&p, "activation", act, err, sizeof err);
        p.d = d;
        p.lr = 0.05;
        p.tau_end = 1.0;
        p.records = NREC;
        p.seed = 100 + s;
        struct model *m = model_create(&p);
        struct traj ts;
        traj_init(&ts, SOLVER_SGD, NREC + 1);
        sgd_run(m, &ts, NULL, NULL);
        CHECK(ts.status == RUN_OK && ts.n == NREC + 1, "sgd %s seed %d", act, s);
        for (int nz = 0; nz < 2; nz++) {
            m->p.ode_noise = nz;
            struct traj to;
            traj_init(&to, SOLVER_ODE, NREC + 1);
            ode_run(m, &to);
            CHECK(to.status == RUN_OK && to.n == NREC + 1, "ode %s noise %d: %s", act, nz,
                  to.error);
            for (int k = 0; k < to.n && k < ts.n; k++) {
                bias[nz][k][0] += (ts.rows[k].omega11 - to.rows[k].omega11) / NSEED;
                bias[nz][k][1] += (ts.rows[k].psi11 - to.rows[k].psi11) / NSEED;
            }
            traj_free(&to);
        }
        traj_free(&ts);
        model_destroy(&m);
    }
    for (int v = 0; v < 2; v++) {
        double e[2] = {0, 0};
        for (int nz = 0; nz < 2; nz++)
            for (int k = 0; k <= NREC; k++)
                e[nz] = fmax(e[nz], fabs(bias[nz][k][v]));
        printf("%s d=%d eta=0.05 %s: max seed-averaged |sgd - ode| noise off %.4g, on %.4g\n", act,
               d, v ? "psi11" : "omega11", e[0], e[1]);
        /* the remainder at d = 40 is the O(1/d) finite-size bias (it halves at d = 80) */
        CHECK(e[1] < 0.75 * e[0], "%s %s: noise on %.4g not clearly below off %.4g", act,
              v ? "psi11" : "omega11", e[1], e[0]);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) { /* exploration: act d */
        compare(argv[1], atoi(argv[2]));
        return check_done("test_ode_noise");
    }
    compare("h1", 40);
    compare("softmax(2)", 40);
    return check_done("test_ode_noise");
}
