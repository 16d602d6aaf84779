#!/bin/sh
# SIGUSR1 (Slurm's --signal=B:USR1@N, forwarded by mpirun) and SIGTERM in the middle of a
# sweep: the run stops handing out work, lets running tasks finish within the grace period
# (or interrupts them with --grace 0), commits, exits 0; a rerun completes the sweep.
# usage: sweep_signal.sh WORKDIR   (env AIMSWEEP, MPIEXEC, SRCDIR)
set -u
W=$1
rm -rf "$W" && mkdir -p "$W" || exit 1
. "$SRCDIR/tests/harness_lib.sh"
SWEEP=$SRCDIR/tests/kill.yaml
NTASK=36

# wait_done DB N: until N tasks are finished (at most 20 s)
wait_done() {
    t=0
    while [ $t -lt 200 ]; do
        n=$(q "$1" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge "$2" ] && return 0
        sleep 0.1
        t=$((t + 1))
    done
    return 1
}

# stop_and_check NAME SIGNAL DB PID: signal PID, expect exit 0 and an unfinished sweep
stop_and_check() {
    name=$1 sig=$2 db=$3 pid=$4
    wait_done "$db" 1 || fail "$name: no progress before the signal"
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    [ $rc -eq 4 ] || fail "$name: exit code $rc after SIG$sig (4: stopped with work left)"
    grep -q "stopped by signal" "$W/$name.err" || fail "$name: no stop message"
    finished=$(q "$db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")
    running=$(q "$db" "SELECT count(*) FROM tasks WHERE status = 'running'")
    inter=$(q "$db" "SELECT count(*) FROM tasks WHERE status = 'interrupted'")
    echo "$name: after SIG$sig: $finished finished, $inter interrupted, $running running"
    [ "$finished" -lt $NTASK ] || fail "$name: the signal came too late to test anything"
    [ "$running" -eq 0 ] || fail "$name: tasks left running after a clean stop"
    [ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "$name: integrity_check"
    # a task handed out but given back unstarted is pending again, its attempt not counted
    [ "$(q "$db" "SELECT count(*) FROM tasks WHERE status = 'pending' AND (attempts > 0 OR rank IS NOT NULL)")" = 0 ] ||
        fail "$name: a pending task with an attempt"
}

resume_and_check() {
    name=$1 db=$2 np=$3
    launch "$np" run "$SWEEP" --db "$db" --quiet || fail "$name: resume"
    [ "$(q "$db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = $NTASK ] ||
        fail "$name: not complete after resuming"
    [ "$(q "$db" "SELECT count(*) FROM summary")" = $((2 * NTASK)) ] || fail "$name: summary rows"
}

# 1. two ranks under mpirun, SIGUSR1 to mpirun, a grace long enough: running tasks finish
$MPIRUN -n 2 "$AIMSWEEP" run "$SWEEP" --db "$W/usr1.db" --grace 30 2>"$W/usr1.err" &
pid=$!
t0=$(date +%s)
stop_and_check usr1 USR1 "$W/usr1.db" $pid
[ $(($(date +%s) - t0)) -lt 25 ] || fail "usr1: took too long to stop"
[ "$(q "$W/usr1.db" "SELECT count(*) FROM tasks WHERE status = 'interrupted'")" -eq 0 ] ||
    fail "usr1: a task was interrupted although the grace period was long"
resume_and_check usr1 "$W/usr1.db" 2
[ "$(q "$W/usr1.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "usr1: a stop counted an attempt"

# 2. serial, SIGUSR1 with --grace 0: the running task is interrupted, recorded, and rerun
"$AIMSWEEP" run "$SWEEP" --db "$W/serial.db" --grace 0 2>"$W/serial.err" &
pid=$!
stop_and_check serial USR1 "$W/serial.db" $pid
[ "$(q "$W/serial.db" "SELECT count(*) FROM tasks WHERE status = 'interrupted'")" -le 1 ] ||
    fail "serial: more than the running task interrupted"
resume_and_check serial "$W/serial.db" 0

# 3. SIGTERM to a serial run
"$AIMSWEEP" run "$SWEEP" --db "$W/term.db" 2>"$W/term.err" &
pid=$!
stop_and_check term TERM "$W/term.db" $pid
resume_and_check term "$W/term.db" 0

# 4. two ranks, --grace 0: rank 0 asks the worker to stop its task; it is stored as interrupted
$MPIRUN -n 2 "$AIMSWEEP" run "$SWEEP" --db "$W/usr1g0.db" --grace 0 2>"$W/usr1g0.err" &
pid=$!
stop_and_check usr1g0 USR1 "$W/usr1g0.db" $pid
resume_and_check usr1g0 "$W/usr1g0.db" 2

# 5. --time-limit: tasks that would end after it are not started; exit 0; a rerun completes
"$AIMSWEEP" run "$SWEEP" --db "$W/limit.db" --time-limit 1 2>"$W/limit.err"
[ $? -eq 4 ] || fail "limit: exit code (4: stopped with work left)"
grep -q "would not fit in the time limit" "$W/limit.err" || fail "limit: nothing was held back ($(tail -1 "$W/limit.err"))"
[ "$(q "$W/limit.db" "SELECT count(*) FROM tasks WHERE status IN ('running', 'interrupted')")" = 0 ] ||
    fail "limit: a task was cut off"
echo "limit: $(tail -1 "$W/limit.err")"
resume_and_check limit "$W/limit.db" 0

# handler_up PID: until PID catches SIGUSR1 (bit 10 of SigCgt in /proc/PID/status), at most 20 s
handler_up() {
    t=0
    while [ $t -lt 20000 ]; do
        cgt=$(awk '/^SigCgt/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
        low=${cgt#????????????}
        [ -n "$low" ] && [ $((0x$low >> 9 & 1)) = 1 ] && return 0
        t=$((t + 1))
    done
    return 1
}

# 6. SIGUSR1 the moment the run catches it, before the sweep has begun (Slurm's time-limit signal
# may come at a job's start; the handlers are now set before MPI_Init, which takes a second on a
# loaded node): the run starts no task, records the stop and exits 4.
"$AIMSWEEP" run "$SWEEP" --db "$W/early.db" 2>"$W/early.err" &
pid=$!
handler_up $pid || fail "early: the run never caught SIGUSR1"
kill -USR1 $pid
wait $pid
rc=$?
[ $rc -eq 4 ] || fail "early: exit code $rc after an early SIGUSR1 (4: stopped with work left)"
[ "$(q "$W/early.db" "SELECT count(*) FROM tasks WHERE status <> 'pending'")" = 0 ] ||
    fail "early: a task was started after the stop"
[ "$(q "$W/early.db" "SELECT stop_signal FROM sweeps")" = 10 ] || fail "early: the stop is not recorded"
echo "early: $(grep -c 'not started' "$W/early.err") stop line, exit $rc"
resume_and_check early "$W/early.db" 0

echo "$fails failed"
[ $fails -eq 0 ]
