#!/bin/sh
# SIGKILL the whole job (mpirun and every rank at once, as a node failure or a hard time limit
# would) at random moments, several times; then a rerun completes the sweep. Every task must
# be there exactly once, with the same rows as an uninterrupted serial run, and the database
# must pass PRAGMA integrity_check.
# usage: sweep_kill.sh WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR; KILL_ROUNDS, default 5)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=$SRCDIR/tests/kill.yaml
ROUNDS=${KILL_ROUNDS:-5}
NTASK=36

t0=$(date +%s.%N)
"$AIMSWEEP" run "$SWEEP" --db "$W/ref.db" --quiet || fail "reference run"
T=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')

# descendants PID: PID's children, grandchildren, ...
descendants() {
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}

seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
i=0
cycles=0
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    np=2
    [ $((i % 3)) -eq 0 ] && np=0 # every third round serial, without mpirun
    # at random between MPI start-up and half an uninterrupted run (commits every 0.1 s)
    delay=$(awk -v s="$seed" -v i="$i" -v T="$T" 'BEGIN { srand(s + i); printf "%.2f", 0.4 + 0.5 * T * rand() }')
    launch "$np" run "$SWEEP" --db "$W/k.db" --quiet --grace 0 --commit-interval 0.1 2>>"$W/stderr.txt" &
    job=$!
    sleep "$delay"
    pids="$(descendants $job) $job"
    kill -9 $pids 2>/dev/null
    wait $job 2>/dev/null
    # no rank may survive its killed mpirun (zombies waiting to be reaped are dead)
    t=0
    while :; do
        alive=""
        for p in $pids; do
            st=$(ps -o stat= -p "$p" 2>/dev/null)
            case "$st" in "" | Z*) ;; *) alive="$alive $p($st)" ;; esac
        done
        [ -z "$alive" ] && break
        t=$((t + 1))
        if [ $t -ge 50 ]; then
            fail "processes survived a SIGKILL for 5 s:$alive"
            break
        fi
        sleep 0.1
    done
    done_now=$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null || echo "no db yet")
    left=$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status = 'running'" 2>/dev/null || echo 0)
    echo "round $i: np=$np killed after ${delay}s: $done_now done, $left left running"
    if [ -e "$W/k.db" ]; then
        [ "$(q "$W/k.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after round $i"
    fi
    # a sweep finished between kills: check it whole and start a new one, so that every kill
    # hits a run with work left
    if [ "$done_now" = "$NTASK" ]; then
        rows "$W/ref.db" > "$W/ref.rows"
        rows "$W/k.db" > "$W/k.rows"
        cmp -s "$W/ref.rows" "$W/k.rows" || fail "round $i: rows differ from the uninterrupted run"
        [ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status = 'error'")" = 0 ] ||
            fail "round $i: a healthy task marked error"
        cycles=$((cycles + 1))
        rm -f "$W/k.db" "$W/k.db-wal" "$W/k.db-shm"
    fi
done
echo "sweeps completed between kills and checked: $cycles"

launch 2 run "$SWEEP" --db "$W/k.db" --quiet || fail "the final run"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks")" = $NTASK ] || fail "task count"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $NTASK ] ||
    fail "not every task finished"
[ "$(q "$W/k.db" "SELECT count(*) FROM tasks WHERE status = 'error'")" = 0 ] || fail "a healthy task marked error"
[ "$(q "$W/k.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "a kill from outside charged an attempt"
[ "$(q "$W/k.db" "SELECT count(*) FROM summary")" = $((2 * NTASK)) ] || fail "summary rows"
nrows=$(q "$W/ref.db" "SELECT count(*) FROM trajectory")
[ "$(q "$W/k.db" "SELECT count(*) FROM trajectory")" = "$nrows" ] || fail "trajectory rows"
[ "$(q "$W/k.db" "SELECT count(*) FROM (SELECT DISTINCT task_id, solver, k FROM trajectory)")" = "$nrows" ] ||
    fail "duplicate trajectory rows"
[ "$(q "$W/k.db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check"
rows "$W/ref.db" > "$W/ref.rows"
rows "$W/k.db" > "$W/k.rows"
cmp -s "$W/ref.rows" "$W/k.rows" || fail "rows differ from the uninterrupted run (diff $W/ref.rows $W/k.rows)"
# The attempt rule: a task left running by a killed job is not charged; one whose rank's mark
# says it crashed is, and the third charge makes it an error instead of a fourth start
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/install-deps.sh installs it)"
if command -v sqlite3 >/dev/null; then
    cp "$W/ref.db" "$W/poison.db"
    # attempts counts the charges before this one: the mark makes it 3 for rowid 5
    sqlite3 "$W/poison.db" "UPDATE tasks SET status = 'running', attempts = 2 WHERE rowid = 5;
                            UPDATE tasks SET status = 'running', attempts = 1 WHERE rowid = 6;"
    mkdir -p "$W/poison.db.ckpt"
    printf '%s\ncrash 11\n' "$(q "$W/poison.db" "SELECT task_id FROM tasks WHERE rowid = 5")" >"$W/poison.db.ckpt/rank-3.hold"
    out=$("$AIMSWEEP" run "$SWEEP" --db "$W/poison.db" 2>&1)
    [ $? -eq 3 ] || fail "poison: exit code (3: finished with an error)"
    case "$out" in *"crashed its rank (signal 11"*"while running it 3 times"*"35 already in"*"1 to run"*) ;;
        *) fail "poison: $out" ;; esac
    [ "$(q "$W/poison.db" "SELECT status || ' ' || attempts FROM tasks WHERE rowid = 5")" = "error 3" ] || fail "poison: status"
    case "$(q "$W/poison.db" "SELECT status || ' ' || attempts FROM tasks WHERE rowid = 6")" in
        "done 1" | "diverged 1") ;; *) fail "poison: rerun" ;; esac
    [ -e "$W/poison.db.ckpt/rank-3.hold" ] && fail "poison: the mark was not removed"
    "$AIMSWEEP" run "$SWEEP" --db "$W/poison.db" --retry-errors --quiet || fail "poison: retry"
    [ "$(q "$W/poison.db" "SELECT attempts FROM tasks WHERE rowid = 5")" = 3 ] || fail "poison: --retry-errors"
    [ "$(q "$W/poison.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $NTASK ] ||
        fail "poison: not complete after --retry-errors"
fi

echo "attempts: $(q "$W/k.db" "SELECT attempts || 'x' || count(*) FROM tasks GROUP BY attempts" | tr '\n' ' ')"
echo "$ROUNDS kills: $NTASK of $NTASK tasks finished, $(($(q "$W/k.db" "SELECT count(*) FROM trajectory") - $(q "$W/k.db" "SELECT count(*) FROM (SELECT DISTINCT task_id, solver, k FROM trajectory)"))) duplicate rows"
echo "$fails failed"
[ $fails -eq 0 ]
