/*
 * cli.h: the subcommands. Each takes its own argv (argv[0] is the command name) and returns
 * the process exit code: 0 success, 1 failure while running, 2 bad usage or input; `run` also 3
 * when every task finished and some ended in error (cli_run.h).
 */
#ifndef AIMSWEEP_CLI_H
#define AIMSWEEP_CLI_H

#include <stdio.h>

#include <sqlite3.h>

int cli_single(int argc, char **argv);
int cli_bench(int argc, char **argv);

/* The sweep harness: run a sweep under MPI or serially (cli_run.c, cli_run_sweep.c), and
 * plan one (cli_plan.c). */
/* cli_run initialises and finalises MPI: collective over MPI_COMM_WORLD (every rank of the job
 * calls it). An MPI failure is reported with the failed call, and ends the job (MPI_Abort)
 * with exit code 1 when other ranks may be waiting. cli_plan uses no MPI. */
int cli_run(int argc, char **argv);
int cli_plan(int argc, char **argv);

/* Reading a results database (cli_db.c): status, SQL queries, CSV export. No MPI; single,
 * bench and these are not collective. */
int cli_status(int argc, char **argv);
int cli_query(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_merge(int argc, char **argv);
int cli_reset(int argc, char **argv);

/* Runs one SQL statement on db and prints its rows to f: an aligned table, or csv when csv is
 * nonzero, with a header line when header is nonzero. Returns 0, or -1 with the SQLite
 * message on stderr. */
int cli_print_query(sqlite3 *db, const char *sql, int csv, int header, FILE *f);

/* `aimsweep recommend` (cli_recommend.c): the decomposition that recovers in the fewest samples. */
int cli_recommend(int argc, char **argv);

/* `aimsweep probe` (cli_probe.c): trained checkpoints' attention heads. */
int cli_probe(int argc, char **argv);

/* `aimsweep figures` and `aimsweep report` (cli_scripts.c): run analysis/figures.py and
 * analysis/report.py with the system's Python; return only on failure (2: no script, 1: no
 * interpreter). */
int cli_figures(int argc, char **argv);
int cli_report(int argc, char **argv);

#endif
