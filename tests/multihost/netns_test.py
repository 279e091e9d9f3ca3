#!/usr/bin/env python3
"""Mixed nodes on separate network hosts: test hosts made of Linux network namespaces joined by a
bridge (in a namespace of its own), each with its own IPv4 and IPv6 address, run `hetlaunch exec`
for a hostfile naming those addresses. Every worker checks its environment with
`hetlaunch check-env` and joins one gloo all_reduce. Then the ways a launch goes wrong.

Addresses come from 198.18.0.0/15 (RFC 2544, benchmarking) and fd00::/8 (unique local), and
exist only inside the test's namespaces, so no traffic leaves them. The namespaces, and the hosts
files that give each test host its name, are removed afterwards, also when a case fails or the
test is interrupted. Needs root and iproute2 (`ip`), unshare (util-linux) and torchrun.

usage: netns_test.py HETLAUNCH WORKER_PY WORK_DIR [CASE...]
"""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import netns  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite, pick  # noqa: E402
from worker_records import read_records  # noqa: E402

PREFIX = f"hl{os.getpid()}"
HOSTS = [f"{PREFIX}-h{i}" for i in range(3)]
V4 = [f"198.18.0.{i + 1}" for i in range(3)]
V6 = [f"fd00:7e57::{i + 1}" for i in range(3)]
NPROC = [4, 2, 1]
TORCHRUN = torchrun_flags.torchrun()


# The test hosts: h0, h1, h2, each with an IPv4 and an IPv6 address; `ip netns exec` binds each
# one's hosts file, so they resolve one another by name (torch's c10d rendezvous publishes the
# rank-0 host's name).
NETWORK = netns.network(PREFIX, [(f"h{i}", [f"{V4[i]}/24", f"{V6[i]}/64"]) for i in range(3)],
                        etc_hosts="127.0.0.1 localhost\n::1 localhost\n" + "".join(f"{V6[k]} {HOSTS[k]}\n" for k in range(3)))


def create_hosts():
    netns.remove_stale("hl")
    NETWORK.create()


def remove_hosts():
    NETWORK.remove()


class job:
    """Agents started with `hetlaunch exec` inside the test hosts; each in its own process group."""

    def __init__(self, binary, worker, work, hostfile, nodes, extra=(), exec_hostfile=None, worker_args=()):
        self.work = work
        self.agents = []
        for node in nodes:
            log = open(work / f"agent-{node}.log", "w")
            command = [binary, "exec", "--node", str(node), "--hostfile", str(exec_hostfile or hostfile), *TORCHRUN,
                       *extra, "--", worker, str(work), *worker_args, binary, "check-env", "--hostfile", str(hostfile)]
            # Each test host has its own host name, as a real host has.
            shell = 'hostname "$0" && exec env -u OMP_NUM_THREADS GLOO_SOCKET_IFNAME=eth0 "$@"'
            self.agents.append(subprocess.Popen(
                ["ip", "netns", "exec", HOSTS[node], "unshare", "--uts", "sh", "-c", shell, HOSTS[node], *command],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def wait(self, timeout):
        """Exit statuses (None for an agent that had to be killed) and the seconds it took."""
        start = time.monotonic()
        codes = []
        for a in self.agents:
            left = max(1.0, timeout - (time.monotonic() - start))
            try:
                codes.append(a.wait(timeout=left))
            except subprocess.TimeoutExpired:
                os.killpg(a.pid, signal.SIGKILL)
                a.wait()
                codes.append(None)
        return codes, time.monotonic() - start

    def logs(self):
        return "".join((self.work / f"agent-{i}.log").read_text(errors="replace")
                       for i in range(3) if (self.work / f"agent-{i}.log").exists())


def checks(work):
    return "".join(p.read_text() for p in sorted(work.glob("check-*.txt")))


def hostfile(work, addresses, counts=NPROC, name="hostfile"):
    path = work / name
    path.write_text("".join(f"{a} slots={n}\n" for a, n in zip(addresses, counts)))
    return path


def expect_complete(j, work, world, restarts="0", timeout=180):
    codes, _ = j.wait(timeout)
    problems = []
    if codes != [0, 0, 0]:
        problems.append(f"agents exited {codes}")
    got = read_records(work)
    for rank in range(world):
        r = got.get(rank, {})
        if r.get("SUM") != str(world * (world + 1) // 2) or r.get("WORLD_SIZE") != str(world) or \
                r.get("TORCHELASTIC_RESTART_COUNT") != restarts:
            problems.append(f"rank {rank} recorded {r}")
    return problems


# ---- the cases -------------------------------------------------------------------------------

def case_ipv4_static(b, w, work):
    """3 hosts with 4, 2 and 1 workers on IPv4: the job completes with the right sum."""
    hf = hostfile(work, V4)
    problems = expect_complete(job(b, w, work, hf, [0, 1, 2], ["--master-port", "29601"]), work, 7)
    masters = {r.get("MASTER_ADDR") for r in read_records(work).values()}
    return problems + ([] if masters == {V4[0]} else [f"MASTER_ADDR {masters}"])


def case_ipv6_static(b, w, work):
    """The same on IPv6 with the static rendezvous (MASTER_ADDR without brackets)."""
    hf = hostfile(work, V6)
    problems = expect_complete(job(b, w, work, hf, [0, 1, 2], ["--master-port", "29602"]), work, 7)
    masters = {r.get("MASTER_ADDR") for r in read_records(work).values()}
    return problems + ([] if masters == {V6[0]} else [f"MASTER_ADDR {masters}"])


def case_ipv6_c10d(b, w, work):
    """IPv6 with the c10d rendezvous: the endpoint is bracketed. torchrun orders the agents by host
    name (here the same as node order) and publishes the rank-0 host's name as MASTER_ADDR."""
    hf = hostfile(work, V6)
    j = job(b, w, work, hf, [0, 1, 2], ["--rdzv", "c10d", "--rdzv-id", "netns-c10d", "--master-port", "29603"])
    problems = expect_complete(j, work, 7)
    if f"--rdzv_endpoint=[{V6[0]}]:29603" not in subprocess.run(
            [b, "argv", "--node", "1", "--hostfile", str(hf), "--rdzv", "c10d", "--rdzv-id", "x", "--master-port",
             "29603", "t.py"], capture_output=True, text=True).stdout:
        problems.append("the c10d endpoint is not bracketed")
    return problems


def case_wrong_count(b, w, work):
    """Host 1 is started with 3 workers where the plan gives it 2: its workers, and the others
    (whose world is now 8, not 7), detect it with check-env, and the job stops, naming the node
    and both counts."""
    hf = hostfile(work, V4)
    wrong = hostfile(work, V4, [4, 3, 1], "wrong-hostfile")
    agents = [job(b, w, work, hf, [0, 2], ["--master-port", "29604"]),
              job(b, w, work, hf, [1], ["--master-port", "29604"], exec_hostfile=wrong)]
    codes = [c for a in agents for c in a.wait(120)[0]]
    problems = [] if all(c not in (0, None) for c in codes) else [f"agents exited {codes}; expected failures"]
    report = checks(work)
    for expected in [f"node 1 ('{V4[1]}'): started with LOCAL_WORLD_SIZE 3 (--nproc_per_node), but the plan gives it 2 workers",
                     "WORLD_SIZE is 8 but the plan's world size is 7"]:
        if expected not in report:
            problems.append(f"no report: {expected}")
    return problems


def case_host_never_starts(b, w, work):
    """Host 0, which hosts the rendezvous, never starts: the others give up after the timeout set
    with --rdzv-timeout (torchrun's --rdzv_conf=timeout=N) instead of torchrun's 15 minutes."""
    hf = hostfile(work, V4)
    j = job(b, w, work, hf, [1, 2], ["--master-port", "29605", "--rdzv-timeout", "10"])
    codes, seconds = j.wait(120)
    problems = []
    if any(c in (0, None) for c in codes):
        problems.append(f"agents exited {codes}")
    if seconds > 60:
        problems.append(f"gave up after {seconds:.0f} s")
    message = f"timed out after 10s while trying to connect to ({V4[0]}, 29605)"
    if message not in j.logs():
        problems.append(f"no '{message}' in the agents' output")
    return problems


def case_crash_restart(b, w, work):
    """A worker crashes once with --max-restarts 1: torchrun restarts every node's workers, and the
    restarted workers see TORCHELASTIC_RESTART_COUNT=1 (what worker_env(..., 1) predicts)."""
    hf = hostfile(work, V4)
    j = job(b, w, work, hf, [0, 1, 2], ["--master-port", "29606", "--max-restarts", "1"], worker_args=["--crash-once"])
    return expect_complete(j, work, 7, restarts="1", timeout=240)


def case_same_node_twice(b, w, work):
    """Two hosts claim node 1: the second is refused before anything starts, because node 1's
    address is not its own. A hostfile naming one host twice is refused too."""
    hf = hostfile(work, V4)
    r = subprocess.run(["ip", "netns", "exec", HOSTS[2], b, "exec", "--node", "1", "--hostfile", str(hf), *TORCHRUN,
                        "--", w, str(work)], capture_output=True, text=True, timeout=30)
    problems = []
    if r.returncode != 1 or f"node 1 is {V4[1]}, which is not an address of this host" not in r.stderr:
        problems.append(f"exec on the wrong host: {r.returncode} {r.stderr!r}")
    twice = hostfile(work, [V4[0], V4[1], V4[1]], name="twice")
    r = subprocess.run([b, "exec", "--node", "2", "--hostfile", str(twice), "--", w], capture_output=True, text=True)
    if r.returncode != 1 or f"host '{V4[1]}' is already on line 2" not in r.stderr:
        problems.append(f"duplicate host: {r.returncode} {r.stderr!r}")
    return problems


CASES = {
    "ipv4_static": case_ipv4_static,
    "ipv6_static": case_ipv6_static,
    "ipv6_c10d": case_ipv6_c10d,
    "wrong_count": case_wrong_count,
    "host_never_starts": case_host_never_starts,
    "crash_restart": case_crash_restart,
    "same_node_twice": case_same_node_twice,
}


def main():
    binary, worker, work_root = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    chosen = pick(CASES, sys.argv[4:])
    if os.geteuid() != 0:
        print("netns_test: needs root (network namespaces)")
        return 1

    def leftovers():
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [f"namespaces left behind: {left}"] if PREFIX in left else []

    with Suite("multihost", remove_hosts, leftovers) as run:
        create_hosts()
        for name in chosen:
            work = work_root / name
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            if not run.case(name, CASES[name], binary, worker, work):
                print("".join((work / f"agent-{i}.log").read_text(errors="replace")[-3000:]
                              for i in range(3) if (work / f"agent-{i}.log").exists()))
    return run.status


if __name__ == "__main__":
    sys.exit(main())
