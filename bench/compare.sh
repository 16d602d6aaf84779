#!/usr/bin/env bash
# Two or more builds of aimsweep against each other: `aimsweep bench` of each in turn, ROUNDS
# rounds (alternating, so that a neighbour's load falls on all of them alike), and each
# configuration's median steps/s with its ratio to the first build's.
# usage: bench/compare.sh [--d 400,800] [--decomposition direct,tied,untied] [--precision double]
#                         [--rounds 5] [--seconds 0.5] BUILD1 BUILD2 ...   (BUILD: an aimsweep binary)
set -euo pipefail
ds=400,800 dec=direct,tied,untied prec=double rounds=5 secs=0.5
while [ $# -gt 0 ]; do
    case "$1" in
    --d) ds=$2; shift 2 ;;
    --decomposition) dec=$2; shift 2 ;;
    --precision) prec=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "usage: bench/compare.sh [options] BUILD1 BUILD2 ..." >&2; exit 2; }
for b in "$@"; do [ -x "$b" ] || { echo "compare.sh: $b is not an executable" >&2; exit 2; }; done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
    for i in $(seq $#); do
        "${!i}" bench --d "$ds" --decomposition "$dec" --precision "$prec" --seconds "$secs" \
            --format csv | awk -F, -v b="$i" 'NR > 1 { print b, $1 "/" $2 "/" $3, $4 }' >>"$out"
    done
done
/usr/bin/python3 - "$out" "$@" <<'PY'
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
