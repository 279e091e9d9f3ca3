#!/usr/bin/env python3
"""The progress line of long work, as a person at a terminal sees it: `discover` of many hosts
says how many have answered and `run` how many nodes have started, on stderr, redrawn in place
(carriage return, erase line) and cleared before the result and every other line; with stderr
not a terminal (a log, a pipe) not a byte of it. The hosts are stand-ins for ssh that take a
moment to answer; stderr is a real pseudo-terminal (pty).

usage: progress_test.py HETLAUNCH
"""
import os
import pathlib
import pty
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from harness import Suite  # noqa: E402

ERASE = "\r\x1b[K"


def with_tty(argv, env):
    """Runs argv with stderr on a pty and stdout on a pipe; (status, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    out = p.stdout.read()
    p.wait(timeout=10)
    os.close(master)
    return p.returncode, out.decode(), seen.decode(errors="replace")


def main():
    binary = sys.argv[1]
    with Suite("progress") as suite:
        progress_cases(binary, lambda ok, what, detail="": suite.report(what, [] if ok else [f"{detail!r}"[:400]]))
    return suite.status


def progress_cases(binary, check):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        slow = d / "slow-ssh"
        # An ssh stand-in: skips ssh's options up to `--`, waits a moment, then runs the command.
        slow.write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done\nshift 2\nsleep 0.4\nexec sh -c "$*"\n')
        slow.chmod(0o755)
        hosts = d / "hosts"
        hosts.write_text("".join(f"h{i} slots=auto\n" for i in range(6)))
        discover = [binary, "discover", "--hostfile", str(hosts), "--ssh", str(slow), "--fanout", "2",
                    "--gpu-count-command", "echo 2"]
        code, out, tty = with_tty(discover, env)
        check(code == 0 and out == "".join(f"h{i} slots=2\n" for i in range(6)), "discover: the hostfile on stdout", out)
        check("hetlaunch: discover: 0 of 6 hosts answered" in tty and "hetlaunch: discover: 4 of 6 hosts answered" in tty,
              "discover: a terminal sees the count of hosts that answered", tty)
        check(tty.endswith(ERASE) and tty.count(ERASE) >= 3, "discover: redrawn in place, cleared at the end", tty)
        piped = subprocess.run(discover, capture_output=True, text=True, env=env)
        check(piped.returncode == 0 and piped.stderr == "", "discover: nothing on stderr that is not a terminal",
              piped.stderr)

        run = [binary, "run", "--hosts", ",".join(f"h{i}:1" for i in range(5)), "--ssh", str(slow), "--fanout", "2",
               "--program", "sh", "--program", "-c", "--program", 'echo up >&2; exit 0', "--", "t.py"]
        code, out, tty = with_tty(run, env)
        check(code == 0, "run: the job succeeds", tty)
        check("hetlaunch: run: 0 of 5 nodes started" in tty, "run: a terminal sees the count of started nodes", tty)
        # Every node line starts on a fresh line: the progress line was erased just before it.
        lines = [line for line in tty.replace("\r\n", "\n").split("\n") if "] " in line]
        check(all(ERASE not in line.split("] ")[1] for line in lines), "run: no node line mixes with the progress line",
              lines)
        check(tty.rfind("nodes started") < tty.rfind(ERASE), "run: cleared at the end", tty[-200:])
        check(len(lines) == 5, "run: every node's line reached the terminal", lines)
        piped = subprocess.run(run, capture_output=True, text=True, env=env)
        check(piped.returncode == 0 and "nodes started" not in piped.stderr and "\r" not in piped.stderr,
              "run: nothing of it on stderr that is not a terminal", piped.stderr)


if __name__ == "__main__":
    sys.exit(main())
