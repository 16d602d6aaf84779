#!/bin/bash
# The job scripts on a real Slurm (Debian's slurm-wlm 22.05 and munge): a private one-node
# cluster on loopback (cluster.sh), jobs submitted as an ordinary user. Checks:
#   1. USR1 as Slurm sends it (--signal=B:USR1, here scancel --signal=USR1 --batch): the job drains,
#      exits 4, leaves no task running;
#   2. plain scancel (SIGTERM to every process of the job): the same, within KillWait, and the
#      long SGD task leaves a checkpoint; a second job continues it and its trajectory is bit for
#      bit that of an uninterrupted run;
#   3. a job with a 2-minute limit that is too short for the study resubmits itself
#      (exit 4, --dependency) until the study is done, with the rows of a serial run;
#   4. a job array of 2 elements running at once, each on its share (--part), merged: every grid
#      point once, the rows of a serial run;
#   5. every job removed the Open MPI session base it made (the jobs' TMPDIR is the test's own).
# It stops the daemons it started (by the pids they wrote) and removes its files, also on failure.
# usage: slurm_test.sh WORKDIR   (env AIMSWEEP, SRCDIR); needs root
set -u
W=$1
AIMSWEEP=$(readlink -f "$AIMSWEEP")
SRCDIR=$(readlink -f "$SRCDIR")
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
say() { echo "$(date -u +%H:%M:%S) $*"; }
if [ "$(id -u)" -ne 0 ]; then
    echo "slurm_test: skipped: needs root (it starts slurmd, which runs jobs as another user)"
    exit 77
fi
for b in munged slurmctld slurmd sbatch squeue scontrol runuser; do
    command -v $b >/dev/null || { echo "slurm_test: $b missing (scripts/install-deps.sh installs it)"; exit 1; }
done
# the whole test has a time limit of its own, inside ctest's, so that it always cleans up
. "$SRCDIR/tests/slurm/cluster.sh"
watchdog=$(cluster_watchdog $$ "${SLURM_TEST_LIMIT_S:-1100}" slurm_test)
T0=$(date +%s)
# daemons a killed earlier run left behind, by the pid files under the directory it named
[ -s "$W/cluster-dir" ] && cluster_stop "$(cat "$W/cluster-dir")" && rm -rf "$(cat "$W/cluster-dir")"
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" || exit 1
# The daemons' state (spool, sockets) under a short private directory whatever the build path:
# slurmstepd's Unix socket under the spool must fit in 108 bytes, and a job it cannot start is
# requeued again and again. The jobs' TMPDIR (Open MPI's session directories) there too.
C=$(mktemp -d /tmp/asw.XXXX) || exit 1
echo "$C" >"$W/cluster-dir"
J=$W/jobs # the user's directory: the job scripts, the databases, the logs
cleanup() {
    # jobs first (slurmstepd outlives slurmd), then the daemons
    if [ -n "${SLURM_CONF:-}" ]; then
        scancel --full -u "$CLUSTER_USER" 2>/dev/null
        t=0
        while [ -n "$(squeue -h -u "$CLUSTER_USER" 2>/dev/null)" ] && [ $t -lt 30 ]; do
            sleep 1
            t=$((t + 1))
        done
    fi
    cluster_stop "$C"
    rm -rf "$C"
    kill "$watchdog" 2>/dev/null
}
trap 'cleanup' EXIT
trap 'exit 1' INT TERM HUP PIPE
cluster_start "$C" || { fail "the cluster did not start"; tail -5 "$C"/log/*.log; exit 1; }
say "cluster up in $(($(date +%s) - T0)) s (KillWait $(scontrol show config | awk '$1 == "KillWait" { print $3 }') s)"
mkdir -p "$J/jobs" "$C/tmp" && chmod 1777 "$C/tmp" && cp "$SRCDIR"/jobs/*.sbatch "$SRCDIR"/tests/slurm/*.yaml "$J/" && cp "$SRCDIR"/jobs/*.sbatch "$J/jobs/"
chown -R "$CLUSTER_USER" "$J"
export AIMSWEEP OPENBLAS_NUM_THREADS=1
q() { "$AIMSWEEP" query "$1" "$2" --csv --no-header; }
rows() {
    q "$1" "SELECT task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss
            FROM trajectory ORDER BY task_id, solver, k"
    q "$1" "SELECT task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd, status
            FROM summary ORDER BY task_id, solver"
}
# submit ARGS...: sbatch as the user from the job directory; prints the job id
submit() { (cd "$J" && as_user env AIMSWEEP="$AIMSWEEP" TMPDIR="$C/tmp" sbatch --parsable "$@"); }
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# cannot_start ID: a job that went back to the queue (Slurm could not launch it) or still pends
# after 120 s fails the test at once, with the reason and slurmd's last lines
cannot_start() {
    fail "job $1 cannot start: $(scontrol show job "$1" 2>/dev/null | grep -o 'Reason=[^ ]*\|Restarts=[0-9]*' | tr '\n' ' ')"
    tail -n 8 "$C/log/slurmd.log"
    exit 1
}
restarted() { scontrol show job "$1" 2>/dev/null | grep -q 'Restarts=[1-9]'; }
wait_start() {
    t=0
    while [ $t -lt 120 ]; do
        restarted "$1" && cannot_start "$1"
        case "$(state "$1")" in
        PENDING | CONFIGURING) ;;
        FAILED | NODE_FAIL) # at once, by Slurm (BadConstraints, ...): it never ran
            scontrol show job "$1" | grep -q 'Reason=None' && return 0
            cannot_start "$1"
            ;;
        *) return 0 ;;
        esac
        sleep 1
        t=$((t + 1))
    done
    cannot_start "$1"
}
# wait_gone ID SECONDS: until the job has left the queue (or ended); 1 on time-out
wait_gone() {
    t=0
    while [ $t -lt "$2" ]; do
        case "$(state "$1")" in "" | COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;; esac
        restarted "$1" && cannot_start "$1"
        sleep 1
        t=$((t + 1))
    done
    return 1
}
# wait_done DB N SECONDS: until N tasks are finished
wait_done() {
    t=0
    while [ $t -lt "$3" ]; do
        n=$(q "$1" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge "$2" ] && return 0
        sleep 0.5
        t=$((t + 1))
    done
    return 1
}
exitcode() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*ExitCode=\([0-9]*\):.*/\1/p'; }

# serial references, outside Slurm, while the jobs run
(cd "$W" && "$AIMSWEEP" run "$J/slurm.yaml" --db "$W/ref.db" --quiet && "$AIMSWEEP" run "$J/onelong.yaml" --db "$W/ref-long.db" --quiet) &
refpid=$!
NTASK=24

# 1. USR1 to the batch shell
say "1. SIGUSR1 drain"
id=$(submit --nodes=1 --ntasks-per-node=2 --time=10 --output=usr1.out --export=ALL,AIMSWEEP_MAX_CHAIN=1 sweep.sbatch slurm.yaml usr1.db --grace 30)
wait_start "$id"
wait_done "$J/usr1.db" 2 120 || fail "usr1: no progress"
t1=$(date +%s.%N)
scancel --signal=USR1 --batch "$id"
wait_gone "$id" 60 || fail "usr1: the job did not end"
say "usr1: ended $(echo "$(date +%s.%N) - $t1" | bc) s after SIGUSR1, exit $(exitcode "$id")"
[ "$(exitcode "$id")" = 4 ] || fail "usr1: exit code $(exitcode "$id"), expected 4"
grep -q "SIGUSR1 (the time limit is near): forwarded" "$J/usr1.out" || fail "usr1: the trap did not log"
grep -q "User defined signal 1 received from" "$J/usr1.db.log" || fail "usr1: aimsweep did not log the signal"
[ "$(q "$J/usr1.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "usr1: tasks left running"
[ "$(q "$J/usr1.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" -lt $NTASK ] ||
    fail "usr1: the signal came too late"
say "usr1: $(q "$J/usr1.db" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM tasks GROUP BY status)")"

# 2. plain scancel (SIGTERM) of the long task, checkpointed every second; a second job continues it
say "2. SIGTERM drain and a checkpointed task"
id=$(submit --nodes=1 --ntasks-per-node=1 --time=10 --output=term.out --export=ALL,AIMSWEEP_MAX_CHAIN=1 sweep.sbatch onelong.yaml term.db --checkpoint-interval 1)
wait_start "$id"
t=0
while [ ! -s "$J/term.db.ckpt/"*.ckpt ] 2>/dev/null && [ $t -lt 120 ]; do sleep 0.5; t=$((t + 1)); done
[ $t -lt 120 ] || fail "term: no periodic checkpoint"
sleep 2
t1=$(date +%s.%N)
scancel "$id"
wait_gone "$id" 60 || fail "term: the job did not end"
dt=$(echo "$(date +%s.%N) - $t1" | bc)
say "term: ended $dt s after scancel, exit $(exitcode "$id"), state $(state "$id")"
grep -q "SIGTERM (scancel or the time limit): forwarded" "$J/term.out" || fail "term: the trap did not log"
grep -q "Terminated received from" "$J/term.db.log" || fail "term: aimsweep did not log the signal"
grep "received from" "$J/term.db.log"
[ "$(q "$J/term.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "term: task left running"
[ "$(q "$J/term.db" "SELECT status || ' ' || attempts FROM tasks")" = "interrupted 0" ] ||
    fail "term: $(q "$J/term.db" "SELECT status || ' ' || attempts FROM tasks")"
ls "$J/term.db.ckpt/"*.ckpt >/dev/null 2>&1 || fail "term: no checkpoint left"
id=$(submit --nodes=1 --ntasks-per-node=1 --time=10 --output=term.out --export=ALL,AIMSWEEP_MAX_CHAIN=1 sweep.sbatch onelong.yaml term.db)
wait_start "$id"
wait_gone "$id" 180 || fail "term: the second job did not end"
[ "$(exitcode "$id")" = 0 ] || fail "term: second job exit $(exitcode "$id")"
grep -q "continued from its checkpoint" "$J/term.out" || fail "term: not continued from the checkpoint (a worker says so on stderr)"

# 3. a limit too short for the study: the job resubmits itself until it is done
say "3. time limit and resubmission"
id=$(submit --nodes=1 --ntasks-per-node=2 --time=2 --signal=B:USR1@100 --output=chain.out sweep.sbatch slurm.yaml chain.db --grace 20)
wait_start "$id"
t=0
while [ $t -lt 420 ]; do
    [ "$(q "$J/chain.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null)" = $NTASK ] &&
        [ -z "$(squeue -h -u "$CLUSTER_USER")" ] && break
    sleep 2
    t=$((t + 2))
done
jobs_run=$(grep -c "in its chain) on" "$J/chain.out")
say "chain: $jobs_run jobs, $(grep -c "submitted job" "$J/chain.out") resubmissions, $t s"
[ "$jobs_run" -ge 2 ] || fail "chain: the study fitted in one job: nothing resubmitted"
grep -q "exit 0, every task finished" "$J/chain.out" || fail "chain: the last job did not finish the study"

# 4. an array of two parts at once, merged
say "4. job array"
id=$(submit --nodes=1 --ntasks-per-node=1 --time=10 --array=1-2 --output=array-%a.out sweep-array.sbatch slurm.yaml study.db)
wait_start "$id"
both=0
t=0
while [ $t -lt 300 ]; do
    r=$(squeue -h -j "$id" -t RUNNING 2>/dev/null | wc -l)
    [ "$r" -ge 2 ] && both=1
    [ -z "$(squeue -h -u "$CLUSTER_USER")" ] && break
    sleep 1
    t=$((t + 1))
done
say "array: ended in $t s; both elements running at once: $both"
[ $both = 1 ] || fail "array: the two elements never ran at the same time"
grep -q "merged into study.db" "$J/array-1.out" && grep -q "merged into study.db" "$J/array-2.out" ||
    fail "array: a part was not merged"

wait $refpid || fail "the reference runs"
# every result against the serial runs
[ "$(q "$J/study.db" "SELECT count(*), count(DISTINCT task_id) FROM tasks")" = "$NTASK,$NTASK" ] ||
    fail "array: tasks in the study: $(q "$J/study.db" "SELECT count(*), count(DISTINCT task_id) FROM tasks")"
rows "$W/ref.db" >"$W/ref.rows"
for db in chain study; do
    rows "$J/$db.db" >"$W/$db.rows"
    cmp -s "$W/ref.rows" "$W/$db.rows" || fail "$db: rows differ from the serial run ($W/$db.rows)"
    [ "$(q "$J/$db.db" "PRAGMA integrity_check")" = ok ] || fail "$db: integrity_check"
done
a=$(rows "$W/ref-long.db" | md5sum | cut -c1-12)
b=$(rows "$J/term.db" | md5sum | cut -c1-12)
say "checkpointed task: md5 of its rows $b resumed, $a uninterrupted"
[ "$a" = "$b" ] || fail "term: the resumed trajectory differs from the uninterrupted one"
left=$(cd "$C/tmp" && ls -d aimsweep-ompi.* 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] || fail "Open MPI session bases left behind in the jobs' TMPDIR: $left"
say "slurm test: $(($(date +%s) - T0)) s"
[ $fails -eq 0 ] && rm -rf "$J"
echo "$fails failed"
[ $fails -eq 0 ]
