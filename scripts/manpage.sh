#!/usr/bin/env bash
# Writes the man page aimsweep(1) to stdout from the binary's own help: `aimsweep --help` and
# `aimsweep COMMAND --help` for each command it lists, so that the page and --help cannot
# disagree. The build runs it (build/aimsweep.1); `cmake --install` puts the page in
# PREFIX/share/man/man1.
# usage: scripts/manpage.sh BUILD/aimsweep > aimsweep.1
set -euo pipefail
bin=$1
# in a sanitizer build, `run --help` starts MPI, whose allocations LeakSanitizer reports at exit:
# the page needs the help text, not the leak check (the tests make that)
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# roff: backslashes and hyphens escaped, a line starting with . or ' kept as text
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
version=$("$bin" --version | awk '{print $2}')
general=$("$bin" --help)
commands=$(printf '%s\n' "$general" | awk '/^  [a-z]+ +[a-zA-Z(]/ && !seen[$1]++ {print $1}')
cat <<HEAD
.TH AIMSWEEP 1 "" "aimsweep $version" "User Commands"
.SH NAME
aimsweep \\- sweeps of attention\\-indexed teacher\\-student learning: online SGD, the population flow and the moment ODE, stored in SQLite
.SH SYNOPSIS
.B aimsweep
.I COMMAND
.RI [ options ]
.br
.B aimsweep help
.I COMMAND
.br
.B mpirun \\-n
.I N
.B aimsweep run
.I SWEEP.yaml
.B \\-\\-db
.I FILE
.SH DESCRIPTION
For each point of a grid (decomposition, activation, dimension, learning rate, init scale and
fixed settings) aimsweep runs online SGD of an attention\\-indexed teacher\\-student model, the
population flow and the order\\-M truncated moment ODE, and stores every trajectory in one SQLite
database. The model, its parameters and every database column are explained in
share/doc/aimsweep/model.md; the other pages there cover sweep files, operations, clusters and the
database.
.PP
.nf
HEAD
printf '%s\n' "$general" | esc
echo ".fi"
echo ".SH COMMANDS"
for c in $commands; do
    echo ".SS aimsweep $c"
    echo ".nf"
    "$bin" "$c" --help 2>&1 | esc
    echo ".fi"
done
cat <<'TAIL'
.SH FILES
.TP
.I DB.log
rank 0's log of a run, appended to beside the database
.TP
.I DB.ckpt/
checkpoints of running SGD and flow tasks
.TP
.I share/aimsweep/sweeps, share/aimsweep/jobs, share/aimsweep/analysis
example sweep files, Slurm job scripts, the plotting scripts
.SH SEE ALSO
.BR mpirun (1),
.BR sbatch (1),
.BR sqlite3 (1)
TAIL
