"""sshd_privsep.py against what it promises, with a directory and a users file of its own in a
temporary directory: suites that overlap in every order leave the directory there while one of
them still runs and remove it when the last one leaves; a directory nobody made is never removed;
a killed suite does not keep it forever; suites racing to enter and leave all agree.

usage: sshd_privsep_test.py
"""
import itertools
import pathlib
import subprocess
import sys
import tempfile
import textwrap

SUPPORT = pathlib.Path(__file__).resolve().parent

# One suite: a process that enters, says so, waits for a line on its standard input, and leaves
# (or, told "die", ends without leaving, as a killed suite does).
SUITE = textwrap.dedent("""
    import pathlib, sys
    sys.path.insert(0, {support!r})
    import sshd_privsep
    sshd_privsep.DIRECTORY = pathlib.Path({directory!r})
    sshd_privsep.USERS = pathlib.Path({users!r})
    sshd_privsep.enter()
    print("in", flush=True)
    if sys.stdin.readline().strip() == "die":
        sys.exit(0)
    sshd_privsep.leave()
""")


def suite_program(root):
    """The suite's program, with the directory and the users file of the test's `root`."""
    return SUITE.format(support=str(SUPPORT), directory=str(root / "sshd"), users=str(root / "users"))


class Suite:
    def __init__(self, root):
        self.proc = subprocess.Popen([sys.executable, "-c", suite_program(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline() == "in\n", "the suite did not enter"

    def end(self, how="leave"):
        self.proc.stdin.write(how + "\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0, "the suite failed"


def overlapping_in_every_order():
    """Three suites entered one after another and left in each of the 6 orders: the directory is
    there until the last one leaves, then neither it nor the users file is."""
    problems = []
    for order in itertools.permutations(range(3)):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            suites = [Suite(root) for _ in range(3)]
            for k, i in enumerate(order):
                if not (root / "sshd").is_dir():
                    problems.append(f"order {order}: the directory gone before suite {i} left")
                suites[i].end()
                left = (root / "sshd").exists() or (root / "users").exists()
                if k == 2 and left:
                    problems.append(f"order {order}: the directory or the users file left after the last suite")
    return problems


def nobody_made_it():
    """A directory that was there before any suite (the system's sshd made it) stays."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "sshd").mkdir()
        a = Suite(root)
        b = Suite(root)
        a.end()
        b.end()
        return [] if (root / "sshd").is_dir() and not (root / "users").exists() else \
            ["a directory no suite made was removed, or the users file stayed"]


def killed_suite():
    """A suite that ends without leaving keeps the directory until a later suite leaves."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        Suite(root).end("die")
        problems = [] if (root / "sshd").is_dir() else ["the directory was removed while a suite was listed"]
        Suite(root).end()
        if (root / "sshd").exists() or (root / "users").exists():
            problems.append("a killed suite's directory outlived the next suite")
        return problems


def racing():
    """While one suite runs, twelve more enter and leave at once, as fast as they can: the
    directory stays for the one still running, and goes when it leaves."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        holder = Suite(root)
        churn = [subprocess.Popen([sys.executable, "-c", suite_program(root)], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, text=True) for _ in range(12)]
        for c in churn:
            c.communicate("leave\n", timeout=60)
        problems = [f"{sum(c.returncode != 0 for c in churn)} of the racing suites failed"] \
            if any(c.returncode != 0 for c in churn) else []
        if not (root / "sshd").is_dir():
            problems.append("the directory was removed under the suite still running")
        holder.end()
        if (root / "sshd").exists() or (root / "users").exists():
            problems.append("the directory or the users file left after every suite left")
        return problems


def main():
    failed = 0
    for case in (overlapping_in_every_order, nobody_made_it, killed_suite, racing):
        problems = case()
        print(("ok   " if not problems else "FAIL ") + case.__name__)
        for p in problems:
            print(f"    {p}")
        failed += bool(problems)
    print(f"sshd_privsep: {4 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
