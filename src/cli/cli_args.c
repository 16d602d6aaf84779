/*
 * cli_args.c: duplicate, empty and unknown flags for every subcommand (args.h).
 */
#include "aimsweep/cli/args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "aimsweep/base/text.h"

static int silent;

void cli_args_silence(int on) { silent = on; }

void cli_say(const char *fmt, ...)
{
    if (silent)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static int same_flag(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
            return 0;
    return *a == *b;
}

int cli_once(struct cli_seen *s, const char *cmd, const char *flag)
{
    for (int i = 0; i < s->n; i++)
        if (same_flag(s->names[i], flag)) {
            cli_say("aimsweep %s: flag --%s given twice; give each flag once\n", cmd, flag);
            return -1;
        }
    if (s->n < CLI_MAX_FLAGS)
        snprintf(s->names[s->n++], sizeof s->names[0], "%s", flag);
    return 0;
}

int cli_unknown(const char *cmd, const char *arg, const char *const *known)
{
    char hint[96] = "";
    const char *w = arg;
    while (*w == '-')
        w++;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(w, "="), w);
    const char *c = text_closest(name, known);
    if (c) {
        snprintf(hint, sizeof hint, " (did you mean --%s?)", c);
        for (char *h = hint; *h; h++)
            if (*h == '_')
                *h = '-'; /* flags are written with dashes */
    }
    if (arg[0] == '-')
        cli_say("aimsweep %s: unknown flag '%s'%s; see aimsweep %s --help\n", cmd, arg, hint, cmd);
    else
        cli_say("aimsweep %s: unexpected argument '%s'%s; see aimsweep %s --help\n", cmd, arg, hint,
                cmd);
    return 2;
}

int cli_nonempty(const char *cmd, const char *what, const char *arg)
{
    if (arg && *arg)
        return 0;
    cli_say("aimsweep %s: empty %s; an empty argument is never a valid value\n", cmd, what);
    return 2;
}

void cli_duration(double s, char *buf, size_t n)
{
    if (s < 120)
        snprintf(buf, n, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.1f min", s / 60);
    else if (s < 2.0 * 365.25 * 86400)
        snprintf(buf, n, "%.1f h", s / 3600);
    else
        snprintf(buf, n, "%.3g h (%.3g years)", s / 3600, s / (365.25 * 86400));
}
