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
#      resubmitted job keeps the partition and account of the first sbatch line.
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
LIMIT_S=${MULTINODE_TEST_LIMIT_S:-540}
main=$$
(
    trap 'kill $s 2>/dev/null; exit 0' TERM
    sleep "$LIMIT_S" &
    s=$!
    wait $s && echo "multinode_test: over $LIMIT_S s: stopping" && kill -TERM $main
) &
watchdog=$!
. "$SRCDIR/tests/multinode/nodes.sh"
. "$SRCDIR/tests/slurm/cluster.sh"
. "$SRCDIR/tests/multinode/cluster2.sh"
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
t=0
while [ "$(q "$W/kill.db" "SELECT count(*) FROM tasks WHERE status IN ('done', 'diverged')" 2>/dev/null || echo 0)" -lt 12 ] && [ $t -lt 600 ]; do
    sleep 0.1
    t=$((t + 1))
done
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

# 3 and 4: Slurm on the two nodes
# slurm part

say "multinode test: $(($(date +%s) - T0)) s"
echo "$fails failed"
[ $fails -eq 0 ]
