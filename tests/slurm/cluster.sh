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
    cluster_munge "$C" || return 1
    ctl_port=$(cluster_free_port $((20000 + $$ % 20000))) || return 1
    d_port=$(cluster_free_port $((ctl_port + 1))) || return 1
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
    {
        printf 'ClusterName=aimsweeptest\nSlurmctldHost=localhost\nSlurmctldAddr=127.0.0.1\n'
        printf 'SlurmctldPort=%s\nSlurmdPort=%s\n' "$ctl_port" "$d_port"
        cluster_conf "$C" ""
        cat <<CONF
NodeName=$CLUSTER_NODE NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$CLUSTER_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    } >"$C/etc/slurm.conf"
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
    cluster_stop_pids "$C/run/slurmd.pid" "$C/run/slurmctld.pid" "$C/munge/munged.pid"
}

# Stops the processes whose pids the files hold, in order, each within 10 s (then SIGKILL).
cluster_stop_pids() {
    for f in "$@"; do
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

# munged for the cluster under DIR: its own key, socket, pid and seed files (its directories
# private to it); a Unix socket, no network
cluster_munge() {
    mkdir -p "$1/munge" "$1/munge-sock" || return 1
    chmod 700 "$1/munge"
    chmod 755 "$1/munge-sock"
    dd if=/dev/urandom of="$1/munge/munge.key" bs=1024 count=1 status=none || return 1
    chmod 400 "$1/munge/munge.key"
    munged --force --socket="$1/munge-sock/munge.socket" --key-file="$1/munge/munge.key" \
        --pid-file="$1/munge/munged.pid" --seed-file="$1/munge/munged.seed" \
        --log-file="$1/munge/munged.log" || { echo "cluster: munged did not start" >&2; return 1; }
}

# The lines of slurm.conf both test clusters share, with their files under DIR; SUFFIX names
# the slurmd files (-%n when several slurmd share DIR, one per node)
cluster_conf() {
    cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$1/munge-sock/munge.socket
StateSaveLocation=$1/state
SlurmdSpoolDir=$1/spool$2
SlurmctldPidFile=$1/run/slurmctld.pid
SlurmdPidFile=$1/run/slurmd$2.pid
SlurmctldLogFile=$1/log/slurmctld.log
SlurmdLogFile=$1/log/slurmd$2.log
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
CONF
}

# Ends the calling test with SIGTERM to PID after SECONDS, so that it always cleans up inside
# ctest's own limit; prints the watchdog's pid (kill it when done).
cluster_watchdog() {
    (
        trap 'kill $s 2>/dev/null; exit 0' TERM
        sleep "$2" &
        s=$!
        wait $s && echo "$3: over $2 s: stopping" && kill -TERM "$1"
    ) >&2 &
    echo $!
}
