"""Checkpoint files for the probe's tests, written by NumPy at test time.

write_safetensors: the format written byte by byte (8-byte little-endian length, JSON header,
raw little-endian data); dtype F32, F16, F64 from NumPy, BF16 as the top 16 bits of float32.
model(): the q/k weights of a small multi-head model as float64 arrays.
"""
import json
import struct

import numpy as np


def bf16_bits(a):
    """float32 -> the uint16 bits of bfloat16 (truncation), and the values they stand for."""
    bits = (np.asarray(a, dtype="<f4").view("<u4") >> 16).astype("<u2")
    back = (bits.astype("<u4") << 16).view("<f4").astype(np.float64)
    return bits, back


def stored(a, dtype):
    """The raw little-endian bytes of a in a safetensors dtype and the float64 values read back."""
    if dtype == "BF16":
        bits, back = bf16_bits(a)
        return bits.tobytes(), back
    np_dtype = {"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype]
    x = np.ascontiguousarray(a, dtype=np_dtype)
    return x.tobytes(), x.astype(np.float64)


def write_safetensors(path, tensors, metadata=None, header_pad=0):
    """tensors: {name: (array, dtype)}; returns {name: float64 values as stored}."""
    header, blobs, values, off = {}, [], {}, 0
    for name, (a, dtype) in tensors.items():
        raw, back = stored(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        values[name] = back
        off += len(raw)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8 + header_pad)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return values


def model(d=32, heads=4, dh=8, layers=2, seed=0):
    """{'layers.L.attn.q_proj.weight': (heads*dh, d) ...} with distinct head structure."""
    rng = np.random.default_rng(seed)
    out = {}
    for L in range(layers):
        q = rng.standard_normal((heads * dh, d)) / np.sqrt(d)
        k = rng.standard_normal((heads * dh, d)) / np.sqrt(d)
        k[:dh] = q[:dh]  # head 0 tied: W_Q = W_K
        out[f"layers.{L}.attn.q_proj.weight"] = q
        out[f"layers.{L}.attn.k_proj.weight"] = k
    return out


def head_stats(wq, wk, d, teacher=None):
    """What the probe computes for one head, in NumPy (docs/probe.md)."""
    dh = wq.shape[0]
    S = wq.T @ wk / np.sqrt(dh)
    sv = np.linalg.svd(S, compute_uv=False)
    ff = np.sum(S * S)
    r = {
        "mu": np.trace(S) / np.sqrt(d),
        "omega11": ff / d,
        "psi11": np.trace(S @ S) / d,
        "sym_share": np.sum(((S + S.T) / 2) ** 2) / ff,
        "rank_ratio": sv[0] / np.sqrt(ff),
        "eff_rank": ff ** 2 / np.sum(sv ** 4),
    }
    r["kurt_pred"] = 6 / r["eff_rank"]
    if teacher is not None:
        r["omega12"] = np.trace(S @ teacher) / d
    return r, S
