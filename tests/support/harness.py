"""The runner the real-component suites share: named cases, one failure convention, and a
teardown that runs once and whole, whatever ends the run.

A case is a function that returns the problems it found, a list of strings (empty or None: it
passed). An exception in a case is a problem too: the case fails with the exception's last lines,
and the next case runs. Every result prints as one line, "ok   NAME (3.2 s)" or
"FAIL NAME (3.2 s)", with each problem on an indented line below it, and the suite ends with
"TITLE: P passed, F failed" and exit status 1 when anything failed.

SIGTERM (ctest's timeout), SIGINT and SIGHUP raise KeyboardInterrupt in the main thread, so the
`with` block unwinds and the teardown runs; while it runs, those signals are ignored, so a second
one cannot cut it short and leave namespaces, daemons or mounts behind. After the teardown the
suite's leftover check runs (no namespace, process or mount may survive), and what it finds
fails the run. An interrupted run exits 130.
"""
import contextlib
import signal
import sys
import time
import traceback

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Skipped(Exception):
    """Raised by a case that cannot run here (a program or a privilege it needs is missing):
    the suite reports it as skipped, with this reason."""


def pick(cases, wanted):
    """The names of `cases` (a dict, in its order) to run: all of them, or those `wanted`, in the
    order given. An unknown name ends the program with a usage message."""
    unknown = [w for w in wanted if w not in cases]
    if unknown:
        sys.exit(f"unknown cases: {' '.join(unknown)} (known: {' '.join(cases)})")
    return list(wanted) or list(cases)


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def signals_held():
    """Ignores the stop signals while the block runs, so a cleanup in a case's `finally` runs
    whole; the suite's own teardown runs this way too."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def format_problem_lines(problems):
    """Each problem's lines, indented under its result line."""
    return [f"     {line}" for p in problems for line in str(p).splitlines() or [""]]


class Suite:
    """with Suite("ssh", teardown=remove_hosts, leftovers=find_leftovers) as run:
           set_up()
           for name in pick(CASES, wanted):
               run.case(name, CASES[name], arguments...)
       return run.status
    """

    def __init__(self, title, teardown=None, leftovers=None):
        self.title = title
        self.teardown = teardown  # undoes whatever the suite set up; must not raise
        self.leftovers = leftovers  # returns the problems of what survived the teardown
        self.passed = 0
        self.failed = 0
        self.skipped = []  # (name, why) of each case that could not run here
        self.interrupted = False
        self._previous = {}

    def report(self, name, problems, seconds=None, details=None):
        """Prints one result and counts it; `details` (text) follows a failure only."""
        problems = [p for p in (problems or []) if p]
        took = "" if seconds is None else f" ({seconds:.1f} s)"
        print(f"{'FAIL' if problems else 'ok  '} {name}{took}")
        for line in format_problem_lines(problems):
            print(line)
        if problems and details:
            print(details)
        if problems:
            self.failed += 1
        else:
            self.passed += 1
        sys.stdout.flush()
        return not problems

    def skip(self, name, why):
        """A case that cannot run here: reported and counted as skipped, never as passed."""
        print(f"skip {name} ({why})", flush=True)
        self.skipped.append((name, why))

    def case(self, name, function, *args, **kwargs):
        """Runs one case and reports it. True when it passed. A case that raises Skipped is
        reported as skipped, with the reason it gives."""
        start = time.monotonic()
        try:
            problems = function(*args, **kwargs)
        except Skipped as e:
            self.skip(name, str(e))
            return True
        except Exception as e:  # a broken case fails alone; a signal (KeyboardInterrupt) is no Exception
            lines = traceback.format_exception(type(e), e, e.__traceback__)
            problems = [f"{type(e).__name__}: {e}", "".join(lines[-3:]).rstrip()]
        return self.report(name, problems, time.monotonic() - start)

    @property
    def status(self):
        """The run's exit status: 130 when interrupted, 1 when anything failed, else 0."""
        return 130 if self.interrupted else 1 if self.failed else 0

    def __enter__(self):
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, _interrupt)
        return self

    def __exit__(self, kind, error, trace):
        with signals_held():
            if self.teardown:
                start = time.monotonic()
                self.teardown()
                print(f"     teardown took {time.monotonic() - start:.1f} s", flush=True)
            if self.leftovers:
                left = self.leftovers()
                if left:
                    self.report("nothing left behind", left)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if kind is KeyboardInterrupt:
            self.interrupted = True
            print(f"{self.title}: interrupted ({error})", flush=True)
        elif kind is not None and kind is not SystemExit:
            self.report("the suite itself", [f"{kind.__name__}: {error}",
                                             "".join(traceback.format_tb(trace)[-2:]).rstrip()])
        elif kind is SystemExit:
            return False
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        print(f"{self.title}: {self.passed} passed, {self.failed} failed{skipped}", flush=True)
        return True
