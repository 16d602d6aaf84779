import sqlite3, time, os, sys
path = sys.argv[1]
def evict():
    fd = os.open(path, os.O_RDONLY); os.fsync(fd) if False else None
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
for what in ("quick_check(10)", "quick_check(10)", "integrity_check(10)"):
    for cold in (1, 0):
        if cold: evict()
        c = sqlite3.connect(path)
        t = time.perf_counter(); r = c.execute("PRAGMA " + what).fetchall(); dt = time.perf_counter() - t
        c.close()
        print(f"{what} {'cold' if cold else 'warm'}: {dt:.2f} s -> {r[0][0]}")
t = time.perf_counter(); c = sqlite3.connect(path); n = c.execute("SELECT count(*) FROM trajectory").fetchone(); print("count(*) warm", time.perf_counter() - t, n)
