/*
 * cli_scripts.c: `aimsweep figures` and `aimsweep report`, which run the Python scripts of
 * analysis/ (figures.py, report.py) with the system's Python, so that an installed aimsweep can
 * plot. The scripts are looked for next to the binary (PREFIX/share/aimsweep/analysis when
 * installed), then in the source tree the binary was built from.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aimsweep/cli/cli.h"

#ifndef AIMSWEEP_SOURCE_DIR
#define AIMSWEEP_SOURCE_DIR "."
#endif

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* PATH gets DIR/SCRIPT for the first analysis directory that holds SCRIPT; -1 when none does. */
static int find_script(const char *script, char *path, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(path, len, "%s/../share/aimsweep/analysis/%s", exe, script) < (int)len &&
                is_file(path))
                return 0;
        }
    }
    if (snprintf(path, len, "%s/analysis/%s", AIMSWEEP_SOURCE_DIR, script) < (int)len &&
        is_file(path))
        return 0;
    return -1;
}

/* The interpreter: $AIMSWEEP_PYTHON, else Debian's /usr/bin/python3 (where numpy and matplotlib
 * are installed as packages), else python3 on PATH. */
static const char *python(void)
{
    const char *p = getenv("AIMSWEEP_PYTHON");
    if (p && *p)
        return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

static int run_script(const char *cmd, const char *script, const char *what, int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f,
                "usage: aimsweep %s DB --out DIR [options of analysis/%s]\n"
                "  %s\n"
                "  Runs analysis/%s (installed: PREFIX/share/aimsweep/analysis) with\n"
                "  $AIMSWEEP_PYTHON, else /usr/bin/python3; `aimsweep %s DB --help-script`\n"
                "  prints the script's own options. Needs numpy and matplotlib (Debian:\n"
                "  python3-numpy python3-matplotlib python3-pandas).\n",
                cmd, script, what, script, cmd);
        return argc < 2 ? 2 : 0;
    }
    char path[PATH_MAX + 64];
    if (find_script(script, path, sizeof path)) {
        fprintf(stderr,
                "aimsweep %s: analysis/%s not found next to the binary "
                "(../share/aimsweep/analysis) nor in %s/analysis; install with cmake --install\n",
                cmd, script, AIMSWEEP_SOURCE_DIR);
        return 2;
    }
    const char *py = python();
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) {
        fprintf(stderr, "aimsweep %s: out of memory\n", cmd);
        return 1;
    }
    args[0] = (char *)py;
    args[1] = path;
    for (int i = 1; i < argc; i++)
        args[i + 1] = strcmp(argv[i], "--help-script") ? argv[i] : "--help";
    fflush(NULL);
    execvp(py, args);
    fprintf(stderr,
            "aimsweep %s: cannot run %s: %s (set AIMSWEEP_PYTHON to a Python 3 with "
            "numpy and matplotlib)\n",
            cmd, py, strerror(errno));
    free(args);
    return 1;
}

int cli_figures(int argc, char **argv)
{
    return run_script("figures", "figures.py", "every figure the database supports (PNG, PDF)",
                      argc, argv);
}

int cli_report(int argc, char **argv)
{
    return run_script("report", "report.py",
                      "one self-contained HTML page of the study (DIR/index.html)", argc, argv);
}
