#!/usr/bin/python3
"""Same numbers from two aimsweep binaries, whatever their number format.

Since numbers are printed in shortest round-trip form, the csv of `single` is no longer byte for
byte the csv of binaries that printed "%.10g" (and samples with "%.17g"), so an md5 of it changes
even when every number is the same. This runs the configurations of the bit-for-bit check on both
binaries and compares cell by cell: the new value formatted as the old one was must equal it
(samples: rounded to the integer the new binary prints). With two binaries of the new format it
compares the texts exactly. usage: scripts/csv_same.py OLD_BINARY NEW_BINARY
"""
import subprocess, sys
old, new = sys.argv[1], sys.argv[2]
cfgs = []
for dec in ["direct", "tied", "untied"]:
    for act in ["h2", "softmax(2)", "relu"]:
        cfgs.append(["--decomposition", dec, "--activation", act, "--d", "60", "--lr", "0.05", "--tau-end", "0.3", "--records", "10", "--solvers", "sgd,flow,ode", "--weight-decay", "0.5"])
for dec in ["tied", "untied"]:
    for cl in ["free_cumulant", "flat"]:
        cfgs.append(["--decomposition", dec, "--activation", "h1", "--d", "40", "--lr", "0.05", "--tau-end", "0.3", "--records", "10", "--solvers", "ode", "--closure", cl, "--order-m", "3", "--ode-noise", "on"])
cfgs.append(["--decomposition", "untied", "--activation", "h3", "--d", "40", "--lr", "2", "--tau-end", "0.3", "--records", "10", "--solvers", "sgd"])
bad = 0; cells = 0
for c in cfgs:
    o = subprocess.run([old, "single", *c, "--format", "csv"], capture_output=True, text=True).stdout.splitlines()
    n = subprocess.run([new, "single", *c, "--format", "csv"], capture_output=True, text=True).stdout.splitlines()
    if len(o) != len(n): bad += 1; print("rows differ", c); continue
    for lo, ln in zip(o[1:], n[1:]):
        a, b = lo.split(","), ln.split(",")
        for j, (x, y) in enumerate(zip(a, b)):
            cells += 1
            if j == 0: ok = x == y
            elif j == 2: ok = x == y or round(float(x)) == int(y)
            else: ok = x == y or ("%.10g" % float(y)) == x
            if not ok: bad += 1; print("differ", c[1], c[3], j, x, y)
print(f"{len(cfgs)} configurations, {cells} cells, {bad} differ")
sys.exit(1 if bad else 0)
