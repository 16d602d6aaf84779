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
    mkdir -p "$C2/etc" "$C2/state" "$C2/log" "$C2/run" "$C2/spool-$NODE_A" "$C2/spool-$NODE_B" || return 1
    id -u "$CLUSTER_USER" >/dev/null 2>&1 ||
        useradd --system --no-create-home --shell /bin/sh "$CLUSTER_USER" || return 1
    chmod 755 "$C2" "$C2/etc" "$C2/log"
    cluster_munge "$C2" || return 1
    cpus=$(nproc)
    {
        printf 'ClusterName=aimsweep2\nSlurmctldHost=%s(%s.1)\nSlurmctldPort=6817\nSlurmdPort=6818\n' "$NODE_A" $NODE_NET
        cluster_conf "$C2" -%n
        cat <<CONF
NodeName=$NODE_A NodeAddr=$NODE_NET.1 NodeHostname=$NODE_A CPUs=$cpus RealMemory=1000 State=UNKNOWN
NodeName=$NODE_B NodeAddr=$NODE_NET.2 NodeHostname=$NODE_B CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$NODE_A,$NODE_B Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=other Nodes=$NODE_A,$NODE_B Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
    } >"$C2/etc/slurm.conf"
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
    cluster_stop_pids "$C2/run/slurmd-$NODE_B.pid" "$C2/run/slurmd-$NODE_A.pid" "$C2/run/slurmctld.pid" \
        "$C2/munge/munged.pid"
}
