#!/bin/bash
# Operations of `aimsweep run` and the commands around it:
#   exit codes (0 finished, 3 finished with an error or timeout, 4 stopped with work left, 2 bad
#   input); Ctrl-C under mpirun (SIGINT to the terminal's process group: mpirun sends its ranks
#   SIGTERM 1 s later and SIGKILL 1 s after that); SIGTERM after SIGUSR1 cutting a long grace;
#   kill -9 of whole jobs while checkpoints are written every few milliseconds; the ODE point of
#   the issue tracker (stiff, millions of steps) stopped by --task-timeout within its limit;
#   parts (--part I/N) and merge, overlapping, into one study identical to a serial run; reset;
#   a database of schema version 1, migrated.
# usage: sweep_ops.sh WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=$SRCDIR/tests/kill.yaml
NTASK=36
now() { date +%s.%N; }
# descendants PID: PID's children, grandchildren, ...
descendants() {
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}
since() { echo "$(now) - $1" | bc; }

# references: one serial run of the whole sweep
"$AIMSWEEP" run "$SWEEP" --db "$W/ref.db" --quiet
rc=$?
[ $rc -eq 0 ] || fail "reference run: exit $rc, expected 0"
rows "$W/ref.db" >"$W/ref.rows"

# 1. exit code 2: bad input; 4 after a time limit (above in sweep_signal too)
"$AIMSWEEP" run "$SWEEP" --db "$W/x.db" --part 3/2 2>"$W/x.err"
[ $? -eq 2 ] && grep -q "1 <= I <= N" "$W/x.err" || fail "--part 3/2: not refused with exit 2"
"$AIMSWEEP" run "$SWEEP" --db "$W/x.db" --task-timeout -1 2>/dev/null
[ $? -eq 2 ] || fail "--task-timeout -1: not exit 2"

# 2. Ctrl-C under mpirun: SIGINT to mpirun's process group (its ranks are in groups of their own);
# the sweep made 3 times longer (--set tau_end=24, about 1.5 s on two ranks otherwise), so that it
# is still running when the signal arrives, against a serial run of the same
"$AIMSWEEP" run "$SWEEP" --set tau_end=24 --db "$W/ref-int.db" --quiet || fail "reference run (tau_end 24)"
rows "$W/ref-int.db" >"$W/ref-int.rows"
setsid bash -c "$MPIRUN -n 3 '$AIMSWEEP' run '$SWEEP' --set tau_end=24 --db '$W/int.db' --grace 30 2>'$W/int.err'" &
leader=$!
t=0
until [ "$(q "$W/int.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null)" -ge 2 ] 2>/dev/null ||
    [ $t -ge 200 ]; do sleep 0.1; t=$((t + 1)); done
t0=$(now)
kill -INT -- -$leader
wait $leader
dt=$(since "$t0")
echo "ctrl-c: ended $dt s after SIGINT; $(q "$W/int.db" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM tasks GROUP BY status)")"
[ "$(q "$W/int.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "ctrl-c: tasks left running"
grep -q "received from pid" "$W/int.db.log" || fail "ctrl-c: the signal and its sender not logged"
[ "$(q "$W/int.db" "SELECT count(*) FROM sweeps WHERE stop_signal IS NOT NULL")" = 1 ] || fail "ctrl-c: stop not recorded"
launch 2 run "$SWEEP" --set tau_end=24 --db "$W/int.db" --quiet || fail "ctrl-c: the rerun did not finish (exit $?)"
[ "$(q "$W/int.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "ctrl-c: the interrupt counted an attempt"
rows "$W/int.db" | cmp -s - "$W/ref-int.rows" || fail "ctrl-c: rows differ from the serial run"

# 3. SIGTERM after SIGUSR1: the grace (60 s) is cut to --term-grace (2 s), on a task of about 15 s
"$AIMSWEEP" run "$SRCDIR/tests/slurm/onelong.yaml" --db "$W/ut.db" --grace 60 --term-grace 2 2>/dev/null &
pid=$!
# USR1 only once the task runs (the handlers are in place by then; a loaded machine may take
# seconds to start the program, and USR1's default action would end it)
t=0
until [ "$(q "$W/ut.db" "SELECT count(*) FROM tasks WHERE status = 'running'" 2>/dev/null)" = 1 ] 2>/dev/null ||
    [ $t -ge 300 ]; do sleep 0.1; t=$((t + 1)); done
sleep 0.5
kill -USR1 $pid
sleep 0.5
t0=$(now)
env kill -TERM $pid # from a process of its own: not the parent, whose SIGTERM stops at once
wait $pid
rc=$?
dt=$(since "$t0")
echo "usr1+term: exit $rc, ended $dt s after SIGTERM"
[ $rc -eq 4 ] || fail "usr1+term: exit code $rc, expected 4"
[ "$(echo "$dt < 8" | bc)" = 1 ] || fail "usr1+term: took $dt s after SIGTERM (grace not cut)"
[ "$(echo "$dt > 1.5" | bc)" = 1 ] || fail "usr1+term: ended $dt s after SIGTERM, before its 2 s grace"
[ "$(q "$W/ut.db" "SELECT status FROM tasks")" = interrupted ] || fail "usr1+term: the long task not interrupted"

# 4. kill -9 of whole jobs while every task writes a checkpoint every 10 ms; then a clean run
for i in 1 2 3 4 5 6; do
    np=2
    [ $((i % 2)) -eq 0 ] && np=0
    launch $np run "$SWEEP" --db "$W/k9.db" --quiet --checkpoint-interval 0.01 --lock-wait 10 2>/dev/null &
    job=$!
    sleep "0.$((3 + i))"
    pids="$(descendants $job) $job"
    kill -9 $pids 2>/dev/null
    wait $job 2>/dev/null
done
tmp=$(ls "$W/k9.db.ckpt" 2>/dev/null | grep -c '\.tmp\.')
ck=$(ls "$W/k9.db.ckpt" 2>/dev/null | grep -c '\.ckpt$')
echo "kill -9: $ck checkpoints, $tmp half-written files left by the kills"
launch 2 run "$SWEEP" --db "$W/k9.db" --quiet || fail "kill -9: the final run (exit $?)"
[ -z "$(ls "$W/k9.db.ckpt" 2>/dev/null)" ] || fail "kill -9: files left in the checkpoint directory"
rows "$W/k9.db" | cmp -s - "$W/ref.rows" || fail "kill -9: rows differ from the serial run"
[ "$(ls "$W/k9.db.ckpt" 2>/dev/null | grep -c '\.ckpt$')" = 0 ] || fail "kill -9: checkpoints left after the study finished"

# 5. a long ODE point (softmax with T = 5 tokens, whose loss is a Monte Carlo integral at every
# stage: more than 20 s here): --task-timeout stops it within its limit, status timeout, exit 3
cat >"$W/ode.yaml" <<'YAML'
name: ode-point
fixed: {decomposition: untied, activation: softmax(1), tokens: 5, d: 60, lr: 0.01, init_scale: 1.2,
        tau_end: 1, records: 50, teacher: wishart(0.5)}
solvers: [ode]
YAML
t0=$(now)
launch 2 run "$W/ode.yaml" --db "$W/ode.db" --task-timeout 5 --quiet
rc=$?
dt=$(since "$t0")
st=$(q "$W/ode.db" "SELECT status FROM tasks")
echo "ode point: exit $rc, status $st, $dt s with --task-timeout 5"
[ $rc -eq 3 ] || fail "ode point: exit $rc, expected 3 (finished with a timeout)"
[ "$st" = timeout ] || fail "ode point: status $st, expected timeout"
# status lists the timeout's message, as it does an error's
"$AIMSWEEP" status "$W/ode.db" | grep -q "timeout.*stopped by its wall limit" ||
    fail "ode point: status does not list the timeout's message"
# the task's own wall time against its limit (the job's also counts MPI's start, slow under load)
ws=$(q "$W/ode.db" "SELECT wall_s FROM tasks")
echo "ode point: the task's wall time $ws s"
[ "$(echo "$ws < 10" | bc)" = 1 ] || fail "ode point: the task ran $ws s, over its 5 s limit by far"
[ "$(echo "$dt < 60" | bc)" = 1 ] || fail "ode point: the job took $dt s"
# --retry-errors reruns it; a larger limit is the user's to give
"$AIMSWEEP" plan "$W/ode.yaml" --db "$W/ode.db" | grep -q "to run      0 of 1" || fail "ode point: a timeout is rerun"

# 6. parts, overlapping, merged: every point once, the rows of the serial run, provenance kept
for i in 1 2 3; do
    "$AIMSWEEP" run "$SWEEP" --db "$W/part$i.db" --part $i/3 --quiet || fail "part $i/3"
done
n1=$(q "$W/part1.db" "SELECT count(*) FROM tasks")
n2=$(q "$W/part2.db" "SELECT count(*) FROM tasks")
n3=$(q "$W/part3.db" "SELECT count(*) FROM tasks")
echo "parts: $n1 + $n2 + $n3 tasks"
[ $((n1 + n2 + n3)) = $NTASK ] || fail "parts do not add up to the grid"
# an overlapping part: the whole sweep again, later, into a fourth database
"$AIMSWEEP" run "$SWEEP" --db "$W/all.db" --quiet || fail "overlapping run"
"$AIMSWEEP" merge "$W/study.db" "$W/part1.db" "$W/part2.db" "$W/part3.db" >"$W/merge1.txt" || fail "merge"
"$AIMSWEEP" merge "$W/study.db" "$W/all.db" "$W/part2.db" >"$W/merge2.txt" || fail "merge of overlapping parts"
cat "$W/merge1.txt" "$W/merge2.txt"
grep -q "all.db: 1 runs, 0 tasks added, $NTASK replaced" "$W/merge2.txt" || fail "merge: the newer results not taken"
grep -q "part2.db: 1 runs, 0 tasks added, 0 replaced" "$W/merge2.txt" || fail "merge: an older part replaced newer results"
[ "$(q "$W/study.db" "SELECT count(*), count(DISTINCT task_id) FROM tasks")" = "$NTASK,$NTASK" ] || fail "merge: task count"
[ "$(q "$W/study.db" "SELECT count(*) FROM (SELECT DISTINCT task_id, solver, k FROM trajectory)")" = \
  "$(q "$W/study.db" "SELECT count(*) FROM trajectory")" ] || fail "merge: duplicate rows"
rows "$W/study.db" | cmp -s - "$W/ref.rows" || fail "merge: rows differ from the serial run"
[ "$(q "$W/study.db" "SELECT count(*) FROM sweeps WHERE part IS NOT NULL")" = 4 ] || fail "merge: provenance of the parts"
[ "$(q "$W/study.db" "SELECT count(*) FROM tasks t JOIN sweeps w USING (sweep_id) WHERE w.part IS NULL")" = $NTASK ] ||
    fail "merge: tasks not credited to the run that computed them"
[ "$(q "$W/study.db" "PRAGMA integrity_check")" = ok ] || fail "merge: integrity_check"
"$AIMSWEEP" merge "$W/study.db" "$W/study.db" 2>/dev/null
[ $? -eq 2 ] || fail "merge: a study merged into itself"
# the parts merged at once into a study that does not exist yet, as the elements of a job array
# that end together do: the one that waited for the lock found the schema the other had written
# (it used to try to write it again, "table sweeps already exists", and its part was lost)
for r in 1 2 3 4 5; do
    rm -f "$W/race.db" "$W/race.db-wal" "$W/race.db-shm"
    for i in 1 2 3; do "$AIMSWEEP" merge "$W/race.db" "$W/part$i.db" >"$W/race$i.txt" 2>&1 & done
    wait
    [ "$(q "$W/race.db" "SELECT count(*) FROM tasks")" = $NTASK ] || {
        fail "merge: parts merged at once lost tasks"
        cat "$W"/race?.txt
        break
    }
done

# the columns of the general index and the options (schema versions 3 and 4) go with the task:
# a merge that copied only the older columns gave every merged task the defaults there, while
# its params text named other values
cat >"$W/cols.yaml" <<'EOF'
name: cols
grid:
  token_corr: [0, 0.3]
fixed:
  decomposition: direct
  index: uncentred
  outputs: all
  lr_schedule: two_phase(0.1,0.01)
  init_trace: 0.5
  ode_mean: slaved
  precision: single
  d: 10
  tau_end: 0.02
  records: 2
  solvers: sgd
EOF
"$AIMSWEEP" run "$W/cols.yaml" --db "$W/cols.db" --quiet || fail "cols: run"
"$AIMSWEEP" merge "$W/cols_study.db" "$W/cols.db" >/dev/null || fail "cols: merge"
C="task_id, params, token_corr, index_kind, outputs, lr_schedule, init, init_trace, ode_mean, precision"
[ "$(q "$W/cols_study.db" "SELECT $C FROM tasks ORDER BY task_id")" = \
  "$(q "$W/cols.db" "SELECT $C FROM tasks ORDER BY task_id")" ] || fail "merge: the columns of schema 3 and 4 not copied"

# 7. reset: matching tasks back to pending, rerun, the same numbers
out=$("$AIMSWEEP" reset "$W/study.db" --where "decomposition = 'tied'")
echo "reset: $out"
[ "$out" = "12 tasks back to pending" ] || fail "reset: $out"
"$AIMSWEEP" reset "$W/study.db" --where "no_such_column = 1" 2>/dev/null
[ $? -eq 2 ] || fail "reset: a bad condition not refused"
"$AIMSWEEP" run "$SWEEP" --db "$W/study.db" --quiet || fail "rerun after reset"
[ "$(q "$W/study.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $NTASK ] || fail "reset: rerun"
rows "$W/study.db" | cmp -s - "$W/ref.rows" || fail "reset: rows differ after the rerun"
"$AIMSWEEP" status "$W/study.db" | grep -A3 "by build" | tail -1 | grep -q "$NTASK" || fail "status: counts per build"

# 8. a database of schema version 1: migrated to the current version on the first run, its results kept
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/install-deps.sh installs it)"
if command -v sqlite3 >/dev/null; then
    sqlite3 "$W/v1.db" <"$SRCDIR/tests/data/schema_v1.sql"
    [ "$(q "$W/v1.db" "PRAGMA user_version")" = 1 ] || fail "v1 fixture"
    before=$(q "$W/v1.db" "SELECT count(*) FROM trajectory")
    "$AIMSWEEP" run "$SRCDIR/tests/data/v1fixture.yaml" --db "$W/v1.db" --quiet || fail "v1: run"
    [ "$(q "$W/v1.db" "PRAGMA user_version")" = 7 ] || fail "v1: not migrated"
    [ "$(q "$W/v1.db" "SELECT count(*) FROM trajectory")" = "$before" ] || fail "v1: rows changed"
    [ "$(q "$W/v1.db" "SELECT count(*) FROM sweeps")" = 2 ] || fail "v1: the run not registered"
    sqlite3 "$W/v1.db" "UPDATE tasks SET status = 'timeout' WHERE rowid = 1" || fail "v1: CHECK without timeout"
    sqlite3 "$W/v1.db" "UPDATE tasks SET status = 'bogus' WHERE rowid = 1" 2>/dev/null && fail "v1: CHECK lost"
    [ "$(q "$W/v1.db" "PRAGMA integrity_check")" = ok ] || fail "v1: integrity_check"
fi

echo "$fails failed"
[ $fails -eq 0 ]
