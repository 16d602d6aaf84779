"""The Python tests' runner, as tests/check.h is the C tests': check() records a failure and goes
on; done() prints "N passed, N failed" and returns the exit code (1 if any check failed)."""

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)


def done():
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
