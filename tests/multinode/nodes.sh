# Two "nodes" on one machine, for the multinode test (sourced, POSIX sh; needs root).
#
# nodes_start DIR makes two network namespaces joined by a veth pair whose addresses,
# 10.251.0.1/24 (node A) and 10.251.0.2/24 (node B), exist only inside them, and in each a holder
# process with its own UTS and mount namespaces: hostname NODE_A or NODE_B, and a private
# /etc/hosts naming the two. Entering a node (node_exec A|B CMD...) is nsenter into its holder's
# network, UTS and mount namespaces: unlike `ip netns exec`, /sys stays the machine's, so that
# slurmd finds its cgroup file system. DIR/agent is a launch agent for mpirun
# (plm_rsh_agent): `agent HOST CMD...` runs CMD in that node, as ssh would.
# nodes_stop DIR kills every process left in the two namespaces (by the pids the kernel lists),
# then the holders, and removes the namespaces. Nothing outside the namespaces is ever addressed.
NODE_A=${NODE_A:-aswa}
NODE_B=${NODE_B:-aswb}
NODE_NET=10.251.0

# node_pid A|B: the holder of that node
node_pid() { cat "$NODES_DIR/holder-$1"; }

node_exec() {
    n=$1
    shift
    nsenter -t "$(node_pid "$n")" --net --uts --mount -- "$@"
}

nodes_start() {
    NODES_DIR=$1
    mkdir -p "$NODES_DIR" || return 1
    NS_A=asw-a.$$
    NS_B=asw-b.$$
    echo "$NS_A $NS_B va$$ vb$$" >"$NODES_DIR/netns"
    ip netns add "$NS_A" && ip netns add "$NS_B" || return 1
    ip link add va$$ netns "$NS_A" type veth peer name vb$$ netns "$NS_B" || return 1
    ip -n "$NS_A" addr add $NODE_NET.1/24 dev va$$ &&
        ip -n "$NS_B" addr add $NODE_NET.2/24 dev vb$$ &&
        ip -n "$NS_A" link set lo up && ip -n "$NS_A" link set va$$ up &&
        ip -n "$NS_B" link set lo up && ip -n "$NS_B" link set vb$$ up || return 1
    printf '127.0.0.1 localhost\n%s.1 %s\n%s.2 %s\n' $NODE_NET "$NODE_A" $NODE_NET "$NODE_B" >"$NODES_DIR/hosts"
    for n in A B; do
        eval "ns=\$NS_$n name=\$NODE_$n"
        # shellcheck disable=SC2154
        # in a subshell, so that the caller's shell does not report the holder's end
        (
            nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private \
                sh -c "hostname $name && mount --bind '$NODES_DIR/hosts' /etc/hosts && exec sleep 1000000" \
                </dev/null >/dev/null 2>&1 &
            echo $! >"$NODES_DIR/holder-$n"
        )
    done
    t=0
    while [ "$(node_exec B hostname 2>/dev/null)" != "$NODE_B" ] || [ "$(node_exec A hostname 2>/dev/null)" != "$NODE_A" ]; do
        t=$((t + 1))
        [ $t -lt 50 ] || { echo "nodes: the holders did not come up" >&2; return 1; }
        sleep 0.1
    done
    cat >"$NODES_DIR/agent" <<AGENT
#!/bin/sh
# mpirun's launch agent (plm_rsh_agent): agent HOST CMD... runs CMD in the node HOST, as ssh would
host=\$1
shift
case \$host in
$NODE_A | $NODE_NET.1) pid=$(node_pid A) ;;
$NODE_B | $NODE_NET.2) pid=$(node_pid B) ;;
*) echo "agent: no node \$host" >&2; exit 1 ;;
esac
exec nsenter -t \$pid --net --uts --mount -- sh -c "\$*"
AGENT
    chmod 755 "$NODES_DIR/agent"
}

# node_kill_all B: SIGKILL to every process in node B's network namespace but its holder
node_kill_all() {
    ns=$(cut -d' ' -f"$([ "$1" = A ] && echo 1 || echo 2)" "$NODES_DIR/netns")
    h=$(node_pid "$1")
    for p in $(ip netns pids "$ns" 2>/dev/null); do
        [ "$p" = "$h" ] || kill -9 "$p" 2>/dev/null
    done
}

# node_link A|B up|down: that node's end of the veth pair (down: a link cut; nothing dies)
node_link() {
    if [ "$1" = A ]; then
        ip -n "$(cut -d' ' -f1 "$NODES_DIR/netns")" link set "$(cut -d' ' -f3 "$NODES_DIR/netns")" "$2"
    else
        ip -n "$(cut -d' ' -f2 "$NODES_DIR/netns")" link set "$(cut -d' ' -f4 "$NODES_DIR/netns")" "$2"
    fi
}

nodes_stop() {
    NODES_DIR=$1
    [ -s "$NODES_DIR/netns" ] || return 0
    for ns in $(cut -d' ' -f1,2 "$NODES_DIR/netns"); do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    for n in A B; do
        [ -s "$NODES_DIR/holder-$n" ] && kill -9 "$(cat "$NODES_DIR/holder-$n")" 2>/dev/null
    done
    sleep 0.2
    for ns in $(cut -d' ' -f1,2 "$NODES_DIR/netns"); do
        ip netns del "$ns" 2>/dev/null
    done
    rm -f "$NODES_DIR/netns"
    return 0
}
