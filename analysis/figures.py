#!/usr/bin/python3
"""Every figure an aimsweep database can support, as PNG and PDF, in the seed's notation.

  /usr/bin/python3 analysis/figures.py DB [--out DIR] [--no-pdf]

Three kinds, each drawn wherever the database holds its data (seeds as bands: the mean over
seeds as a line, the min-max range over seeds shaded; each solver in one colour everywhere: SGD
blue, flow red, ODE green):

- curves-*.png (the seed's Figure 2): for each setting apart from decomposition and activation,
  a grid of panels (rows: activation, columns: decomposition) of m against tau = n eta/d^2, SGD
  beside the flow and the moment ODE: the signed m for an activation whose sign counts (odd
  terms: h1, h3, relu, softmax ...; with ±θ lines), |m| for an even one (with +θ). A setting
  run along d (a fixed lr at several d, or lr an expression of d such as c/ln d) is one figure
  with a column per d, not one figure per (d, lr).
- orders-*.png (the seed's Figure 1): a setting whose moment ODE was run at several orders M:
  |m| and the population loss against tau, SGD (band) and flow next to the ODE at each M.
- nwr-*.png (the seed's Figure 3): the weak-recovery sample count n_wr (median over recovered
  seeds, quartiles as bars, SGD) against the information exponent k, one line per d; and the
  fraction of seeds that recovered (m reached θ, |m| for even activations: docs/model.md §8),
  diverged, or went anti-aligned (an activation whose sign counts, m reached −θ and never +θ).

SGD runs in single and in double precision are drawn as one setting in curves-*, orders-* and nwr-*
(analysis/precision/results.md: the same to 5e-4 of the seed spread through weak recovery).

What a database cannot support (no finished run, no recovered seed, one order M only ...) is
said on stdout; the script exits 0 whenever it could read the database, 2 on bad input.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("matplotlib", "python3-matplotlib")

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


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


SOLVER_COLOR = {"sgd": "tab:blue", "flow": "tab:red", "ode": "tab:green"}  # the same in every panel
ODE_STYLES = ("--", "-.", (0, (1, 1)), (0, (5, 1, 1, 1)))
BAND_NOTE = "band: min–max over seeds"


def field_of(activation):
    """'m' (signed) for an activation whose sign counts, 'abs_m' for an even one (the loss cannot
    tell S from -S): what weak recovery reads (docs/model.md §8)."""
    return "abs_m" if aimdb.sign_symmetric(activation) else "m"


def band(ax, rows, label, color, style="-", fill=True, diverged=0, field="abs_m"):
    """The mean over seeds of m or |m| against tau, with its min-max range over seeds shaded."""
    ok = [r for r in rows if r.get(field + "_mean") is not None]
    if not ok:
        return
    tau = [r["tau"] for r in ok]
    seeds = rows[0]["seeds"]
    note = f", {diverged} diverged" if diverged else ""
    ax.plot(tau, [r[field + "_mean"] for r in ok], linestyle=style, color=color, lw=1.4,
            label=f"{label} ({seeds} seed{'s' * (seeds > 1)}{note})")
    if fill and seeds > 1:
        ax.fill_between(tau, [r[field + "_min"] for r in ok], [r[field + "_max"] for r in ok],
                        color=color, alpha=0.18, lw=0)


def solver_series(curves, recs, points):
    """[(label, solver, rows, point)] for the given points, SGD first, then flow, then the ODEs."""
    out = []
    for pt in points:
        for (p, solver), rows in curves.items():
            if p != pt:
                continue
            r = recs[pt]
            lab = aimdb.solver_label(solver, r["closure"], r["order_m"], r["decomposition"], r["ode_noise"])
            if solver == "ode" and "ode_init=limit" in r["params"].split(";"):
                lab += ", limit start m(0)=0"
            out.append((SOLVER_ORDER.get(solver, 3), r["order_m"], lab, solver, rows, p))
    out.sort(key=lambda x: x[:3])
    return [(lab, solver, rows, p) for _, _, lab, solver, rows, p in out]


def d_series(pairs):
    """Splits a setting's (d, lr) pairs into what one figure draws: [(kind, [(d, lr), ...])] with
    kind 'fixed' (one lr at two or more d), 'of_d' (lr a function of d: lr ln d the same to 4
    digits at two or more d, as scaling.py's series), or 'single' (a pair in no series)."""
    out, used = [], set()
    by_c = {}
    for d, lr in pairs:
        by_c.setdefault(float(f"{lr * math.log(d):.4g}"), []).append((d, lr))
    for _c, ps in sorted(by_c.items()):
        if len({d for d, _ in ps}) >= 2 and len({lr for _, lr in ps}) >= 2:
            out.append(("of_d", sorted(ps)))
            used.update(ps)
    by_lr = {}
    for d, lr in pairs:
        by_lr.setdefault(lr, []).append((d, lr))
    for _lr, ps in sorted(by_lr.items()):
        if len({d for d, _ in ps}) >= 2:
            out.append(("fixed", sorted(ps)))
            used.update(ps)
    out += [("single", [p]) for p in sorted(pairs) if p not in used]
    return out


def lr_text(kind, pairs):
    if kind == "fixed":
        return f"η={num(pairs[0][1])}"
    if kind == "of_d":
        d, lr = pairs[0]
        return f"η={num(lr * math.log(d))}/ln d"
    return f"d={pairs[0][0]}, η={num(pairs[0][1])}"


def fig_curves(con, out, pdf, made, notes):
    """Figure 2 style: a panel per activation x decomposition (rows) and per d (columns, when
    the setting runs along d), m for activations whose sign counts and |m| for even ones,
    each solver in its own colour in every panel."""
    curves = aimdb.curves(con)
    if not curves:
        notes.append("curves: no finished run with a trajectory: nothing to draw")
        return
    rec_rows = aimdb.recovery(con)
    recs = {r["point"]: r for r in rec_rows}
    divs = {(r["point"], r["solver"]): round(r["frac_diverged"] * r["seeds"]) for r in rec_rows}
    fams = {}
    for (point, _solver) in curves:
        key = aimdb.without(recs[point]["params"], ("decomposition", "activation", "order_m", "closure",
                                                    "solvers", "d", "lr", "precision", "tau_end",
                                                    "records"))
        fams.setdefault(key, set()).add(point)
    nfig = 0
    for key, allpoints in sorted(fams.items()):
        pairs = sorted({(recs[p]["d"], recs[p]["lr"]) for p in allpoints})
        for kind, ser in d_series(pairs):
            points = {p for p in allpoints if (recs[p]["d"], recs[p]["lr"]) in ser}
            combos = sorted({(recs[p]["activation"], recs[p]["decomposition"]) for p in points},
                            key=lambda ad: (recs_k(recs, points, ad[0]), ad[0],
                                            ("direct", "tied", "untied").index(ad[1])
                                            if ad[1] in ("direct", "tied", "untied") else 9))
            ds = [d for d, _ in ser]
            if kind == "single":
                acts = sorted({a for a, _ in combos}, key=lambda a: (recs_k(recs, points, a), a))
                decs = [d for d in ("direct", "tied", "untied") if any(dc == d for _, dc in combos)]
                cells = [[(a, dc, None) for dc in decs] for a in acts]
            else:
                cells = [[(a, dc, d) for d in ds] for a, dc in combos]
            nr, nc = len(cells), len(cells[0])
            if nr * nc > MAX_PANELS:
                notes.append(f"curves: {nr}x{nc} panels for one setting, more than {MAX_PANELS}: skipped")
                continue
            if nfig >= MAX_FIGURES:
                notes.append(f"curves: more than {MAX_FIGURES} settings; the rest are not drawn")
                break
            fig, axes = plt.subplots(nr, nc, figsize=(3.4 * nc + 0.4, 2.6 * nr + 0.6), squeeze=False,
                                     sharex=kind == "single", sharey=False)
            for i, row in enumerate(cells):
                for j, (a, dec, d) in enumerate(row):
                    ax = axes[i][j]
                    pts = [p for p in points if recs[p]["activation"] == a and recs[p]["decomposition"] == dec
                           and (d is None or recs[p]["d"] == d)]
                    field = field_of(a)
                    styles = {}
                    for lab, solver, rows, p in solver_series(curves, recs, pts):
                        st = "-" if solver == "sgd" else (":" if solver == "flow" else
                                                          styles.setdefault(lab, ODE_STYLES[len(styles) % len(ODE_STYLES)]))
                        band(ax, rows, lab, SOLVER_COLOR.get(solver, "k"), st, fill=solver == "sgd",
                             diverged=divs.get((p, solver), 0), field=field)
                    thr = recs[pts[0]]["recovery_threshold"] if pts else None
                    if thr:
                        ax.axhline(thr, color="0.5", lw=0.6, ls=":")
                        if field == "m":
                            ax.axhline(-thr, color="0.5", lw=0.6, ls=":")
                    k = recs[pts[0]]["info_exponent"] if pts else None
                    title = f"{dec}, {a}" + (f" (k={k})" if k else "") + (f", d={d}" if d is not None else "")
                    ax.set_title(title, fontsize=9)
                    if not pts:
                        ax.text(0.5, 0.5, "no finished run", ha="center", va="center", transform=ax.transAxes)
                    if i == nr - 1:
                        ax.set_xlabel(aimdb.LABELS["tau"])
                    ax.set_ylabel("m (signed)" if field == "m" else "|m|")
                    ax.set_ylim(-1.05 if field == "m" else -0.02, 1.05)
                    if ax.get_legend_handles_labels()[0]:
                        ax.legend(fontsize=6, loc="best")
            what = "m (odd σ: signed) or |m| (even σ)"
            fig.suptitle(f"{what} against τ: {short(key, ())}, {lr_text(kind, ser)}\n"
                         f"lines: mean over seeds; {BAND_NOTE} (SGD); dotted: ±θ", fontsize=9)
            fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / fig.get_figheight()))
            save(fig, out, f"curves-{nfig + 1:02d}-{safe(short(key, ()) + '_' + lr_text(kind, ser))}", pdf, made)
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
            mf = field_of(recs[next(iter(points))]["activation"])
            for row, (field, ylabel) in enumerate(((mf, "m (signed)" if mf == "m" else "|m|"),
                                                   ("loss", aimdb.LABELS["loss"]))):
                ax = axes[row][j]
                for lab, solver, rows, _p in series:
                    if solver == "ode" and cl is not None and f" {cl} " not in lab + " " and cl not in lab:
                        continue
                    if solver == "ode":
                        m = int(lab.split("M=")[1].split()[0]) if "M=" in lab else 0
                        color, style = cmap(min(m, 8) / 8.0), "--"
                    else:
                        color, style = SOLVER_COLOR[solver], "-" if solver == "sgd" else ":"
                    tau = [r["tau"] for r in rows if r[field + "_mean"] is not None]
                    y = [r[field + "_mean"] for r in rows if r[field + "_mean"] is not None]
                    if not tau:
                        continue
                    ax.plot(tau, y, style, color=color, lw=1.3, label=lab)
                    if solver == "sgd" and field == mf and max(r["seeds"] for r in rows) > 1:
                        ax.fill_between(tau, [r[mf + "_min"] for r in rows if r[mf + "_mean"] is not None],
                                        [r[mf + "_max"] for r in rows if r[mf + "_mean"] is not None],
                                        color=SOLVER_COLOR["sgd"], alpha=0.15, lw=0)
                    if solver == "sgd" and field == "loss" and max(r["seeds"] for r in rows) > 1:
                        sd = [r["loss_sd"] or 0 for r in rows if r["loss_mean"] is not None]
                        ax.fill_between(tau, [a - b for a, b in zip(y, sd)], [a + b for a, b in zip(y, sd)],
                                        color=SOLVER_COLOR["sgd"], alpha=0.15, lw=0)
                ax.set_xlabel(aimdb.LABELS["tau"])
                ax.set_ylabel(ylabel)
                ax.set_title(f"closure {cl}" if cl else "", fontsize=9)
                ax.legend(fontsize=7)
        any_r = recs[next(iter(points))]
        fig.suptitle(f"{any_r['decomposition']}, {any_r['activation']}: SGD, flow and the moment ODE at "
                     f"order M ({short(key, ())}); SGD {BAND_NOTE}, loss ± sd", fontsize=10)
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
