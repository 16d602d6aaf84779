#!/bin/sh
# SIGKILL of rank 0 alone, or of mpirun alone, at random moments (the job dies from outside: a
# node lost under rank 0, a killed launcher), each followed by a rerun on the same database; a
# final rerun completes the sweep. With the default --max-attempts: no task may be charged an
# attempt, none may end in error, none may be lost or duplicated, and the rows must be those of
# an uninterrupted serial run.
# usage: sweep_kill_root.sh WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR; KILL_ROUNDS per target,
# default 4; KILL_SWEEP, default tests/kill.yaml; KILL_NP ranks, default 3)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=${KILL_SWEEP:-$SRCDIR/tests/kill.yaml}
ROUNDS=${KILL_ROUNDS:-4}
NP=${KILL_NP:-3}

t0=$(date +%s.%N)
"$AIMSWEEP" run "$SWEEP" --db "$W/ref.db" --quiet || fail "reference run"
T=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
NTASK=$(q "$W/ref.db" "SELECT count(*) FROM tasks")
# the run as the rounds make it (start-up included), timed once: the kills fall inside it
t0=$(date +%s.%N)
$MPIRUN -n "$NP" "$AIMSWEEP" run "$SWEEP" --db "$W/par.db" --quiet --commit-interval 0.2 2>/dev/null ||
    fail "reference run on $NP ranks"
TP=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
echo "reference: $NTASK tasks in $T s (serial), $TP s on $NP ranks"

descendants() {
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}
# the rank-0 process among PIDS (Open MPI puts the rank in its environment)
rank0_of() {
    for p in $1; do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && echo "$p" && return
    done
}

seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
echo "seed $seed"
i=0
kills=0
cycles=0
for target in rank0 mpirun; do
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        r=$((r + 1))
        i=$((i + 1))
        # between a fifth and four fifths of the timed run on NP ranks, so that work is left
        # most times whatever the machine's speed
        delay=$(awk -v s="$seed" -v i="$i" -v T="$TP" 'BEGIN { srand(s + i); printf "%.2f", T * (0.2 + 0.6 * rand()) }')
        $MPIRUN -n "$NP" "$AIMSWEEP" run "$SWEEP" --db "$W/k.db" --quiet --commit-interval 0.2 \
            2>>"$W/stderr.txt" &
        job=$!
        sleep "$delay"
        pids=$(descendants $job)
        if [ $target = rank0 ]; then
            victim=$(rank0_of "$pids")
        else
            victim=$job
        fi
        if [ -z "$victim" ] || ! kill -9 "$victim" 2>/dev/null; then
            echo "round $i ($target): the run had ended before the kill at ${delay}s"
            wait $job 2>/dev/null
            r=$((r - 1)) # not a kill: again
            [ $i -lt $((4 * ROUNDS)) ] || { fail "the runs end before the kills"; break 2; }
        else
            kills=$((kills + 1))
            wait $job 2>/dev/null
            rc=$?
            # orphaned ranks of a killed mpirun: they end on their own (they lost their daemon);
            # wait for them so that the rerun does not wait for the lock
            t=0
            while [ $t -lt 150 ]; do
                alive=""
                for p in $pids; do
                    st=$(ps -o stat= -p "$p" 2>/dev/null)
                    case "$st" in "" | Z*) ;; *) alive="$alive $p" ;; esac
                done
                [ -z "$alive" ] && break
                sleep 0.2
                t=$((t + 1))
            done
            [ -z "$alive" ] || { fail "round $i: processes alive 30 s after the kill:$alive"; kill -9 $alive 2>/dev/null; }
            echo "round $i: SIGKILL of $target after ${delay}s (mpirun exit $rc):" \
                "$(q "$W/k.db" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM tasks GROUP BY status)" 2>/dev/null)," \
                "stop recorded: $(q "$W/k.db" "SELECT count(stop_signal) FROM sweeps" 2>/dev/null)"
        fi
        [ ! -e "$W/k.db" ] || [ "$(q "$W/k.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after round $i"
        [ ! -e "$W/k.db" ] || [ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status = 'error' OR attempts > 0")" = 0 ] ||
            fail "round $i: a task charged or in error"
        # a sweep finished between kills: checked whole, and a new one started, so that every
        # kill hits a run with work left
        if [ -e "$W/k.db" ] && [ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = "$NTASK" ]; then
            rows "$W/ref.db" >"$W/ref.rows"
            rows "$W/k.db" >"$W/k.rows"
            cmp -s "$W/ref.rows" "$W/k.rows" || fail "round $i: rows differ from the uninterrupted run"
            cycles=$((cycles + 1))
            rm -rf "$W/k.db" "$W/k.db-wal" "$W/k.db-shm" "$W/k.db.ckpt"
        fi
    done
done
echo "$kills kills; sweeps completed between kills and checked: $cycles"
[ "$kills" -ge "$ROUNDS" ] || fail "fewer than $ROUNDS of the kills hit a running sweep"

launch 2 run "$SWEEP" --db "$W/k.db" --quiet || fail "the final run: exit $?"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks")" = "$NTASK" ] || fail "task count"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = "$NTASK" ] ||
    fail "not every task finished"
nerr=$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status = 'error'")
ncharged=$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE attempts > 0")
nrows=$(q "$W/ref.db" "SELECT count(*) FROM trajectory")
ndup=$(($(q "$W/k.db" "SELECT count(*) FROM trajectory") - $(q "$W/k.db" "SELECT count(*) FROM (SELECT DISTINCT task_id, solver, k FROM trajectory)")))
[ "$nerr" = 0 ] || fail "$nerr tasks in error"
[ "$ncharged" = 0 ] || fail "$ncharged tasks charged an attempt"
[ "$ndup" = 0 ] || fail "$ndup duplicated rows"
[ "$(q "$W/k.db" "SELECT count(*) FROM trajectory")" = "$nrows" ] || fail "trajectory rows"
[ "$(q "$W/k.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check"
rows "$W/ref.db" >"$W/ref.rows"
rows "$W/k.db" >"$W/k.rows"
same=yes
cmp -s "$W/ref.rows" "$W/k.rows" || { same=no; fail "rows differ from the uninterrupted run (diff $W/ref.rows $W/k.rows)"; }
echo "$kills kills of rank 0 and mpirun on $NTASK tasks: $nerr in error, $ncharged charged," \
    "$((NTASK - $(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')"))) lost," \
    "$ndup duplicated, rows identical: $same"
echo "$fails failed"
[ $fails -eq 0 ]
