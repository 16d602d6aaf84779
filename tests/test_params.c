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
    const char *bad[][2] = {{"decomposition", "diagonal"}, {"activation", "h7"}, {"activation", "sigmoid"},
                            {"activation", "softmax(-1)"}, {"activation", "hermite(0,0"},
                            {"activation", "hermite(1)"}, {"teacher", "wishart(0)"}, {"teacher", "gue"},
                            {"d", "12.5"}, {"d", "abc"}, {"lr", "fast"}, {"lr", "nan"},
                            {"solvers", "sgd,mcmc"}, {"closure", "exact"}, {"ode_noise", "maybe"},
                            {"colour", "red"}, {"seed", "-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        params_default(&c);
        err[0] = 0;
        CHECK(params_set(&c, bad[i][0], bad[i][1], err, sizeof err) != 0 && err[0],
              "%s=%s accepted", bad[i][0], bad[i][1]);
    }
    const char *invalid[][2] = {{"d", "0"}, {"d", "-5"}, {"lr", "-0.1"}, {"lr", "0"}, {"tokens", "1"},
                                {"tau_end", "0"}, {"records", "0"}, {"width", "0"},
                                {"recovery_threshold", "1.5"}, {"order_m", "0"}, {"weight_decay", "-1"}};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        params_default(&c);
        CHECK(set(&c, invalid[i][0], invalid[i][1]) == 0, "%s parse", invalid[i][0]);
        err[0] = 0;
        CHECK(params_validate(&c, err, sizeof err) != 0 && err[0], "%s=%s valid", invalid[i][0], invalid[i][1]);
    }
    params_default(&c);
    set(&c, "decomposition", "untied");
    set(&c, "closure", "spectral");
    CHECK(params_validate(&c, err, sizeof err) != 0, "spectral for untied accepted");
    /* precision: default double, left out of the canonical text (task ids of earlier points
     * unchanged); single is in it, so it is another task */
    {
        char c0[2048], c1[2048], v[32];
        params_default(&c);
        params_canonical(&c, c0, sizeof c0);
        uint64_t id0 = params_task_id(&c);
        CHECK(!strstr(c0, "precision") && c.precision == PRECISION_DOUBLE, "default precision in the canonical text: %s", c0);
        CHECK(set(&c, "precision", "double") == 0 && params_task_id(&c) == id0, "precision=double changes the task id");
        CHECK(set(&c, "precision", "single") == 0 && c.precision == PRECISION_SINGLE, "precision=single not parsed");
        params_canonical(&c, c1, sizeof c1);
        CHECK(strstr(c1, ";precision=single") && params_task_id(&c) != id0, "single not in the canonical text: %s", c1);
        CHECK(params_get(&c, "precision", v, sizeof v) > 0 && !strcmp(v, "single"), "params_get precision: %s", v);
        err[0] = 0;
        CHECK(params_set(&c, "precision", "half", err, sizeof err) != 0 && err[0], "precision=half accepted");
    }
    return check_done("test_params");
}
