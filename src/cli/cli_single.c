/*
 * cli_single.c: `aimsweep single`: one grid point, every requested solver, printed as CSV or
 * as a table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/params.h"
#include "aimsweep/base/text.h"
#include "aimsweep/cli/args.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/harness/task.h"
#include "aimsweep/run/worker.h"

/* single says its estimate (plan's nominal cost model, task_cost) before it starts when it is
 * longer than this, and refuses one longer than --cost-limit core-hours without --force. */
#define SINGLE_SAY_COST_S 60.0
#define SINGLE_COST_LIMIT_H 24.0

static void single_usage(FILE *f)
{
    struct params d;
    params_default(&d);
    char buf[256], allowed[160];
    fprintf(f,
            "usage: aimsweep single [--KEY VALUE | --KEY=VALUE ...] [--format csv|table]\n\n"
            "Runs one grid point with every requested solver. The model, its time unit and every\n"
            "observable are explained in docs/model.md. Parameters (default in brackets):\n\n");
    for (int i = 0; params_info[i].key; i++) {
        const struct params_key_info *k = &params_info[i];
        params_get(&d, k->key, buf, sizeof buf);
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", k->key);
        for (char *c = flag; *c; c++)
            if (*c == '_')
                *c = '-';
        fprintf(f, "  %-22s [%s]  %s\n", flag, buf, params_allowed(k, allowed, sizeof allowed));
        fprintf(f, "  %-22s %s\n", "", k->help);
    }
    fprintf(
        f,
        "\n  --format csv|table     csv: solver,tau,samples,omega11,psi11,omega12,trace,overlap,loss, one row\n"
        "                         per solver and record, summaries on stderr; table: aligned [table];\n"
        "                         with token_corr, index or outputs set (or a goe_mean teacher) a column\n"
        "                         mu = Tr S/sqrt(d) follows loss, and the summaries give mu_final, mu_star\n"
        "\n  --cost-limit H         refuse a point whose estimated cost (the nominal model of\n"
        "                         aimsweep plan) is above H hours of one core [%g]; --force runs it anyway.\n"
        "                         An estimate above a minute is printed on stderr before the run starts.\n"
        "\n  Each flag once. Exit status 0, 1 when a solver failed, 2 for a bad flag or value.\n",
        SINGLE_COST_LIMIT_H);
}

static void num(FILE *f, const char *sep, double x)
{
    char b[TEXT_DOUBLE_MAX];
    text_double(x, b, sizeof b);
    fprintf(f, "%s%s", sep, b);
}

/* The mean matters (docs/model.md §10): the csv's mu column and the summaries' mu_final, mu_star; kept
 * out of the special case so that its csv is as it was. */
static int with_mu(const struct params *p)
{
    return params_general_index(p) || p->teacher.kind == TEACHER_GOE_MEAN;
}

static void print_summary(FILE *f, const struct params *p, const struct task_result *r,
                          const char *prefix)
{
    for (int i = 0; i < r->nsolvers; i++) {
        const struct solver_summary *s = &r->sum[i];
        const struct traj *t = &r->traj[i];
        fprintf(f, "%ssolver=%s status=%s", prefix, obs_solver_name(s->solver),
                run_status_name(s->status));
        if (s->tau_wr >= 0) {
            num(f, " tau_wr=", s->tau_wr);
            num(f, " samples_wr=", s->samples_wr);
        } else
            fprintf(f, " tau_wr=none");
        num(f, " final_overlap=", s->final_overlap);
        num(f, " final_loss=", s->final_loss);
        if (s->max_gap_to_sgd >= 0)
            num(f, " max_gap_to_sgd=", s->max_gap_to_sgd);
        if (t->diverged_at_samples >= 0)
            num(f, " stopped_at_samples=", round(t->diverged_at_samples));
        if (with_mu(p)) {
            num(f, " mu_final=", t->n ? t->rows[t->n - 1].mu : NAN);
            num(f, " mu_star=", s->mu_star);
        }
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
    int csv = 0, force = 0;
    double limit_h = SINGLE_COST_LIMIT_H;
    char err[512];
    struct cli_seen seen = {0};
    const char *known[64];
    int nk = 0;
    for (int i = 0; params_keys[i] && nk < 60; i++)
        known[nk++] = params_keys[i];
    known[nk++] = "format";
    known[nk++] = "cost-limit";
    known[nk++] = "force";
    known[nk++] = "help";
    known[nk] = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            single_usage(stdout);
            return 0;
        }
        if (cli_nonempty("single", "argument", a))
            return 2;
        if (strncmp(a, "--", 2) != 0)
            return cli_unknown("single", a, known);
        if (!strcmp(a, "--force")) {
            if (cli_once(&seen, "single", "force"))
                return 2;
            force = 1;
            continue;
        }
        char key[64];
        const char *val, *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (kl == 0 || kl >= sizeof key) {
            fprintf(stderr,
                    "aimsweep single: bad flag '%s' (flags are --key value or --key=value)\n", a);
            return 2;
        }
        memcpy(key, a + 2, kl);
        key[kl] = 0;
        if (strcmp(key, "format") != 0 && strcmp(key, "cost-limit") != 0 && !params_is_key(key))
            return cli_unknown("single", a, known);
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            val = argv[++i];
        else {
            const struct params_key_info *k = params_key_info(key);
            char allowed[160];
            fprintf(stderr, "aimsweep single: flag --%s needs a value (%s)\n", key,
                    k ? params_allowed(k, allowed, sizeof allowed) : "csv or table");
            return 2;
        }
        if (cli_once(&seen, "single", key))
            return 2;
        if (!strcmp(key, "format")) {
            if (!strcmp(val, "csv"))
                csv = 1;
            else if (!strcmp(val, "table"))
                csv = 0;
            else {
                static const char *const formats[] = {"csv", "table", NULL};
                char hint[64] = "";
                text_suggest(hint, sizeof hint, val, formats);
                fprintf(stderr, "aimsweep single: --format: '%s' is not csv or table%s\n", val,
                        hint);
                return 2;
            }
            continue;
        }
        if (!strcmp(key, "cost-limit")) {
            char *end = NULL;
            limit_h = strtod(val, &end);
            if (end == val || *end || !(limit_h > 0 && limit_h <= 1e9)) {
                fprintf(
                    stderr,
                    "aimsweep single: --cost-limit: '%s' is not a number of hours in (0, 1e9]\n",
                    val);
                return 2;
            }
            continue;
        }
        if (params_set(&p, key, val, err, sizeof err)) {
            fprintf(stderr, "aimsweep single: %s\n", err);
            return 2;
        }
    }
    if (worker_check(&p, err, sizeof err)) {
        fprintf(stderr, "aimsweep single: %s\n", err);
        return 2;
    }
    if (worker_ignored(&p, err, sizeof err))
        fprintf(stderr, "aimsweep single: note: %s\n", err);
    double est = task_cost(&p);
    char dur[64];
    cli_duration(est, dur, sizeof dur);
    if (est > limit_h * 3600 && !force) {
        fprintf(
            stderr,
            "aimsweep single: this point is estimated at %s of one core (the nominal cost model of"
            " aimsweep plan), more than the limit of %g h: shorten it (--tau-end, --d, --lr,"
            " --solvers) or run it anyway with --force (--cost-limit H sets the limit)\n",
            dur, limit_h);
        return 2;
    }
    if (est > SINGLE_SAY_COST_S)
        fprintf(stderr, "aimsweep single: estimated %s of one core (the nominal model of plan)\n",
                dur);
    struct task_result res;
    if (worker_run(&p, &res, NULL, NULL)) {
        fprintf(stderr, "aimsweep single: out of memory\n");
        return 1;
    }
    if (csv) {
        int nv = with_mu(&p) ? 9 : 8;
        printf("solver,tau,samples,omega11,psi11,omega12,trace,overlap,loss%s\n",
               nv == 9 ? ",mu" : "");
        for (int i = 0; i < res.nsolvers; i++)
            for (int k = 0; k < res.traj[i].n; k++) {
                const struct obs_row *r = &res.traj[i].rows[k];
                const double v[9] = {r->tau,   round(r->samples), r->omega11, r->psi11, r->omega12,
                                     r->trace, r->overlap,        r->loss,    r->mu};
                fputs(obs_solver_name(res.traj[i].solver), stdout);
                for (int j = 0; j < nv; j++)
                    num(stdout, ",", v[j]);
                fputc('\n', stdout);
            }
        print_summary(stderr, &p, &res, "# ");
    } else {
        char canon[2048];
        params_canonical(&p, canon, sizeof canon);
        printf("# %s\n", canon);
        printf("%-6s %10s %12s %10s %10s %10s %10s %10s %10s\n", "solver", "tau", "samples",
               "omega11", "psi11", "omega12", "trace", "overlap", "loss");
        for (int i = 0; i < res.nsolvers; i++)
            for (int k = 0; k < res.traj[i].n; k++) {
                const struct obs_row *r = &res.traj[i].rows[k];
                printf("%-6s %10.4g %12.0f %10.5g %10.5g %10.5g %10.5g %10.5g %10.5g\n",
                       obs_solver_name(res.traj[i].solver), r->tau, r->samples, r->omega11,
                       r->psi11, r->omega12, r->trace, r->overlap, r->loss);
            }
        print_summary(stdout, &p, &res, "");
    }
    int bad = 0;
    for (int i = 0; i < res.nsolvers; i++)
        bad |= res.traj[i].status == RUN_ERROR;
    worker_result_free(&res);
    return bad ? 1 : 0;
}
