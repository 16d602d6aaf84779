#!/usr/bin/python3
# The cost of a passive WAL checkpoint against that of a commit (docs/operations.md):
# usage: bench/ckpt_cost.py RESULTS.db   (works on a copy, cc.db, in the current directory)
import sqlite3, time, shutil, sys, statistics
# after k commits of one stored result each (the rows of one task copied under a new task id),
# synchronous=FULL as a run
src = sys.argv[1]
shutil.copy(src, "cc.db")
con = sqlite3.connect("cc.db", isolation_level=None)
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA synchronous=FULL")
con.execute("PRAGMA wal_autocheckpoint=0")
tid = con.execute("SELECT task_id FROM summary LIMIT 1").fetchone()[0]
cols = [r[1] for r in con.execute("PRAGMA table_info(trajectory)")]
scols = [r[1] for r in con.execute("PRAGMA table_info(summary)")]
n = 0
def commit_one():
    global n
    n += 1
    new = "x%015d" % n
    con.execute("BEGIN IMMEDIATE")
    con.execute(f"INSERT INTO trajectory SELECT ?, {','.join(cols[1:])} FROM trajectory WHERE task_id = ?", (new, tid))
    con.execute(f"INSERT INTO summary SELECT ?, {','.join(scols[1:])} FROM summary WHERE task_id = ?", (new, tid))
    con.execute("COMMIT")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
for k in (1, 30, 64, 256):
    ts, tc = [], []
    for rep in range(5):
        t0 = time.perf_counter()
        for i in range(k): commit_one()
        t1 = time.perf_counter()
        con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        t2 = time.perf_counter()
        ts.append((t1 - t0) / k); tc.append(t2 - t1)
    print(f"k={k:4d} commits: one commit {statistics.median(ts)*1e3:.2f} ms, checkpoint {statistics.median(tc)*1e3:.2f} ms "
          f"= {statistics.median(tc)/statistics.median(ts):.2f} commits")
