#!/usr/bin/python3
"""Phase diagrams of weak recovery: heat maps over two grid axes, the ODE as background and SGD
as points.

  /usr/bin/python3 analysis/phase.py DB [--x AXIS] [--y AXIS] [--out DIR]

AXIS is a task column (activation, info_exponent, lr, init_scale, width, d, decomposition,
tokens, teacher, weight_decay). By default x and y are the two axes with the most values among
those that vary. Every other varying axis makes one panel per value combination (up to
MAX_PANELS; the rest are said to be skipped), except an axis that follows from x or y (each
value of x or y has one value of it): lr when it is an expression of d (lr = c / ln d) and d is
an axis, activation when the information exponent is an axis and each k has one activation,
the information exponent when activation is an axis. Those are named in the axis label instead
of making panels with one filled column each. Two figures: phase-fraction.png (the fraction of seeds that reached weak
recovery; with the ODE as background, SGD as circles filled with its own fraction) and
phase-diverged.png (the fraction of seeds whose run diverged) and phase-tauwr.png (the median
tau_wr of the recovered seeds, log colour scale). The background is
the ODE where the database has it, else SGD. Cells without a finished run stay blank.

It also prints the points where SGD and the ODE disagree: on whether recovery happens (the
recovered fractions differ by 0.5 or more), on divergence (likewise) or on when (median tau_wr
differing by more than a factor DISAGREE_RATIO). A seed computed by two points of one cell (the
same parameters but the solvers list) counts once. Exit 0 whenever the database could be read, 2 on bad input.
"""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("matplotlib", "python3-matplotlib")
aimdb.require("numpy", "python3-numpy")

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


AXES = ("activation", "info_exponent", "lr", "init_scale", "width", "d", "decomposition", "tokens", "teacher",
        "weight_decay")
MAX_PANELS = 24
DISAGREE_RATIO = 1.5


def fmt(v):
    """0.7 for 0.69999999999999996, also inside hermite(...)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    return re.sub(r"\d+\.\d{5,}", lambda m: f"{float(m.group(0)):.4g}", str(v))


def sort_key(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def background_solver(rows):
    solvers = {r["solver"] for r in rows}
    return "ode" if "ode" in solvers else ("flow" if "flow" in solvers else "sgd")


def merge(runs):
    """A cell's seeds: one run per seed (points that differ only in settings off the axes, e.g.
    the solvers list, compute the same seed twice: it counts once)."""
    by_seed = {}
    for r in runs:
        by_seed.setdefault(r["seed"], r)
    rs = list(by_seed.values())
    taus = [r["tau_wr"] for r in rs if r["samples_wr"] is not None]
    return {"seeds": len(rs), "recovered": len(taus), "frac": len(taus) / len(rs) if rs else float("nan"),
            "tau": float(np.median(taus)) if taus else float("nan"),
            "diverged": sum(r["status"] in ("diverged", "ode_diverged") for r in rs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--x", choices=AXES)
    ap.add_argument("--y", choices=AXES)
    ap.add_argument("--out", default="figs", help="directory for the images [figs]")
    a = ap.parse_args()
    con = aimdb.open_or_exit(a.db)
    print(f"{a.db}: {aimdb.describe(con)}")
    rows = aimdb.runs(con)
    if not rows:
        print("no phase diagram: the database holds no finished run")
        return 0
    for r in rows:
        if r["info_exponent"] is None:
            r["info_exponent"] = "-"  # relu, tanh, erf, softmax: no Hermite exponent recorded
    values = {ax: sorted({r[ax] for r in rows}, key=sort_key) for ax in AXES}
    varying = [ax for ax in AXES if len(values[ax]) > 1]
    varying.sort(key=lambda ax: -len(values[ax]))

    def implied(f, by):
        """f follows from the axis by: each value of by has one value of f."""
        seen = {}
        return all(seen.setdefault(r[by], r[f]) == r[f] for r in rows)

    x, y = a.x, a.y
    for ax in varying:
        if ax in (x, y) or any(c is not None and implied(ax, c) for c in (x, y)):
            continue
        if x is None:
            x = ax
        elif y is None:
            y = ax
    if x is None or y is None:
        print(f"no phase diagram: fewer than two grid axes vary (varying: {', '.join(varying) or 'none'})")
        return 0
    if x == y:
        aimdb.usage_error("--x and --y must differ")
    follows = {ax: c for ax in varying if ax not in (x, y) for c in (x, y) if implied(ax, c)}
    facets = [ax for ax in varying if ax not in (x, y) and ax not in follows]

    def axis_label(ax):
        extra = [f for f, c in follows.items() if c == ax]
        lab = aimdb.LABELS.get(ax, ax)
        if "lr" in extra and ax == "d":
            cs = {float(f"{r['lr'] * math.log(r['d']):.4g}") for r in rows}
            return lab + (f" (η = {next(iter(cs)):.4g}/ln d)" if len(cs) == 1 else " (η follows d)")
        return lab + "".join(f" (with {aimdb.LABELS.get(f, f)})" for f in extra)
    combos = sorted({tuple(r[f] for f in facets) for r in rows}, key=lambda c: [sort_key(v) for v in c])
    if len(combos) > MAX_PANELS:
        print(f"not drawn: {len(combos) - MAX_PANELS} of {len(combos)} panels (axes {', '.join(facets)}); "
              f"choose --x/--y or a smaller database to see them")
        combos = combos[:MAX_PANELS]
    bg = background_solver(rows)
    print(f"axes: x = {x}, y = {y}; panels over {', '.join(facets) or 'nothing'}"
          + "".join(f"; {f} follows {c}" for f, c in follows.items()) + f"; background: {bg}"
          + ("; SGD as points" if bg != "sgd" and any(r["solver"] == "sgd" for r in rows) else ""))
    xs, ys = values[x], values[y]
    cells = {}
    for r in rows:
        key = (tuple(r[f] for f in facets), r[x], r[y], r["solver"])
        cells.setdefault(key, []).append(r)
    cells = {k: merge(v) for k, v in cells.items()}
    ncol = min(4, len(combos))
    nrow = math.ceil(len(combos) / ncol)
    made = []
    taus = [c["tau"] for c in cells.values() if c["tau"] == c["tau"] and c["tau"] > 0]
    tnorm = mcolors.LogNorm(min(taus), max(taus)) if taus and min(taus) < max(taus) else None
    for what in ("fraction", "diverged", "tauwr"):
        fig, axs = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.2 * nrow + 0.6), squeeze=False,
                                layout="constrained")
        im = None
        for i, combo in enumerate(combos):
            axp = axs[i // ncol][i % ncol]
            grid = np.full((len(ys), len(xs)), np.nan)
            for ix, xv in enumerate(xs):
                for iy, yv in enumerate(ys):
                    c = cells.get((combo, xv, yv, bg))
                    if c:
                        grid[iy, ix] = (c["frac"] if what == "fraction" else
                                        c["diverged"] / c["seeds"] if what == "diverged" else c["tau"])
            if what == "diverged":
                im = axp.imshow(grid, origin="lower", aspect="auto", cmap="Reds", vmin=0, vmax=1)
            elif what == "fraction":
                im = axp.imshow(grid, origin="lower", aspect="auto", cmap="viridis", vmin=0, vmax=1)
            else:
                im = axp.imshow(grid, origin="lower", aspect="auto", cmap="magma_r", norm=tnorm)
            if bg != "sgd":
                for ix, xv in enumerate(xs):
                    for iy, yv in enumerate(ys):
                        c = cells.get((combo, xv, yv, "sgd"))
                        if not c:
                            continue
                        v = (c["frac"] if what == "fraction" else
                             c["diverged"] / c["seeds"] if what == "diverged" else c["tau"])
                        if what == "diverged":
                            col = plt.get_cmap("Reds")(v)
                        elif what == "fraction":
                            col = plt.get_cmap("viridis")(v)
                        else:
                            col = plt.get_cmap("magma_r")(tnorm(v)) if (tnorm and v == v) else "white"
                        axp.scatter([ix], [iy], s=60, c=[col], edgecolors="red", linewidths=1.2)
            axp.set_xticks(range(len(xs)))
            axp.set_xticklabels([fmt(v) for v in xs], rotation=45, fontsize=7)
            axp.set_yticks(range(len(ys)))
            axp.set_yticklabels([fmt(v) for v in ys], fontsize=6)
            axp.set_xlabel(axis_label(x), fontsize=8)
            axp.set_ylabel(axis_label(y), fontsize=8)
            axp.set_title(", ".join(f"{f}={fmt(v)}" for f, v in zip(facets, combo)) or "", fontsize=8)
        for j in range(len(combos), nrow * ncol):
            axs[j // ncol][j % ncol].axis("off")
        label = {"fraction": "fraction of seeds reaching weak recovery (m ≥ θ; |m| for even σ)",
                 "diverged": "fraction of seeds diverged",
                 "tauwr": "median τ_wr of the recovered seeds"}[what]
        if im is not None:
            fig.colorbar(im, ax=axs, shrink=0.6, label=label)
        fig.suptitle(f"{label}: {bg.upper() if bg != 'ode' else 'moment ODE'} as background"
                     + (", SGD as red-edged points" if bg != "sgd" else ""), fontsize=10)
        path = os.path.join(a.out, f"phase-{what}.png")
        os.makedirs(a.out, exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        made.append(path)
    # where SGD and the ODE disagree
    dis = []
    for (combo, xv, yv, solver), c in cells.items():
        if solver != "sgd":
            continue
        o = cells.get((combo, xv, yv, "ode"))
        if not o:
            continue
        why = None
        if abs(c["frac"] - o["frac"]) >= 0.5:
            why = f"whether: SGD {c['recovered']}/{c['seeds']} recovered, ODE {o['recovered']}/{o['seeds']}"
            if c["diverged"]:
                why += f" (SGD diverged in {c['diverged']})"
            if o["diverged"]:
                why += f" (ODE diverged in {o['diverged']})"
        elif abs(c["diverged"] / c["seeds"] - o["diverged"] / o["seeds"]) >= 0.5:
            why = f"divergence: SGD diverged in {c['diverged']}/{c['seeds']}, ODE in {o['diverged']}/{o['seeds']}"
        elif c["tau"] == c["tau"] and o["tau"] == o["tau"] and o["tau"] > 0 and c["tau"] > 0 and \
                max(c["tau"] / o["tau"], o["tau"] / c["tau"]) > DISAGREE_RATIO:
            why = f"when: median tau_wr SGD {c['tau']:.3g}, ODE {o['tau']:.3g}"
        if why:
            dis.append((combo, xv, yv, why))
    both = sum(1 for k in cells if k[3] == "sgd" and (k[0], k[1], k[2], "ode") in cells)
    if both:
        print(f"SGD and ODE at {both} common cells; they disagree at {len(dis)}:")
        for combo, xv, yv, why in sorted(dis, key=lambda t: [sort_key(v) for v in t[0]] + [sort_key(t[1]), sort_key(t[2])]):
            where = ", ".join(f"{f}={fmt(v)}" for f, v in zip(facets, combo))
            print(f"  {x}={fmt(xv)}, {y}={fmt(yv)}" + (f", {where}" if where else "") + f": {why}")
    else:
        print("no cell has both SGD and the ODE: no comparison")
    for m in made:
        print("wrote " + m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
