"""Figures of analysis/probe/ (docs/probe.md): the probe's order parameters against the step.

  crosscheck.png  aimsweep's teacher, one head: mu, Omega11, Psi11 and Omega12 of the PyTorch
                  runs read by `aimsweep probe`, against aimsweep's own SGD runs of the same point
                  (mean over seeds, band = min..max), tied and untied; crosscheck.csv holds the
                  numbers (difference of the means in units of its standard error).
  markov.png      the Markov-chain language, 2 layers x 4 heads: mu, Omega11, Psi11, the
                  symmetric share, ||S||_op/||S||_F and the effective rank of every head against
                  the step, tied and untied, with the training loss.
  icl.png         the same for in-context Markov chains (a new transition matrix per sequence).
  spectra.png     the singular values of every head's S at the first and last checkpoint.

usage: probe_figures.py DIR [--d 48 --lr 0.2]   (reads DIR/probe.csv, DIR/sgd.csv, DIR/{markov,icl}_*.json)
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("matplotlib", "python3-matplotlib")
aimdb.require("numpy", "python3-numpy")

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

QUANT = ["mu", "omega11", "psi11", "omega12"]
LABEL = {"mu": "μ = Tr S/√d", "omega11": "Ω11", "psi11": "Ψ11", "omega12": "Ω12",
         "sym_share": "symmetric share", "rank_ratio": "‖S‖op/‖S‖F", "eff_rank": "effective rank"}


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def num(x):
    return float(x) if x not in ("", None) else math.nan


def crosscheck(rows, sgd, d, lr, out):
    fig, ax = plt.subplots(2, 4, figsize=(15, 6.5), constrained_layout=True)
    table = []
    for i, dec in enumerate(["untied", "tied"]):
        torch_runs = defaultdict(dict)  # tau -> seed -> row
        for r in rows:
            if r["run"].startswith(f"teacher_{dec}_s"):
                tau = round(int(r["step"]) * lr / d / d, 9)
                torch_runs[tau][r["run"]] = r
        aim = defaultdict(dict)
        for r in sgd:
            if r["decomposition"] == dec and r["solver"] == "sgd":
                tau = round(float(r["tau"]), 9)
                aim[tau][r["seed"]] = {
                    "mu": float(r["trace"]) * math.sqrt(d), "omega11": float(r["omega11"]),
                    "psi11": float(r["psi11"]), "omega12": float(r["omega12"])}
        taus = sorted(set(torch_runs) & set(aim))
        for j, q in enumerate(QUANT):
            a = ax[i, j]
            for name, src, color in [("PyTorch + aimsweep probe", torch_runs, "C3"),
                                     ("aimsweep SGD", aim, "C0")]:
                vals = [[num(v[q]) for v in src[t].values()] for t in taus]
                m = [np.mean(v) for v in vals]
                a.plot(taus, m, color=color, label=name, marker="o" if color == "C3" else None,
                       ms=3)
                a.fill_between(taus, [min(v) for v in vals], [max(v) for v in vals], color=color,
                               alpha=0.2)
            for t in taus:
                tv = np.array([num(v[q]) for v in torch_runs[t].values()])
                av = np.array([aim[t][s][q] for s in aim[t]])
                se = math.sqrt(tv.var(ddof=1) / len(tv) + av.var(ddof=1) / len(av))
                diff = tv.mean() - av.mean()
                spread = max(tv.std(ddof=1), av.std(ddof=1))
                table.append({"decomposition": dec, "tau": t, "quantity": q,
                              "probe_mean": tv.mean(), "probe_sd": tv.std(ddof=1),
                              "sgd_mean": av.mean(), "sgd_sd": av.std(ddof=1), "seeds": len(tv),
                              "diff": diff, "z": diff / se if se > 0 else 0.0,
                              "diff_over_spread": diff / spread if spread > 0 else 0.0})
            a.set_title(f"{dec}: {LABEL[q]}")
            a.set_xlabel("τ = n η / d²")
        ax[i, 0].legend(fontsize=8)
    fig.suptitle(f"aimsweep's teacher (wishart(0.5), h1, d = {d}, η = {lr}, one head): "
                 "PyTorch checkpoints read by `aimsweep probe` against aimsweep's SGD, mean and "
                 "min-max over seeds")
    fig.savefig(os.path.join(out, "crosscheck.png"), dpi=110)
    with open(os.path.join(out, "crosscheck.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        for r in table:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    for dec in ["untied", "tied"]:
        for q in QUANT:
            t = [r for r in table if r["decomposition"] == dec and r["quantity"] == q and r["tau"] > 0]
            zmax = max(abs(r["z"]) for r in t)
            smax = max(abs(r["diff_over_spread"]) for r in t)
            print(f"crosscheck {dec:6s} {q:8s}: largest |diff|/se {zmax:.2f}, "
                  f"largest |diff|/seed sd {smax:.2f} over {len(t)} times")


def markov(rows, out, kind):
    runs = [r for r in [f"{kind}_untied", f"{kind}_tied"] if any(x["run"] == r for x in rows)]
    if not runs:
        return
    qs = ["mu", "omega11", "psi11", "sym_share", "rank_ratio", "eff_rank"]
    fig, ax = plt.subplots(len(qs) + 1, len(runs), figsize=(5.5 * len(runs), 17),
                           constrained_layout=True, squeeze=False)
    for j, run in enumerate(runs):
        rs = [r for r in rows if r["run"] == run]
        heads = sorted({(int(r["layer"]), int(r["head"])) for r in rs})
        for i, q in enumerate(qs):
            a = ax[i, j]
            for (L, h) in heads:
                pts = sorted((int(r["step"]), num(r[q])) for r in rs
                             if int(r["layer"]) == L and int(r["head"]) == h)
                a.plot([p[0] for p in pts], [p[1] for p in pts], color=f"C{L}", lw=1,
                       label=f"layer {L}" if h == 0 else None)
            a.set_title(f"{run}: {LABEL.get(q, q)}")
            if q == "rank_ratio":
                a.set_ylim(0, 1)
            if q == "eff_rank":
                # ks_pred <= 0.01 (the default regime bound) at c = 0: 6/eff_rank <= 0.436
                a.axhline(13.76, ls=":", color="gray", label="regime bound (--ks-max 0.01)")
            a.legend(fontsize=7)
        info = json.load(open(os.path.join(out, f"{run}.json")))
        a = ax[len(qs), j]
        a.plot([e["step"] for e in info["log"]], [e["loss"] for e in info["log"]], color="k")
        a.axhline(info["entropy_rate"], ls="--", color="gray",
                  label="loss of a predictor that knows the chain")
        a.set_title(f"{run}: training loss (cross-entropy), {info['params']} parameters")
        a.set_xlabel("step")
        a.legend(fontsize=7)
    fig.savefig(os.path.join(out, f"{kind}.png"), dpi=100)
    for run in runs:
        rs = [r for r in rows if r["run"] == run]
        last = max(int(r["step"]) for r in rs)
        for step in (0, last):
            sel = [r for r in rs if int(r["step"]) == step]
            rr = [num(r["rank_ratio"]) for r in sel]
            er = [num(r["eff_rank"]) for r in sel]
            ks = [num(r["ks_pred"]) for r in sel]
            inr = sum(int(r["in_regime"]) for r in sel)
            law = all(r["law_ok"] == "1" for r in sel)
            print(f"{run} step {step}: rank ratio {min(rr):.3f}-{max(rr):.3f}, effective rank "
                  f"{min(er):.2f}-{max(er):.2f}, predicted KS {min(ks):.4f}-{max(ks):.4f}, "
                  f"in regime {inr}/{len(sel)} heads, mean/cov law {'passes' if law else 'FAILS'}")


def spectra(rows, out):
    """Singular values of every head's S at the first and last step (the histograms the probe
    stores, d values each: the d - rank zeros sit in the first bin)."""
    runs = [r for r in ["markov_untied", "markov_tied", "icl_untied", "icl_tied"]
            if any(x["run"] == r for x in rows)]
    if not runs:
        return
    fig, ax = plt.subplots(len(runs), 2, figsize=(11, 3 * len(runs)), constrained_layout=True,
                           squeeze=False)
    for i, run in enumerate(runs):
        rs = [r for r in rows if r["run"] == run]
        steps = sorted({int(r["step"]) for r in rs})
        for j, step in enumerate([steps[0], steps[-1]]):
            a = ax[i, j]
            for r in rs:
                if int(r["step"]) != step:
                    continue
                h = json.loads(r["sv_hist"])
                n = len(h["count"])
                edges = np.linspace(h["lo"], h["hi"], n + 1)
                a.stairs(h["count"], edges, color=f"C{int(r['layer'])}", alpha=0.7)
            a.set_yscale("log")
            a.set_xlabel("σ (layer 0 blue, layer 1 orange)")
            a.set_title(f"{run}, step {step}: singular values of S", fontsize=9)
    fig.savefig(os.path.join(out, "spectra.png"), dpi=90)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--d", type=int, default=48)
    ap.add_argument("--lr", type=float, default=0.2)
    a = ap.parse_args()
    rows = read(os.path.join(a.dir, "probe.csv"))
    sgd_path = os.path.join(a.dir, "sgd.csv")
    if os.path.exists(sgd_path):
        crosscheck(rows, read(sgd_path), a.d, a.lr, a.dir)
    markov(rows, a.dir, "markov")
    markov(rows, a.dir, "icl")
    spectra(rows, a.dir)


if __name__ == "__main__":
    main()
