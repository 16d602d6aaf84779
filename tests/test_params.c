/* Parameters: parsing, validation, canonical text and task ids. */
#include <string.h>

#include "aimsweep/base/params.h"
#include "check.h"

static int set(struct params *p, const char *k, const char *v)
{
    char err[256];
    return params_set(p, k, v, err, sizeof err);
}

int main(void)
{
    struct params a, b;
    char err[256], ca[2048], cb[2048];
    params_default(&a);
    CHECK(params_validate(&a, err, sizeof err) == 0, "defaults invalid: %s", err);

    /* Two spellings of one point are one task. */
    params_default(&b);
    CHECK(set(&a, "lr", "0.050") == 0 && set(&b, "lr", "5e-2") == 0, "lr parse");
    CHECK(set(&a, "init_scale", "0.7") == 0 && set(&b, "init-scale", "7e-1") == 0, "init_scale");
    CHECK(set(&a, "activation", "h2") == 0 && set(&b, "activation", "hermite(0,0,1)") == 0, "act");
    params_canonical(&a, ca, sizeof ca);
    params_canonical(&b, cb, sizeof cb);
    CHECK(strcmp(ca, cb) == 0, "canonical differs:\n%s\n%s", ca, cb);
    CHECK(params_task_id(&a) == params_task_id(&b), "task ids differ");
    set(&b, "seed", "2");
    CHECK(params_task_id(&a) != params_task_id(&b), "seed not in the task id");

    /* Canonical text round-trips through params_set. */
    struct params c;
    params_default(&c);
    set(&a, "teacher", "goe_shift(0.25)");
    set(&a, "activation", "hermite(0.5,1,0,-0.25)");
    set(&a, "solvers", "sgd,ode");
    set(&a, "log_grid", "on");
    params_canonical(&a, ca, sizeof ca);
    char buf[2048];
    strcpy(buf, ca);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        CHECK(params_set(&c, tok, eq + 1, err, sizeof err) == 0, "round trip %s: %s", tok, err);
    }
    params_canonical(&c, cb, sizeof cb);
    CHECK(strcmp(ca, cb) == 0, "round trip:\n%s\n%s", ca, cb);
    CHECK(params_info_exponent(&a.activation) == 1, "info exponent of hermite(0.5,1,...)");
    set(&a, "activation", "h3");
    CHECK(params_info_exponent(&a.activation) == 3, "info exponent h3");

    /* Bad values and keys are refused with a message. */
    const char *bad[][2] = {{"decomposition", "diagonal"},
                            {"activation", "h7"},
                            {"activation", "sigmoid"},
                            {"activation", "softmax(-1)"},
                            {"activation", "hermite(0,0"},
                            {"activation", "hermite(1)"},
                            {"teacher", "wishart(0)"},
                            {"teacher", "gue"},
                            {"d", "12.5"},
                            {"d", "abc"},
                            {"lr", "fast"},
                            {"lr", "nan"},
                            {"solvers", "sgd,mcmc"},
                            {"closure", "exact"},
                            {"ode_noise", "maybe"},
                            {"colour", "red"},
                            {"seed", "-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        params_default(&c);
        err[0] = 0;
        CHECK(params_set(&c, bad[i][0], bad[i][1], err, sizeof err) != 0 && err[0],
              "%s=%s accepted", bad[i][0], bad[i][1]);
    }
    /* Out-of-range values are refused where they are read, with the range in the message, and
     * params_validate refuses them in a struct filled by code. */
    const char *invalid[][3] = {{"d", "0", "from 2 to"},
                                {"d", "-5", "from 2 to"},
                                {"lr", "-0.1", "(0, 1000]"},
                                {"lr", "0", "(0, 1000]"},
                                {"tokens", "1", "from 2 to 16"},
                                {"tau_end", "0", "[1e-09, 1000000]"},
                                {"records", "0", "from 1 to"},
                                {"width", "0", "(0, 4]"},
                                {"recovery_threshold", "1.5", "(0, 1]"},
                                {"order_m", "0", "from 1 to 16"},
                                {"weight_decay", "-1", "[0, 1000]"},
                                {"seed", "-1", "from 0 to"}};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        params_default(&c);
        err[0] = 0;
        CHECK(params_set(&c, invalid[i][0], invalid[i][1], err, sizeof err) != 0 &&
                  strstr(err, invalid[i][2]),
              "%s=%s: '%s' without '%s'", invalid[i][0], invalid[i][1], err, invalid[i][2]);
    }
    params_default(&c);
    c.d = 1;
    CHECK(params_validate(&c, err, sizeof err) != 0 && strstr(err, "d = 1"), "d = 1 in code: %s",
          err);
    params_default(&c);
    c.recovery_threshold = 0;
    CHECK(params_validate(&c, err, sizeof err) != 0 && strstr(err, "(0, 1]"),
          "threshold 0 in code: %s", err);

    /* Messages name the allowed values and the closest one. */
    params_default(&c);
    params_set(&c, "decomposition", "Tied", err, sizeof err);
    CHECK(strstr(err, "direct | tied | untied") && strstr(err, "did you mean 'tied'"), "%s", err);
    params_set(&c, "solvers", "sgd,flw", err, sizeof err);
    CHECK(strstr(err, "did you mean 'flow'"), "%s", err);
    params_set(&c, "decompositon", "tied", err, sizeof err);
    CHECK(strstr(err, "did you mean 'decomposition'"), "%s", err);
    params_set(&c, "closure", "flatt", err, sizeof err);
    CHECK(strstr(err, "did you mean 'flat'"), "%s", err);
    params_set(&c, "teacher", "wishar(0.5)", err, sizeof err);
    CHECK(strstr(err, "did you mean 'wishart'"), "%s", err);
    CHECK(params_set(&c, "activation", "softmax()", err, sizeof err) != 0, "softmax() accepted");
    CHECK(params_set(&c, "solvers", "sgd,sgd", err, sizeof err) != 0, "sgd twice accepted");
    CHECK(params_set(&c, "solvers", "sgd,,flow", err, sizeof err) != 0, "empty solver accepted");
    CHECK(params_set(&c, "lr", "", err, sizeof err) != 0 && strstr(err, "empty"), "empty lr: %s",
          err);

    /* The parameter table has one row per key, in canonical order, each with its meaning. */
    int nk = 0;
    for (; params_keys[nk]; nk++) {
        CHECK(params_info[nk].key && !strcmp(params_info[nk].key, params_keys[nk]),
              "row %d is not %s", nk, params_keys[nk]);
        CHECK(params_info[nk].key && params_info[nk].help && strlen(params_info[nk].help) > 10,
              "row %d: no help", nk);
    }
    CHECK(params_info[nk].key == NULL, "the table has rows beyond params_keys");

    /* log_grid takes a start. */
    params_default(&c);
    CHECK(set(&c, "log_grid", "1e-4") == 0 && c.log_grid && c.log_start == 1e-4, "log_grid start");
    params_get(&c, "log_grid", buf, sizeof buf);
    CHECK(!strcmp(buf, "0.0001"), "log_grid text %s", buf);
    CHECK(set(&c, "log_grid", "-1") != 0, "negative log start accepted");
    set(&c, "log_grid", "0.6"); /* above the default tau_end 0.5 */
    CHECK(params_validate(&c, err, sizeof err) != 0, "log start above tau_end accepted");
    /* a number is a start (1 is tau = 1, not on), 0 is off, the words are on and off */
    CHECK(set(&c, "log_grid", "1") == 0 && c.log_grid && c.log_start == 1,
          "log_grid 1 is not a start");
    CHECK(set(&c, "log_grid", "0") == 0 && !c.log_grid && c.log_start == 0,
          "log_grid 0 is not off");
    CHECK(set(&c, "log_grid", "yes") == 0 && c.log_grid && c.log_start == 0,
          "log_grid yes is not on");
    CHECK(set(&c, "log_grid", "off") == 0 && !c.log_grid, "log_grid off is not off");

    params_default(&c);
    set(&c, "decomposition", "untied");
    set(&c, "closure", "spectral");
    CHECK(params_validate(&c, err, sizeof err) != 0, "spectral for untied accepted");

    /* docs/model.md §10-11: at their defaults the new keys are absent from the canonical text, so
     * the id of a point from before them is unchanged (this literal is the canonical text of
     * the defaults as every earlier build wrote it); set, they appear and round-trip. */
    params_default(&c);
    params_canonical(&c, ca, sizeof ca);
    CHECK(
        !strcmp(
            ca,
            "decomposition=tied;activation=h1;d=100;lr=0.05;init_scale=0.7;"
            "tokens=2;teacher=wishart(0.5);width=1;weight_decay=0;tau_end=0.5;records=20;log_grid=off;"
            "seed=1;solvers=sgd,flow;recovery_threshold=0.5;order_m=4;closure=auto;ode_noise=off"),
        "default canonical text changed: %s", ca);
    uint64_t id0 = params_task_id(&c);
    CHECK(set(&c, "token_corr", "-0") == 0 && set(&c, "index", "centred") == 0 &&
              set(&c, "outputs", "offdiag") == 0 && set(&c, "ode_mean", "stiff") == 0 &&
              set(&c, "lr_schedule", "constant") == 0,
          "defaults spelled out");
    CHECK(params_task_id(&c) == id0, "a default spelled out changes the id");
    set(&c, "decomposition", "untied");
    CHECK(set(&c, "token-corr", "0.3") == 0 && set(&c, "index", "uncentred") == 0 &&
              set(&c, "outputs", "all") == 0 && set(&c, "teacher", "goe_mean(1.5)") == 0 &&
              set(&c, "ode_mean", "slaved") == 0,
          "general index keys");
    CHECK(params_validate(&c, err, sizeof err) == 0, "untied uncentred all: %s", err);
    params_canonical(&c, ca, sizeof ca);
    CHECK(strstr(ca, ";token_corr=0.3;index=uncentred;outputs=all;ode_mean=slaved") &&
              strstr(ca, "teacher=goe_mean(1.5)"),
          "canonical text of the general index: %s", ca);
    struct params e;
    params_default(&e);
    strcpy(buf, ca);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        CHECK(params_set(&e, tok, eq + 1, err, sizeof err) == 0, "round trip %s: %s", tok, err);
    }
    params_canonical(&e, cb, sizeof cb);
    CHECK(!strcmp(ca, cb), "general round trip:\n%s\n%s", ca, cb);
    CHECK(set(&c, "lr_schedule", "two_phase(0.5,2)") == 0 && c.lr_schedule.kind == LR_TWO_PHASE &&
              c.lr_schedule.eta1 == 0.5 && c.lr_schedule.t_switch == 2,
          "two_phase parse");
    const char *bad2[][2] = {{"index", "middle"},
                             {"outputs", "diag"},
                             {"init", "uniform"},
                             {"ode_mean", "fast"},
                             {"lr_schedule", "two_phase(1)"},
                             {"lr_schedule", "cosine"},
                             {"token_corr", "x"},
                             {"teacher", "goe_mean"}};
    for (size_t i = 0; i < sizeof bad2 / sizeof bad2[0]; i++) {
        params_default(&c);
        err[0] = 0;
        CHECK(params_set(&c, bad2[i][0], bad2[i][1], err, sizeof err) != 0 && err[0],
              "%s=%s accepted", bad2[i][0], bad2[i][1]);
    }
    /* combinations that cannot hold (docs/model.md §10-11) */
    const char *combos[][3][2] = {
        {{"token_corr", "1"}, {"decomposition", "direct"}, {"d", "10"}},
        {{"token_corr", "-0.1"}, {"decomposition", "direct"}, {"d", "10"}},
        {{"index", "uncentred"}, {"decomposition", "tied"}, {"d", "10"}},
        {{"outputs", "all"}, {"activation", "softmax(1)"}, {"d", "10"}},
        {{"init_trace", "0.5"}, {"decomposition", "untied"}, {"d", "10"}},
        {{"init", "orthogonal"}, {"decomposition", "direct"}, {"d", "10"}},
        {{"init", "orthogonal"}, {"decomposition", "tied"}, {"width", "1.5"}},
        {{"lr_schedule", "two_phase(0,1)"}, {"decomposition", "direct"}, {"d", "10"}},
        {{"teacher", "goe_mean(4)"}, {"decomposition", "direct"}, {"d", "10"}},
    };
    for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++) {
        /* refused when set (a value out of its range) or when validated (a combination) */
        params_default(&c);
        int refused = 0;
        for (int j = 0; j < 3; j++)
            refused |= set(&c, combos[i][j][0], combos[i][j][1]) != 0;
        err[0] = 0;
        if (!refused)
            refused = params_validate(&c, err, sizeof err) != 0 && err[0];
        CHECK(refused, "combination %zu (%s=%s) accepted", i, combos[i][0][0], combos[i][0][1]);
    }
    /* precision: default double, left out of the canonical text (task ids of earlier points
     * unchanged); single is in it, so it is another task */
    {
        char c0[2048], c1[2048], v[32];
        params_default(&c);
        params_canonical(&c, c0, sizeof c0);
        uint64_t id0 = params_task_id(&c);
        CHECK(!strstr(c0, "precision") && c.precision == PRECISION_DOUBLE,
              "default precision in the canonical text: %s", c0);
        CHECK(set(&c, "precision", "double") == 0 && params_task_id(&c) == id0,
              "precision=double changes the task id");
        CHECK(set(&c, "precision", "single") == 0 && c.precision == PRECISION_SINGLE,
              "precision=single not parsed");
        params_canonical(&c, c1, sizeof c1);
        CHECK(strstr(c1, ";precision=single") && params_task_id(&c) != id0,
              "single not in the canonical text: %s", c1);
        CHECK(params_get(&c, "precision", v, sizeof v) > 0 && !strcmp(v, "single"),
              "params_get precision: %s", v);
        err[0] = 0;
        CHECK(params_set(&c, "precision", "half", err, sizeof err) != 0 && err[0],
              "precision=half accepted");
    }
    return check_done("test_params");
}
