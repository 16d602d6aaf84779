/*
 * args.h: what every subcommand does with its command line: a flag given twice is refused, an
 * empty argument is refused, and an unknown flag gets the closest known one as a suggestion.
 * Messages go to stderr as "aimsweep CMD: ..." and the caller exits with status 2.
 */
#ifndef AIMSWEEP_CLI_ARGS_H
#define AIMSWEEP_CLI_ARGS_H

#include <stddef.h>

/* The flags seen so far on one command line (their names without "--"). */
#define CLI_MAX_FLAGS 64
struct cli_seen {
    char names[CLI_MAX_FLAGS][48];
    int n;
};

/* Records flag (without "--", dashes and underscores alike); returns 0, or -1 after printing
 * "flag --X given twice" when it was seen before. */
int cli_once(struct cli_seen *s, const char *cmd, const char *flag);

/* Prints "unknown flag 'ARG'" with a suggestion from known (names without "--",
 * NULL-terminated) and a pointer to --help. Always returns 2. */
int cli_unknown(const char *cmd, const char *arg, const char *const *known);

/* With on = 1 the functions here print nothing (MPI ranks other than 0 parse the same command
 * line silently); cli_say prints like fprintf(stderr, ...) unless silenced. */
void cli_args_silence(int on);
void cli_say(const char *fmt, ...);

/* Refuses an empty argument (argv[i] == ""): prints and returns 2, else 0. */
int cli_nonempty(const char *cmd, const char *what, const char *arg);

/* A duration for people into buf: seconds, minutes, hours or years. */
void cli_duration(double s, char *buf, size_t n);

#endif
