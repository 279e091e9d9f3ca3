"""hetlaunch run, each worker's lines whole and begun with its rank, with a real torchrun:
    rank_lines_test.py HETLAUNCH --torchrun TORCHRUN [--only CASE,...]

torchrun starts its workers with `python -u`, where print writes a line and its newline in two
writes: the lines of one node's workers glue together ("line 0 5line 1 7\\n\\n"). Under run, every
line a worker writes reaches the node's output whole, as "[NODE HOST] [rank R] LINE", stdout to
stdout and stderr to stderr: also a progress bar's line of carriage returns, ten lines of 60 kB
each (15 times what a pipe keeps whole in one write: the node's writers share a lock; run shows a
line of over 64 KiB in pieces), and a last line with no newline. The worker keeps its exit status, the node script removes the file it
wrote, and no process outlives the job. --no-rank-prefix leaves the lines as torchrun passes them.
Run on Debian's torch 1.13 (which signals a worker alone) and, in the trixie chroot, on 2.6 (which
signals its whole process group, as 2.14 does)."""
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
import processes  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite  # noqa: E402

MARKER_NAME = "HETLAUNCH_RANK_LINES_TEST"
LINES = 2000
HOSTS = "a:2,b:3"  # ranks 0-1 on node 0 ('a'), 2-4 on node 1 ('b')
NODE_OF = {0: (0, "a"), 1: (0, "a"), 2: (1, "b"), 3: (1, "b"), 4: (1, "b")}

CHATTY = """import os, sys
r = os.environ["RANK"]
for i in range(%d):
    print("line", r, i, "x" * (i %% 37))
    if i %% 400 == 0:
        print("err", r, i, file=sys.stderr)
for j in range(10):
    sys.stdout.write("long-" + r + "-" + str(j) + "-")
    sys.stdout.write("y" * 60000 + "\\n")
sys.stdout.write("progress " + r + " 50%%\\r")
sys.stdout.write("progress " + r + " 100%%\\n")
sys.stdout.write("last-" + r)
""" % LINES

# Rank 3 fails once every rank has said it is ready (each leaves a file in the nodes' TMPDIR after
# its line): a fixed second after its own line was too short for a rank starting on a loaded
# machine, whose line then never came.
FAILING = """import os, pathlib, sys, time
r = os.environ["RANK"]
print("ready", r)
said = pathlib.Path(os.environ["TMPDIR"])
(said / ("ready-" + r)).touch()
if r == "3":
    deadline = time.monotonic() + 120
    while len(list(said.glob("ready-*"))) < %d and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)
    sys.exit(7)
time.sleep(600)
""" % len(NODE_OF)

WORKER_LINE = re.compile(r"\[(\d) ([ab])\] (?:\[default\d\]:)?\[rank (\d)\] (.*)")


class job:
    def __init__(self, binary, torchrun, work, marker):
        self.binary, self.torchrun, self.work, self.marker = binary, torchrun, work, marker
        self.tmp = work / "tmp"  # the nodes' TMPDIR: the node script's file must be gone from it
        self.tmp.mkdir()

    def run(self, script, *extra, module=False):
        path = self.work / script[0]
        path.write_text(script[1])
        target = ["-m", path.stem] if module else [str(path)]
        argv = [self.binary, "run", "--local", "--hosts", HOSTS, "--master-port", processes.free_port(),
                "--kill-after", "3", *torchrun_flags.torchrun(self.torchrun), "--env", "GLOO_SOCKET_IFNAME=lo",
                "--env", f"TMPDIR={self.tmp}", "--env", "PYTHONPATH=" + os.pathsep.join([str(self.work), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]).rstrip(os.pathsep),
                "--env", f"{MARKER_NAME}={self.marker.value}", *extra, *target]
        r = subprocess.run(argv, capture_output=True, timeout=300, cwd=self.work,
                           env={**os.environ, MARKER_NAME: self.marker.value})
        left = [f"left in the nodes' TMPDIR: {p.name}" for p in self.tmp.glob("hetlaunch-*")]
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"), left


def worker_lines(text, problems):
    """(rank, line) of each worker line of `text`, problems for a worker line on the wrong node."""
    out = []
    for line in text.split("\n"):
        m = WORKER_LINE.fullmatch(line)
        if not m:
            continue
        node, host, rank = int(m.group(1)), m.group(2), int(m.group(3))
        if NODE_OF.get(rank) != (node, host):
            problems.append(f"rank {rank}'s line on node {node} ({host}): {line[:120]!r}")
        out.append((rank, m.group(4)))
    return out


def whole_lines(runner, module=False):
    problems = []
    code, out, err, left = runner.run(("chatty.py", CHATTY), module=module)
    if code != 0:
        return [f"run exited {code}:\n{err[-3000:]}"]
    got = worker_lines(out, problems)
    for line in out.split("\n")[:-1]:
        if not WORKER_LINE.fullmatch(line):
            problems.append(f"a stdout line that is not a worker's whole line: {line[:160]!r}")
    for rank in range(5):
        mine = [text for r, text in got if r == rank]
        numbered = [text for text in mine if text.startswith("line ")]
        want = [f"line {rank} {i} " + "x" * (i % 37) for i in range(LINES)]
        if numbered != want:
            wrong = next((f"{a!r} where {b!r}" for a, b in zip(numbered, want) if a != b), f"{len(numbered)} lines")
            problems.append(f"rank {rank}'s numbered lines are not whole and in order: {wrong}")
        rest = [text for text in mine if not text.startswith("line ")]
        if rest[:10] != [f"long-{rank}-{j}-" + "y" * 60000 for j in range(10)]:
            problems.append(f"rank {rank}'s 60 kB lines: {[t[:40] for t in rest[:10]]}")
        if rest[10:] != [f"progress {rank} 50%\rprogress {rank} 100%", f"last-{rank}"]:
            problems.append(f"rank {rank}'s progress and last lines: {[t[:60] for t in rest[10:]]}")
    errors = worker_lines(err, problems)
    for rank in range(5):
        if [text for r, text in errors if r == rank] != [f"err {rank} {i}" for i in range(0, LINES, 400)]:
            problems.append(f"rank {rank}'s stderr lines: {[t for r, t in errors if r == rank][:8]}")
    return problems + left


def by_module(runner):
    return whole_lines(runner, module=True)


def failure(runner):
    """A worker exits 7 while the others wait: run reports the worker's status as torchrun gives
    it, and the others and every line writer are gone with the job. (Workers that ignore SIGTERM,
    each with its writer, are stopped over real sshd in tests/multihost/ssh_test.py.)"""
    code, out, err, left = runner.run(("failing.py", FAILING))
    problems = [] if code == 1 else [f"run exited {code}, expected torchrun's 1:\n{err[-2000:]}"]
    if "a worker failed (exit code 7)" not in err:
        problems.append(f"no 'a worker failed (exit code 7)' in:\n{err[-2000:]}")
    ready = sorted(r for r, text in worker_lines(out, problems) if text == f"ready {r}")
    if ready != [0, 1, 2, 3, 4]:
        problems.append(f"ready lines from ranks {ready}")
    return problems + left


def not_asked(runner):
    """--no-rank-prefix: the lines as torchrun passes them, and no file on the node."""
    code, out, err, left = runner.run(("chatty.py", CHATTY), "--no-rank-prefix")
    problems = [] if code == 0 else [f"run exited {code}:\n{err[-2000:]}"]
    if "[rank " in out:
        problems.append("a [rank R] prefix under --no-rank-prefix")
    if not re.search(r"^\[1 b\] (line|progress|long|last)", out, re.M):
        problems.append("no worker line of node 1")
    return problems + left


CASES = {
    "lines": ("5 workers on 2 nodes: every line whole, with its node and rank", whole_lines),
    "module": ("-m MODULE: the same", by_module),
    "failure": ("a worker fails: its status, and nothing left behind", failure),
    "raw": ("--no-rank-prefix: as torchrun passes them", not_asked),
}


def main():
    binary = sys.argv[1]
    torchrun = processes.torchrun_of(sys.argv)
    if not torchrun:
        print("rank_lines_test: torchrun is needed (Debian: python3-torch)")
        return 1
    scratch = processes.scratch(MARKER_NAME, "hetlaunch-rank-lines-")
    # --only lines,failure: the cases a torch of other signal rules must pass (the chroots').
    wanted = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else list(CASES)
    with Suite("rank lines", scratch.teardown, scratch.leftovers) as suite:
        runner = job(binary, torchrun, scratch.work, scratch.marker)
        for name in wanted:
            title, function = CASES[name]
            suite.case(title, function, runner)
    return suite.status


if __name__ == "__main__":
    sys.exit(main())
