#!/usr/bin/python3
"""The options of the seed's application ideas measured against their baselines over seeds:
init_trace (direct), init orthogonal (tied), lr_schedule two_phase (untied).

Runs the sweeps of analysis/options/*.yaml into analysis/data/options/*.db (`aimsweep run`
resumes: only what is missing runs), then prints the tables of analysis/options.md.

    /usr/bin/python3 analysis/options.py            # run what is missing (nice, 3 MPI ranks), print
    /usr/bin/python3 analysis/options.py --no-run   # print from the databases as they are

Statistics, per condition, over the seeds (the same seeds, hence the same initial draws and the
same SGD sample stream, in every condition, so comparisons are paired):
  - median samples to weak recovery (+inf for a run that never recovered by tau_end), with the
    distribution-free order-statistic interval of the median (as `aimsweep recommend`; its
    coverage is printed: 8 seeds give the range of the runs, coverage 0.992);
  - the paired ratio n_wr(option)/n_wr(baseline) seed by seed: its median, with a percentile
    bootstrap interval (95 %, 4000 resamples of the seeds);
  - recovered/total, and the median of the loss at tau_end.
"""
import math
import os
import random
import re
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEPS = os.path.join(ROOT, "analysis", "options")
DATA = os.path.join(ROOT, "analysis", "data", "options")
AIMSWEEP = os.path.join(ROOT, "build", "aimsweep")
NAMES = ["trace", "trace_ode", "orth", "orth_goe", "twophase", "twophase_const", "twophase_mean",
         "twophase_mean100"]
INF = float("inf")
LEVEL = 0.95


def run_all():
    os.makedirs(DATA, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for n in NAMES:
        cmd = ["nice", "mpirun", "-n", "3", "--oversubscribe", AIMSWEEP, "run",
               os.path.join(SWEEPS, n + ".yaml"), "--db", os.path.join(DATA, n + ".db"), "--quiet"]
        subprocess.run(cmd, check=True, env=env)


def binom_cdf(n, j):
    return sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n


def median_interval(xs):
    """Median, and the order-statistic interval [X_(l), X_(n+1-l)] with its coverage."""
    a = sorted(xs)
    n = len(a)
    if n == 0:
        return None, None, None, None
    med = (a[(n + 1) // 2 - 1] + a[n // 2]) / 2
    l = 1
    while l < n and binom_cdf(n, l) <= (1 - LEVEL) / 2:
        l += 1
    if binom_cdf(n, 0) > (1 - LEVEL) / 2:
        l = 1
    return med, a[l - 1], a[n - l], 1 - 2 * binom_cdf(n, l - 1)


def median(xs):
    a = sorted(xs)
    n = len(a)
    return (a[(n + 1) // 2 - 1] + a[n // 2]) / 2 if n else None


def boot_median_ratio(pairs, reps=4000, seed=1):
    """Median of the per-seed ratios and a 95 % percentile bootstrap interval."""
    rs = [a / b if b < INF else (INF if a == INF else 0.0) for a, b in pairs]
    rng = random.Random(seed)
    meds = sorted(median([rng.choice(rs) for _ in rs]) for _ in range(reps))
    return median(rs), meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def fmt(x, digits=3):
    if x is None:
        return "-"
    if x == INF:
        return "inf"
    if x == 0 or (1e-3 <= abs(x) < 1e6):
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:.0f}"
    return f"{x:.{digits}g}"


def load(name, solver, cols):
    """Rows (cols..., seed, samples_wr or inf, tau_wr or inf, final_loss, status) of one solver."""
    db = sqlite3.connect(f"file:{os.path.join(DATA, name + '.db')}?mode=ro", uri=True)
    q = (f"SELECT {', '.join('t.' + c for c in cols)}, t.seed, s.samples_wr, s.tau_wr, s.final_loss, s.status "
         "FROM tasks t JOIN summary s USING (task_id) WHERE s.solver = ? AND s.status IN ('done', 'diverged')")
    rows = db.execute(q, (solver,)).fetchall()
    db.close()
    out = []
    for r in rows:
        k = len(cols)
        out.append(r[:k] + (r[k], INF if r[k + 1] is None else r[k + 1], INF if r[k + 2] is None else r[k + 2],
                            r[k + 3], r[k + 4]))
    return out


def group(rows, ncols):
    g = {}
    for r in rows:
        g.setdefault(r[:ncols], {})[r[ncols]] = r[ncols + 1:]
    return g


def table(title, header, lines):
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for l in lines:
        print("| " + " | ".join(l) + " |")


def compare(name, solver, cols, base_of, label, extra=None):
    """One row per condition: median n_wr with interval, tau_wr median, recovered, final loss, and
    the paired ratio to its baseline (base_of maps a condition key to its baseline key)."""
    g = group(load(name, solver, cols), len(cols))
    lines = []
    for key in sorted(g, key=lambda k: tuple((0, x, "") if isinstance(x, (int, float)) else (1, 0, x) for x in k)):
        runs = g[key]
        n = [v[0] for v in runs.values()]
        med, lo, hi, lev = median_interval(n)
        tau = median([v[1] for v in runs.values()])
        rec = sum(x < INF for x in n)
        loss = median([v[2] for v in runs.values() if v[2] is not None and v[3] == "done"])
        div = sum(v[3] == "diverged" for v in runs.values())
        base = base_of(key)
        ratio = "-"
        if base is not None and base != key and base in g:
            seeds = sorted(set(runs) & set(g[base]))
            r, rlo, rhi = boot_median_ratio([(runs[s][0], g[base][s][0]) for s in seeds])
            ratio = f"{fmt(r)} [{fmt(rlo)}, {fmt(rhi)}]"
        lratio = "-"
        if base is not None and base != key and base in g:
            pairs = [(runs[s][2], g[base][s][2]) for s in seeds
                     if runs[s][3] == "done" and g[base][s][3] == "done" and g[base][s][2]]
            if pairs:
                r, rlo, rhi = boot_median_ratio(pairs)
                lratio = f"{fmt(r)} [{fmt(rlo)}, {fmt(rhi)}]"
        line = [label(key), f"{rec}/{len(n)}" + (f" ({div} div.)" if div else ""), fmt(med),
                f"[{fmt(lo)}, {fmt(hi)}] ({lev:.3f})", fmt(tau), ratio, fmt(loss), lratio]
        if extra:
            line += extra(key, runs)
        lines.append(line)
    return lines


HEAD = ["condition", "recovered", "median n_wr", "interval (coverage)", "median tau_wr",
        "paired n_wr ratio to baseline [95 % bootstrap]", "median final loss", "paired final-loss ratio"]


def short(x):
    """A parameter as text, its long decimals cut: two_phase(0.14999999999999999,10) -> two_phase(0.15,10)."""
    return re.sub(r"\d+\.\d{6,}", lambda m: f"{float(m.group()):g}", str(x))


def fit_ln_d(reps=4000, seed=2):
    """tau_wr = a + b ln d across d for each trace (trace_ode), least squares on the per-d medians,
    b with a bootstrap over the seeds at each d."""
    g = group(load("trace_ode", "ode", ["init_trace", "d"]), 2)
    rng = random.Random(seed)
    print("\nescape time against ln d (median tau_wr = a + b ln d over d = 50..800, ode):")
    for t in sorted({k[0] for k in g}):
        ds = sorted(k[1] for k in g if k[0] == t)
        taus = {d: [v[1] for v in g[(t, d)].values()] for d in ds}

        def slope(sample):
            x = [math.log(d) for d in ds]
            y = [median(sample[d]) for d in ds]
            mx, my = sum(x) / len(x), sum(y) / len(y)
            return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)

        b = slope(taus)
        boots = sorted(slope({d: [rng.choice(taus[d]) for _ in taus[d]] for d in ds}) for _ in range(reps))
        print(f"  init_trace {t:g}: b = {b:.3f} [{boots[int(0.025 * reps)]:.3f}, {boots[int(0.975 * reps) - 1]:.3f}]"
              f" per unit ln d; medians {', '.join(f'{median(taus[d]):.3g}' for d in ds)}")


def omega11_at_0(name, cols):
    db = sqlite3.connect(f"file:{os.path.join(DATA, name + '.db')}?mode=ro", uri=True)
    q = (f"SELECT {', '.join('t.' + c for c in cols)}, avg(r.omega11), "
         "sqrt(max(0, avg(r.omega11 * r.omega11) - avg(r.omega11) * avg(r.omega11)) / (count(*) - 1)), avg(r.trace), "
         "avg(r.omega12) "
         "FROM tasks t JOIN trajectory r USING (task_id) WHERE r.solver = 'sgd' AND r.k = 0 "
         f"GROUP BY {', '.join('t.' + c for c in cols)}")
    out = {row[:len(cols)]: row[len(cols):] for row in db.execute(q)}
    db.close()
    return out


def main():
    if "--no-run" not in sys.argv:
        run_all()

    # init_trace
    cols = ["teacher", "d", "init_trace"]
    o0 = omega11_at_0("trace", cols)
    for solver in ["sgd", "ode"]:
        lines = compare("trace", solver, cols, lambda k: (k[0], k[1], 0.0),
                        lambda k: f"{k[0]}, d = {k[1]}, t = {k[2]:g}",
                        extra=lambda k, runs: [f"{o0[k][2]:.4f}", f"{o0[k][3]:.4f}"])
        table(f"init_trace, direct h2, lr 0.05 ({solver})", HEAD + ["mean t1(0)", "mean Omega12(0)"], lines)
    lines = compare("trace_ode", "ode", ["d", "init_trace"], lambda k: (k[0], 0.0),
                    lambda k: f"d = {k[0]}, t = {k[1]:g}")
    table("init_trace across d, direct h2, wishart(0.5) (ode)", HEAD, lines)
    fit_ln_d()

    # orthogonal
    cols = ["teacher", "width", "init"]
    om = omega11_at_0("orth", cols)
    for solver in ["sgd", "flow"]:
        lines = compare("orth", solver, cols, lambda k: (k[0], k[1], "gaussian"),
                        lambda k: f"{k[0]}, width {k[1]:g}, {k[2]}",
                        extra=lambda k, runs: [f"{om[k][0]:.4f} ± {om[k][1]:.4f}", f"{om[k][2]:.4f}"])
        table(f"init orthogonal against gaussian, tied h2, d = 100, lr 0.05 ({solver})",
              HEAD + ["mean Omega11(0) ± se", "mean t1(0)"], lines)

    cols = ["width", "init"]
    om = omega11_at_0("orth_goe", cols)
    lines = compare("orth_goe", "sgd", cols, lambda k: (k[0], "gaussian"), lambda k: f"goe, width {k[0]:g}, {k[1]}",
                    extra=lambda k, runs: [f"{om[k][0]:.4f} ± {om[k][1]:.4f}", f"{om[k][2]:.4f}"])
    table("init orthogonal against gaussian, goe teacher, 16 seeds, tau_end 1.5 (sgd)",
          HEAD + ["mean Omega11(0) ± se", "mean t1(0)"], lines)

    # two_phase
    cols = ["activation", "lr_schedule"]
    lines = compare("twophase", "sgd", cols, lambda k: (k[0], "constant"), lambda k: f"{k[0]}, {short(k[1])}")
    table("lr_schedule two_phase against constant, untied, centred, wishart(0.5), d = 100, lr 0.05 (sgd)",
          HEAD, lines)
    lines = compare("twophase_const", "sgd", ["activation", "lr"], lambda k: None,
                    lambda k: f"{k[0]}, constant lr {k[1]:g}")
    table("the large rates held constant (same setting; no baseline column)", HEAD, lines)
    cols = ["lr", "lr_schedule"]
    lines = compare("twophase_mean", "sgd", cols, lambda k: (0.005, "constant"),
                    lambda k: f"lr {k[0]:g}, {short(k[1])}")
    table("lr_schedule two_phase where the mean matters: untied h2, uncentred, outputs all, goe_mean(1), d = 50 "
          "(sgd; baseline constant lr 0.005)", HEAD, lines)
    lines = compare("twophase_mean100", "sgd", cols, lambda k: (0.005, "constant"),
                    lambda k: f"lr {k[0]:g}, {short(k[1])}")
    table("the same at d = 100", HEAD, lines)


if __name__ == "__main__":
    main()
