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
};

static void usage(FILE *f)
{
    fprintf(f, "aimsweep %s: sweeps of attention-indexed teacher-student learning\n\n",
            AIMSWEEP_VERSION);
    fprintf(f, "usage: aimsweep COMMAND [options]   (aimsweep COMMAND --help for its options)\n");
    fprintf(f, "       aimsweep --version\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
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
