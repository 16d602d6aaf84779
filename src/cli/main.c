/*
 * main.c: the aimsweep command line. It only finds the subcommand and calls its module.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aimsweep/base/text.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/version.h"

/* OpenBLAS (threads would compete with the MPI ranks sharing a node). */
extern void openblas_set_num_threads(int n);

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static const struct command commands[] = {
    {"single", cli_single, "run one grid point and print its trajectories"},
    {"bench", cli_bench, "SGD steps per second against the machine's measured roofline"},
    {"run", cli_run, "run a sweep file into a results database (under mpirun, or serially)"},
    {"plan", cli_plan, "a sweep's grid size, cost estimate, and what a database already holds"},
    {"status", cli_status, "what a results database holds: sweeps and task statuses"},
    {"query", cli_query, "run read-only SQL on a results database (table or csv)"},
    {"export", cli_export, "export a table or view of a results database as csv or json"},
    {"merge", cli_merge, "merge the databases of `run --part I/N` into one study"},
    {"reset", cli_reset, "put the tasks matching an SQL condition back to pending"},
    {"recommend", cli_recommend,
     "per (k, d, lr): the decomposition that recovers in the fewest samples"},
    {"probe", cli_probe, "order parameters and Theorem 1's check of trained attention heads"},
    {"figures", cli_figures, "draw every figure a results database supports (analysis/figures.py)"},
    {"report", cli_report, "write one HTML page of a study (analysis/report.py)"},
};

/* The environment variables aimsweep and its job scripts read (also in the man page, which is
 * made from this output). */
static const char environment[] =
    "environment:\n"
    "  AIMSWEEP_KERNELS=portable|avx2|avx512  force the SGD kernels' instruction set\n"
    "  AIMSWEEP_SYNC=normal     a scratch database: commits not written through to the disk\n"
    "  AIMSWEEP_JOURNAL=wal|delete|...  the database's journal (default: from the file system)\n"
    "  AIMSWEEP_CHECKPOINT_S=S  copy the write-ahead log into the database every S s (10)\n"
    "  AIMSWEEP_QUICK_CHECK_S=S time given to the damage check on open (10; 0: whole file)\n"
    "  AIMSWEEP_PYTHON=PATH     the Python that `figures` and `report` run (/usr/bin/python3)\n"
    "  AIMSWEEP=PATH            the aimsweep binary the job scripts in jobs/ run\n"
    "  AIMSWEEP_JOBS=DIR        where jobs/sweep-array.sbatch finds sweep.sbatch\n"
    "  AIMSWEEP_MAX_CHAIN=N     jobs/sweep.sbatch resubmits at most N jobs in a chain (50)\n"
    "  AIMSWEEP_SBATCH_OPTS=... added to the sbatch line of a resubmission\n"
    "  OPENBLAS_NUM_THREADS=N   BLAS threads per process (default 1: one rank per core)\n";

static void usage(FILE *f)
{
    fprintf(f, "aimsweep %s: sweeps of attention-indexed teacher-student learning\n\n",
            AIMSWEEP_VERSION);
    fprintf(f, "usage: aimsweep COMMAND [options]   (aimsweep COMMAND --help for its options)\n");
    fprintf(f, "       aimsweep --version\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n%s", environment);
    fprintf(
        f, "\nexit status: 0 success, 1 a failure while running, 2 bad input or usage,\n"
           "  3 (run) every task finished and some ended in error, 4 (run) work left: run again\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (!strcmp(argv[1], "help") && argc < 3)) {
        usage(stdout);
        return 0;
    }
    /* The kernels' path, once, before any work: a path AIMSWEEP_KERNELS names that this CPU
     * lacks is the user's error, not a crash in a task. */
    char kerr[256];
    if (kern_choose(kerr, sizeof kerr)) {
        fprintf(stderr, "aimsweep: %s\n", kerr);
        return 2;
    }
    /* aimsweep help CMD is aimsweep CMD --help */
    char help_flag[] = "--help";
    char *help_argv[] = {argv[0], argv[argc > 2 ? 2 : 1], help_flag, NULL};
    if (argc > 2 && !strcmp(argv[1], "help")) {
        argc = 3;
        argv = help_argv;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("aimsweep %s %s\nkernels: %s\n", AIMSWEEP_VERSION, AIMSWEEP_GIT_COMMIT, kern_path());
        return 0;
    }
    /* One BLAS thread per process unless asked otherwise: a sweep runs one rank per core. */
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    const char *names[sizeof commands / sizeof commands[0] + 1];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[i] = commands[i].name;
    names[sizeof commands / sizeof commands[0]] = NULL;
    char hint[64] = "";
    text_suggest(hint, sizeof hint, argv[1], names);
    fprintf(stderr, "aimsweep: unknown command '%s'%s\n", argv[1], hint);
    usage(stderr);
    return 2;
}
