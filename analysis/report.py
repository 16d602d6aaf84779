#!/usr/bin/python3
"""A study report: one self-contained HTML page from an aimsweep database.

  /usr/bin/python3 analysis/report.py DB [DB ...] --out DIR [--boot N]

Writes DIR/index.html: one page, nothing fetched (the figures are embedded as base64 PNG, the
style is inline), with these sections (each an element with its id, for readers and tests):

- status:      the tasks by status, the runs (sweeps) and what is still pending or failed;
- provenance:  per run, the aimsweep version, source commit, compiler, BLAS, MPI, host, ranks,
               start time and command line, as the database recorded them;
- recovery:    the recovery table (per point and solver: seeds, recovered, anti-aligned,
               diverged, median n_wr and tau_wr with quartiles), the `recovery` view's numbers
               computed by aimdb.py (any schema version);
- figures:     every figure the data supports, made by figures.py (curves, orders, n_wr) and
               scaling.py (n_wr and tau_wr against d);
- laws:        the fitted laws with their 95 % bootstrap intervals (scaling.py: the
               one-exponent fit n_wr = A d^c, tau_wr = p + q ln d with what q means for the
               series' lr scaling, and A d^a (ln d)^b only where a and b are identifiable);
- disagreement: the points where SGD and the ODE (or the flow, where there is no ODE) disagree:
               on whether recovery happens (recovered fractions 0.5 or more apart), on divergence
               (likewise), or on when (median tau_wr more than a factor DISAGREE_RATIO apart).

Several databases are pooled (a run present in more than one counts once). Exit 0 when the
databases could be read, 2 on bad input (missing file, not an aimsweep database).
"""
import argparse
import base64
import html
import io
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aimdb  # noqa: E402

DISAGREE_RATIO = 1.5
MAX_RECOVERY_ROWS = 400

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #999; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.82em; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.45em; text-align: right; }
th { background: #eee; } td.l, th.l { text-align: left; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.4em 0; }
.note { color: #555; font-size: 0.9em; } pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
"""


def esc(v):
    return html.escape("" if v is None else str(v))


def num(v, fmt=".4g"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(v, fmt) if isinstance(v, (int, float)) else esc(v)


def table(head, rows, left=()):
    out = ["<table><tr>" + "".join(f"<th class='{'l' if i in left else ''}'>{esc(h)}</th>"
                                    for i, h in enumerate(head)) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class='{'l' if i in left else ''}'>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def img(path, caption):
    with open(path, "rb") as fh:
        data = base64.b64encode(fh.read()).decode("ascii")
    return (f"<figure><img alt='{esc(caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption class='note'>{esc(caption)}</figcaption></figure>")


def section_status(cons):
    rows, total = [], {}
    for path, con in cons:
        for st, n in aimdb.task_counts(con).items():
            total[st] = total.get(st, 0) + n
    body = table(["status", "tasks"], [[esc(k), v] for k, v in sorted(total.items())], left=(0,))
    n = sum(total.values())
    fin = sum(v for k, v in total.items() if k in aimdb.FINISHED)
    open_ = sum(v for k, v in total.items() if k in ("pending", "running", "interrupted"))
    bad = sum(v for k, v in total.items() if k in ("error", "timeout"))
    verdict = ("complete" if fin == n else
               f"{open_} task(s) still to run" + (f", {bad} failed" if bad else "") if open_ else
               f"{bad} task(s) failed (error or timeout)")
    for path, con in cons:
        rows.append([esc(path), esc(con.execute("PRAGMA user_version").fetchone()[0]),
                     esc(aimdb.describe(con))])
    return (f"<p>{fin} of {n} tasks finished (done, diverged or ode_diverged): <b>{esc(verdict)}</b>.</p>"
            + body + table(["database", "schema version", "tasks"], rows, left=(0, 2)))


def section_provenance(cons):
    rows = []
    for path, con in cons:
        cols = {r[1] for r in con.execute("PRAGMA table_info(sweeps)")}
        want = ["sweep_id", "name", "created_at", "version", "git_commit", "compiler", "blas", "mpi",
                "host", "ranks", "command"]
        sel = ", ".join(c if c in cols else f"NULL AS {c}" for c in want)
        for r in con.execute(f"SELECT {sel} FROM sweeps ORDER BY sweep_id"):
            rows.append([esc(os.path.basename(path))] + [esc(v) for v in r])
    if not rows:
        return "<p>No run is recorded in the sweeps table.</p>"
    return table(["database", "run", "sweep", "started (UTC)", "version", "commit", "compiler", "BLAS",
                  "MPI", "host", "ranks", "command"], rows, left=(0, 2, 3, 5, 6, 7, 8, 9, 11))


def section_recovery(recs):
    if not recs:
        return "<p>No finished run: no recovery table.</p>"
    rows = []
    for r in sorted(recs, key=lambda r: (r["decomposition"] or "", r["activation"] or "", r["teacher"] or "",
                                         r["d"] or 0, r["lr"] or 0, r["solver"]))[:MAX_RECOVERY_ROWS]:
        p = aimdb.params_dict(r["params"])
        extra = ", ".join(f"{k}={p[k]}" for k in ("index", "outputs", "ode_init", "precision", "init_scale",
                                                   "tau_end") if k in p)
        rows.append([esc(r["decomposition"]), esc(r["activation"]), esc(r["teacher"]), num(r["d"]),
                     num(r["lr"]), esc(r["solver"]), r["seeds"], r["recovered"], r.get("anti_recovered", 0),
                     num(r["frac_diverged"], ".2f"),
                     f"{num(r['n_wr_median'])} [{num(r['n_wr_q1'])}, {num(r['n_wr_q3'])}]",
                     f"{num(r['tau_wr_median'])} [{num(r['tau_wr_q1'])}, {num(r['tau_wr_q3'])}]",
                     num(r["n_wr_per_d2lnd"]), esc(extra)])
    note = (f"<p class='note'>Showing {MAX_RECOVERY_ROWS} of {len(recs)} rows.</p>"
            if len(recs) > MAX_RECOVERY_ROWS else "")
    return ("<p class='note'>Per point (the parameters without the seed) and solver. Weak recovery: "
            "m ≥ θ for an activation whose sign counts, |m| ≥ θ for an even one; anti-aligned: m reached "
            "−θ and never +θ. Quartiles over the recovered seeds.</p>"
            + table(["decomposition", "σ", "teacher", "d", "η", "solver", "seeds", "recovered", "anti-aligned",
                     "diverged", "n_wr median [q1, q3]", "τ_wr median [q1, q3]", "n_wr/(d² ln d)", "other settings"],
                    rows, left=(0, 1, 2, 5, 13)) + note)


def section_figures(cons, results, tmp):
    import figures
    import scaling
    parts, notes = [], []
    for path, con in cons:
        made = []
        sub = os.path.join(tmp, f"db{len(parts)}")
        os.makedirs(sub, exist_ok=True)
        for f in (figures.fig_curves, figures.fig_orders, figures.fig_nwr):
            f(con, sub, False, made, notes)
        for m in made:
            parts.append(img(m, f"{os.path.basename(path)}: {os.path.basename(m)[:-4]}"))
    sub = os.path.join(tmp, "scaling")
    os.makedirs(sub, exist_ok=True)
    for m in scaling.plot(results, sub):
        parts.append(img(m, "n_wr/(d² ln d) and τ_wr against d, per setting and series (scaling.py)"))
    if notes:
        parts.append("<p class='note'>Not drawn: " + "; ".join(esc(n) for n in notes) + "</p>")
    return "\n".join(parts) or "<p>The data supports no figure.</p>"


def section_laws(results):
    import scaling
    rows = []
    for key, solver, label, by_d, fit, why in results:
        p = aimdb.params_dict(key)
        setting = f"{p.get('decomposition')}, {p.get('activation')}, {p.get('teacher')}"
        ds = ", ".join(str(d) for d in sorted(by_d))
        if fit is None:
            rows.append([esc(setting), esc(solver), esc(label), esc(ds), "–", "–", "–", esc(why)])
            continue
        dr = fit["drift"]
        ab = (f"a = {scaling.fmt_ci(fit['a'], fit['a_ci'])}, b = {scaling.fmt_ci(fit['b'], fit['b_ci'])}"
              if fit["a"] is not None else
              f"not identifiable ({fit['n_d']} values of d over a factor {max(fit['ds']) / min(fit['ds']):.3g})")
        rows.append([esc(setting), esc(solver), esc(label), esc(", ".join(str(d) for d in fit["ds"])),
                     esc(scaling.fmt_ci(fit["c"], fit["c_ci"])),
                     esc(f"q = {scaling.fmt_ci(dr['q'], dr['q_ci'])}, p = {scaling.fmt_ci(dr['p'], dr['p_ci'])}"),
                     esc(ab), esc(scaling.q_meaning(label))])
    if not rows:
        return "<p>No setting has finished runs at two or more values of d: no law to fit.</p>"
    return ("<p class='note'>Weighted fits over d with 95 % bootstrap intervals over seeds (scaling.py); "
            "a value of d enters when at least 3/4 of its seeds recovered.</p>"
            + table(["setting", "solver", "series", "d fitted", "n_wr = A d^c: c", "τ_wr = p + q ln d",
                     "n_wr = A d^a (ln d)^b", "reading q"], rows, left=(0, 1, 2, 3, 5, 6, 7)))


def section_disagreement(recs):
    by_point = {}
    for r in recs:
        by_point.setdefault(r["point"], {})[r["solver"]] = r
    rows, compared = [], 0
    for point, sol in sorted(by_point.items()):
        s = sol.get("sgd")
        ref = sol.get("ode") or sol.get("flow")
        if not s or not ref:
            continue
        compared += 1
        rname = "ODE" if "ode" in sol else "flow"
        fs, fr = s["recovered"] / s["seeds"], ref["recovered"] / ref["seeds"]
        why = None
        if abs(fs - fr) >= 0.5:
            why = f"whether: SGD {s['recovered']}/{s['seeds']} recovered, {rname} {ref['recovered']}/{ref['seeds']}"
        elif abs(s["frac_diverged"] - ref["frac_diverged"]) >= 0.5:
            why = f"divergence: SGD {s['frac_diverged']:.2f}, {rname} {ref['frac_diverged']:.2f}"
        elif s["tau_wr_median"] and ref["tau_wr_median"] and \
                max(s["tau_wr_median"] / ref["tau_wr_median"], ref["tau_wr_median"] / s["tau_wr_median"]) > DISAGREE_RATIO:
            why = f"when: median τ_wr SGD {s['tau_wr_median']:.3g}, {rname} {ref['tau_wr_median']:.3g}"
        if why:
            rows.append([esc(s["decomposition"]), esc(s["activation"]), esc(s["teacher"]), num(s["d"]),
                         num(s["lr"]), esc(why)])
    if not compared:
        return "<p>No point has both SGD and the ODE or the flow: nothing to compare.</p>"
    head = (f"<p>{compared} points have SGD beside the ODE (or the flow where there is no ODE); "
            f"they disagree at {len(rows)}.</p>")
    return head + (table(["decomposition", "σ", "teacher", "d", "η", "disagreement"], rows, left=(0, 1, 2, 5))
                   if rows else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", nargs="+")
    ap.add_argument("--out", required=True, help="directory for index.html")
    ap.add_argument("--boot", type=int, default=500, help="bootstrap resamples of the fits [500]")
    a = ap.parse_args()
    cons = [(p, aimdb.open_or_exit(p)) for p in a.db]
    aimdb.require("numpy", "python3-numpy")
    aimdb.require("matplotlib", "python3-matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import scaling
    recs, _k, _s = scaling.load(a.db)
    os.makedirs(a.out, exist_ok=True)
    results = scaling.analyse(recs, a.boot, 1)
    with tempfile.TemporaryDirectory() as tmp:
        figs = section_figures(cons, results, tmp)
    title = "aimsweep study: " + ", ".join(os.path.basename(p) for p in a.db)
    sections = [("status", "Status", section_status(cons)),
                ("provenance", "Provenance", section_provenance(cons)),
                ("recovery", "Weak recovery", section_recovery(recs)),
                ("figures", "Figures", figs),
                ("laws", "Fitted laws", section_laws(results)),
                ("disagreement", "Where SGD and the ODE disagree", section_disagreement(recs))]
    buf = io.StringIO()
    buf.write(f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
              f"<style>{STYLE}</style></head><body>\n<h1>{esc(title)}</h1>\n")
    buf.write("<p class='note'>Made by analysis/report.py from the database alone; the model and every "
              "column are explained in docs/model.md.</p>\n<nav>" +
              " · ".join(f"<a href='#{sid}'>{esc(name)}</a>" for sid, name, _ in sections) + "</nav>\n")
    for sid, name, body in sections:
        buf.write(f"<section id='{sid}'><h2>{esc(name)}</h2>\n{body}\n</section>\n")
    buf.write("</body></html>\n")
    path = os.path.join(a.out, "index.html")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
    print("wrote " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
