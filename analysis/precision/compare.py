"""Single against double precision (run.sh): for each point, the largest |delta m| and
|delta omega12| between the single and the double run of one seed over every record, against
the seed-to-seed spread (standard deviation over seeds) of the double runs at the last record;
for the weak-recovery runs also tau_wr and the last record.
usage: /usr/bin/python3 analysis/precision/compare.py [DATA_DIR]   (markdown on stdout)"""
import csv
import glob
import os
import sys

import numpy as np

data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data")


def load(path):
    rows = [r for r in csv.DictReader(line for line in open(path) if not line.startswith("#"))]
    tau = np.array([float(r["tau"]) for r in rows])
    m = np.array([float(r["overlap"]) for r in rows])
    o12 = np.array([float(r["omega12"]) for r in rows])
    # weak recovery (README): the first record with |m| >= 0.5 (records 0.05 apart in tau)
    hit = np.nonzero(np.abs(m) >= 0.5)[0]
    wr = float(tau[hit[0]]) if len(hit) else None
    return tau, m, o12, wr


def groups(prefix):
    out = {}
    for f in sorted(glob.glob(os.path.join(data, prefix + "_*_double.csv"))):
        key, seed = os.path.basename(f)[len(prefix) + 1:].rsplit("_", 2)[0:2]
        g = os.path.join(data, f"{prefix}_{key}_{seed}_single.csv")
        if os.path.exists(g):
            out.setdefault(key, []).append((load(f), load(g)))
    return out


def row(key, runs, cols):
    dm = max(np.max(np.abs(s[1] - d[1])) for d, s in runs)
    do = max(np.max(np.abs(s[2] - d[2])) for d, s in runs)
    sm = np.std([d[1][-1] for d, _ in runs], ddof=1)
    so = np.std([d[2][-1] for d, _ in runs], ddof=1)
    cells = [*key.split("_"), str(len(runs)), f"{runs[0][0][0][-1]:g}",
             f"{dm:.2e}", f"{sm:.2e}", f"{dm / sm:.1e}", f"{do:.2e}", f"{so:.2e}", f"{do / so:.1e}"]
    return "| " + " | ".join(cells[:cols] + cells[cols:]) + " |"


print("| decomposition | activation | d | seeds | tau_end | max abs delta m | spread of m | ratio "
      "| max abs delta omega12 | spread of omega12 | ratio |")
print("|---" * 11 + "|")
for key, runs in groups("short").items():
    print(row(key, runs, 3))
wr = groups("wr")
for key, runs in wr.items():
    print()
    print(f"Weak recovery, {key.replace('_', ' ')} (goe teacher), {len(runs)} seeds, tau_end = {runs[0][0][0][-1]:g}:")
    print()
    print("| seed | tau_wr double | tau_wr single | m end double | m end single | max abs delta m | max abs delta omega12 |")
    print("|---" * 7 + "|")
    for i, (d, s) in enumerate(runs):
        print(f"| {i + 1} | {d[3]} | {s[3]} | {d[1][-1]:.4f} | {s[1][-1]:.4f} | {np.max(np.abs(s[1] - d[1])):.2e} "
              f"| {np.max(np.abs(s[2] - d[2])):.2e} |")
    ends = [d[1][-1] for d, _ in runs]
    o12 = [d[2][-1] for d, _ in runs]
    taus = [d[3] for d, _ in runs if d[3] is not None]
    dm = max(np.max(np.abs(s[1] - d[1])) for d, s in runs)
    do = max(np.max(np.abs(s[2] - d[2])) for d, s in runs)
    same = sum(d[3] == s[3] for d, s in runs)
    print()
    print(f"The sign of the escape is random, so the spread is that of |m| and |omega12|: "
          f"seed-to-seed spread of the double runs at tau_end: |m| {np.std(np.abs(ends), ddof=1):.3f}, "
          f"|omega12| {np.std(np.abs(o12), ddof=1):.3f}, tau_wr {np.std(taus, ddof=1):.3f} "
          f"(range {min(taus):g}-{max(taus):g}); largest |delta m| {dm:.2e} "
          f"({dm / np.std(np.abs(ends), ddof=1):.1e} of the spread), largest |delta omega12| {do:.2e} "
          f"({do / np.std(np.abs(o12), ddof=1):.1e}); tau_wr the same record in {same} of {len(runs)} seeds.")
