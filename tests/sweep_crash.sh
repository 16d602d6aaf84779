#!/bin/sh
# The attempt rule (docs/cluster.md): a task whose code kills its rank every time
# (AIMSWEEP_TEST_CRASH_TASK) is charged one attempt per crash through its rank's mark, and ends
# as error after --max-attempts runs; no other task is ever charged, neither the one the other
# worker was running when mpirun ended the job, nor those left running by a job killed from
# outside. The rest of the sweep has the rows of an uninterrupted run.
# usage: sweep_crash.sh WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=$SRCDIR/tests/tiny.yaml
NTASK=12

"$AIMSWEEP" run "$SWEEP" --db "$W/ref.db" --quiet || fail "reference run"
# the planted task: the third by id
bad=$(q "$W/ref.db" "SELECT task_id FROM tasks ORDER BY task_id LIMIT 1 OFFSET 2")
echo "planted crash: task $bad"

# three runs that crash (serial: rank 0 itself; then two workers under mpirun), a fourth that
# finds the task charged three times: error, and the rest finishes
for i in 1 2 3 4; do
    np=3
    [ $i -eq 1 ] && np=0
    AIMSWEEP_TEST_CRASH_TASK=$bad launch $np run "$SWEEP" --db "$W/c.db" --max-attempts 3 \
        >"$W/run$i.txt" 2>&1
    rc=$?
    a=$(q "$W/c.db" "SELECT attempts FROM tasks WHERE task_id = '$bad'")
    others=$(q "$W/c.db" "SELECT count(*) FROM tasks WHERE task_id <> '$bad' AND attempts > 0")
    echo "run $i (np=$np): exit $rc, planted task: $(q "$W/c.db" "SELECT status FROM tasks WHERE task_id = '$bad'") $a, other tasks charged: $others"
    [ "$others" = 0 ] || fail "run $i: another task was charged"
    [ "$a" = $((i - 1)) ] || fail "run $i: the planted task has $a attempts, expected $((i - 1))"
    if [ $i -lt 4 ]; then
        [ $rc -ne 0 ] && [ $rc -ne 3 ] || fail "run $i: exit $rc after a crash"
        grep -q "AIMSWEEP_TEST_CRASH_TASK: crashing this rank" "$W/c.db.log" || fail "run $i: no crash"
        grep -qs "^crash 11" "$W"/c.db.ckpt/rank-*.hold || fail "run $i: no mark of the crash left"
    else
        [ $rc -eq 3 ] || fail "run 4: exit $rc, expected 3 (finished, one error)"
    fi
done
grep -q "crashed its rank (signal 11" "$W/c.db.log" || fail "the charge is not logged"
[ "$(q "$W/c.db" "SELECT status || ' ' || attempts FROM tasks WHERE task_id = '$bad'")" = "error 3" ] ||
    fail "planted task: $(q "$W/c.db" "SELECT status || ' ' || attempts FROM tasks WHERE task_id = '$bad'")"
[ "$(q "$W/c.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $((NTASK - 1)) ] ||
    fail "not every other task finished"
ls "$W"/c.db.ckpt/rank-*.hold >/dev/null 2>&1 && fail "marks left after a run that finished"
# every other task's rows as in the uninterrupted run
for db in ref c; do
    q "$W/$db.db" "SELECT task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss
                   FROM trajectory WHERE task_id <> '$bad' ORDER BY task_id, solver, k" >"$W/$db.rows"
    q "$W/$db.db" "SELECT task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, status
                   FROM summary WHERE task_id <> '$bad' ORDER BY task_id, solver" >>"$W/$db.rows"
done
cmp -s "$W/ref.rows" "$W/c.rows" || fail "rows differ from the uninterrupted run"

# a job killed from outside (SIGKILL of everything) charges nobody, whatever it left running
cp "$W/ref.db" "$W/k.db"
sqlite3 "$W/k.db" "UPDATE tasks SET status = 'running' WHERE rowid IN (2, 3)" || fail "sqlite3"
mkdir -p "$W/k.db.ckpt"
# a mark of a rank killed from outside: the task, no crash line
q "$W/k.db" "SELECT task_id FROM tasks WHERE rowid = 2" >"$W/k.db.ckpt/rank-1.hold"
"$AIMSWEEP" run "$SWEEP" --db "$W/k.db" --max-attempts 1 --quiet || fail "rerun after a kill: exit $?"
[ "$(q "$W/k.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "a kill from outside charged a task"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $NTASK ] ||
    fail "the rerun after a kill did not finish"
# --retry-errors runs the planted task again (and it crashes again, charged a 4th time)
AIMSWEEP_TEST_CRASH_TASK=$bad launch 0 run "$SWEEP" --db "$W/c.db" --retry-errors --quiet >/dev/null 2>&1
"$AIMSWEEP" run "$SWEEP" --db "$W/c.db" --quiet
[ $? -eq 3 ] || fail "after --retry-errors: exit code"
[ "$(q "$W/c.db" "SELECT status || ' ' || attempts FROM tasks WHERE task_id = '$bad'")" = "error 4" ] ||
    fail "after --retry-errors: $(q "$W/c.db" "SELECT status || ' ' || attempts FROM tasks WHERE task_id = '$bad'")"
# --checkpoint-dir: the marks go there (not beside the database), and the next run with the same
# directory charges the crash; --journal delete: the rollback journal
AIMSWEEP_TEST_CRASH_TASK=$bad launch 0 run "$SWEEP" --db "$W/d.db" --checkpoint-dir "$W/ck" --journal delete --quiet >/dev/null 2>&1
grep -qs "^crash 11" "$W"/ck/rank-0.hold || fail "--checkpoint-dir: no mark of the crash in it"
[ -e "$W/d.db.ckpt" ] && fail "--checkpoint-dir: DB.ckpt made all the same"
"$AIMSWEEP" run "$SWEEP" --db "$W/d.db" --checkpoint-dir "$W/ck" --journal delete 2>/dev/null
[ "$(q "$W/d.db" "SELECT attempts FROM tasks WHERE task_id = '$bad'")" = 1 ] || fail "--checkpoint-dir: the crash not charged"
[ "$(sqlite3 "$W/d.db" "PRAGMA journal_mode")" = delete ] || fail "--journal delete: $(sqlite3 "$W/d.db" "PRAGMA journal_mode")"
grep -q "journal delete, as asked" "$W/d.db.log" || fail "--journal: not logged"
grep -q "journal wal (a local file system" "$W/c.db.log" || fail "the journal choice is not logged"
echo "$fails failed"
[ $fails -eq 0 ]
