"""aimsweep probe against NumPy: every reader (safetensors F32/F16/BF16/F64, .npy and .npz in
<f2 <f4 <f8 >f4 >f8, C and Fortran order, stored and deflated), the statistics of every head
and pair of heads against NumPy on the same matrices, and malformed files refused with exit 2.

usage: test_probe_files.py AIMSWEEP WORKDIR
"""
import csv
import io
import json
import os
import sqlite3
import struct
import subprocess
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_files as pf  # noqa: E402

AIM, WORK = sys.argv[1], sys.argv[2]
os.makedirs(WORK, exist_ok=True)
failures = 0
checks = 0


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL:", what)


def probe(*args):
    r = subprocess.run([AIM, "probe", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def rows(out):
    return list(csv.DictReader(io.StringIO(out)))


def compare(values, out, what, teacher=None, heads=4, rtol=1e-9):
    """values: {name: float64 array as stored}; out: the probe's csv."""
    got = rows(out)
    layers = sorted({k.split(".")[1] for k in values}, key=int)
    i = 0
    for L in layers:
        q = values[f"layers.{L}.attn.q_proj.weight"]
        k = values[f"layers.{L}.attn.k_proj.weight"]
        d, dh = q.shape[1], q.shape[0] // heads
        for h in range(heads):
            exp, _ = pf.head_stats(q[h * dh:(h + 1) * dh], k[h * dh:(h + 1) * dh], d, teacher)
            r = got[i]
            i += 1
            for key, v in exp.items():
                g = float(r[key])
                check(abs(g - v) <= rtol * max(1.0, abs(v)) + 1e-12,
                      f"{what} layer {L} head {h} {key}: probe {g} numpy {v}")
    check(i == len(got) and i > 0, f"{what}: {len(got)} rows, expected {i}")


m = pf.model()
# safetensors, every dtype; the step from the metadata, else the file name.
for dt in ["F32", "F16", "BF16", "F64"]:
    p = os.path.join(WORK, f"m_{dt}_step42.safetensors")
    vals = pf.write_safetensors(p, {k: (v, dt) for k, v in m.items()},
                                {"heads": 4} if dt != "F64" else {"heads": 4, "step": 7})
    rc, out, err = probe(p, "--format", "csv", "--pairs", "0")
    check(rc == 0, f"safetensors {dt}: exit {rc}: {err}")
    compare(vals, out, f"safetensors {dt}")
    step = int(rows(out)[0]["step"]) if rc == 0 else None
    check(step == (7 if dt == "F64" else 42), f"safetensors {dt}: step {step}")

# .npz: every NumPy dtype and byte order, C and Fortran order, stored and deflated.
for code in ["<f2", "<f4", "<f8", ">f4", ">f8", ">f2"]:
    for order in ["C", "F"]:
        for saver in [np.savez, np.savez_compressed]:
            arrs = {k: np.array(v, dtype=code, order=order) for k, v in m.items()}
            vals = {k: v.astype(np.float64) for k, v in arrs.items()}
            p = os.path.join(WORK, f"m_{code[0] == '>'}_{code[1:]}_{order}_{saver.__name__}.npz")
            saver(p, **arrs)
            rc, out, err = probe(p, "--format", "csv", "--pairs", "0", "--heads", "4")
            what = f"npz {code} {order} {saver.__name__}"
            check(rc == 0, f"{what}: exit {rc}: {err}")
            if rc == 0:
                compare(vals, out, what)

# .npy, through --teacher, every dtype and order; Omega12 against NumPy.
rng = np.random.default_rng(3)
G = rng.standard_normal((32, 32))
T = (G + G.T) / np.sqrt(64)
base = os.path.join(WORK, "m_F64_step42.safetensors")
vals64 = {k: np.asarray(v, dtype=np.float64) for k, v in m.items()}
for code in ["<f2", "<f4", "<f8", ">f4", ">f8"]:
    for order in ["C", "F"]:
        t = np.array(T, dtype=code, order=order)
        p = os.path.join(WORK, f"teacher_{code[0] == '>'}_{code[1:]}_{order}.npy")
        np.save(p, t)
        rc, out, err = probe(base, "--format", "csv", "--pairs", "0", "--teacher", p)
        check(rc == 0, f"npy teacher {code} {order}: exit {rc}: {err}")
        if rc == 0:
            compare(vals64, out, f"npy teacher {code} {order}", teacher=t.astype(np.float64))

# The fused layouts and --pattern.
E = 32
ipw = np.concatenate([m["layers.0.attn.q_proj.weight"], m["layers.0.attn.k_proj.weight"],
                      rng.standard_normal((E, E))])
for name, extra in [("enc.layers.0.self_attn.in_proj_weight", []), ("blocks.0.attn.qkv.weight", []),
                    ("h.0.wqkv", ["--pattern", "h.{L}.wq,h.{L}.wk"])]:
    p = os.path.join(WORK, "fused.safetensors")
    if extra:
        pf.write_safetensors(p, {"h.0.wq": (ipw[:E], "F64"), "h.0.wk": (ipw[E:2 * E], "F64")})
    else:
        pf.write_safetensors(p, {name: (ipw, "F64")})
    rc, out, err = probe(p, "--format", "csv", "--pairs", "0", "--heads", "4", *extra)
    check(rc == 0, f"{name}: exit {rc}: {err}")
    if rc == 0:
        compare({"layers.0.attn.q_proj.weight": ipw[:E], "layers.0.attn.k_proj.weight": ipw[E:2 * E]},
                out, name)

# Pairs of heads in the database, against NumPy.
db = os.path.join(WORK, "probe.db")
if os.path.exists(db):
    os.remove(db)
rc, out, err = probe(base, "--db", db, "--run", "r1", "--pairs", "1000")
check(rc == 0, f"--db: exit {rc}: {err}")
con = sqlite3.connect(db)
q = vals64["layers.1.attn.q_proj.weight"]
k = vals64["layers.1.attn.k_proj.weight"]
S = [q[h * 8:(h + 1) * 8].T @ k[h * 8:(h + 1) * 8] / np.sqrt(8) for h in range(4)]
for (a, b, om, ps) in con.execute("SELECT head, head2, omega, psi FROM probe_pair "
                                  "WHERE run = 'r1' AND step = 7 AND layer = 1"):
    check(abs(om - np.trace(S[a] @ S[b].T) / 32) < 1e-12, f"pair {a} {b} omega {om}")
    check(abs(ps - np.trace(S[a] @ S[b]) / 32) < 1e-12, f"pair {a} {b} psi {ps}")
n = con.execute("SELECT count(*) FROM probe_curves WHERE run = 'r1'").fetchone()[0]
check(n == 2, f"probe_curves has {n} rows for 2 layers")
nullz = con.execute("SELECT count(*) FROM probe WHERE cov_z IS NULL OR law_ok IS NULL").fetchone()[0]
check(nullz == 0, "the check's columns filled")
con.close()
# a new file is a results database too: query reads it
r = subprocess.run([AIM, "query", db, "SELECT count(*) FROM probe", "--csv", "--no-header"],
                   capture_output=True, text=True)
check(r.returncode == 0 and int(r.stdout.strip() or 0) > 0, f"query of a probe-only database: {r.returncode} {r.stderr}")
# an SQLite file of another program is refused untouched
other = os.path.join(WORK, "other.db")
if os.path.exists(other):
    os.remove(other)
oc = sqlite3.connect(other)
oc.execute("CREATE TABLE mine (x)")
oc.commit()
oc.close()
before = open(other, "rb").read()
rc, out, err = probe(base, "--db", other, "--run", "r1", "--pairs", "0")
check(rc == 2 and open(other, "rb").read() == before, f"--db into another program's file: exit {rc}: {err}")

# Into a study database: the probe tables beside the study's, which still opens and reads them.
study = os.path.join(WORK, "study.db")
if os.path.exists(study):
    os.remove(study)
tiny = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tiny.yaml")
# (Open MPI's allocations are not this test's: no leak report for the study's run.)
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
r = subprocess.run([AIM, "run", tiny, "--db", study], capture_output=True, text=True, env=env)
check(r.returncode == 0, f"tiny study: exit {r.returncode}: {r.stderr[-300:]}")
rc, out, err = probe(base, "--db", study, "--run", "r2", "--pairs", "0")
check(rc == 0, f"--db into a study database: exit {rc}: {err}")
r = subprocess.run([AIM, "query", study, "SELECT count(*) FROM probe", "--csv", "--no-header"],
                   capture_output=True, text=True, env=env)
check(r.returncode == 0 and r.stdout.strip() == "8", f"study query of probe: {r.returncode} {r.stdout} {r.stderr}")
r = subprocess.run([AIM, "status", study], capture_output=True, text=True, env=env)
check(r.returncode == 0 and "done" in r.stdout, f"study status after probe: {r.returncode} {r.stderr}")

# Malformed files: exit 2 and a message.
good = open(os.path.join(WORK, "m_F32_step42.safetensors"), "rb").read()
hlen = struct.unpack("<Q", good[:8])[0]
header = json.loads(good[8:8 + hlen])
first = next(k for k in header if k != "__metadata__")


def st_with(h, data=None):
    raw = json.dumps(h).encode()
    return struct.pack("<Q", len(raw)) + raw + (good[8 + hlen:] if data is None else data)


bad = {
    "empty": b"",
    "short": good[:5],
    "truncated_header": good[:8 + hlen // 2],
    "truncated_data": good[:-7],
    "huge_header_100MB": struct.pack("<Q", 100 * 1000 * 1000) + b"{}" + b" " * 100,
    "header_past_end": struct.pack("<Q", len(good)) + good[8:],
    "not_json": struct.pack("<Q", 8) + b"{{{{{{{{",
    "non_utf8": struct.pack("<Q", 16) + b'{"\xff\xfe": 1}  ' + b"\0" * 16,
    "offsets_past_end": st_with({**header, first: {**header[first], "data_offsets": [0, 10 ** 9]}}),
    "offsets_reversed": st_with({**header, first: {**header[first], "data_offsets": [64, 0]}}),
    "shape_lies": st_with({**header, first: {**header[first], "shape": [33, 32]}}),
    "shape_overflow": st_with({**header, first: {**header[first], "shape": [2 ** 40, 2 ** 40]}}),
    "shape_negative": st_with({**header, first: {**header[first], "shape": [-32, -1]}}),
    "offsets_not_ints": st_with({**header, first: {**header[first], "data_offsets": ["a", 3]}}),
    "header_array": st_with([1, 2]),
    "duplicate_names": struct.pack("<Q", 0),
}
dup = ('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
       '"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}').encode()
bad["duplicate_names"] = struct.pack("<Q", len(dup)) + dup + b"\0" * 4
npy = io.BytesIO()
np.save(npy, np.ones((4, 4), dtype="<f4"))
npyb = npy.getvalue()
bad["npy_truncated"] = npyb[:-3]
bad["npy_header_truncated"] = npyb[:20]
bad["npy_shape_lies"] = npyb.replace(b"(4, 4)", b"(9, 4)")
bad["npy_shape_overflow"] = npyb.replace(b"(4, 4), ", b"(99999999999999999999,)")
bad["npy_bad_dtype"] = npyb.replace(b"<f4", b"<i4")
bad["npy_non_ascii"] = npyb.replace(b"'descr'", b"'d\xe9scr'")
bad["npy_huge_header"] = b"\x93NUMPY\x02\x00" + struct.pack("<I", 100 * 1000 * 1000) + b"{"
zgood = open(os.path.join(WORK, "m_False_f4_C_savez_compressed.npz"), "rb").read()
bad["npz_truncated"] = zgood[: len(zgood) // 2]
bad["npz_no_end"] = zgood[:-22]
mid = len(zgood) // 3
bad["npz_corrupt_deflate"] = zgood[:mid] + bytes(b ^ 0x5A for b in zgood[mid:mid + 40]) + zgood[mid + 40:]
cd = zgood.rfind(b"PK\x01\x02")
bad["npz_size_lies"] = zgood[:cd + 24] + struct.pack("<I", 0x7FFFFFF0) + zgood[cd + 28:]
bad["npz_offset_lies"] = zgood[:cd + 42] + struct.pack("<I", len(zgood) + 5) + zgood[cd + 46:]
for name, data in bad.items():
    p = os.path.join(WORK, f"bad_{name}.safetensors")
    with open(p, "wb") as f:
        f.write(data)
    rc, out, err = probe(p, "--heads", "4", "--pairs", "0")
    check(rc == 2 and "aimsweep probe:" in err, f"malformed {name}: exit {rc}, stderr {err.strip()[:200]}")
for v in [np.nan, np.inf]:
    w = np.ones((8, 8))
    w[3, 5] = v
    p = os.path.join(WORK, "nonfinite.npz")
    np.savez(p, **{"x.q_proj.weight": w, "x.k_proj.weight": np.ones((8, 8))})
    rc, out, err = probe(p, "--heads", "2")
    check(rc == 2 and "not finite" in err, f"weight {v}: exit {rc}: {err}")
rc, out, err = probe(os.path.join(WORK, "no_such_file"))
check(rc == 2, f"missing file: exit {rc}")
rc, out, err = probe(base, "--heads", "5")
check(rc == 2 and "multiple" in err, f"--heads 5 on 32 rows: exit {rc}: {err}")

for args, what in [(["--pattern", "nobrace"], "pattern"), (["--tokens", "1"], "tokens"),
                   (["--token-corr", "1"], "token corr"), (["--bogus", "1"], "unknown flag"),
                   (["--heads", "4", "--heads", "4"], "twice"), (["--format", "xml"], "format"),
                   (["--teacher", base], "teacher not square")]:
    rc, out, err = probe(base, *args)
    check(rc == 2 and "aimsweep probe" in err, f"bad usage {what}: exit {rc}: {err.strip()[:200]}")

print(f"test_probe_files: {checks - failures}/{checks} passed")
sys.exit(1 if failures else 0)
