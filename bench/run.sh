#!/usr/bin/env bash
# The SGD step benchmark, side by side in one run: aimsweep's fused step, its roofline (the
# larger of its bytes over the measured bandwidth and its multiply-adds over the measured
# multiply-add rate; src/cli/cli_bench.c), and the same step in NumPy on OpenBLAS and in
# PyTorch (CPU). All single-threaded. With --pair, aimsweep's step is also measured with two
# copies running at once (each pinned to its own core where taskset exists), to show how much
# two ranks on one node slow each other (at large d they share the memory bandwidth).
# aimsweep's step is measured in double and in single precision (`precision single`), each
# against the roofline at its own bytes and arithmetic; the peers run in double, at the sizes
# --peers names (default: all; at d = 1600 and beyond a NumPy step takes seconds).
# Every timing, ours and the peers', is the best over ~2 ms batches (the machine may be shared).
# After the table, `aimsweep bench --loads`: what a vector load costs the multiply-add units.
# usage: bench/run.sh [--pair] [--peers D_LIST] [D_LIST] [SECONDS]     (default 100,400,800 and 1 s)
#        bench/run.sh --pair --peers 400 400,800,1600,3200 4      (the README's table)
set -euo pipefail
cd "$(dirname "$0")/.."
pair=0 peers=""
while [ $# -gt 0 ]; do
    case "$1" in
    --pair) pair=1; shift ;;
    --peers) peers=${2:?--peers takes a list of sizes}; shift 2 ;;
    *) break ;;
    esac
done
ds=${1:-100,400,800}
secs=${2:-1}
peers=${peers:-$ds}
bin=${AIMSWEEP:-build/aimsweep}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
c=$(mktemp) n=$(mktemp) t=$(mktemp) p1=$(mktemp) p2=$(mktemp)
trap 'rm -f "$c" "$n" "$t" "$p1" "$p2"' EXIT
"$bin" bench --d "$ds" --precision double,single --seconds "$secs" --format csv >"$c"
# The peers allocate their temporaries (a d x d outer product, a clone of U) every step. glibc
# serves blocks over its mmap threshold with fresh pages, zeroed by the kernel on first touch,
# and moves the threshold only as blocks come and go, so a peer's step took 1.5-15x longer in
# some runs than in others (PyTorch's untied step at d = 400: 70-150 or about 1700 steps/s,
# NumPy's 620-880 or about 1300). Keeping such blocks on the heap gives each peer its steady,
# faster speed, which is the fair comparison.
peer_env="GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=536870912"
env "$peer_env" /usr/bin/python3 bench/sgd_numpy.py "$peers" direct,tied,untied "$secs" >"$n"
env "$peer_env" /usr/bin/python3 bench/sgd_torch.py "$peers" direct,tied,untied "$secs" >"$t"
if [ "$pair" = 1 ]; then
    pin0="" pin1=""
    if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin0="taskset -c 0" pin1="taskset -c 1"; fi
    $pin0 "$bin" bench --d "$ds" --precision double,single --seconds "$secs" --format csv >"$p1" &
    $pin1 "$bin" bench --d "$ds" --precision double,single --seconds "$secs" --format csv >"$p2" &
    wait
fi
/usr/bin/python3 - "$c" "$n" "$t" "$pair" "$p1" "$p2" <<'PY'
import csv, math, sys
def table(path, key="steps_per_s"):
    try:
        return {(r["decomposition"], r["d"], r.get("precision", "double")): float(r[key])
                for r in csv.DictReader(open(path))}
    except (OSError, KeyError):
        return {}
ours = {(r["decomposition"], r["d"], r["precision"]): r for r in csv.DictReader(open(sys.argv[1]))}
numpy, torch = table(sys.argv[2]), table(sys.argv[3])
pair = sys.argv[4] == "1"
p1, p2 = (table(sys.argv[5]), table(sys.argv[6])) if pair else ({}, {})
head = ("| decomposition | d | precision | aimsweep steps/s | single / double | NumPy steps/s | PyTorch steps/s "
        "| vs NumPy | vs PyTorch | bytes/step | bandwidth GB/s | memory us | GFMA/s | compute us | step / roofline |")
if pair:
    head += " two at once: steps/s each | slowdown |"
print(head)
print("|---" * (head.count("|") - 1) + "|")
nan = float("nan")
def cell(v, fmt):
    return "" if math.isnan(v) else format(v, fmt)
for key, r in ours.items():
    s = float(r["steps_per_s"])
    dbl = float(ours[(key[0], key[1], "double")]["steps_per_s"]) if (key[0], key[1], "double") in ours else nan
    sd = s / dbl if key[2] == "single" else nan
    npv, tv = numpy.get(key, nan), torch.get(key, nan)
    line = (f"| {key[0]} | {key[1]} | {key[2]} | {s:.0f} | {cell(sd, '.2f')} | {cell(npv, '.0f')} | {cell(tv, '.0f')} | "
            f"{cell(s / npv, '.1f')} | {cell(s / tv, '.1f')} | "
            f"{float(r['bytes_per_step']):.0f} | {float(r['bandwidth_gbs']):.1f} | {float(r['memory_us']):.2f} | "
            f"{float(r['gfma_per_s']):.1f} | {float(r['compute_us']):.2f} | {float(r['ratio_to_roofline']):.2f} |")
    if pair:
        a, b = p1.get(key, nan), p2.get(key, nan)
        line += f" {a:.0f}, {b:.0f} | {s / (0.5 * (a + b)):.2f}x |"
    print(line)
PY
echo
"$bin" bench --loads --seconds "$secs"
