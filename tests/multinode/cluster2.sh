# A private two-node Slurm cluster on the nodes of nodes.sh (sourced after nodes.sh and
# tests/slurm/cluster.sh, whose munged set-up and user it shares; needs root).
#
# cluster2_start DIR: munged (a Unix socket, no network), slurmctld on node A at 10.251.0.1, one
# slurmd in each node (entered with node_exec: network, UTS and mount namespaces), spool, pid and
# log files per node (%n) under DIR, which should be short (Unix socket paths under the spool are
# limited to 108 bytes). Two partitions: test (the default) and other. cluster2_stop stops
# exactly the daemons it started, by the pids they wrote. After cluster2_start: SLURM_CONF is
# exported, and as_user2 CMD... runs CMD as $CLUSTER_USER on node A, in the current directory.
cluster2_start() {
    C2=$1
    mkdir -p "$C2/etc" "$C2/state" "$C2/log" "$C2/run" "$C2/munge" "$C2/munge-sock" \
        "$C2/spool-$NODE_A" "$C2/spool-$NODE_B" || return 1
    id -u "$CLUSTER_USER" >/dev/null 2>&1 ||
        useradd --system --no-create-home --shell /bin/sh "$CLUSTER_USER" || return 1
    chmod 755 "$C2" "$C2/etc" "$C2/log" "$C2/munge-sock"
    chmod 700 "$C2/munge"
    dd if=/dev/urandom of="$C2/munge/munge.key" bs=1024 count=1 status=none || return 1
    chmod 400 "$C2/munge/munge.key"
    munged --force --socket="$C2/munge-sock/munge.socket" --key-file="$C2/munge/munge.key" \
        --pid-file="$C2/munge/munged.pid" --seed-file="$C2/munge/munged.seed" \
        --log-file="$C2/munge/munged.log" || { echo "cluster2: munged did not start" >&2; return 1; }
    cpus=$(nproc)
    cat >"$C2/etc/slurm.conf" <<CONF
ClusterName=aimsweep2
SlurmctldHost=$NODE_A($NODE_NET.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C2/munge-sock/munge.socket
StateSaveLocation=$C2/state
SlurmdSpoolDir=$C2/spool-%n
SlurmctldPidFile=$C2/run/slurmctld.pid
SlurmdPidFile=$C2/run/slurmd-%n.pid
SlurmctldLogFile=$C2/log/slurmctld.log
SlurmdLogFile=$C2/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=10
OverTimeLimit=0
MinJobAge=300
InactiveLimit=0
SlurmdTimeout=60
MessageTimeout=10
PropagateResourceLimitsExcept=ALL
NodeName=$NODE_A NodeAddr=$NODE_NET.1 NodeHostname=$NODE_A CPUs=$cpus RealMemory=1000 State=UNKNOWN
NodeName=$NODE_B NodeAddr=$NODE_NET.2 NodeHostname=$NODE_B CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$NODE_A,$NODE_B Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=other Nodes=$NODE_A,$NODE_B Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    export SLURM_CONF="$C2/etc/slurm.conf"
    node_exec A slurmctld -f "$SLURM_CONF" -i || { echo "cluster2: slurmctld did not start" >&2; return 1; }
    node_exec A slurmd -f "$SLURM_CONF" -N "$NODE_A" || { echo "cluster2: slurmd A did not start" >&2; return 1; }
    node_exec B slurmd -f "$SLURM_CONF" -N "$NODE_B" || { echo "cluster2: slurmd B did not start" >&2; return 1; }
    t=0
    while [ $t -lt 60 ]; do
        st=$(node_exec A sinfo -h -p test -o %t 2>/dev/null | sort -u | tr '\n' ' ')
        [ "$st" = "idle " ] && return 0
        sleep 1
        t=$((t + 1))
    done
    echo "cluster2: nodes not idle after 60 s (state '$st'); logs:" >&2
    tail -n 5 "$C2"/log/*.log >&2
    return 1
}

as_user2() { node_exec A runuser -u "$CLUSTER_USER" -- env -C "$PWD" SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"; }

cluster2_stop() {
    [ -n "${C2:-}" ] || return 0
    for f in "$C2/run/slurmd-$NODE_B.pid" "$C2/run/slurmd-$NODE_A.pid" "$C2/run/slurmctld.pid" "$C2/munge/munged.pid"; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        kill -TERM "$pid" 2>/dev/null || continue
        t=0
        while kill -0 "$pid" 2>/dev/null && [ $t -lt 100 ]; do
            sleep 0.1
            t=$((t + 1))
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    done
    return 0
}
