#!/usr/bin/env bash
# The probe's goal benchmark: a 10M-parameter checkpoint (10 layers of width 512 with q, k, v and
# o projections, 8 heads of 64: 10,485,760 float32 parameters, written by NumPy as safetensors)
# probed with every head's statistics and Theorem 1's check at 10^4 token pairs per layer, on
# one core (one OpenBLAS thread). Prints the wall and CPU times of each run.
# usage: bench/probe.sh [AIMSWEEP [RUNS]]   (default build/aimsweep, 3)
set -euo pipefail
AIM=${1:-build/aimsweep}
RUNS=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 - "$dir/m10.safetensors" <<'PY'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(0)
d, layers = 512, 10
header, blobs, off = {}, [], 0
for L in range(layers):
    for p in "qkvo":
        raw = (rng.standard_normal((d, d)) / np.sqrt(d)).astype("<f4").tobytes()
        header[f"layers.{L}.attn.{p}_proj.weight"] = {"dtype": "F32", "shape": [d, d],
                                                      "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
header["__metadata__"] = {"heads": "8", "step": "0"}
h = json.dumps(header).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
for i in $(seq "$RUNS"); do
    OPENBLAS_NUM_THREADS=1 /usr/bin/time -f "run $i: wall %e s, CPU %U s user + %S s system" \
        "$AIM" probe "$dir/m10.safetensors" --pairs 10000 >/dev/null
done
