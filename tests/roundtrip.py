#!/usr/bin/python3
"""Numbers as printed read back to the stored doubles, in their shortest form.

Runs a small sweep with awkward numbers (0.1, 0.3, 1/log(d)), then checks against the
database's own doubles (read with Python's sqlite3): every number of `export --format csv` and
`--format json` of every table, every number of `single --format csv` run on each task's stored
params text, and every number in that text. "Shortest" is Python's repr (also the shortest
round-trip form): a formatter printing 17 digits fails the length check, one printing too few
fails the equality. usage: roundtrip.py WORKDIR  (env AIMSWEEP = the binary)
"""
import csv, io, json, math, os, re, sqlite3, subprocess, sys

A = os.environ["AIMSWEEP"]
W = sys.argv[1]
os.makedirs(W, exist_ok=True)
db = os.path.join(W, "rt.db")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix):
        os.remove(db + suffix)
spec = os.path.join(W, "rt.yaml")
with open(spec, "w") as f:
    f.write("grid:\n  decomposition: [direct, tied]\n  lr: [0.1, \"0.3 / log(d)\"]\n"
            "fixed:\n  d: 14\n  init_scale: 0.3\n  tau_end: 0.3\n  records: 5\n  recovery_threshold: 0.3\n"
            "  teacher: goe_shift(0.1)\n  activation: \"hermite(0.1,1,0.3)\"\nsolvers: [sgd, flow, ode]\n")
subprocess.run([A, "run", spec, "--db", db, "--quiet"], check=True)
fails = 0
checked = 0


def fail(msg):
    global fails
    fails += 1
    if fails < 20:
        print("FAIL", msg)


def same(text, value, where):
    """text (as printed) against the stored value"""
    global checked
    checked += 1
    if value is None:
        if text not in ("", "null", None):
            fail(f"{where}: {text!r} for NULL")
        return
    if isinstance(value, str):
        if text != value:
            fail(f"{where}: {text!r} != {value!r}")
        return
    if float(text) != float(value):
        fail(f"{where}: {text!r} reads {float(text)!r}, stored {value!r}")
    if isinstance(value, float) and len(text) > len(repr(value)):
        fail(f"{where}: {text!r} longer than {repr(value)!r}")


con = sqlite3.connect(db)
tables = [r[0] for r in con.execute(
    "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")]
for t in tables:
    order = "" if t in ("results", "recovery_segments", "sweep_tasks") else " ORDER BY rowid"
    rows = con.execute(f"SELECT * FROM {t}{order}").fetchall()
    out = subprocess.run([A, "export", db, "--table", t], check=True, capture_output=True, text=True).stdout
    body = [l for l in out.splitlines(True) if not l.startswith("#")]
    got = list(csv.reader(io.StringIO("".join(body))))[1:]
    if len(got) != len(rows):
        fail(f"{t}: csv has {len(got)} rows, table {len(rows)}")
    if t not in ("results", "recovery_segments"):  # views: row order not fixed
        for i, (g, r) in enumerate(zip(got, rows)):
            for j, (x, v) in enumerate(zip(g, r)):
                same(x, v, f"csv {t}[{i}][{j}]")
    js = json.loads(subprocess.run([A, "export", db, "--table", t, "--format", "json"], check=True,
                                   capture_output=True, text=True).stdout, parse_float=str, parse_int=str)
    if len(js["rows"]) != len(rows) or any(not c["meaning"] for c in js["columns"]):
        fail(f"{t}: json rows or meanings missing")
    if t not in ("results", "recovery_segments"):
        for i, (g, r) in enumerate(zip(js["rows"], rows)):
            for j, (x, v) in enumerate(zip(g.values(), r)):
                same(x, v, f"json {t}[{i}][{j}]")

# single on each task's stored text prints the stored trajectory, number for number
num = re.compile(r"^-?[0-9.]+(e[-+][0-9]+)?$")
for task_id, params, lr, init_scale in con.execute("SELECT task_id, params, lr, init_scale FROM tasks"):
    flags = []
    for kv in params.split(";"):
        k, v = kv.split("=", 1)
        flags.append(f"--{k}={v}")
        if num.match(v):
            same(v, float(v), f"params {k}")  # shortest for its own double
        if k in ("lr", "init_scale"):
            same(v, lr if k == "lr" else init_scale, f"params {k} against its column")
    out = subprocess.run([A, "single", *flags, "--format", "csv"], check=True, capture_output=True,
                         text=True).stdout.splitlines()[1:]
    rows = con.execute("SELECT solver, tau, samples, omega11, psi11, omega12, trace, overlap, loss FROM trajectory"
                       " WHERE task_id = ? ORDER BY solver = 'ode', solver = 'flow', k", (task_id,)).fetchall()
    if len(out) != len(rows):
        fail(f"single {task_id}: {len(out)} rows, stored {len(rows)}")
    for line, r in zip(out, rows):
        for j, (x, v) in enumerate(zip(line.split(","), r)):
            same(x, v, f"single {task_id} col {j}")
    ints = con.execute("SELECT count(*) FROM trajectory WHERE task_id = ? AND typeof(samples) != 'integer'",
                       (task_id,)).fetchone()[0]
    if ints:
        fail(f"{task_id}: {ints} samples not INTEGER")

# docs/model.md explains every parameter and every column of every table and view
doc = open(os.path.join(os.environ["SRCDIR"], "docs", "model.md")).read()
helptext = subprocess.run([A, "single", "--help"], check=True, capture_output=True, text=True).stdout
keys = [m.group(1).replace("-", "_") for m in re.finditer(r"^  --([a-z-]+) +\[", helptext, re.M)]
if len(keys) < 18:
    fail(f"single --help lists {len(keys)} parameters")
for k in keys:
    if f"| `{k}` |" not in doc:
        fail(f"docs/model.md has no row for the parameter {k}")
for t in tables:
    if f"**{t}**" not in doc:
        fail(f"docs/model.md does not describe {t}")
    for c in [d[0] for d in con.execute(f"SELECT * FROM {t} LIMIT 0").description]:
        if f"`{c}`" not in doc:
            fail(f"docs/model.md does not name the column {t}.{c}")

print(f"roundtrip: {checked} numbers checked, {fails} failed")
sys.exit(1 if fails or checked < 1000 else 0)
