"""The suites' runner (harness.py) against what it promises: one line a result, a case that raises
fails alone, and a signal ends the run only after the whole teardown, even a second signal sent
while the teardown runs.

usage: harness_test.py
"""
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

SUPPORT = pathlib.Path(__file__).resolve().parent

# A suite of three cases whose teardown takes a second and writes a file when it is done.
SUITE = textwrap.dedent("""
    import pathlib, sys, time
    sys.path.insert(0, {support!r})
    from harness import Skipped, Suite, pick

    done = pathlib.Path({done!r})
    ready = pathlib.Path({ready!r})

    def passes():
        return []

    def fails():
        return ["the first problem", "the second\\nover two lines"]

    def raises():
        raise ValueError("broken case")

    def skips():
        raise Skipped("needs a program this machine lacks")

    def waits():
        ready.write_text("waiting")
        time.sleep(60)
        return []

    def teardown():
        ready.write_text("tearing down")
        time.sleep(1.5)
        done.write_text("removed")

    def leftovers():
        return [] if done.exists() else ["the teardown did not finish"]

    CASES = {{"passes": passes, "fails": fails, "raises": raises, "waits": waits, "skips": skips}}
    with Suite("demo", teardown, leftovers) as run:
        for name in pick(CASES, sys.argv[1:]):
            run.case(name, CASES[name])
    sys.exit(run.status)
""")


def start(work, *cases):
    script = work / "suite.py"
    script.write_text(SUITE.format(support=str(SUPPORT), done=str(work / "done"), ready=str(work / "ready")))
    return subprocess.Popen([sys.executable, str(script), *cases], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_for(path, text, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text() == text:
            return True
        time.sleep(0.02)
    return False


def results(work):
    """Failures and broken cases are reported, the others still run, and the status is 1."""
    p = start(work, "passes", "fails", "raises")
    out, err = p.communicate(timeout=60)
    problems = [] if p.returncode == 1 else [f"exit status {p.returncode}, expected 1"]
    lines = out.splitlines()
    for expected in ["ok   passes (", "FAIL fails (", "     the first problem", "     the second", "     over two lines",
                     "FAIL raises (", "     ValueError: broken case", "demo: 1 passed, 2 failed"]:
        if not any(line.startswith(expected) for line in lines):
            problems.append(f"no line starting {expected!r} in:\n{out}{err}")
    if not (work / "done").exists():
        problems.append("the teardown did not run")
    return problems


def skipped_case(work):
    """A case that cannot run here is a skip, with its reason, never a pass: the closing line
    counts it apart, and the status stays that of the cases that ran."""
    p = start(work, "passes", "skips")
    out, err = p.communicate(timeout=60)
    problems = [] if p.returncode == 0 else [f"exit status {p.returncode}, expected 0"]
    lines = out.splitlines()
    for expected in ["ok   passes (", "skip skips (needs a program this machine lacks)",
                     "demo: 1 passed, 0 failed, 1 skipped"]:
        if not any(line.startswith(expected) for line in lines):
            problems.append(f"no line starting {expected!r} in:\n{out}{err}")
    if any(line.startswith("ok   skips") for line in lines):
        problems.append("the skipped case was reported as passed")
    return problems


def unknown_case(work):
    p = start(work, "passes", "nonesuch")
    out, err = p.communicate(timeout=60)
    problems = [] if p.returncode == 1 else [f"exit status {p.returncode}, expected 1"]
    if "unknown cases: nonesuch (known: passes fails raises waits skips)" not in err:
        problems.append(f"stderr: {err!r}")
    if "ok   passes" in out:
        problems.append("a case ran although another was unknown")
    return problems


def signal_during_case(work, signum):
    """A signal in a case stops the run: the teardown runs whole, the status is 130."""
    p = start(work, "passes", "waits", "passes")
    if not wait_for(work / "ready", "waiting"):
        p.kill()
        return ["the waiting case never started"]
    p.send_signal(signum)
    out, err = p.communicate(timeout=60)
    problems = [] if p.returncode == 130 else [f"exit status {p.returncode}, expected 130:\n{out}{err}"]
    if not (work / "done").exists():
        problems.append("the teardown did not finish")
    if "demo: interrupted" not in out or "demo: 1 passed, 0 failed" not in out:
        problems.append(f"output:\n{out}")
    return problems


def signal_during_teardown(work):
    """Signals sent while the teardown runs do not cut it short."""
    p = start(work, "waits")
    if not wait_for(work / "ready", "waiting"):
        p.kill()
        return ["the waiting case never started"]
    p.send_signal(signal.SIGTERM)
    if not wait_for(work / "ready", "tearing down"):
        p.kill()
        return ["the teardown never started"]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    problems = [] if p.returncode == 130 else [f"exit status {p.returncode}, expected 130:\n{out}{err}"]
    if not (work / "done").exists():
        problems.append(f"a second signal cut the teardown short:\n{out}{err}")
    if "FAIL nothing left behind" in out:
        problems.append("the leftover check found the teardown unfinished")
    return problems


def main():
    checks = [("results", results), ("a skipped case", skipped_case), ("unknown case", unknown_case),
              ("SIGTERM in a case", lambda w: signal_during_case(w, signal.SIGTERM)),
              ("SIGINT in a case", lambda w: signal_during_case(w, signal.SIGINT)),
              ("signals during the teardown", signal_during_teardown)]
    failed = 0
    for name, check in checks:
        with tempfile.TemporaryDirectory(prefix="hetlaunch-harness-") as tmp:
            problems = check(pathlib.Path(tmp))
        print(f"{'FAIL' if problems else 'ok  '} {name}")
        for p in problems:
            print(f"     {p}")
        failed += 1 if problems else 0
    print(f"harness: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
