#!/bin/sh
# A 12-point sweep with NP ranks: fills the database with the same rows as a serial run,
# a rerun does nothing, and an overlapping sweep runs only its new points.
# usage: sweep_mpi.sh NP WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR)
set -u
NP=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=$SRCDIR/tests/tiny.yaml

"$AIMSWEEP" run "$SWEEP" --db "$W/serial.db" --quiet || fail "serial run"
launch "$NP" run "$SWEEP" --db "$W/mpi.db" || fail "run on $NP ranks"
[ "$(q "$W/mpi.db" "SELECT count(*) FROM tasks WHERE status = 'done'")" = 12 ] || fail "not 12 done tasks"
[ "$(q "$W/mpi.db" "SELECT count(*) FROM summary")" = 36 ] || fail "not 36 summary rows"
[ "$(q "$W/mpi.db" "SELECT count(*) FROM trajectory")" = 216 ] || fail "not 216 trajectory rows"
[ "$(q "$W/mpi.db" "SELECT ranks FROM sweeps")" = "$([ "$NP" -eq 0 ] && echo 1 || echo "$NP")" ] || fail "ranks in sweeps"
if [ "$NP" -gt 1 ]; then
    [ "$(q "$W/mpi.db" "SELECT count(*) FROM tasks WHERE rank = 0")" = 0 ] || fail "rank 0 ran tasks with workers present"
fi
rows "$W/serial.db" > "$W/serial.rows"
rows "$W/mpi.db" > "$W/mpi.rows"
cmp -s "$W/serial.rows" "$W/mpi.rows" || fail "rows differ from the serial run's (diff $W/serial.rows $W/mpi.rows)"

# every stored trajectory is what `aimsweep single` prints for the task's canonical parameters
# (an independent path: command-line flags instead of task text sent over MPI)
for id in $(q "$W/mpi.db" "SELECT task_id FROM tasks ORDER BY task_id"); do
    flags=$(q "$W/mpi.db" "SELECT params FROM tasks WHERE task_id = '$id'" | sed 's/^"//; s/"$//' |
            tr ';' '\n' | sed 's/^\([^=]*\)=\(.*\)$/--\1 \2/' | tr '\n' ' ')
    "$AIMSWEEP" single $flags --format csv > "$W/single.all" 2>"$W/single.err" ||
        fail "task $id: aimsweep single $flags: exit $? ($(tail -1 "$W/single.err"))"
    tail -n +2 "$W/single.all" > "$W/single.csv"
    q "$W/mpi.db" "SELECT solver, tau, samples, omega11, psi11, omega12, trace, overlap, loss FROM trajectory
                   WHERE task_id = '$id' ORDER BY CASE solver WHEN 'sgd' THEN 0 WHEN 'flow' THEN 1 ELSE 2 END, k" \
        > "$W/db.csv"
    [ -s "$W/single.csv" ] && [ "$(wc -l < "$W/single.csv")" = "$(wc -l < "$W/db.csv")" ] ||
        fail "task $id: $(wc -l < "$W/single.csv") rows from aimsweep single, $(wc -l < "$W/db.csv") in the database"
    awk -F, 'NR == FNR { a[FNR] = $0; n = FNR; next }
             { split(a[FNR], x, ","); if ($1 != x[1]) bad = 1
               for (i = 2; i <= NF; i++) { d = $i - x[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i]
                                           tol = 1e-8 * s
                                           if (d > tol) bad = 1 } }
             END { exit (bad || n != FNR) }' "$W/single.csv" "$W/db.csv" ||
        fail "task $id: database rows differ from aimsweep single $flags"
done

# export and status read the same database
"$AIMSWEEP" export "$W/mpi.db" --format csv --plain --out "$W/results.csv" || fail "export"
[ "$(wc -l < "$W/results.csv")" = 37 ] || fail "export: not a header and 36 rows"
head -1 "$W/results.csv" | grep -q '^task_id,sweep_id,decomposition,' || fail "export header"
[ "$("$AIMSWEEP" export "$W/mpi.db" --format csv --plain --table trajectory | wc -l)" = 217 ] || fail "export trajectory"
# the default header names each column's unit, then the same rows
"$AIMSWEEP" export "$W/mpi.db" --table trajectory | grep -q '^# tau \[tau\]: ' || fail "export units header"
[ "$("$AIMSWEEP" export "$W/mpi.db" --table trajectory | grep -vc '^#')" = 217 ] || fail "export with units: rows"
"$AIMSWEEP" status "$W/mpi.db" | grep -q "^done  *12 " || fail "status"
"$AIMSWEEP" plan "$SWEEP" --db "$W/mpi.db" | grep -q "to run *0 of 12" || fail "plan with the database"

# rerun: nothing to do, nothing touched
before=$(q "$W/mpi.db" "SELECT task_id, attempts, finished_at FROM tasks ORDER BY task_id")
out=$(launch "$NP" run "$SWEEP" --db "$W/mpi.db" 2>&1) || fail "rerun"
case "$out" in *"12 already in"*"0 to run"*) ;; *) fail "rerun message: $out" ;; esac
after=$(q "$W/mpi.db" "SELECT task_id, attempts, finished_at FROM tasks ORDER BY task_id")
[ "$before" = "$after" ] || fail "rerun changed tasks"
rows "$W/mpi.db" > "$W/mpi2.rows"
cmp -s "$W/mpi.rows" "$W/mpi2.rows" || fail "rerun changed rows"

# an overlapping sweep (d 16 and 20): only the 6 new points run
sed 's/d: \[12, 16\]/d: [16, 20]/; s/name: tiny/name: tiny-overlap/' "$SWEEP" > "$W/overlap.yaml"
out=$(launch "$NP" run "$W/overlap.yaml" --db "$W/mpi.db" 2>&1) || fail "overlapping run"
case "$out" in *"6 already in"*"6 to run"*) ;; *) fail "overlap message: $out" ;; esac
[ "$(q "$W/mpi.db" "SELECT count(*) FROM tasks")" = 18 ] || fail "not 18 tasks after the overlap"
[ "$(q "$W/mpi.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "an attempt counted without a dead job"
[ "$(q "$W/mpi.db" "SELECT count(*) FROM sweep_tasks")" = 36 ] || fail "sweep_tasks links (one sweeps row per run)"
[ "$(q "$W/mpi.db" "SELECT count(DISTINCT sweep_id) FROM tasks")" = 2 ] || fail "tasks.sweep_id names the run that computed it"
[ "$(q "$W/mpi.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check"

echo "$fails failed"
[ $fails -eq 0 ]
