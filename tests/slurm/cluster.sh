# A private one-node Slurm cluster on loopback, for the slurm test (sourced, POSIX sh).
#
# cluster_start DIR starts munged, slurmctld and slurmd from a configuration written under DIR
# (slurm.conf with SlurmctldHost=localhost, a fresh munge key, state, spool, logs and pid
# files, ports on 127.0.0.1 chosen free at start), and creates the unprivileged user
# $CLUSTER_USER that jobs are submitted as. cluster_stop stops exactly the daemons it
# started, by the pids they wrote, and waits for them to go. Needs root (slurmd starts jobs
# as another user; munged and slurmd check who owns their files).
# After cluster_start: SLURM_CONF is exported; as_user CMD... runs CMD as $CLUSTER_USER.
CLUSTER_USER=${CLUSTER_USER:-aimsweeptest}
CLUSTER_NODE=localhost

# A TCP port on 127.0.0.1 that nothing listens on (bash's /dev/tcp probes only loopback).
cluster_free_port() {
    p=$1
    while [ "$p" -lt 65000 ]; do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
        p=$((p + 1))
    done
    return 1
}

as_user() { runuser -u "$CLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"; }

cluster_start() {
    C=$1
    mkdir -p "$C/etc" "$C/state" "$C/spool" "$C/log" "$C/run" "$C/munge" || return 1
    id -u "$CLUSTER_USER" >/dev/null 2>&1 ||
        useradd --system --no-create-home --shell /bin/sh "$CLUSTER_USER" || return 1
    chmod 755 "$C" "$C/etc" "$C/log"
    # munge: its own key, socket, pid and seed files; its dirs must be private to it
    chmod 700 "$C/munge"
    dd if=/dev/urandom of="$C/munge/munge.key" bs=1024 count=1 status=none || return 1
    chmod 400 "$C/munge/munge.key"
    mkdir -p "$C/munge-sock" && chmod 755 "$C/munge-sock"
    munged --force --socket="$C/munge-sock/munge.socket" --key-file="$C/munge/munge.key" \
        --pid-file="$C/munge/munged.pid" --seed-file="$C/munge/munged.seed" \
        --log-file="$C/munge/munged.log" || { echo "cluster: munged did not start" >&2; return 1; }
    ctl_port=$(cluster_free_port $((20000 + $$ % 20000))) || return 1
    d_port=$(cluster_free_port $((ctl_port + 1))) || return 1
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
    cat >"$C/etc/slurm.conf" <<CONF
ClusterName=aimsweeptest
SlurmctldHost=localhost
SlurmctldAddr=127.0.0.1
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$C/munge-sock/munge.socket
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool
SlurmctldPidFile=$C/run/slurmctld.pid
SlurmdPidFile=$C/run/slurmd.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd.log
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
NodeName=$CLUSTER_NODE NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$CLUSTER_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    export SLURM_CONF="$C/etc/slurm.conf"
    slurmctld -f "$SLURM_CONF" -i || { echo "cluster: slurmctld did not start" >&2; return 1; }
    slurmd -f "$SLURM_CONF" -N "$CLUSTER_NODE" || { echo "cluster: slurmd did not start" >&2; return 1; }
    # up when the node is idle
    t=0
    while [ $t -lt 60 ]; do
        st=$(sinfo -h -n "$CLUSTER_NODE" -o %t 2>/dev/null)
        [ "$st" = idle ] && return 0
        sleep 1
        t=$((t + 1))
    done
    echo "cluster: node not idle after 60 s (state '$st'); logs in $C/log" >&2
    return 1
}

# Stops the daemons whose pid files are under DIR (only those), then waits for them.
cluster_stop() {
    C=$1
    for f in "$C/run/slurmd.pid" "$C/run/slurmctld.pid" "$C/munge/munged.pid"; do
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
