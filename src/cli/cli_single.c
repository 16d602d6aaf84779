/*
 * cli_single.c: `aimsweep single`: one grid point, every requested solver, printed as CSV or
 * as a table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/cli/cli.h"
#include "aimsweep/base/params.h"
#include "aimsweep/run/worker.h"

static void single_usage(FILE *f)
{
    struct params d;
    params_default(&d);
    char buf[256];
    fprintf(f, "usage: aimsweep single [--KEY VALUE ...] [--format csv|table]\n\n"
               "Runs one grid point. Parameters (MODEL.md names; defaults in brackets):\n");
    for (int i = 0; params_keys[i]; i++) {
        params_get(&d, params_keys[i], buf, sizeof buf);
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", params_keys[i]);
        for (char *c = flag; *c; c++)
            if (*c == '_')
                *c = '-';
        fprintf(f, "  %-22s [%s]\n", flag, buf);
    }
    fprintf(f, "\n  decomposition: direct | tied | untied\n"
               "  activation: h1..h6 | hermite(c0,c1,...) | relu | tanh | erf | softmax(beta)\n"
               "  teacher: wishart(rho) | goe | goe_shift(m) | goe_mean(m) (goe + (m/sqrt(d)) I: mean m)\n"
               "  solvers: comma-separated from sgd, flow, ode\n"
               "  closure: auto | free_cumulant | freeze | zero | spectral | spectral_mp | free_residual\n"
               "           | flat (odd order only)\n"
               "  token_corr: c in [0, 1), tokens with E x_a x_b^T = ((1 - c) delta_ab + c) I\n"
               "  index: centred (x_a^T S x_b - C_ab Tr S)/sqrt(d) | uncentred x_a^T S x_b/sqrt(d) (not tied)\n"
               "  outputs: offdiag (entries a != b) | all (the diagonal too; elementwise activations)\n"
               "  lr_schedule: constant | two_phase(eta1,t_switch) (eta1 while t = d tau < t_switch)\n"
               "  init: gaussian | orthogonal (tied, untied; width <= 1);  init_trace: t I added to direct's S(0)\n"
               "  ode_mean: stiff (the mean mu as a state variable) | slaved (mu on its slow manifold)\n"
               "  csv: a column mu (= Tr S/sqrt(d)) follows loss when token_corr, index or outputs is set\n"
               "  --format: csv (one row per solver and record) or table [table]\n");
}

static void print_summary(FILE *f, const struct params *p, const struct task_result *r, const char *prefix)
{
    for (int i = 0; i < r->nsolvers; i++) {
        const struct solver_summary *s = &r->sum[i];
        const struct traj *t = &r->traj[i];
        fprintf(f, "%ssolver=%s status=%s", prefix, obs_solver_name(s->solver), run_status_name(s->status));
        if (s->tau_wr >= 0)
            fprintf(f, " tau_wr=%.6g samples_wr=%.6g", s->tau_wr, s->samples_wr);
        else
            fprintf(f, " tau_wr=none");
        fprintf(f, " final_overlap=%.6g final_loss=%.6g", s->final_overlap, s->final_loss);
        if (s->max_gap_to_sgd >= 0)
            fprintf(f, " max_gap_to_sgd=%.3g", s->max_gap_to_sgd);
        if (t->diverged_at_samples >= 0)
            fprintf(f, " stopped_at_samples=%.0f", t->diverged_at_samples);
        if (params_general_index(p) || p->teacher.kind == TEACHER_GOE_MEAN)
            fprintf(f, " mu_final=%.6g mu_star=%.6g", t->n ? t->rows[t->n - 1].mu : NAN, s->mu_star);
        fprintf(f, " wall_s=%.3f", t->wall_s);
        if (t->error[0])
            fprintf(f, " error=\"%s\"", t->error);
        fprintf(f, "\n");
    }
}

int cli_single(int argc, char **argv)
{
    struct params p;
    params_default(&p);
    int csv = 0;
    char err[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            single_usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "aimsweep single: unexpected argument '%s' (flags are --key value)\n", a);
            return 2;
        }
        char key[64];
        const char *val, *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (kl == 0 || kl >= sizeof key) {
            fprintf(stderr, "aimsweep single: bad flag '%s'\n", a);
            return 2;
        }
        memcpy(key, a + 2, kl);
        key[kl] = 0;
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            fprintf(stderr, "aimsweep single: flag --%s needs a value\n", key);
            return 2;
        }
        if (!strcmp(key, "format")) {
            if (!strcmp(val, "csv"))
                csv = 1;
            else if (!strcmp(val, "table"))
                csv = 0;
            else {
                fprintf(stderr, "aimsweep single: --format must be csv or table, not '%s'\n", val);
                return 2;
            }
            continue;
        }
        if (!params_is_key(key)) {
            fprintf(stderr, "aimsweep single: unknown flag --%s (see aimsweep single --help)\n", key);
            return 2;
        }
        if (params_set(&p, key, val, err, sizeof err)) {
            fprintf(stderr, "aimsweep single: %s\n", err);
            return 2;
        }
    }
    if (params_validate(&p, err, sizeof err)) {
        fprintf(stderr, "aimsweep single: %s\n", err);
        return 2;
    }
    struct task_result res;
    if (worker_run(&p, &res, NULL, NULL)) {
        fprintf(stderr, "aimsweep single: out of memory\n");
        return 1;
    }
    if (csv) {
        /* the mu column only where the mean can matter, so that the csv of every point of
         * MODEL.md §1-9 stays as it was */
        int with_mu = params_general_index(&p) || p.teacher.kind == TEACHER_GOE_MEAN;
        printf("solver,tau,samples,omega11,psi11,omega12,trace,overlap,loss%s\n", with_mu ? ",mu" : "");
        for (int i = 0; i < res.nsolvers; i++)
            for (int k = 0; k < res.traj[i].n; k++) {
                const struct obs_row *r = &res.traj[i].rows[k];
                printf("%s,%.10g,%.17g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g", obs_solver_name(res.traj[i].solver),
                       r->tau, r->samples, r->omega11, r->psi11, r->omega12, r->trace, r->overlap, r->loss);
                if (with_mu)
                    printf(",%.10g", r->mu);
                printf("\n");
            }
        print_summary(stderr, &p, &res, "# ");
    } else {
        char canon[2048];
        params_canonical(&p, canon, sizeof canon);
        printf("# %s\n", canon);
        printf("%-6s %10s %12s %10s %10s %10s %10s %10s %10s\n", "solver", "tau", "samples", "omega11",
               "psi11", "omega12", "trace", "overlap", "loss");
        for (int i = 0; i < res.nsolvers; i++)
            for (int k = 0; k < res.traj[i].n; k++) {
                const struct obs_row *r = &res.traj[i].rows[k];
                printf("%-6s %10.4g %12.0f %10.5g %10.5g %10.5g %10.5g %10.5g %10.5g\n",
                       obs_solver_name(res.traj[i].solver), r->tau, r->samples, r->omega11, r->psi11,
                       r->omega12, r->trace, r->overlap, r->loss);
            }
        print_summary(stdout, &p, &res, "");
    }
    int bad = 0;
    for (int i = 0; i < res.nsolvers; i++)
        bad |= res.traj[i].status == RUN_ERROR;
    worker_result_free(&res);
    return bad ? 1 : 0;
}
