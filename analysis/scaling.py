#!/usr/bin/python3
"""The weak-recovery laws: fits of n_wr = A d^a (ln d)^b across d, with bootstrap intervals.

  /usr/bin/python3 analysis/scaling.py DB|CSV [DB|CSV ...] [--out DIR] [--boot N] [--seed S]
                                       [--csv FILE] [--select KEY=VALUE ...]

For every setting (all parameters but d, lr and the seed) and solver, the database's points are
split into series along d: a fixed lr (every point with that lr), or lr following d as 1/ln d
(points sharing lr * ln d to 4 digits). For each series with recovered seeds at three or more
values of d it fits

  ln n_wr = ln A + a ln d + b ln ln d                     (a and b free, never fixed)

when a and b are identifiable: at least MIN_D_AB (5) values of d spanning a factor of at least
MIN_D_SPAN (8) (docs/model.md §12: ln d and ln ln d are nearly collinear over a short range);
otherwise it says "not identifiable" and reports only the one-exponent fit and tau_wr = p + q ln d.
The fit is by weighted least squares on the per-d mean of ln n_wr over the recovered seeds, with weight
n_d / s_d^2 (s_d the sample sd of ln n_wr at d, floored at a quarter of the pooled variance so
that a d whose few seeds happen to agree does not take all the weight). The 95 % intervals are
percentiles of a bootstrap over seeds: at every d the recovered seeds are redrawn with
replacement (their ln n spread about the mean by sqrt(n_d/(n_d - 1)), which undoes the plug-in
variance's bias; without it 8 seeds give intervals that cover 85-90 % instead of 95 %) and the
whole fit is redone. Beside it the one-exponent fit n_wr = A d^c (the local
slope of ln n_wr in ln d over the measured range; for d^2 ln d it is 2 + 1/ln d) with its own
interval; with two values of d only c is fitted.

The escape's own form (docs/model.md §12: dm/dtau = a_2 m from m(0) = O(1/d) for k = 2) is linear
in ln d on tau_wr itself, tau_wr = p + q ln d, i.e. at a fixed lr n_wr = (lr^-1) d^2 (p + q ln d)
= c d^2 ln d (1 + (p/q)/ln d). Unlike (a, b), whose columns ln d and ln ln d are nearly collinear
over a short range, p and q are separable: the same weighted fit (per-d mean of tau_wr over the
recovered seeds, weight n_d / s_d^2 floored as above) with the same bootstrap gives q and p with
intervals. What q = 0 means depends on how lr follows d, since n_wr = tau_wr d^2 / lr: at a fixed
lr, q = 0 is n_wr ∝ d^2 and q > 0 is d^2 ln d; with lr = c/ln d (the seed's largest rate scale,
Corollary 3), q = 0 is n_wr ∝ d^2 ln d and q > 0 is d^2 (ln d)^2.

Several inputs are pooled: databases, and per-seed csv exports of the `results` view
(analysis/data/results/*-results.csv); a run present in more than one counts once. With a csv among them, a setting is the csv's parameter
columns (decomposition, activation, init_scale, width, teacher, ...) rather than a task's full
canonical text, and the database's rows are grouped the same way; say so when pooling. SGD runs
in single and in double precision fall into one setting (`precision` is left out of the key:
analysis/precision/results.md measures them the same to 5e-4 of the seed spread through weak
recovery).

Seeds that never reached |m| >= threshold by tau_end (or diverged first) are counted and shown.
A value of d enters the fit only when at least MIN_RECOVERED (3/4) of its seeds recovered: with
more of them censored its recovered seeds are the lucky ones and would bias the fit; the rest of
the censored seeds are not in the fit, which then describes the recovered seeds. Prints a table;
draws n_wr/(d^2 ln d) and tau_wr against d (scaling-*.png). Exit 0 whenever the database could
be read, 2 on bad input.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402  (first: it names the package of a missing module)

aimdb.require("numpy", "python3-numpy")

import numpy as np  # noqa: E402

Z_LEVEL = 0.95          # interval level
MIN_SEEDS_PER_D = 2     # recovered seeds a d needs to enter a fit
MIN_RECOVERED = 0.75    # and the fraction of its seeds that recovered (fewer: censored, left out)
VAR_FLOOR = 0.25        # s_d^2 >= VAR_FLOOR * pooled variance
MIN_D_AB = 5            # values of d that a and b need (docs/model.md §12)
MIN_D_SPAN = 8.0        # and the factor they must span


def _design(d, three):
    d = np.asarray(d, float)
    cols = [np.ones_like(d), np.log(d)] + ([np.log(np.log(d))] if three else [])
    return np.stack(cols, axis=1)


def _wls(X, y, w):
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    return coef


def _stats(samples, pooled):
    """Per-d mean of ln n and weight n_d / s_d^2 (floored)."""
    ys, ws = [], []
    for s in samples:
        ln = np.log(np.asarray(s, float))
        v = ln.var(ddof=1) if len(ln) > 1 else pooled
        v = max(v, VAR_FLOOR * pooled, 1e-12)
        ys.append(ln.mean())
        ws.append(len(ln) / v)
    return np.array(ys), np.array(ws)


def identifiable(ds):
    """a and b can be told apart: at least MIN_D_AB values of d over a factor MIN_D_SPAN."""
    ds = sorted(set(float(d) for d in ds))
    return len(ds) >= MIN_D_AB and ds[-1] / ds[0] >= MIN_D_SPAN


def lr_power(label):
    """j in lr ∝ (ln d)^-j for a series label of series_of: 0 (fixed lr) or 1 (lr = c/ln d)."""
    return 1 if "/ln d" in label else 0


def q_meaning(label):
    """What q = 0 and q > 0 of tau_wr = p + q ln d say about n_wr = tau_wr d^2/lr in this series."""
    j = lr_power(label)
    base = "d²" + ("" if j == 0 else " ln d" if j == 1 else f" (ln d)^{j}")
    more = "d² ln d" if j == 0 else "d² (ln d)²" if j == 1 else f"d² (ln d)^{j + 1}"
    return f"q = 0: n_wr ∝ {base}; q > 0: n_wr ∝ {more}"


def fit_law(ds, samples, boot=2000, seed=0):
    """Fits n = A d^a (ln d)^b and n = A d^c to per-d lists of recovered n_wr.

    ds: the values of d; samples[i]: the n_wr of the recovered seeds at ds[i] (at least
    MIN_SEEDS_PER_D each; the caller filters). Returns a dict with a, b, lnA, c and, for each,
    (lo, hi) intervals from the bootstrap over seeds; a, b are None unless identifiable(ds)."""
    ds = np.asarray(ds, float)
    logs = [np.log(np.asarray(s, float)) for s in samples]
    resid = np.concatenate([l - l.mean() for l in logs])
    dof = max(1, len(resid) - len(logs))
    pooled = float((resid ** 2).sum() / dof) or 1e-6
    three = identifiable(ds)
    y, w = _stats(samples, pooled)
    out = {"n_d": len(ds), "three": three}
    X3 = _design(ds, True) if three else None
    X2 = _design(ds, False)
    c2 = _wls(X2, y, w)
    out["c"], out["lnA_c"] = float(c2[1]), float(c2[0])
    if three:
        c3 = _wls(X3, y, w)
        out["lnA"], out["a"], out["b"] = (float(v) for v in c3)
    else:
        out["lnA"] = out["a"] = out["b"] = None
    rng = np.random.default_rng(seed)
    bs3, bs2 = [], []
    for _ in range(boot):
        rs = []
        for l in logs:  # redraw the seeds, spread by sqrt(n/(n-1)) (the plug-in variance's bias)
            n = len(l)
            r = l[rng.integers(0, n, n)]
            rs.append(np.exp(l.mean() + (r - l.mean()) * math.sqrt(n / (n - 1))))
        yb, wb = _stats(rs, pooled)
        bs2.append(_wls(X2, yb, wb)[1])
        if three:
            bs3.append(_wls(X3, yb, wb))
    lo, hi = (1 - Z_LEVEL) / 2 * 100, (1 + Z_LEVEL) / 2 * 100
    out["c_ci"] = tuple(float(v) for v in np.percentile(bs2, [lo, hi]))
    if three:
        bs3 = np.array(bs3)
        out["a_ci"] = tuple(float(v) for v in np.percentile(bs3[:, 1], [lo, hi]))
        out["b_ci"] = tuple(float(v) for v in np.percentile(bs3[:, 2], [lo, hi]))
    else:
        out["a_ci"] = out["b_ci"] = None
    return out


def fit_drift(ds, taus, boot=2000, seed=0):
    """Fits tau_wr = p + q ln d to per-d lists of recovered tau_wr (k = 2 escape from m(0) = O(1/d);
    a constant, q = 0, for the drift of Corollary 3).

    Weighted least squares on the per-d means with weight n_d / s_d^2 (s_d^2 floored at
    VAR_FLOOR times the pooled variance), 95 % intervals from the bootstrap over seeds as in
    fit_law. Returns p, q, their intervals, and beta = p/q (tau_wr = q (ln d + beta))."""
    ds = np.asarray(ds, float)
    ts = [np.asarray(t, float) for t in taus]
    resid = np.concatenate([t - t.mean() for t in ts])
    pooled = float((resid ** 2).sum() / max(1, len(resid) - len(ts))) or 1e-12
    X = _design(ds, False)

    def stats(samples):
        ys, ws = [], []
        for t in samples:
            v = t.var(ddof=1) if len(t) > 1 else pooled
            ys.append(t.mean())
            ws.append(len(t) / max(v, VAR_FLOOR * pooled, 1e-18))
        return np.array(ys), np.array(ws)

    y, w = stats(ts)
    p, q = (float(v) for v in _wls(X, y, w))
    rng = np.random.default_rng(seed)
    bs = []
    for _ in range(boot):
        rs = []
        for t in ts:
            n = len(t)
            r = t[rng.integers(0, n, n)]
            rs.append(t.mean() + (r - t.mean()) * math.sqrt(n / (n - 1)))
        bs.append(_wls(X, *stats(rs)))
    bs = np.array(bs)
    lo, hi = (1 - Z_LEVEL) / 2 * 100, (1 + Z_LEVEL) / 2 * 100
    return {"p": p, "q": q, "beta": p / q if q else None,
            "p_ci": tuple(float(v) for v in np.percentile(bs[:, 0], [lo, hi])),
            "q_ci": tuple(float(v) for v in np.percentile(bs[:, 1], [lo, hi]))}


def series_of(rows):
    """Splits one setting's recovery rows (one solver) into series along d:
    [(label, rows sorted by d)]; a fixed lr, or lr * ln d held fixed."""
    out = []
    by_lr = {}
    for r in rows:
        by_lr.setdefault(r["lr"], []).append(r)
    for lr, rs in sorted(by_lr.items()):
        if len({r["d"] for r in rs}) >= 2:
            out.append((f"fixed lr {lr:.4g}", sorted(rs, key=lambda r: r["d"])))
    by_c = {}
    for r in rows:
        by_c.setdefault(float(f"{r['lr'] * math.log(r['d']):.4g}"), []).append(r)
    for c, rs in sorted(by_c.items()):
        if len({r["d"] for r in rs}) >= 2 and len({r["lr"] for r in rs}) >= 2:
            out.append((f"lr = {c:.4g}/ln d", sorted(rs, key=lambda r: r["d"])))
    return out


def fmt_ci(v, ci):
    if v is None:
        return "-"
    if ci is None:
        return f"{v:.3f}"
    return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


# Keys that do not define a setting (a series runs along d and lr; precision: see the top).
NOT_SETTING = ("d", "lr", "solvers", "order_m", "closure", "records", "tau_end", "precision")


def analyse(recs, boot, seed, keycols=None):
    """[(setting text, solver, series label, rows, fit or None, why not)] from recovery rows;
    keycols: group by these columns instead of the canonical text (pooling with a csv)."""
    groups = {}
    for r in recs:
        if keycols is None:
            key = aimdb.without(r["params"], NOT_SETTING)
        else:
            key = ";".join(f"{c}={_fmt(r[c])}" for c in keycols)
        groups.setdefault((key, r["solver"]), []).append(r)
    results = []
    for (key, solver), rows in sorted(groups.items()):
        for label, rs in series_of(rows):
            # one row per d (several points at one d, e.g. two tau_end: pool their seeds)
            by_d = {}
            for r in rs:
                e = by_d.setdefault(r["d"], {"samples": [], "seeds": 0, "recovered": 0, "taus": [],
                                             "lr": r["lr"], "diverged": 0.0})
                e["samples"] += r["samples"]
                e["taus"] += r["taus"]
                e["seeds"] += r["seeds"]
                e["recovered"] += r["recovered"]
                e["diverged"] += r["frac_diverged"] * r["seeds"]
            usable = [d for d in sorted(by_d) if len(by_d[d]["samples"]) >= MIN_SEEDS_PER_D
                      and by_d[d]["recovered"] >= MIN_RECOVERED * by_d[d]["seeds"]]
            fit, why = None, ""
            if len(usable) >= 2:
                fit = fit_law(usable, [by_d[d]["samples"] for d in usable], boot, seed)
                fit["ds"] = usable
                fit["drift"] = fit_drift(usable, [by_d[d]["taus"] for d in usable], boot, seed)
            else:
                why = (f"{len(usable)} value(s) of d with >= {MIN_SEEDS_PER_D} recovered seeds and >= "
                       f"{MIN_RECOVERED:.0%} recovered: at least 2 are needed for c, {MIN_D_AB} over a "
                       f"factor {MIN_D_SPAN:g} for a and b")
            results.append((key, solver, label, by_d, fit, why))
    return results


def _fmt(v):
    """A column value as the canonical text spells it (0.7, not 0.7000000000000001; 1, not 1.0)."""
    if isinstance(v, float):
        return f"{v:.15g}"
    return "" if v is None else str(v)


def load(paths):
    """Recovery rows pooled from databases and results csv files, the key columns (None unless a
    csv is among them) and a description of each input. A run (task id and solver) found in
    several inputs counts once: the databases' copy (τ_wr interpolated since schema 2) wins, then
    the first csv. Exits 2 on bad input."""
    rows, csv_cols, said, seen = [], None, [], set()
    # databases first, so that their copy of a run is the one kept
    for path in sorted(paths, key=lambda p: p.endswith(".csv")):
        try:
            if path.endswith(".csv"):
                rs = aimdb.runs_from_csv(path)
                cols = [c for c in aimdb.TASK_COLS if c not in NOT_SETTING and c != "info_exponent"
                        and any(r[c] is not None for r in rs)]
                csv_cols = cols if csv_cols is None else [c for c in csv_cols if c in cols]
                said.append(f"{path}: {len(rs)} finished runs (csv)")
            else:
                con = aimdb.open_db(path)
                rs = aimdb.runs(con)
                said.append(f"{path}: {aimdb.describe(con)}")
        except aimdb.NotAimsweep as e:
            aimdb.usage_error(str(e))
        fresh = [r for r in rs if (r["task_id"], r["solver"]) not in seen]
        if len(fresh) < len(rs):
            said[-1] += f"; {len(rs) - len(fresh)} of them already read from an earlier input, not counted twice"
        seen.update((r["task_id"], r["solver"]) for r in fresh)
        rows += fresh
    return aimdb.recovery_of(rows), csv_cols, said


def plot(results, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    panels = [r for r in results if any(e["samples"] for e in r[3].values())]
    if not panels:
        return made
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, (key, solver, label, by_d, fit, _why) in enumerate(panels[:12]):
        p = aimdb.params_dict(key)
        name = f"{p.get('decomposition')} {p.get('activation')} {p.get('teacher')} {solver}, {label}"
        ds = [d for d in sorted(by_d) if by_d[d]["samples"]]
        norm = [np.array(by_d[d]["samples"]) / (d * d * math.log(d)) for d in ds]
        med = [np.median(v) for v in norm]
        lo = [m - np.percentile(v, 25) for m, v in zip(med, norm)]
        hi = [np.percentile(v, 75) - m for m, v in zip(med, norm)]
        line = ax.errorbar(ds, med, yerr=[lo, hi], fmt="-", capsize=3, label=name)
        used = set(fit["ds"]) if fit else set()
        col = line[0].get_color()
        ax.plot([d for d in ds if d in used], [m for d, m in zip(ds, med) if d in used], "o", color=col)
        ax.plot([d for d in ds if d not in used], [m for d, m in zip(ds, med) if d not in used], "o",
                color=col, mfc="none")
        tau = [np.median(by_d[d]["taus"]) if by_d[d]["taus"] else np.nan for d in ds]
        ax2.plot([math.log(d) for d in ds], tau, "o-", color=line[0].get_color(), label=name)
        if fit:
            lx = np.log([min(fit["ds"]), max(fit["ds"])])
            ax2.plot(lx, fit["drift"]["p"] + fit["drift"]["q"] * lx, ":", color=col, lw=1)
        if fit and fit.get("a") is not None:
            dd = np.geomspace(min(ds), max(ds), 50)
            pred = np.exp(fit["lnA"] + fit["a"] * np.log(dd) + fit["b"] * np.log(np.log(dd)))
            ax.plot(dd, pred / (dd * dd * np.log(dd)), ":", color=line[0].get_color(), lw=1)
    ax.set_xscale("log")
    ax.set_xlabel(aimdb.LABELS["d"])
    ax.set_ylabel("n_wr / (d² ln d)  (median, quartiles; dotted: fit)")
    ax.legend(fontsize=6)
    ax2.set_xlabel("ln d")
    ax2.set_ylabel("τ_wr (median over recovered seeds; dotted: p + q ln d)")
    ax2.legend(fontsize=6)
    fig.suptitle("Weak recovery against d (left: n_wr ∝ d² ln d is flat; hollow: d left out of the fit, "
                 "too few seeds recovered)", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out, "scaling-nwr.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", nargs="+", help="databases and/or results csv files, pooled")
    ap.add_argument("--out", default="figs", help="directory for the plot [figs]")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples [2000]")
    ap.add_argument("--seed", type=int, default=1, help="bootstrap generator seed [1]")
    ap.add_argument("--csv", help="also write the per-d table as csv")
    ap.add_argument("--select", action="append", default=[], metavar="KEY=VALUE",
                    help="only runs with this parameter value (solver, decomposition, activation, ...;"
                         " repeatable, a key given twice keeps either value)")
    a = ap.parse_args()
    if a.boot < 10:
        aimdb.usage_error("--boot must be at least 10")
    recs, keycols, said = load(a.db)
    if a.select:
        want = {}
        for kv in a.select:
            k, eq, v = kv.partition("=")
            if not eq or k not in aimdb.TASK_COLS + ("solver",):
                aimdb.usage_error(f"--select {kv}: expected KEY=VALUE with KEY one of solver, "
                                  + ", ".join(aimdb.TASK_COLS))
            want.setdefault(k, set()).add(v)
        recs = [r for r in recs if all(_fmt(r[k]) in vs for k, vs in want.items())]
        print("selected: " + "; ".join(f"{k} in {{{', '.join(sorted(v))}}}" for k, v in want.items())
              + f" ({len(recs)} points)")
    for line in said:
        print(line)
    if keycols is not None:
        print("pooled with a csv: a setting is " + ", ".join(keycols))
    results = analyse(recs, a.boot, a.seed, keycols)
    if not results:
        print("no fit: no setting has finished runs at two or more values of d")
    csv_rows = []
    for key, solver, label, by_d, fit, why in results:
        p = aimdb.params_dict(key)
        print(f"\n== {p.get('decomposition')}, {p.get('activation')}, solver {solver}, {label}; "
              f"teacher {p.get('teacher')}, init_scale {float(p.get('init_scale', 'nan')):.4g}, "
              f"width {float(p.get('width', 'nan')):.4g}")
        print(f"   {'d':>6} {'lr':>9} {'seeds':>5} {'recov':>5} {'div':>4} {'n_wr median':>12} "
              f"{'q1':>11} {'q3':>11} {'n/(d²lnd)':>10} {'tau_wr med':>10}")
        for d in sorted(by_d):
            e = by_d[d]
            s = e["samples"]
            med = float(np.median(s)) if s else None
            row = {"setting": key, "solver": solver, "series": label, "d": d, "lr": e["lr"],
                   "seeds": e["seeds"], "recovered": e["recovered"], "diverged": round(e["diverged"]),
                   "n_wr_median": med, "n_wr_q1": float(np.percentile(s, 25)) if s else None,
                   "n_wr_q3": float(np.percentile(s, 75)) if s else None,
                   "tau_wr_median": float(np.median(e["taus"])) if e["taus"] else None}
            csv_rows.append(row)
            f = lambda v, w=11, p=".4g": f"{v:{w}{p}}" if v is not None else f"{'-':>{w}}"
            print(f"   {d:>6} {e['lr']:>9.4g} {e['seeds']:>5} {e['recovered']:>5} {round(e['diverged']):>4} "
                  f"{f(med, 12)} {f(row['n_wr_q1'])} {f(row['n_wr_q3'])} "
                  f"{f(med / (d * d * math.log(d)) if med else None, 10)} {f(row['tau_wr_median'], 10)}")
        censored = sum(e["seeds"] - e["recovered"] for d, e in by_d.items() if fit is None or d in fit["ds"])
        left = [d for d in by_d if fit is not None and d not in fit["ds"]]
        if fit is None:
            print(f"   no fit: {why}")
            continue
        print(f"   fit over d = {', '.join(str(d) for d in fit['ds'])}, weighted, {Z_LEVEL:.0%} bootstrap intervals:")
        if fit["a"] is not None:
            print(f"     n_wr = A d^a (ln d)^b:  a = {fmt_ci(fit['a'], fit['a_ci'])},  "
                  f"b = {fmt_ci(fit['b'], fit['b_ci'])},  A = {math.exp(fit['lnA']):.4g}")
        else:
            span = max(fit["ds"]) / min(fit["ds"])
            print(f"     n_wr = A d^a (ln d)^b: not identifiable ({fit['n_d']} values of d over a factor "
                  f"{span:.3g}; a and b need >= {MIN_D_AB} over >= {MIN_D_SPAN:g}): a and b cannot be separated")
        print(f"     n_wr = A d^c (local slope): c = {fmt_ci(fit['c'], fit['c_ci'])}"
              f"   (d² ln d has c = {2 + 1 / math.log(math.sqrt(min(fit['ds']) * max(fit['ds']))):.3f} here)")
        dr = fit["drift"]
        beta = f"{dr['beta']:.3g}" if dr["beta"] is not None else "-"
        print(f"     tau_wr = p + q ln d: q = {fmt_ci(dr['q'], dr['q_ci'])},  "
              f"p = {fmt_ci(dr['p'], dr['p_ci'])},  p/q = {beta}   ({q_meaning(label)})")
        if left:
            print(f"     left out: d = {', '.join(str(d) for d in sorted(left))} (fewer than "
                  f"{MIN_RECOVERED:.0%} of the seeds recovered, or fewer than {MIN_SEEDS_PER_D})")
        if censored:
            print(f"     {censored} seed(s) at the fitted d did not recover by tau_end and are not in the fit")
    os.makedirs(a.out, exist_ok=True)
    for m in plot(results, a.out):
        print("wrote " + m)
    if a.csv:
        import csv
        with open(a.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(csv_rows[0].keys()) if csv_rows else ["setting"])
            w.writeheader()
            w.writerows(csv_rows)
        print("wrote " + a.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
