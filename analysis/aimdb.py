"""Reading an aimsweep results database for the analysis scripts (figures, scaling, phase).

Everything here is computed from the tables (tasks, summary, trajectory) in Python, not from
the views recovery and curves, so that a database of any schema version can be read (version 1
has no views), and so that the tests can compare the views against an independent computation.
The conventions are the views' (src/harness/store.c):

- a point is a task without its seed: its canonical text `params` with the `seed=N` entry cut
  out; one row per point and solver;
- a seed counts when its solver finished: summary.status in (done, diverged, ode_diverged);
- n_wr and tau_wr quartiles are over the recovered seeds (samples_wr not NULL), with linear
  interpolation between order statistics (numpy's default);
- spreads over seeds are sample standard deviations (n - 1), None for one seed;
- weak recovery reads the signed overlap m for activations whose sign is identifiable and |m|
  for even ones (docs/model.md §8, schema version 6). A database of an older version stores
  tau_wr and samples_wr on |m| for every activation: runs() recomputes them from the trajectory
  for the activations whose sign counts (what the migration to version 6 does), and counts the
  runs whose m reached -threshold without +threshold as anti-recovered.

The database is opened read-only (it may be written by a run at the same time).
"""
import math
import os
import sqlite3
import sys

FINISHED = ("done", "diverged", "ode_diverged")

# Names of the parameters in the seed's notation, for axis labels.
LABELS = {
    "lr": "learning rate η", "init_scale": "init scale s₀", "width": "width ρ (r = ρd)",
    "d": "dimension d", "tokens": "tokens T", "activation": "activation σ",
    "decomposition": "decomposition", "teacher": "teacher S*", "weight_decay": "weight decay λ",
    "info_exponent": "information exponent k", "order_m": "ODE order M", "closure": "closure",
    "tau": "τ = nη/d²", "abs_m": "|m| (centred overlap)", "m": "m (centred overlap, signed)", "omega12": "Ω₁₂ = Tr(S S*)/d",
    "loss": "population loss Φ", "n_wr": "weak-recovery samples n_wr",
    "tau_wr": "weak-recovery time τ_wr",
}


def require(module, debian_package):
    """Imports a module the analysis needs, or exits (status 1) naming the package that gives it:
    Debian's, for /usr/bin/python3, or pip's, for another Python (a venv)."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        pip = {"matplotlib": "matplotlib", "numpy": "numpy", "pandas": "pandas",
               "scipy": "scipy"}.get(module.split(".")[0], module)
        print(f"error: this needs the Python module '{module}', which {sys.executable} does not have.\n"
              f"  Debian: apt-get install {debian_package}, then run the script with /usr/bin/python3\n"
              f"  another Python (a venv): {sys.executable} -m pip install {pip}", file=sys.stderr)
        sys.exit(1)


class NotAimsweep(Exception):
    """The file is missing, not SQLite, or not an aimsweep results database."""


def usage_error(msg):
    """Bad input: message on stderr, exit status 2 (the project's convention)."""
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def open_or_exit(path):
    """open_db for a script's command line: on NotAimsweep, the message and exit status 2."""
    try:
        return open_db(path)
    except NotAimsweep as e:
        usage_error(str(e))


def open_db(path):
    """Read-only connection with sqlite3.Row rows; raises NotAimsweep with a plain message."""
    if not os.path.isfile(path):
        raise NotAimsweep(f"{path}: no such file (run a sweep first: aimsweep run SWEEP.yaml --db {path})")
    uri = "file:" + path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    try:
        con = sqlite3.connect(uri + "?mode=ro", uri=True)
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_schema")}
    except sqlite3.DatabaseError as e:
        try:  # a WAL database in a read-only directory: read the file alone
            con = sqlite3.connect(uri + "?immutable=1", uri=True)
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_schema")}
        except sqlite3.DatabaseError:
            raise NotAimsweep(f"{path}: not a readable SQLite database ({e})")
    if not {"tasks", "summary", "trajectory"} <= names:
        raise NotAimsweep(f"{path}: an SQLite file, but not an aimsweep results database")
    con.row_factory = sqlite3.Row
    return con


def point_key(params):
    """The canonical text without its seed=N entry (the views' POINT_KEY_SQL)."""
    parts = [p for p in params.split(";") if not p.startswith("seed=")]
    return ";".join(parts)


def params_dict(params):
    out = {}
    for p in params.split(";"):
        k, _, v = p.partition("=")
        out[k] = v
    return out


def without(params, keys):
    """The canonical text without the given keys (and always without the seed)."""
    keys = set(keys) | {"seed"}
    return ";".join(p for p in params.split(";") if p.partition("=")[0] not in keys)


def quantile(values, q):
    """Linear interpolation between order statistics (numpy.percentile's default)."""
    v = sorted(values)
    if not v:
        return None
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def sample_sd(values):
    n = len(values)
    if n < 2:
        return None
    m = sum(values) / n
    return math.sqrt(max(0.0, sum((x - m) ** 2 for x in values) / (n - 1)))


TASK_COLS = ("decomposition", "activation", "info_exponent", "d", "lr", "init_scale", "tokens",
             "teacher", "width", "weight_decay", "order_m", "closure", "tau_end", "records",
             "log_grid", "recovery_threshold", "ode_noise", "solvers")


def sign_symmetric(activation):
    """True when the activation is even, so the loss cannot tell S from -S (docs/model.md §8):
    h2, h4, h6 and Hermite series without odd terms; False for h1, h3, h5, series with an odd
    term, relu, tanh, erf, softmax."""
    a = activation.strip()
    if len(a) == 2 and a[0] == "h" and a[1].isdigit():
        return int(a[1]) % 2 == 0
    if a.startswith("hermite(") and a.endswith(")"):
        c = [float(x) for x in a[len("hermite("):-1].split(",")]
        return all(c[k] == 0 for k in range(1, len(c), 2))
    return False


def crossing(tau, samples, m, th):
    """(tau_wr, samples_wr) of one run's records with the recovery overlap m (signed or |m|):
    linear between the last record below th and the first at or above it; (None, None) when m
    never reaches th (obs.c's obs_recovery)."""
    for k, (t, n, r) in enumerate(zip(tau, samples, m)):
        if r is None or not r >= th:
            continue
        if k == 0 or m[k - 1] is None:
            return t, round(n)
        f = (th - m[k - 1]) / (r - m[k - 1])
        return tau[k - 1] + f * (t - tau[k - 1]), round(samples[k - 1] + f * (n - samples[k - 1]))
    return None, None


def runs(con, where="1"):
    """Finished (task, solver) rows: the task's columns, params, point, and the solver summary
    (tau_wr, samples_wr with the sign where it counts, whatever the file's version), with
    `anti` True for a run whose signed m reached -recovery_threshold and never +threshold."""
    cols = ", ".join("t." + c for c in TASK_COLS)
    sql = (f"SELECT t.task_id, t.params, t.seed, {cols}, s.solver, s.status, s.tau_wr,"
           f" s.samples_wr, s.final_overlap, s.wall_s FROM tasks t JOIN summary s USING (task_id)"
           f" WHERE s.status IN ('done', 'diverged', 'ode_diverged') AND ({where})")
    version = con.execute("PRAGMA user_version").fetchone()[0]
    out = []
    for r in con.execute(sql):
        d = dict(r)
        d["point"] = point_key(d["params"])
        d["anti"] = False
        if not sign_symmetric(d["activation"]):
            recs = con.execute("SELECT tau, samples, overlap FROM trajectory WHERE task_id = ? AND"
                               " solver = ? ORDER BY k", (d["task_id"], d["solver"])).fetchall()
            th = d["recovery_threshold"]
            m = [x[2] for x in recs]
            if version < 6:
                d["tau_wr"], d["samples_wr"] = crossing([x[0] for x in recs], [x[1] for x in recs],
                                                        m, th)
            d["anti"] = d["samples_wr"] is None and any(x is not None and x <= -th for x in m)
        out.append(d)
    return out


def runs_from_csv(path):
    """The rows of a per-seed csv exported from the `results` view (analysis/data/results/
    *-results.csv: one row per task and solver), as runs() gives them: the columns it has, None
    for the TASK_COLS it lacks, a `params` text made of its parameter columns (seed included) and
    the `point` without the seed. Only finished solvers (FINISHED). Raises NotAimsweep."""
    import csv
    if not os.path.isfile(path):
        raise NotAimsweep(f"{path}: no such file")
    with open(path, newline="") as fh:
        rd = csv.DictReader(fh)
        need = {"d", "lr", "seed", "solver", "status", "tau_wr", "samples_wr"}
        if not rd.fieldnames or not need <= set(rd.fieldnames):
            raise NotAimsweep(f"{path}: not a results csv (needs the columns {', '.join(sorted(need))})")
        pcols = [c for c in rd.fieldnames if c in TASK_COLS or c == "seed"]
        out = []
        for row in rd:
            if row["status"] not in FINISHED:
                continue
            r = {c: None for c in TASK_COLS}
            for c, v in row.items():
                r[c] = _number(v)
            r["params"] = ";".join(f"{c}={row[c]}" for c in pcols)
            r["point"] = point_key(r["params"])
            out.append(r)
    return out


def _number(v):
    """A csv field as int, float, None (empty) or the text itself."""
    if v is None or v == "":
        return None
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def recovery(con, where="1"):
    """Per point and solver, as the view `recovery`: a list of dicts."""
    return recovery_of(runs(con, where))


def recovery_of(rows):
    """recovery() of a list of finished runs (from runs() or runs_from_csv())."""
    groups = {}
    for r in rows:
        groups.setdefault((r["point"], r["solver"]), []).append(r)
    out = []
    for (point, solver), rs in sorted(groups.items()):
        first = rs[0]
        row = {"point": point, "solver": solver}
        row.update({c: first[c] for c in TASK_COLS})
        n = [r["samples_wr"] for r in rs if r["samples_wr"] is not None]
        t = [r["tau_wr"] for r in rs if r["tau_wr"] is not None]
        row["seeds"] = len(rs)
        row["recovered"] = len(n)
        for name, vals in (("n_wr", n), ("tau_wr", t)):
            row[name + "_q1"] = quantile(vals, 0.25)
            row[name + "_median"] = quantile(vals, 0.5)
            row[name + "_q3"] = quantile(vals, 0.75)
        d = first["d"]
        row["n_wr_per_d2lnd"] = (row["n_wr_median"] / (d * d * math.log(d))
                                 if row["n_wr_median"] is not None else None)
        row["frac_diverged"] = sum(r["status"] in ("diverged", "ode_diverged") for r in rs) / len(rs)
        row["anti_recovered"] = sum(bool(r.get("anti")) for r in rs)
        row["samples"] = n
        row["taus"] = t
        row["params"] = first["params"]
        out.append(row)
    return out


def trajectories(con, task_ids=None):
    """{(task_id, solver): list of (k, tau, samples, omega11, psi11, omega12, trace, overlap,
    loss)} for finished solvers, optionally only for the given tasks."""
    sql = ("SELECT r.task_id, r.solver, r.k, r.tau, r.samples, r.omega11, r.psi11, r.omega12,"
           " r.trace, r.overlap, r.loss FROM trajectory r JOIN summary s"
           " ON s.task_id = r.task_id AND s.solver = r.solver"
           " WHERE s.status IN ('done', 'diverged', 'ode_diverged')")
    args = ()
    if task_ids is not None:
        ids = list(task_ids)
        if not ids:
            return {}
        sql += " AND r.task_id IN (%s)" % ",".join("?" * len(ids))
        args = ids
    out = {}
    for row in con.execute(sql + " ORDER BY r.task_id, r.solver, r.k", args):
        out.setdefault((row[0], row[1]), []).append(tuple(row[2:]))
    return out


def curves(con, where="1"):
    """Per point, solver and record k, as the view `curves`: {(point, solver): list of dicts
    with k, tau, samples, seeds, abs_m_mean/sd/min/max, m_mean/sd/min/max (the signed m, schema
    version 8), omega12_mean/sd, loss_mean/sd}."""
    rs = runs(con, where)
    by_task = {}
    for r in rs:
        by_task.setdefault(r["task_id"], []).append(r)
    tr = trajectories(con, by_task.keys())
    acc = {}
    for r in rs:
        for row in tr.get((r["task_id"], r["solver"]), []):
            k, tau, samples, _o11, _p11, o12, _t1, m, loss = row
            a = acc.setdefault((r["point"], r["solver"]), {}).setdefault(
                k, {"tau": [], "samples": [], "m": [], "o12": [], "loss": []})
            for key, v in (("tau", tau), ("samples", samples), ("m", m), ("o12", o12), ("loss", loss)):
                if v is not None:
                    a[key].append(v)
    out = {}
    for key, ks in acc.items():
        rows = []
        for k in sorted(ks):
            a = ks[k]
            mean = lambda v: sum(v) / len(v) if v else None
            am = [abs(v) for v in a["m"]]
            rows.append({"k": k, "tau": mean(a["tau"]), "samples": mean(a["samples"]),
                         "seeds": len(a["m"]), "abs_m_mean": mean(am),
                         "abs_m_sd": sample_sd(am), "abs_m_min": min(am) if am else None,
                         "abs_m_max": max(am) if am else None,
                         "m_mean": mean(a["m"]), "m_sd": sample_sd(a["m"]),
                         "m_min": min(a["m"]) if a["m"] else None,
                         "m_max": max(a["m"]) if a["m"] else None,
                         "omega12_mean": mean(a["o12"]), "omega12_sd": sample_sd(a["o12"]),
                         "loss_mean": mean(a["loss"]), "loss_sd": sample_sd(a["loss"])})
        out[key] = rows
    return out


def task_counts(con):
    """{status: count} over all tasks, to say what a database holds."""
    return {r[0]: r[1] for r in con.execute("SELECT status, count(*) FROM tasks GROUP BY status")}


def describe(con):
    c = task_counts(con)
    return ", ".join(f"{v} {k}" for k, v in sorted(c.items())) or "no tasks"


def solver_label(solver, closure=None, order_m=None, decomposition=None, ode_noise=0):
    """SGD, flow, or the ODE with its closure and order (auto spelled out as what it picks)."""
    if solver != "ode":
        return {"sgd": "SGD", "flow": "flow"}.get(solver, solver)
    if decomposition == "direct":
        return "ODE (closed, direct)" + (" +noise" if ode_noise else "")
    cl = closure
    if cl in (None, "auto"):
        cl = "spectral" if decomposition == "tied" and not ode_noise else "flat"
    return f"ODE {cl} M={order_m}" + (" +noise" if ode_noise else "")


def to_dataframe(db, table_or_view="results"):
    """A table or view of the database at path `db` as a pandas DataFrame.

    The file is opened read-only (a run may be writing it at the same time); any table or view
    it holds may be named: sweeps, tasks, sweep_tasks, trajectory, summary, and the views
    results, recovery, recovery_segments, curves. Raises NotAimsweep for a file that is not an
    aimsweep database and ValueError for a name it does not hold.

        import aimdb
        rec = aimdb.to_dataframe("quick.db", "recovery")
    """
    pandas = require("pandas", "python3-pandas")
    con = open_db(db)
    try:
        names = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')"
            " UNION SELECT name FROM sqlite_temp_schema WHERE type IN ('table', 'view')")}
        if table_or_view not in names:
            raise ValueError(f"{db} has no table or view '{table_or_view}' "
                             f"(it has: {', '.join(sorted(n for n in names if not n.startswith('sqlite_')))})")
        quoted = '"' + table_or_view.replace('"', '""') + '"'
        cur = con.execute(f"SELECT * FROM {quoted}")
        cols = [c[0] for c in cur.description]
        return pandas.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)
    finally:
        con.close()
