#!/usr/bin/env bash
# The SGD step benchmark, side by side in one run: aimsweep's fused step, its roofline at the
# measured bandwidth, and the same step in NumPy on OpenBLAS and in PyTorch (CPU). All
# single-threaded. With --pair, aimsweep's step is also measured with two copies running at
# once (each pinned to its own core where taskset exists), to show how much two ranks on one
# node slow each other (at large d they share the memory bandwidth).
# usage: bench/run.sh [--pair] [D_LIST] [SECONDS]     (default 100,400,800 and 1 s)
#        bench/run.sh --pair 400,1600,3200 2          (the DRAM-bound sizes and two ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
pair=0
if [ "${1:-}" = "--pair" ]; then pair=1; shift; fi
ds=${1:-100,400,800}
secs=${2:-1}
bin=${AIMSWEEP:-build/aimsweep}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
c=$(mktemp) n=$(mktemp) t=$(mktemp) p1=$(mktemp) p2=$(mktemp)
trap 'rm -f "$c" "$n" "$t" "$p1" "$p2"' EXIT
"$bin" bench --d "$ds" --seconds "$secs" --format csv >"$c"
/usr/bin/python3 bench/sgd_numpy.py "$ds" direct,tied,untied "$secs" >"$n"
/usr/bin/python3 bench/sgd_torch.py "$ds" direct,tied,untied "$secs" >"$t"
if [ "$pair" = 1 ]; then
    pin0="" pin1=""
    if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin0="taskset -c 0" pin1="taskset -c 1"; fi
    $pin0 "$bin" bench --d "$ds" --seconds "$secs" --format csv >"$p1" &
    $pin1 "$bin" bench --d "$ds" --seconds "$secs" --format csv >"$p2" &
    wait
fi
/usr/bin/python3 - "$c" "$n" "$t" "$pair" "$p1" "$p2" <<'PY'
import csv, math, sys
def table(path, key="steps_per_s"):
    try:
        return {(r["decomposition"], r["d"]): float(r[key]) for r in csv.DictReader(open(path))}
    except (OSError, KeyError):
        return {}
ours = {(r["decomposition"], r["d"]): r for r in csv.DictReader(open(sys.argv[1]))}
numpy, torch = table(sys.argv[2]), table(sys.argv[3])
pair = sys.argv[4] == "1"
p1, p2 = (table(sys.argv[5]), table(sys.argv[6])) if pair else ({}, {})
head = ("| decomposition | d | aimsweep steps/s | NumPy steps/s | PyTorch steps/s | vs NumPy | vs PyTorch "
        "| bytes/step | bandwidth GB/s | step / roofline |")
if pair:
    head += " two at once: steps/s each | slowdown |"
print(head)
print("|---" * (head.count("|") - 1) + "|")
nan = float("nan")
for key, r in ours.items():
    s = float(r["steps_per_s"]); npv = numpy.get(key, nan); tv = torch.get(key, nan)
    line = (f"| {key[0]} | {key[1]} | {s:.0f} | {npv:.0f} | {tv:.0f} | {s / npv:.1f}x | {s / tv:.1f}x | "
            f"{float(r['bytes_per_step']):.0f} | {float(r['bandwidth_gbs']):.1f} | {float(r['ratio_to_roofline']):.2f} |")
    if pair:
        a, b = p1.get(key, nan), p2.get(key, nan)
        line += f" {a:.0f}, {b:.0f} | {s / (0.5 * (a + b)):.2f}x |"
    print(line)
PY
