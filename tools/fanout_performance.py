#!/usr/bin/env python3
"""Measures how fast `hetlaunch run` starts many nodes and how fast it restarts a job; writes
docs/performance.md between its fanout-begin and fanout-end markers.

Start-up: 1,000 stand-in hosts, each a local process in place of ssh (a shell that runs the
remote command here), every node's command ending at once. `hetlaunch run` (its node script
and a stand-in torchrun that exits 0) against the fan-out tools people use for the same job,
in the same run: pdsh -R exec (-f 32, its default) and ClusterShell's clush -R exec (-f 64, its
default) running the same stand-in with `true`, and hetlaunch at both fan-outs. Medians of
several rounds, wall time.

Restart: 10 and 100 stand-in nodes with `--restarts 1`; node 3's stand-in torchrun fails a second
after the first attempt starts while the others wait. The time from its failure (its own time
stamp) to the last node of the second attempt started.

Teardown (--teardown alone writes just its section): 200 stand-in nodes whose workers ignore
SIGTERM, `--kill-after 2`; node 3's worker fails 1 or 2 s after it starts, while the later nodes
still start, or 8 s after, once all are up. The time from its failure (its own time stamp) to
`run`'s exit, every node stopped, how many nodes had started by then, and what was left running,
each round, with stand-in hosts that each have a /proc of their own (a pid namespace: needs root
and util-linux's unshare) and with hosts that share this machine's. Goal: at most 1 s +
kill-after + 3 s. Without --teardown both sections are written.

Needs pdsh and clustershell (Debian: pdsh, clustershell). Everything runs in a temporary
directory that is removed afterwards; the stand-ins carry its name, and whatever of them is
left is killed.
usage: tools/fanout_performance.py HETLAUNCH [--quick] [--teardown]
       (--quick: 100 hosts, 2 rounds, to try it)
"""
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
import performance_doc  # noqa: E402
import processes  # noqa: E402

QUICK = "--quick" in sys.argv
HOSTS = 100 if QUICK else 1000
ROUNDS = 2 if QUICK else 3


def write(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def timed(cmd, env=None):
    start = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=600)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}... exited {r.returncode}: {r.stderr.decode(errors='replace')[-1000:]}")
    return seconds


def start_up(binary, tmp):
    # ssh's place for hetlaunch: skip ssh's options up to `--`, then run the node's command here.
    ssh = write(tmp / "ssh-stand-in", f"#!/bin/sh\n# {tmp}\nwhile [ \"$1\" != \"--\" ]; do shift; done\n"
                                      "shift 2\nexec sh -c \"$1\"\n")
    # pdsh and clush run `stand-in HOST COMMAND...`: the same shell, running the command.
    exec_stand_in = write(tmp / "exec-stand-in", f"#!/bin/sh\n# {tmp}\nshift\nexec sh -c \"$*\"\n")
    hosts = ",".join(f"h{i}:1" for i in range(HOSTS))
    run = [binary, "run", "--hosts", hosts, "--ssh", ssh, "--program", "true", "--quiet-nodes"]
    tools = {
        "hetlaunch run --fanout 32": run + ["--fanout", "32", "--", "t.py"],
        "hetlaunch run --fanout 64": run + ["--fanout", "64", "--", "t.py"],
        "pdsh -R exec -f 32": ["pdsh", "-R", "exec", "-f", "32", "-w", f"h[0-{HOSTS - 1}]", exec_stand_in, "%h", "true"],
        "clush -R exec -f 64": ["clush", "-R", "exec", "-f", "64", "-w", f"h[0-{HOSTS - 1}]", exec_stand_in, "%h",
                                "true"],
    }
    times = {name: [] for name in tools}
    for _ in range(ROUNDS):
        for name, cmd in tools.items():  # interleaved: the machine's noise falls on every tool alike
            times[name].append(timed(cmd))
    return {name: statistics.median(t) for name, t in times.items()}


def restart_time(binary, tmp, nodes):
    ssh = write(tmp / "ssh-stand-in", f"#!/bin/sh\n# {tmp}\nwhile [ \"$1\" != \"--\" ]; do shift; done\n"
                                      "shift 2\nexec sh -c \"$1\"\n")
    stamps = tmp / "stamps"
    stamps.mkdir()
    # torchrun's place: records when it starts; node 3 fails the first attempt after a second,
    # the others wait in it until they are stopped; the second attempt ends at once.
    fake = write(tmp / "torchrun-stand-in", f"""#!/bin/sh
# {tmp}
now() {{ date +%s.%N; }}
now > "{stamps}/start-$HETLAUNCH_RESTART_COUNT-$$"
if [ "$HETLAUNCH_RESTART_COUNT" = 0 ]; then
  case " $* " in *" --node_rank=3 "*) sleep 1; now > "{stamps}/failed"; exit 1;; esac
  exec sleep 600
fi
exit 0
""")
    hosts = ",".join(f"h{i}:1" for i in range(nodes))
    results = []
    for _ in range(ROUNDS):
        for f in stamps.iterdir():
            f.unlink()
        r = subprocess.run([binary, "run", "--hosts", hosts, "--ssh", ssh, "--program", fake, "--restarts", "1",
                            "--kill-after", "5", "--quiet-nodes", "--", "t.py"], capture_output=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"the restarted job exited {r.returncode}: {r.stderr.decode(errors='replace')[-1500:]}")
        failed = float((stamps / "failed").read_text())
        second = [float(p.read_text()) for p in stamps.glob("start-1-*")]
        if len(second) != nodes:
            raise RuntimeError(f"{len(second)} nodes started the second attempt")
        results.append(max(second) - failed)
    return statistics.median(results)


TEARDOWN_NODES = 200
TEARDOWN_KILL_AFTER = 2


TEARDOWN_ROUNDS = 2 if QUICK else 6

# How a stand-in host runs the node's command. "own /proc": in a pid namespace with a /proc of its
# own, as a real host is, so that a node script reads its own processes only; the namespace's
# first process stays until every other one in it is gone, so the node's ssh ends only then.
# "one /proc": all of them in this machine's, each node script reading every other's processes.
TEARDOWN_HOSTS = {
    "own /proc": processes.own_pid_namespace('"$1"') + "\n",
    "one /proc": "exec sh -c \"$1\"\n",
}


# When node 3's worker fails, in seconds after it started: while the later nodes are still
# starting (as many as this machine started by then: about 60 after 1 s, 120 after 2), and once
# every node is up.
TEARDOWN_FAILURES = (1, 2, 8)


def teardown_time(binary, tmp, nodes=TEARDOWN_NODES, kill_after=TEARDOWN_KILL_AFTER):
    """Each round, for each failure time and kind of stand-in host (interleaved): seconds from one node's failure to
    run's exit, every other node's worker ignoring SIGTERM, how many nodes run's lines say it
    stopped (the ones that had started by the failure: the others it never starts), and how many
    of their ssh it had to kill (a node script that did not finish within --kill-after + 5 s)."""
    ssh = {kind: write(tmp / f"ssh-{n}", f"#!/bin/sh\n# {tmp}\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift 2\n"
                                         + host)
           for n, (kind, host) in enumerate(TEARDOWN_HOSTS.items())}
    # The workers: node 3's fails after a second; every other one ignores SIGTERM (an ignored
    # signal stays ignored across exec), so the teardown waits for --kill-after and kills it. They
    # carry tmp's name in their environment, which exec keeps, so that one left behind is found.
    fake = {after: write(tmp / f"torchrun-stand-in-{after}", f"""#!/bin/sh
# {tmp}
case " $* " in *" --node_rank=3 "*) sleep {after}; date +%s.%N > "{tmp}/failed"; exit 1;; esac
trap '' TERM
export HETLAUNCH_STAND_IN={tmp}
exec sleep 600
""") for after in TEARDOWN_FAILURES}
    hosts = ",".join(f"h{i}:1" for i in range(nodes))
    rounds = {(after, kind): [] for after in TEARDOWN_FAILURES for kind in TEARDOWN_HOSTS}
    for _ in range(TEARDOWN_ROUNDS):
        for after, kind in rounds:
            (tmp / "failed").unlink(missing_ok=True)
            r = subprocess.run([binary, "run", "--hosts", hosts, "--ssh", ssh[kind], "--program", fake[after],
                                "--kill-after", str(kill_after), "--quiet-nodes", "--", "t.py"],
                               capture_output=True, timeout=600)
            ended = time.time()
            if r.returncode != 1:
                raise RuntimeError(f"the job exited {r.returncode}: {r.stderr.decode(errors='replace')[-1500:]}")
            err = r.stderr.decode(errors="replace")
            # What is still running when run has returned: a node script that run gave up on (it killed
            # its ssh) and that has not yet finished its own teardown. Recorded, then killed.
            left = [p for p in pathlib.Path("/proc").glob("[0-9]*") if _names(p, tmp)]
            rounds[(after, kind)].append((ended - float((tmp / "failed").read_text()), err.count("): stopped ("),
                                          err.count("killed by signal 9"), len(left)))
            _kill(tmp)
    return rounds


def _names(proc, tmp):
    try:
        return any(str(tmp).encode() in (proc / part).read_bytes() for part in ("cmdline", "environ"))
    except OSError:
        return False


def _kill(tmp):
    """Kills whatever of the stand-ins is left: they carry tmp's name."""
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        if _names(proc, tmp):
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _remove(tmp):
    _kill(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def teardown_section(rounds):
    goal = 1 + TEARDOWN_KILL_AFTER + 3
    lines = [
        "<!-- teardown-begin: written by tools/fanout_performance.py -->",
        "## Stopping a job when one node fails", "",
        f"{TEARDOWN_NODES} stand-in nodes on this machine (`--fanout 64`), each worker ignoring SIGTERM, `--kill-after "
        f"{TEARDOWN_KILL_AFTER}`; node 3's",
        "worker fails 1 or 2 seconds after it starts, while the later nodes are still starting, or 8 seconds after,",
        "once every node is up. From its failure (its own time stamp) to `run`'s exit, every node's processes gone, by",
        "round, with the nodes that had started by the failure (`run` stops those and never starts the rest). Each",
        "stand-in host either has a /proc of its own (a pid namespace, as every real host has: its node script sees",
        "its own processes) or shares this machine's with all the others (each node script reads every other one's",
        "processes too). The six kinds of round alternate:", "",
        "| failure after | stand-in hosts | nodes stopped | time | ssh killed by `run` | processes left at its exit "
        "| within the goal |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- |"]

    def within(seconds, left):
        return seconds <= goal and not left

    for (after, kind), kind_rounds in rounds.items():
        for seconds, stopped, killed, left in sorted(kind_rounds, key=lambda r: (r[1], r[0])):
            lines.append(f"| {after} s | {kind} | {stopped} | {seconds:.2f} s | {killed} | {left} | "
                         f"{'yes' if within(seconds, left) else 'no'} |")
    lines.append("")
    for (after, kind), kind_rounds in rounds.items():
        median = statistics.median(seconds for seconds, _, _, _ in kind_rounds)
        met = sum(within(seconds, left) for seconds, _, _, left in kind_rounds)
        lines.append(f"- failure after {after} s, {kind}: median of {len(kind_rounds)} rounds {median:.2f} s; met in "
                     f"{met} of {len(kind_rounds)} rounds, {'met' if median <= goal else 'not met'} by the median.")
    lines += [
        "", f"Goal: at most 1 s + kill-after + 3 s = {goal} s, every process gone when `run` returns, with hosts of their",
        "own /proc.", "",
        "How many nodes had started by an early failure varies with how fast this machine started them: about 60",
        "(the first `--fanout` of them) or about 120. Every stopped node waits out --kill-after, since its worker",
        "ignores SIGTERM; a node still starting at the failure begins that wait only when it has started. What the",
        "teardown adds is finding the job's processes: each node script reads all of its /proc once when it is",
        "stopped, and afterwards only the processes created since (nothing, on a host of its own), and it does not",
        "poll while torchrun runs. Where all the node scripts share one /proc, each full read holds every other",
        "node's processes, so the cost grows with the square of the nodes on the host: with 120 or 199 of them on two",
        "cores that is seconds of work, and with 199 the scripts do not finish within --kill-after + 5 s: `run` kills",
        "their ssh and returns while they are still stopping their processes. A cluster does not put hundreds of",
        "agents on one host.",
        "<!-- teardown-end -->"]
    return "\n".join(lines) + "\n"


def report_teardown(rounds):
    for (after, kind), kind_rounds in rounds.items():
        for seconds, stopped, killed, left in kind_rounds:
            print(f"teardown (failure after {after} s, {kind}): {seconds:.2f} s, {stopped} nodes stopped, "
                  f"{killed} ssh killed, {left} processes left")
    performance_doc.write_section("teardown", teardown_section(rounds), before="## Slurm: `--slurm` in big jobs")


def section(start, restart):
    lines = ["<!-- fanout-begin: written by tools/fanout_performance.py -->",
             "## Starting many nodes, and restarting them", "",
             f"Wall time to start {HOSTS:,} nodes whose commands end at once, each host a local stand-in for ssh (a shell",
             "that runs the node's command here), medians of rounds interleaved in one run on this 2-core",
             "machine. hetlaunch runs its node script and a stand-in torchrun on each; pdsh and clush run `true`",
             "through the same kind of shell:", "",
             "| tool | time | against the faster reference |", "| --- | ---: | ---: |"]
    best = min(start["pdsh -R exec -f 32"], start["clush -R exec -f 64"])
    for name, seconds in start.items():
        lines.append(f"| `{name}` | {seconds:.2f} s | {seconds / best:.2f}x |")
    goal = min(start["hetlaunch run --fanout 32"], start["hetlaunch run --fanout 64"]) <= best
    lines += ["", f"Goal: no slower than either reference at the same fan-out: "
                  f"{'met' if goal else 'not met'} "
                  f"(pdsh at 32: {start['hetlaunch run --fanout 32'] / start['pdsh -R exec -f 32']:.2f}x, "
                  f"clush at 64: {start['hetlaunch run --fanout 64'] / start['clush -R exec -f 64']:.2f}x).", "",
              "A gang restart of stand-in nodes (`--restarts 1`, `--kill-after 5`): from the failure of one node's",
              f"torchrun to the last node of the second attempt started, {restart[10]:.2f} s for 10 nodes and "
              f"{restart[100]:.2f} s for 100",
              "(medians). That is stopping the others, waiting for every one of them, and starting them all again.",
              "Here every node's teardown runs on this one machine: each node script scans /proc once for",
              "torchrun's descendants, which a real cluster does on each host at the same time.",
              "<!-- fanout-end -->"]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="hetlaunch-fanout-"))
    if "--teardown" not in sys.argv:
        for tool in ("pdsh", "clush"):
            if not shutil.which(tool):
                print(f"{tool} is not installed (Debian: apt-get install pdsh clustershell)")
                shutil.rmtree(tmp, ignore_errors=True)
                return 1
    if "--teardown" in sys.argv:
        try:
            (tmp / "teardown").mkdir()
            teardown = teardown_time(binary, tmp / "teardown")
        finally:
            _remove(tmp)
        report_teardown(teardown)
        return 0
    try:
        start = start_up(binary, tmp / "start") if (tmp / "start").mkdir() is None else None
        restart = {}
        for nodes in (10, 100):
            (tmp / f"restart-{nodes}").mkdir()
            restart[nodes] = restart_time(binary, tmp / f"restart-{nodes}", nodes)
        (tmp / "teardown").mkdir()
        teardown = teardown_time(binary, tmp / "teardown")
    finally:
        _remove(tmp)
    for name, seconds in start.items():
        print(f"{name}: {seconds:.2f} s")
    for nodes, seconds in restart.items():
        print(f"restart of {nodes} nodes: {seconds:.2f} s")
    performance_doc.write_section("fanout", section(start, restart), before="## Slurm: `--slurm` in big jobs")
    report_teardown(teardown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
