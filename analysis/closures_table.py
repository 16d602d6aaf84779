#!/usr/bin/python3
"""Formats words_measure outputs into the markdown tables of docs/closures.md.

Usage: closures_table.py FILE...   (each FILE the output of one words_measure run)
Per closure and order: max |omega12 - flow| and max ||m| - |m_flow|| over the run, the tau at
which the run stopped (diverged or left the physical region), and the omega12 error over the
early windows.
"""
import sys

for path in sys.argv[1:]:
    rows, head, wins = [], None, []
    for line in open(path):
        if line.startswith("# ") and head is None:
            head = line[2:].strip()
            continue
        if line.startswith("closure"):
            wins = [w.replace("om12<=", "") for w in line.split()[7:]]
            continue
        f = line.split()
        if len(f) < 7 or line.startswith("#") or "needs an odd order" in line:
            continue
        rows.append(f)
    print(f"\n`{head}`\n")
    print("| closure | M | words | max err Ω12 | max err m | stopped at τ | wall s | "
          + " | ".join(f"err Ω12, τ ≤ {w}" for w in wins) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(wins))
    for f in rows:
        stop = f[5] if f[5] != "-" else "—"
        extra = f[7:7 + len(wins)]
        print(f"| {f[0]} | {f[1]} | {f[2]} | {f[3]} | {f[4]} | {stop} | {f[6]} | " + " | ".join(extra) + " |")
