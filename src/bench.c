/*
 * bench.c: `aimsweep bench`: placeholder until the benchmark lands.
 */
#include <stdio.h>

#include "aimsweep/cli.h"

int cli_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "aimsweep bench: not built yet\n");
    return 1;
}
