#!/bin/bash
# aimsweep on two nodes: two network namespaces joined by a veth pair (nodes.sh; addresses
# 10.251.0.1 and .2 exist only inside them, nothing else is ever addressed), mpirun over TCP with
# a launch agent that enters the other node, then two slurmd, one per node. Checks:
#   1. a sweep run across both nodes (workers on both) has the rows of a serial run;
#   2. every process of node B killed mid-run: mpirun gives up, rank 0 records the stop (the
#      signal, the running tasks interrupted) before anything else, no task is charged an
#      attempt, and a rerun completes with the rows of the serial run;
#   3. (Slurm) sbatch -N 2 jobs/sweep.sbatch: workers on both nodes, the rows of the serial run;
#   4. (Slurm) plain scancel of a two-node job: the job exits 4 and resubmits itself, and the
#      resubmitted job keeps the partition and account of the first sbatch line;
#   5. (Slurm) the SIGUSR1 drain of a two-node job: the stop recorded, exit 4;
#   6. (Slurm) the hard time limit of a two-node job whose drain has not finished: exit 4.
# And 2b: the link to node B cut mid-run (nothing dies): node B's ranks are taken for stalled
# together, their tasks run on node A uncharged, and the rows are the serial run's.
# It stops every daemon it started by pid and removes its namespaces, also on failure; the
# daemons' state lives under a short private directory (mktemp -d /tmp/asw.XXXX).
# usage: multinode_test.sh WORKDIR   (env AIMSWEEP, SRCDIR); needs root
set -u
W=$1
AIMSWEEP=$(readlink -f "$AIMSWEEP")
SRCDIR=$(readlink -f "$SRCDIR")
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
say() { echo "$(date -u +%H:%M:%S) $*"; }
if [ "$(id -u)" -ne 0 ]; then
    echo "multinode_test: skipped: needs root (network namespaces, slurmd)"
    exit 77
fi
for b in ip nsenter unshare mpirun munged slurmctld slurmd sbatch squeue scontrol runuser; do
    command -v $b >/dev/null || { echo "multinode_test: $b missing (scripts/install-deps.sh installs it)"; exit 1; }
done
. "$SRCDIR/tests/multinode/nodes.sh"
. "$SRCDIR/tests/slurm/cluster.sh"
. "$SRCDIR/tests/multinode/cluster2.sh"
# the whole test has a time limit of its own, inside ctest's, so that it always cleans up
watchdog=$(cluster_watchdog $$ "${MULTINODE_TEST_LIMIT_S:-540}" multinode_test)
T0=$(date +%s)
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" || exit 1
S=$(mktemp -d /tmp/asw.XXXX) || exit 1 # the daemons' state: short, whatever the build path
chmod 755 "$S"
N=$S/n
cleanup() {
    [ -n "${SLURM_CONF:-}" ] && [ -s "$N/holder-A" ] &&
        node_exec A scancel --full -u "$CLUSTER_USER" 2>/dev/null
    cluster2_stop
    nodes_stop "$N"
    kill "$watchdog" 2>/dev/null
    rm -rf "$S"
}
trap 'cleanup' EXIT
trap 'exit 1' INT TERM HUP PIPE
nodes_start "$N" || { fail "the two nodes did not start"; exit 1; }
say "nodes $NODE_A ($NODE_NET.1) and $NODE_B ($NODE_NET.2) up"

export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
q() { "$AIMSWEEP" query "$1" "$2" --csv --no-header; }
rows() {
    q "$1" "SELECT task_id, solver, k, tau, samples, omega11, psi11, omega12, trace, overlap, loss
            FROM trajectory ORDER BY task_id, solver, k"
    q "$1" "SELECT task_id, solver, tau_wr, samples_wr, final_overlap, final_loss, max_gap_to_sgd, status
            FROM summary ORDER BY task_id, solver"
}
# wait_finished DB N: until N tasks of DB are finished (at most 60 s)
wait_finished() {
    t=0
    while [ "$(q "$1" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null || echo 0)" -lt "$2" ] && [ $t -lt 600 ]; do
        sleep 0.1
        t=$((t + 1))
    done
}
statuses() { q "$1" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM tasks GROUP BY status)"; }
SWEEP=$SRCDIR/tests/kill96.yaml
(cd "$W" && "$AIMSWEEP" run "$SWEEP" --db "$W/ref.db" --quiet) &
refpid=$!
printf '%s slots=3\n%s slots=2\n' "$NODE_A" "$NODE_B" >"$S/hostfile"
# mpirun on node A, ranks on both (rank 0 and two workers on A, two on B), TCP over the veth only
mpirun2() {
    node_exec A mpirun --hostfile "$S/hostfile" -n 5 --oversubscribe --mca plm_rsh_agent "$N/agent" \
        --mca oob_tcp_if_include $NODE_NET.0/24 --mca btl tcp,self --mca btl_tcp_if_include $NODE_NET.0/24 \
        "$AIMSWEEP" "$@"
}

# 1. across both nodes
say "1. mpirun across two nodes"
mpirun2 run "$SWEEP" --db "$W/two.db" --quiet 2>"$W/two.err"
rc=$?
[ $rc = 0 ] || fail "two nodes: exit $rc ($(tail -3 "$W/two.err"))"
hosts=$(q "$W/two.db" "SELECT group_concat(host || ' ' || n, ', ') FROM (SELECT host, count(*) n FROM tasks GROUP BY host)")
say "two nodes: exit $rc, tasks by host: $hosts"
[ "$(q "$W/two.db" "SELECT count(DISTINCT host) FROM tasks")" = 2 ] || fail "two nodes: the tasks did not run on both nodes"
wait $refpid || fail "the reference run"
rows "$W/ref.db" >"$W/ref.rows"
rows "$W/two.db" >"$W/two.rows"
cmp -s "$W/ref.rows" "$W/two.rows" || fail "two nodes: rows differ from the serial run"

# 2. node B dies mid-run
say "2. every process of node B killed mid-run"
mpirun2 run "$SWEEP" --db "$W/kill.db" --quiet --commit-interval 0.2 2>"$W/kill.err" &
job=$!
wait_finished "$W/kill.db" 12
onb=$(q "$W/kill.db" "SELECT count(*) FROM tasks WHERE status = 'running' AND host = '$NODE_B'")
t1=$(date +%s.%N)
node_kill_all B
wait $job
rc=$?
dt=$(echo "$(date +%s.%N) - $t1" | bc)
say "node B killed with $onb task(s) running on it: mpirun exit $rc after $dt s; $(statuses "$W/kill.db")"
grep -E "lost communication|noticed" "$W/kill.err" | head -2
stop=$(q "$W/kill.db" "SELECT stop_signal || ' ' || stop_sender FROM sweeps ORDER BY sweep_id DESC LIMIT 1")
say "stop recorded: ${stop:-none}"
[ -n "$stop" ] || fail "node death: no stop recorded"
[ "$(q "$W/kill.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "node death: tasks left running"
[ "$(q "$W/kill.db" "SELECT count(*) FROM tasks WHERE status = 'interrupted'")" -gt 0 ] ||
    fail "node death: no task recorded as interrupted"
[ "$(q "$W/kill.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "node death: a task was charged"
[ "$(q "$W/kill.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" -lt 96 ] ||
    fail "node death: the sweep had finished before the kill"
left=$("$AIMSWEEP" status "$W/kill.db" --left)
say "left to run (what the job script reads): $left"
[ "$left" -gt 0 ] || fail "node death: status --left says $left"
mpirun2 run "$SWEEP" --db "$W/kill.db" --quiet 2>>"$W/kill.err" || fail "node death: the rerun exit $?"
[ "$(q "$W/kill.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "node death: a task was charged by the rerun"
rows "$W/kill.db" >"$W/kill.rows"
cmp -s "$W/ref.rows" "$W/kill.rows" || fail "node death: rows differ from the serial run after the rerun"
say "rerun: $(statuses "$W/kill.db")"

# 2b. the link to node B cut (nothing dies): its ranks fall silent together
say "2b. the link to node B cut mid-run"
mpirun2 run "$SWEEP" --db "$W/cut.db" --commit-interval 0.2 --stall-timeout 4 2>"$W/cut.err" &
job=$!
wait_finished "$W/cut.db" 12
onb=$(q "$W/cut.db" "SELECT count(*) FROM tasks WHERE status = 'running' AND host = '$NODE_B'")
node_link B down
# rank 0 goes on with node A; once it has ended the job (MPI_Abort: the silent ranks cannot
# finalise), mpirun may wait for node B's daemon for good: the job script kills it after 60 s
t=0
while kill -0 $job 2>/dev/null && [ $t -lt 900 ]; do
    grep -q "ending the job with MPI_Abort" "$W/cut.db.log" 2>/dev/null && break
    sleep 0.1
    t=$((t + 1))
done
sleep 5
kill -0 $job 2>/dev/null && { say "mpirun still there 5 s after rank 0's MPI_Abort: killed"; kill -9 $job; }
wait $job
rc=$?
node_kill_all B
node_link B up
say "link cut with $onb task(s) running on node B: mpirun exit $rc; $(statuses "$W/cut.db")"
grep -E "taken for stalled|silent as a whole|MPI_Abort, exit code" "$W/cut.db.log" | sed 's/^[^ ]* //' | head -4
[ "$(q "$W/cut.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "link cut: a task was charged"
grep -q "silent as a whole" "$W/cut.db.log" || fail "link cut: node B's silence not seen as the node's"
[ "$(q "$W/cut.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')")" = 96 ] ||
    fail "link cut: node A did not finish the sweep: $(statuses "$W/cut.db")"
rows "$W/cut.db" >"$W/cut.rows"
cmp -s "$W/ref.rows" "$W/cut.rows" || fail "link cut: rows differ from the serial run"

# 3 and 4: Slurm on the two nodes
say "3. two slurmd"
T1=$(date +%s)
cluster2_start "$S/c" || { fail "the two-node cluster did not start"; exit 1; }
say "cluster up in $(($(date +%s) - T1)) s: $(node_exec A sinfo -h -o '%P %D %t' | tr '\n' ' ')"
J=$W/jobs
mkdir -p "$J" "$S/tmp" && cp "$SRCDIR"/jobs/*.sbatch "$SWEEP" "$J/" && chmod 1777 "$S/tmp" && chown -R "$CLUSTER_USER" "$J"
# submit ARGS...: sbatch as the user on node A from the job directory; prints the job id. The
# jobs' TMPDIR (Open MPI's session directories, with their Unix sockets) is short as well.
submit() { (cd "$J" && as_user2 env AIMSWEEP="$AIMSWEEP" TMPDIR="$S/tmp" sbatch --parsable "$@"); }
jinfo() { node_exec A scontrol show job "$1" 2>/dev/null; }
field() { jinfo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# wait_start ID: until the job runs or has ended; after 120 s the reason and slurmd's last words
wait_start() {
    t=0
    while [ $t -lt 120 ]; do
        case "$(field "$1" JobState)" in PENDING | CONFIGURING | "") ;; *) return 0 ;; esac
        sleep 1
        t=$((t + 1))
    done
    fail "job $1 did not start in 120 s: $(field "$1" Reason); slurmd says:"
    tail -n 8 "$S"/c/log/slurmd-*.log
    exit 1
}
wait_gone() {
    t=0
    while [ $t -lt "$2" ]; do
        case "$(field "$1" JobState)" in "" | COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;; esac
        # a job that goes back to the queue (launch failure) is no progress: slurmd's message
        [ "$(field "$1" Restarts)" = 0 ] || { fail "job $1 was requeued: $(field "$1" Reason)"; tail -n 8 "$S"/c/log/slurmd-*.log; exit 1; }
        sleep 1
        t=$((t + 1))
    done
    return 1
}
exitcode() { field "$1" ExitCode | cut -d: -f1; }

id=$(submit -N 2 --ntasks-per-node=2 --time=10 --output=two.out sweep.sbatch kill96.yaml two.db)
wait_start "$id"
say "job $id on $(field "$id" NodeList)"
wait_gone "$id" 240 || fail "sbatch -N 2: the job did not end in 240 s"
say "sbatch -N 2: exit $(exitcode "$id"), tasks by host: $(q "$J/two.db" "SELECT group_concat(host || ' ' || n, ', ') FROM (SELECT host, count(*) n FROM tasks GROUP BY host)")"
[ "$(exitcode "$id")" = 0 ] || { fail "sbatch -N 2: exit $(exitcode "$id")"; tail -n 20 "$J/two.out"; }
[ "$(q "$J/two.db" "SELECT count(DISTINCT host) FROM tasks")" = 2 ] || fail "sbatch -N 2: the workers did not run on both nodes"
rows "$J/two.db" >"$W/two-slurm.rows"
cmp -s "$W/ref.rows" "$W/two-slurm.rows" || fail "sbatch -N 2: rows differ from the serial run"

say "4. plain scancel of a two-node job, and its resubmission"
id=$(submit -N 2 --ntasks-per-node=2 --time=10 --partition=other --account=acct-$$ --output=cancel.out \
    --export=ALL,AIMSWEEP_MAX_CHAIN=2 sweep.sbatch kill96.yaml cancel.db)
wait_start "$id"
wait_finished "$J/cancel.db" 12
t1=$(date +%s.%N)
node_exec A scancel "$id"
wait_gone "$id" 60 || fail "scancel: the job did not end in 60 s"
say "scancel: ended $(echo "$(date +%s.%N) - $t1" | bc) s later, exit $(exitcode "$id"), state $(field "$id" JobState); $(statuses "$J/cancel.db")"
[ "$(exitcode "$id")" = 4 ] || fail "scancel: exit $(exitcode "$id"), expected 4"
grep -E "exit|resubmitting|submitted" "$J/cancel.out" | tail -n 4
[ "$(q "$J/cancel.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "scancel: tasks left running"
[ "$(q "$J/cancel.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "scancel: a task was charged"
next=$(sed -n 's/.*submitted job \([0-9]*\) to continue.*/\1/p' "$J/cancel.out" | tail -n 1)
if [ -z "$next" ]; then
    fail "scancel: the job did not resubmit itself"
else
    say "resubmitted as job $next: partition $(field "$next" Partition), account $(field "$next" Account), $(field "$next" NumNodes) nodes, $(field "$next" NumTasks) tasks"
    [ "$(field "$next" Partition)" = other ] || fail "resubmission: partition $(field "$next" Partition), expected other"
    [ "$(field "$next" Account)" = "acct-$$" ] || fail "resubmission: account $(field "$next" Account), expected acct-$$"
    wait_start "$next"
    wait_gone "$next" 240 || fail "the resubmitted job did not end in 240 s"
    [ "$(exitcode "$next")" = 0 ] || fail "the resubmitted job: exit $(exitcode "$next")"
    rows "$J/cancel.db" >"$W/cancel.rows"
    cmp -s "$W/ref.rows" "$W/cancel.rows" || fail "scancel and resubmission: rows differ from the serial run"
    [ "$(q "$J/cancel.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "scancel and resubmission: a task was charged"
fi

say "5. SIGUSR1 drain of a two-node job"
id=$(submit -N 2 --ntasks-per-node=2 --time=10 --output=usr1.out --export=ALL,AIMSWEEP_MAX_CHAIN=1 \
    sweep.sbatch kill96.yaml usr1.db --grace 5 --set tau_end=100)
wait_start "$id"
wait_finished "$J/usr1.db" 4
t1=$(date +%s.%N)
node_exec A scancel --signal=USR1 --batch "$id"
wait_gone "$id" 90 || fail "usr1: the job did not end in 90 s"
say "usr1: ended $(echo "$(date +%s.%N) - $t1" | bc) s after SIGUSR1, exit $(exitcode "$id"); $(statuses "$J/usr1.db")"
[ "$(exitcode "$id")" = 4 ] || fail "usr1: exit $(exitcode "$id"), expected 4"
[ "$(q "$J/usr1.db" "SELECT stop_signal FROM sweeps ORDER BY sweep_id DESC LIMIT 1")" = 10 ] || fail "usr1: the stop is not recorded"
[ "$(q "$J/usr1.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "usr1: tasks left running"
[ "$(q "$J/usr1.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "usr1: a task was charged"
grep -q "this is job 1 of its chain: not resubmitting" "$J/usr1.out" || fail "usr1: the job script did not see exit 4"

say "6. the hard time limit of a two-node job whose drain has not finished"
# a grace longer than the job and an end the run does not know: the limit's SIGTERM finds tasks
# running (the time limit is 1 min; Slurm enforces it within half a minute more)
id=$(submit -N 2 --ntasks-per-node=2 --time=1 --signal=B:USR1@2 --output=limit.out --export=ALL,AIMSWEEP_MAX_CHAIN=1 \
    sweep.sbatch kill96.yaml limit.db --grace 600 --end-time $(($(date +%s) + 86400)) --set tau_end=2000)
wait_start "$id"
wait_gone "$id" 180 || fail "time limit: the job did not end in 180 s"
say "time limit: exit $(exitcode "$id"), state $(field "$id" JobState); $(statuses "$J/limit.db")"
grep -E "SIGTERM|exit|resubmitting" "$J/limit.out" | grep -v "^ " | tail -n 3
[ "$(exitcode "$id")" = 4 ] || fail "time limit: exit $(exitcode "$id"), expected 4"
# Slurm says TIMEOUT, or FAILED when the batch script's exit 4 comes before it marks the job
# (the limit's signals reach the ranks through the step as well as through the batch shell)
case "$(field "$id" JobState)" in TIMEOUT | FAILED) ;; *) fail "time limit: state $(field "$id" JobState), expected TIMEOUT or FAILED" ;; esac
[ "$(q "$J/limit.db" "SELECT count(*) FROM tasks WHERE status = 'running'")" = 0 ] || fail "time limit: tasks left running"
[ "$(q "$J/limit.db" "SELECT max(attempts) FROM tasks")" = 0 ] || fail "time limit: a task was charged"

say "multinode test: $(($(date +%s) - T0)) s"
echo "$fails failed"
[ $fails -eq 0 ]
