#!/usr/bin/env bash
# Two or more builds of aimsweep against each other: `aimsweep bench` of each in turn, ROUNDS
# rounds (alternating, so that a neighbour's load falls on all of them alike), and each
# configuration's median steps/s with its ratio to the first build's.
#
# --together (two builds, a machine of two cores or more): the two at once, one pinned to each
# of the first two cores, then the cores swapped, each round; each configuration's speedup of
# the second build over the first is the geometric mean of the rounds' ratios of their times a
# step (a swap cancels a difference between the cores), with the least and the largest ratio.
# On a shared machine whose speed drifts by 5-25% from one minute to the next, builds timed in
# turn see different neighbours; timed at once they see the same ones. Two copies of the same
# build measure the method itself: 0.98 and 1.00 on the development machine (direct and tied at
# d = 400 in single, four rounds), from single ratios of 0.71-1.34 while one core ran slower.
#
# usage: bench/compare.sh [--d 400,800] [--decomposition direct,tied,untied] [--precision double]
#                         [--rounds 5] [--seconds 0.5] [--together] BUILD1 BUILD2 ...
#        (BUILD: an aimsweep binary)
set -euo pipefail
ds=400,800 dec=direct,tied,untied prec=double rounds=5 secs=0.5 together=0
while [ $# -gt 0 ]; do
    case "$1" in
    --d) ds=$2; shift 2 ;;
    --decomposition) dec=$2; shift 2 ;;
    --precision) prec=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --together) together=1; shift ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "usage: bench/compare.sh [options] BUILD1 BUILD2 ..." >&2; exit 2; }
for b in "$@"; do [ -x "$b" ] || { echo "compare.sh: $b is not an executable" >&2; exit 2; }; done
if [ "$together" = 1 ]; then
    [ $# -eq 2 ] || { echo "compare.sh: --together takes two builds" >&2; exit 2; }
    [ "$(nproc)" -ge 2 ] || { echo "compare.sh: --together needs two cores" >&2; exit 2; }
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench() { # bench BUILD [CORE]: a line a configuration, "decomposition/d/precision steps/s us/step"
    local pin=()
    [ $# -lt 2 ] || pin=(taskset -c "$2")
    "${pin[@]}" "$1" bench --d "$ds" --decomposition "$dec" --precision "$prec" --seconds "$secs" \
        --format csv | awk -F, 'NR > 1 { print $1 "/" $2 "/" $3, $4, $5 }'
}
if [ "$together" = 1 ]; then
    for _ in $(seq "$rounds"); do
        for cores in "0 1" "1 0"; do
            read -r ca cb <<<"$cores"
            bench "$1" "$ca" >"$out/a" &
            pa=$!
            bench "$2" "$cb" >"$out/b" &
            pb=$!
            wait "$pa" "$pb"
            join <(sort "$out/a") <(sort "$out/b") >>"$out/pairs"
        done
    done
    /usr/bin/python3 - "$out/pairs" "$@" <<'PY'
import collections, math, sys
ratios = collections.defaultdict(list)
for line in open(sys.argv[1]):
    key, _, us_a, _, us_b = line.split()
    ratios[key].append(float(us_a) / float(us_b))
keys = sorted(ratios, key=lambda k: (k.split("/")[0], int(k.split("/")[1]), k))
print("| configuration | speedup of %s over %s (geometric mean) | least | largest | pairs |"
      % (sys.argv[3], sys.argv[2]))
print("|---|---|---|---|---|")
for k in keys:
    r = ratios[k]
    g = math.exp(sum(math.log(x) for x in r) / len(r))
    print("| %s | %.3f | %.2f | %.2f | %d |" % (k, g, min(r), max(r), len(r)))
PY
    exit 0
fi
for _ in $(seq "$rounds"); do
    for i in $(seq $#); do
        bench "${!i}" | awk -v b="$i" '{ print b, $1, $2 }' >>"$out/runs"
    done
done
/usr/bin/python3 - "$out/runs" "$@" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, key, v = line.split()
    runs[(int(b), key)].append(float(v))
builds = sys.argv[2:]
keys = sorted({k for _, k in runs}, key=lambda k: (k.split("/")[0], int(k.split("/")[1]), k))
print("| configuration | " + " | ".join(builds) + " |")
print("|---|" + "---|" * len(builds))
for k in keys:
    base = statistics.median(runs[(1, k)])
    cells = ["%.0f (%.2fx)" % (statistics.median(runs[(i, k)]), statistics.median(runs[(i, k)]) / base)
             for i in range(1, len(builds) + 1)]
    print("| " + k + " | " + " | ".join(cells) + " |")
PY
