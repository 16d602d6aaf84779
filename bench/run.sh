#!/usr/bin/env bash
# The SGD step benchmark, side by side in one run: aimsweep's fused step, its roofline at the
# measured bandwidth, and the same step in NumPy on OpenBLAS. Both single-threaded.
# usage: bench/run.sh [D_LIST] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ds=${1:-100,400,800}
secs=${2:-1}
export OPENBLAS_NUM_THREADS=1
c=$(mktemp) n=$(mktemp)
trap 'rm -f "$c" "$n"' EXIT
build/aimsweep bench --d "$ds" --seconds "$secs" --format csv >"$c"
/usr/bin/python3 bench/sgd_numpy.py "$ds" direct,tied,untied "$secs" >"$n"
/usr/bin/python3 - "$c" "$n" <<'PY'
import csv, sys
ours = {(r["decomposition"], r["d"]): r for r in csv.DictReader(open(sys.argv[1]))}
numpy = {(r["decomposition"], r["d"]): float(r["steps_per_s"]) for r in csv.DictReader(open(sys.argv[2]))}
print("| decomposition | d | aimsweep steps/s | NumPy steps/s | speed-up | bytes/step | bandwidth GB/s | step / roofline |")
print("|---|---|---|---|---|---|---|---|")
for key, r in ours.items():
    s = float(r["steps_per_s"]); npv = numpy.get(key, float("nan"))
    print(f"| {key[0]} | {key[1]} | {s:.0f} | {npv:.0f} | {s / npv:.1f}x | {float(r['bytes_per_step']):.0f} | "
          f"{float(r['bandwidth_gbs']):.1f} | {float(r['ratio_to_roofline']):.2f} |")
PY
