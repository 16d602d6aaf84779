"""Writes the valid files that tests/probe_fuzz.c mutates (small, every format).
usage: fuzz_seeds.py DIR   (prints the paths)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_files as pf  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
m = pf.model(d=8, heads=2, dh=2, layers=2)
paths = []
for dt in ["F32", "F16", "BF16", "F64"]:
    p = os.path.join(out, f"seed_{dt}.safetensors")
    pf.write_safetensors(p, {k: (v, dt) for k, v in m.items()}, {"heads": 2, "step": 3})
    paths.append(p)
p = os.path.join(out, "seed_fused.safetensors")
pf.write_safetensors(p, {"a.in_proj_weight": (np.ones((24, 8)), "F32")})
paths.append(p)
for code, order in [("<f4", "C"), (">f8", "F"), ("<f2", "C")]:
    arrs = {k: np.array(v, dtype=code, order=order) for k, v in m.items()}
    for saver in [np.savez, np.savez_compressed]:
        p = os.path.join(out, f"seed_{code[1:]}_{order}_{saver.__name__}.npz")
        saver(p, **arrs)
        paths.append(p)
p = os.path.join(out, "seed.npy")
np.save(p, np.asfortranarray(np.arange(12.0).reshape(3, 4)))
paths.append(p)
print(" ".join(paths))
