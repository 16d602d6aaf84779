/*
 * words_measure.c: the word hierarchy against the flow, for docs/closures.md.
 *
 * Usage: words_measure "key=value ..." CLOSURES MMIN MMAX [WINDOWS] [trace]
 *   WINDOWS: comma-separated tau windows [0, w] for extra error columns (default: none)
 *   runs the flow once, then the order-M word system for each closure in the comma-separated
 *   list and each M, and prints max |omega12_ode - omega12_flow| and max |m_ode - m_flow| over
 *   the tau grid (or the tau where the ode stopped). With `trace`, prints the rows too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aimsweep/solvers/flow.h"
#include "aimsweep/theory/words.h"
#include "words_util.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s \"key=value ...\" CLOSURES MMIN MMAX [trace]\n", argv[0]);
        return 2;
    }
    int trace = !strcmp(argv[argc - 1], "trace");
    double win[8];
    int nwin = 0;
    if (argc > 5 && strcmp(argv[5], "trace"))
        for (char *t = argv[5]; t && *t && nwin < 8;) {
            win[nwin++] = strtod(t, &t);
            if (*t == ',')
                t++;
        }
    struct params p;
    wu_params(&p, argv[1]);
    struct model *m = model_create(&p);
    struct traj fl;
    traj_init(&fl, SOLVER_FLOW, p.records + 1);
    double t0 = now();
    flow_run(m, &fl, NULL, NULL);
    double tflow = now() - t0;
    printf("# %s\n# flow: %d rows, %.2f s, status %s\n", argv[1], fl.n, tflow,
           run_status_name(fl.status));
    if (trace)
        for (int k = 0; k < fl.n; k++)
            printf("flow tau %.4f om11 %.5f om12 %.5f t1 %.5f m %.5f\n", fl.rows[k].tau,
                   fl.rows[k].omega11, fl.rows[k].omega12, fl.rows[k].trace, fl.rows[k].overlap);
    char cl[256];
    snprintf(cl, sizeof cl, "%s", argv[2]);
    int mmin = atoi(argv[3]), mmax = atoi(argv[4]);
    printf("%-14s %3s %6s %10s %10s %9s %9s", "closure", "M", "dim", "err_om12", "err_m",
           "tau_stop", "wall_s");
    for (int i = 0; i < nwin; i++)
        printf("  om12<=%-5g", win[i]);
    printf("\n");
    for (char *c = cl, *next; c && *c; c = next) {
        next = strchr(c, ',');
        if (next)
            *next++ = 0;
        for (int M = mmin; M <= mmax; M++) {
            char buf[1024], err[256];
            struct params q;
            snprintf(buf, sizeof buf, "%s closure=%s order_m=%d", argv[1], c, M);
            wu_params(&q, buf);
            m->p = q;
            struct mom_sys sys;
            t0 = now();
            if (words_system_create(m, &sys, err, sizeof err)) {
                printf("%-14s %3d %s\n", c, M, err);
                continue;
            }
            double taus[1024];
            struct traj ot;
            for (int k = 0; k < fl.n; k++)
                taus[k] = fl.rows[k].tau;
            traj_init(&ot, SOLVER_ODE, fl.n);
            mom_integrate(&sys, &q, fl.n, taus, &ot);
            const struct obs_row *rows = ot.rows;
            int n = ot.n;
            double wall = now() - t0, e12 = 0, em = 0;
            for (int k = 0; k < n; k++) {
                e12 = fmax(e12, fabs(rows[k].omega12 - fl.rows[k].omega12));
                em = fmax(em, fabs(fabs(rows[k].overlap) - fabs(fl.rows[k].overlap)));
                if (trace)
                    printf("  M=%d tau %.4f om11 %.5f om12 %.5f t1 %.5f m %.5f\n", M, rows[k].tau,
                           rows[k].omega11, rows[k].omega12, rows[k].trace, rows[k].overlap);
            }
            double tstop = n == fl.n ? -1 : (n > 0 ? fl.rows[n - 1].tau : 0);
            char wbuf[256] = "";
            for (int i = 0; i < nwin; i++) {
                double e = 0;
                int ok = n == fl.n || (n > 0 && fl.rows[n - 1].tau >= win[i]);
                for (int k = 0; k < n && fl.rows[k].tau <= win[i] + 1e-12; k++)
                    e = fmax(e, fabs(rows[k].omega12 - fl.rows[k].omega12));
                size_t l = strlen(wbuf);
                if (ok)
                    snprintf(wbuf + l, sizeof wbuf - l, "  %11.3e", e);
                else
                    snprintf(wbuf + l, sizeof wbuf - l, "  %11s", "diverged");
            }
            if (n == fl.n)
                printf("%-14s %3d %6d %10.3e %10.3e %9s %9.2f%s\n", c, M, sys.dim, e12, em, "-",
                       wall, wbuf);
            else
                printf("%-14s %3d %6d %10.3e %10.3e %9.4f %9.2f%s  (stopped)\n", c, M, sys.dim, e12,
                       em, tstop, wall, wbuf);
            fflush(stdout);
            traj_free(&ot);
            mom_sys_destroy(&sys);
        }
    }
    traj_free(&fl);
    model_destroy(&m);
    return 0;
}
