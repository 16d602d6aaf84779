#!/usr/bin/python3
"""Every figure an aimsweep database can support, as PNG and PDF, in the seed's notation.

  /usr/bin/python3 analysis/figures.py DB [--out DIR] [--no-pdf]

Three kinds, each drawn wherever the database holds its data (seeds as bands: the mean of |m|
over seeds with its min-max range shaded):

- curves-*.png (the seed's Figure 2): for each setting apart from decomposition and activation,
  a grid of panels (rows: activation, columns: decomposition) of |m| against tau = n eta/d^2,
  SGD beside the flow and the moment ODE.
- orders-*.png (the seed's Figure 1): a setting whose moment ODE was run at several orders M:
  |m| and the population loss against tau, SGD (band) and flow next to the ODE at each M.
- nwr-*.png (the seed's Figure 3): the weak-recovery sample count n_wr (median over recovered
  seeds, quartiles as bars, SGD) against the information exponent k, one line per d; and the
  fraction of seeds that recovered (m reached θ, |m| for even activations: docs/model.md §8),
  diverged, or went anti-aligned (an activation whose sign counts, m reached −θ and never +θ).

SGD runs in single and in double precision are drawn as one setting in orders-* and nwr-*
(analysis/precision/results.md: the same to 5e-4 of the seed spread through weak recovery).

What a database cannot support (no finished run, no recovered seed, one order M only ...) is
said on stdout; the script exits 0 whenever it could read the database, 2 on bad input.
"""
import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402

MAX_PANELS = 36      # largest panel grid drawn in one figure
MAX_FIGURES = 24     # per kind; the rest are listed as skipped
SOLVER_ORDER = {"sgd": 0, "flow": 1, "ode": 2}


ASCII = {"η": "lr", "s₀": "s0", "ρ": "w", "λ": "wd"}


def safe(text, n=80):
    """A file-name fragment: ASCII letters, digits and ._- only."""
    for k, v in ASCII.items():
        text = text.replace(k, v)
    out = "".join(c if (c.isascii() and c.isalnum()) or c in ".-" else "_" for c in text)
    while "__" in out:
        out = out.replace("__", "_")
    return out[:n].strip("_")


def num(v):
    """A parameter value as a reader writes it (0.7, not 0.69999999999999996)."""
    try:
        return f"{float(v):.4g}"
    except ValueError:
        return v


def short(params, drop):
    """A readable title: the parameters that are not on the figure's axes."""
    keep = ("d", "lr", "init_scale", "teacher", "width", "tokens", "tau_end", "weight_decay")
    p = aimdb.params_dict(params)
    sym = {"lr": "η", "init_scale": "s₀", "width": "ρ", "tokens": "T", "weight_decay": "λ"}
    parts = []
    for k in keep:
        if k in drop or k not in p:
            continue
        if k == "weight_decay" and float(p[k]) == 0:
            continue
        if k == "tau_end":
            continue
        parts.append(f"{sym.get(k, k)}={num(p[k])}")
    return ", ".join(parts)


def save(fig, out, name, pdf, made):
    png = os.path.join(out, name + ".png")
    fig.savefig(png, dpi=110)
    if pdf:
        fig.savefig(os.path.join(out, name + ".pdf"))
    plt.close(fig)
    made.append(png)


def band(ax, rows, label, color, style="-", fill=True, diverged=0):
    tau = [r["tau"] for r in rows if r["abs_m_mean"] is not None]
    mean = [r["abs_m_mean"] for r in rows if r["abs_m_mean"] is not None]
    if not tau:
        return
    seeds = rows[0]["seeds"]
    note = f", {diverged} diverged" if diverged else ""
    ax.plot(tau, mean, style, color=color, lw=1.4, label=f"{label} ({seeds} seed{'s' * (seeds > 1)}{note})")
    if fill and seeds > 1:
        lo = [r["abs_m_min"] for r in rows if r["abs_m_mean"] is not None]
        hi = [r["abs_m_max"] for r in rows if r["abs_m_mean"] is not None]
        ax.fill_between(tau, lo, hi, color=color, alpha=0.18, lw=0)


def solver_series(curves, recs, points):
    """[(label, solver, rows)] for the given points, SGD first, then flow, then the ODEs."""
    out = []
    for pt in points:
        for (p, solver), rows in curves.items():
            if p != pt:
                continue
            r = recs[pt]
            lab = aimdb.solver_label(solver, r["closure"], r["order_m"], r["decomposition"], r["ode_noise"])
            out.append((SOLVER_ORDER.get(solver, 3), r["order_m"], lab, solver, rows, p))
    out.sort(key=lambda x: x[:3])
    return [(lab, solver, rows, p) for _, _, lab, solver, rows, p in out]


def fig_curves(con, out, pdf, made, notes):
    """Figure 2 style: rows activation, columns decomposition."""
    curves = aimdb.curves(con)
    if not curves:
        notes.append("curves: no finished run with a trajectory: nothing to draw")
        return
    rec_rows = aimdb.recovery(con)
    recs = {r["point"]: r for r in rec_rows}
    divs = {(r["point"], r["solver"]): round(r["frac_diverged"] * r["seeds"]) for r in rec_rows}
    fams = {}
    for (point, _solver) in curves:
        key = aimdb.without(recs[point]["params"], ("decomposition", "activation", "order_m", "closure", "solvers"))
        fams.setdefault(key, set()).add(point)
    nfig = 0
    for key, points in sorted(fams.items()):
        acts = sorted({recs[p]["activation"] for p in points}, key=lambda a: (recs_k(recs, points, a), a))
        decs = [d for d in ("direct", "tied", "untied") if any(recs[p]["decomposition"] == d for p in points)]
        if len(acts) * len(decs) > MAX_PANELS:
            notes.append(f"curves: {len(acts)}x{len(decs)} panels for one setting, more than {MAX_PANELS}: skipped")
            continue
        if nfig >= MAX_FIGURES:
            notes.append(f"curves: more than {MAX_FIGURES} settings; the rest are not drawn")
            break
        fig, axes = plt.subplots(len(acts), len(decs), figsize=(3.6 * len(decs), 2.6 * len(acts)),
                                 squeeze=False, sharex=True, sharey=True)
        colors = {}
        palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, a in enumerate(acts):
            for j, dec in enumerate(decs):
                ax = axes[i][j]
                pts = [p for p in points if recs[p]["activation"] == a and recs[p]["decomposition"] == dec]
                for lab, solver, rows, p in solver_series(curves, recs, pts):
                    c = colors.setdefault(lab, palette[len(colors) % len(palette)])
                    div = divs.get((p, solver), 0)
                    band(ax, rows, lab, c, "-" if solver == "sgd" else "--", fill=solver == "sgd", diverged=div)
                thr = recs[pts[0]]["recovery_threshold"] if pts else None
                if thr:
                    ax.axhline(thr, color="0.6", lw=0.6, ls=":")
                k = recs[pts[0]]["info_exponent"] if pts else None
                ax.set_title(f"{dec}, {a}" + (f" (k={k})" if k else ""), fontsize=9)
                if not pts:
                    ax.text(0.5, 0.5, "no finished run", ha="center", va="center", transform=ax.transAxes)
                if i == len(acts) - 1:
                    ax.set_xlabel(aimdb.LABELS["tau"])
                if j == 0:
                    ax.set_ylabel("|m|")
                ax.set_ylim(-0.02, 1.05)
                ax.legend(fontsize=6, loc="upper left")
        fig.suptitle(f"|m| against τ: {short(key, ())}", fontsize=10)
        fig.tight_layout()
        save(fig, out, f"curves-{nfig + 1:02d}-{safe(short(key, ()))}", pdf, made)
        nfig += 1


def recs_k(recs, points, act):
    for p in points:
        if recs[p]["activation"] == act:
            return recs[p]["info_exponent"] or 99
    return 99


def fig_orders(con, out, pdf, made, notes):
    """Figure 1 style: one setting, the ODE at several orders M against SGD and the flow."""
    recs = {r["point"]: r for r in aimdb.recovery(con)}
    fams = {}
    for p, r in recs.items():
        key = aimdb.without(r["params"], ("order_m", "closure", "solvers", "records", "precision"))
        fams.setdefault(key, set()).add(p)
    curves = None
    nfig = 0
    for key, points in sorted(fams.items()):
        orders = {(recs[p]["closure"], recs[p]["order_m"]) for p in points
                  if "ode" in recs[p]["solvers"].split(",") and recs[p]["decomposition"] != "direct"}
        if len({m for _, m in orders}) < 2:
            continue
        if curves is None:
            curves = aimdb.curves(con)
        if nfig >= MAX_FIGURES:
            notes.append(f"orders: more than {MAX_FIGURES} settings; the rest are not drawn")
            break
        series = solver_series(curves, recs, points)
        closures = sorted({recs[p]["closure"] for p in points if recs[p]["solvers"] == "ode"})
        fig, axes = plt.subplots(2, max(1, len(closures)), figsize=(5 * max(1, len(closures)), 7), squeeze=False)
        cmap = plt.get_cmap("viridis")
        for j, cl in enumerate(closures or [None]):
            for row, (field, ylabel) in enumerate((("abs_m", "|m|"), ("loss", aimdb.LABELS["loss"]))):
                ax = axes[row][j]
                for lab, solver, rows, _p in series:
                    if solver == "ode" and cl is not None and f" {cl} " not in lab + " " and cl not in lab:
                        continue
                    if solver == "ode":
                        m = int(lab.split("M=")[1].split()[0]) if "M=" in lab else 0
                        color, style = cmap(min(m, 8) / 8.0), "--"
                    else:
                        color, style = ("k", "-") if solver == "sgd" else ("tab:red", ":")
                    tau = [r["tau"] for r in rows if r[field + "_mean"] is not None]
                    y = [r[field + "_mean"] for r in rows if r[field + "_mean"] is not None]
                    if not tau:
                        continue
                    ax.plot(tau, y, style, color=color, lw=1.3, label=lab)
                    if solver == "sgd" and field == "abs_m" and max(r["seeds"] for r in rows) > 1:
                        ax.fill_between(tau, [r["abs_m_min"] for r in rows if r["abs_m_mean"] is not None],
                                        [r["abs_m_max"] for r in rows if r["abs_m_mean"] is not None],
                                        color="k", alpha=0.15, lw=0)
                    if solver == "sgd" and field == "loss" and max(r["seeds"] for r in rows) > 1:
                        sd = [r["loss_sd"] or 0 for r in rows if r["loss_mean"] is not None]
                        ax.fill_between(tau, [a - b for a, b in zip(y, sd)], [a + b for a, b in zip(y, sd)],
                                        color="k", alpha=0.15, lw=0)
                ax.set_xlabel(aimdb.LABELS["tau"])
                ax.set_ylabel(ylabel)
                ax.set_title(f"closure {cl}" if cl else "", fontsize=9)
                ax.legend(fontsize=7)
        any_r = recs[next(iter(points))]
        fig.suptitle(f"{any_r['decomposition']}, {any_r['activation']}: SGD, flow and the moment ODE at "
                     f"order M ({short(key, ())})", fontsize=10)
        fig.tight_layout()
        save(fig, out, f"orders-{nfig + 1:02d}-{safe(any_r['decomposition'] + '_' + any_r['activation'] + '_' + short(key, ()))}",
             pdf, made)
        nfig += 1
    if nfig == 0:
        notes.append("orders (Figure 1): no setting has its moment ODE at two or more orders M: not drawn")


def fig_nwr(con, out, pdf, made, notes):
    """Figure 3 style: n_wr against the information exponent, one line per d, SGD."""
    recs = [r for r in aimdb.recovery(con, "s.solver = 'sgd'") if r["info_exponent"]]
    if not recs:
        notes.append("n_wr (Figure 3): no finished SGD run with a Hermite activation: not drawn")
        return
    fams = {}
    for r in recs:
        key = aimdb.without(r["params"], ("activation", "d", "order_m", "closure", "solvers", "ode_noise",
                                          "records", "tau_end", "precision"))
        fams.setdefault(key, []).append(r)
    nfig = 0
    for key, rs in sorted(fams.items()):
        ks = sorted({r["info_exponent"] for r in rs})
        if len(ks) < 2:
            continue
        if nfig >= MAX_FIGURES:
            notes.append(f"n_wr: more than {MAX_FIGURES} settings; the rest are not drawn")
            break
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ds = sorted({r["d"] for r in rs})
        cmap = plt.get_cmap("plasma")
        drew = False
        for i, d in enumerate(ds):
            color = cmap(i / max(1, len(ds)))
            pts = sorted((r for r in rs if r["d"] == d), key=lambda r: r["info_exponent"])
            x = [r["info_exponent"] for r in pts if r["n_wr_median"]]
            y = [r["n_wr_median"] for r in pts if r["n_wr_median"]]
            lo = [r["n_wr_median"] - r["n_wr_q1"] for r in pts if r["n_wr_median"]]
            hi = [r["n_wr_q3"] - r["n_wr_median"] for r in pts if r["n_wr_median"]]
            if x:
                drew = True
                ax.errorbar(x, y, yerr=[lo, hi], fmt="o-", color=color, capsize=3, label=f"d={d}")
            ax2.plot([r["info_exponent"] for r in pts], [r["recovered"] / r["seeds"] for r in pts], "o-",
                     color=color, label=f"d={d}: recovered")
            if any(r["frac_diverged"] for r in pts):
                ax2.plot([r["info_exponent"] for r in pts], [r["frac_diverged"] for r in pts], "x--",
                         color=color, label=f"d={d}: diverged")
            if any(r.get("anti_recovered") for r in pts):
                ax2.plot([r["info_exponent"] for r in pts], [r["anti_recovered"] / r["seeds"] for r in pts],
                         "v:", color=color, label=f"d={d}: m ≤ −θ (anti-aligned)")
        if drew:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no seed reached weak recovery", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(aimdb.LABELS["info_exponent"])
        ax.set_ylabel(aimdb.LABELS["n_wr"] + " (median, quartiles)")
        ax.set_xticks(ks)
        ax.legend(fontsize=8)
        ax2.set_xlabel(aimdb.LABELS["info_exponent"])
        ax2.set_ylabel("fraction of seeds")
        ax2.legend(fontsize=8)
        ax2.set_xticks(ks)
        ax2.set_ylim(-0.05, 1.05)
        dec = rs[0]["decomposition"]
        fig.suptitle(f"{dec}, SGD: weak recovery against the information exponent ({short(key, ('d',))})",
                     fontsize=10)
        fig.tight_layout()
        save(fig, out, f"nwr-{nfig + 1:02d}-{safe(dec + '_' + short(key, ('d',)))}", pdf, made)
        nfig += 1
    if nfig == 0:
        notes.append("n_wr (Figure 3): no setting has SGD runs at two or more information exponents: not drawn")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--out", default="figs", help="directory for the images [figs]")
    ap.add_argument("--no-pdf", action="store_true", help="PNG only")
    a = ap.parse_args()
    con = aimdb.open_or_exit(a.db)
    os.makedirs(a.out, exist_ok=True)
    print(f"{a.db}: {aimdb.describe(con)}")
    made, notes = [], []
    for f in (fig_curves, fig_orders, fig_nwr):
        f(con, a.out, not a.no_pdf, made, notes)
    for n in notes:
        print("not drawn: " + n)
    for m in made:
        print("wrote " + m)
    if not made:
        print("no figure: the database holds no finished run to draw")
    return 0


if __name__ == "__main__":
    sys.exit(main())
