#!/usr/bin/python3
"""The seed's Corollary 2: the order-M moment ODE's truncation error against M, at three init
scales, with the fitted rate per order.

  /usr/bin/python3 analysis/cor2.py [--bin build/aimsweep] [--d 200] [--out analysis/figs]
                                    [--data analysis/data/cor2] [--report]

Setting: the seed's Figure 1 (tied, softmax(1), wishart(0.5), lr = 0.05, tau <= 0.4 in 20
records, seed 1) at d = 200 and init scales s0 = 0.35, 0.7, 1.0. For each s0 the flow (the
infinite hierarchy at finite size, from the run's own matrices) is run once; the ODE from the
same matrices for closures free_cumulant (M = 2..7), spectral (M = 1..6) and flat (M = 3, 5, 7).
The error is the largest |m_ode - m_flow| over the records. The seed's bound (C^2/s0)^(M+1)
says the error falls geometrically in M, faster at larger s0: per closure and s0 the script fits
ln err = alpha + beta M by least squares over the orders above the closure's floor (when its last
two orders are within a factor 2, a floor: then the orders whose error is more than twice the
smallest; the spectral closure stops at the finite-d floor of its freeness assumption, its m(0)
= 0 against the run's own, docs/model.md §7b) and reports the rate per order e^beta with a 95 %
interval (t quantile of the slope's standard error; None with fewer than three orders).

Writes DATA/errors.csv (one row per s0, closure, M), DATA/rates.csv and OUT/cor2-orders.png
(error against M on a log scale, one panel per closure, one line per s0, the fitted rate in the
legend). --report redraws from DATA/errors.csv without running anything. Each run is a separate
`aimsweep single` process, one at a time.
"""
import argparse
import csv
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("numpy", "python3-numpy")
aimdb.require("matplotlib", "python3-matplotlib")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCALES = (0.35, 0.7, 1.0)
CLOSURES = {"free_cumulant": range(2, 8), "spectral": range(1, 7), "flat": (3, 5, 7)}
BASE = ["--decomposition", "tied", "--activation", "softmax(1)", "--teacher", "wishart(0.5)",
        "--lr", "0.05", "--tau-end", "0.4", "--records", "20", "--seed", "1", "--format", "csv"]
T95 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365}


def overlaps(binary, d, s0, extra):
    """m at each record of one solver's run, or None when it did not finish."""
    cmd = [binary, "single"] + BASE + ["--d", str(d), "--init-scale", str(s0)] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    rows = [line.split(",") for line in p.stdout.splitlines() if line and line[0] in "fo"]
    if p.returncode != 0 or not rows or "status=done" not in p.stderr:
        return None
    return [float(r[7]) for r in rows]


def fit_rate(ms, errs):
    """(rate e^beta, (lo, hi), orders used) over the orders above the floor."""
    floor = min(errs)
    # a floor: the last two orders within a factor 2 of each other; then only the orders above
    # twice the smallest error count (a sequence still falling at its last order has none)
    has_floor = len(errs) >= 2 and errs[-1] > 0.5 * errs[-2]
    use = [(m, e) for m, e in zip(ms, errs) if not has_floor or e > 2 * floor]
    if len(use) < 3:
        return None, None, [m for m, _ in use]
    x = np.array([m for m, _ in use], float)
    y = np.log([e for _, e in use])
    X = np.stack([np.ones_like(x), x], 1)
    coef, res, *_ = np.linalg.lstsq(X, y, rcond=None)
    dof = len(x) - 2
    s2 = float(((y - X @ coef) ** 2).sum()) / dof if dof > 0 else 0.0
    se = math.sqrt(s2 / ((x - x.mean()) ** 2).sum())
    t = T95.get(dof, 2.0)
    b = float(coef[1])
    return math.exp(b), (math.exp(b - t * se), math.exp(b + t * se)), [int(v) for v in x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "aimsweep"))
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(HERE, "figs"))
    ap.add_argument("--data", default=os.path.join(HERE, "data", "cor2"))
    ap.add_argument("--report", action="store_true", help="redraw from the data only")
    a = ap.parse_args()
    os.makedirs(a.data, exist_ok=True)
    path = os.path.join(a.data, "errors.csv")
    rows = []
    if a.report:
        if not os.path.isfile(path):
            print(f"error: {path}: no such file (run without --report first)", file=sys.stderr)
            return 2
        with open(path) as fh:
            rows = [dict(r, s0=float(r["s0"]), M=int(r["M"]), err=float(r["err"]))
                    for r in csv.DictReader(fh)]
    else:
        if not os.path.isfile(a.bin):
            print(f"error: {a.bin}: no aimsweep binary (build it, or give --bin)", file=sys.stderr)
            return 2
        for s0 in SCALES:
            flow = overlaps(a.bin, a.d, s0, ["--solvers", "flow"])
            if flow is None:
                print(f"s0 = {s0}: the flow did not finish; left out")
                continue
            for cl, orders in CLOSURES.items():
                for M in orders:
                    ode = overlaps(a.bin, a.d, s0, ["--solvers", "ode", "--closure", cl,
                                                    "--order-m", str(M)])
                    if ode is None or len(ode) != len(flow):
                        print(f"s0 = {s0}, {cl}, M = {M}: the ODE did not finish; left out")
                        continue
                    err = max(abs(x - y) for x, y in zip(ode, flow))
                    rows.append({"s0": s0, "closure": cl, "M": M, "err": err})
                    print(f"s0 = {s0}, {cl}, M = {M}: max |m_ode - m_flow| = {err:.3g}")
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["s0", "closure", "M", "err"])
            w.writeheader()
            w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(CLOSURES), figsize=(4.6 * len(CLOSURES), 4), squeeze=False)
    rates = []
    colors = {0.35: "tab:blue", 0.7: "tab:orange", 1.0: "tab:green"}
    for j, cl in enumerate(CLOSURES):
        ax = axes[0][j]
        for s0 in SCALES:
            pts = sorted((r["M"], r["err"]) for r in rows if r["closure"] == cl and r["s0"] == s0)
            if not pts:
                continue
            ms, errs = [p[0] for p in pts], [max(p[1], 1e-16) for p in pts]
            rate, ci, used = fit_rate(ms, errs)
            rates.append({"closure": cl, "s0": s0, "rate": rate, "lo": ci[0] if ci else None,
                          "hi": ci[1] if ci else None, "orders": " ".join(map(str, used))})
            lab = f"s₀={s0}" + (f": ×{rate:.2g} per order [{ci[0]:.2g}, {ci[1]:.2g}]" if rate else
                                ": too few orders above the floor to fit")
            ax.semilogy(ms, errs, "o-", color=colors[s0], label=lab)
            if rate:
                x = np.array(used, float)
                e0 = np.exp(np.mean(np.log([e for m, e in zip(ms, errs) if m in used])) -
                            math.log(rate) * x.mean())
                ax.semilogy(x, e0 * rate ** x, ":", color=colors[s0], lw=1)
        ax.set_xlabel("ODE order M")
        ax.set_ylabel("max over τ ≤ 0.4 of |m_ODE − m_flow|")
        ax.set_title(f"closure {cl}", fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle(f"Corollary 2: truncation error against M (tied, softmax(1), wishart(0.5), d = {a.d}; "
                 "dotted: fitted geometric rate)", fontsize=10)
    fig.tight_layout()
    os.makedirs(a.out, exist_ok=True)
    png = os.path.join(a.out, "cor2-orders.png")
    fig.savefig(png, dpi=110)
    with open(os.path.join(a.data, "rates.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["closure", "s0", "rate", "lo", "hi", "orders"])
        w.writeheader()
        w.writerows(rates)
    for r in rates:
        ci = f"[{r['lo']:.3g}, {r['hi']:.3g}]" if r["rate"] else ""
        print(f"{r['closure']:>14} s0 = {r['s0']}: rate per order "
              f"{r['rate']:.3g} {ci} over M = {r['orders']}" if r["rate"] else
              f"{r['closure']:>14} s0 = {r['s0']}: not fitted (orders above the floor: {r['orders']})")
    print("wrote " + png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
