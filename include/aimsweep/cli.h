/*
 * cli.h: the subcommands. Each takes its own argv (argv[0] is the command name) and returns
 * the process exit code: 0 success, 1 failure while running, 2 bad usage or input.
 */
#ifndef AIMSWEEP_CLI_H
#define AIMSWEEP_CLI_H

int cli_single(int argc, char **argv);
int cli_bench(int argc, char **argv);

#endif
