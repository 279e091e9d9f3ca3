#!/usr/bin/env python3
"""`hetlaunch run` against real OpenSSH servers: three test hosts made of network namespaces
(198.18.1.0/24, joined by a bridge in a namespace of its own), each with its own sshd (Debian's
openssh-server) that accepts one key generated for the test, and a fake `nvidia-smi` on its PATH
that lists the host's GPUs (4, 2, none). `hetlaunch run` is started on host 0, as a user would
start it on the first node, and reaches every host over ssh.

The cases: a real torchrun job of 4 + 2 + 1 workers (two hosts written slots=auto) whose every
worker's variables equal the plan and which all_reduces; a worker that crashes on the last node;
a host whose sshd is down while the others have started; SIGINT mid-job, with workers that ignore
SIGTERM; an invalid hostfile (no connection at all, by sshd's logs); hostile script arguments
that must arrive byte for byte; discovery, and a host without nvidia-smi; gang restarts (a worker
that fails once, no restart left, a restart without the failed host and its new work shares,
--min-nodes, SIGINT, refused flags); training that survives a failure, a spare, and a host lost
mid-job that comes back (--grow-back), and a worker stopped mid-job (--hang-timeout), with the
parameters of one process and each step's samples trained once. After every case no
process of the job may be left on any host.

With --chroot SUITE (sid: torch 2.14) every node's torchrun and workers run in that Debian
chroot of tests/chroot/suites_test.py (built there when the cache lacks it), the source tree and
the work directory mounted at their own paths in it; ssh, sshd and hetlaunch stay the machine's.

Everything the test makes (namespaces, sshd daemons, /etc/netns files, the work directory, the
chroot's mounts) is removed at the end, also when a case fails or the test is interrupted;
leftovers of a killed earlier run are removed first. Needs root, iproute2, util-linux,
openssh-server and torchrun (and mmdebstrap for a chroot not built yet).

usage: ssh_test.py HETLAUNCH WORKER_PY [--chroot SUITE] [--without CASE]... [CASE...]
"""
import json
import math
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import job_events  # noqa: E402
import netns  # noqa: E402
import processes  # noqa: E402
import sshd_privsep  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite, pick  # noqa: E402
from worker_records import rank_problems, read_records  # noqa: E402

PREFIX = f"hs{os.getpid()}"
HOSTS = [f"{PREFIX}-h{i}" for i in range(3)]
V4 = [f"198.18.1.{i + 1}" for i in range(3)]
NETWORK = netns.network(PREFIX, [(f"h{i}", [f"{V4[i]}/24"]) for i in range(3)],
                        etc_hosts="127.0.0.1 localhost\n" + "".join(f"{V4[k]} {HOSTS[k]}\n" for k in range(3)))
NPROC = [4, 2, 1]
GPUS = [4, 2, 0]  # what each host's nvidia-smi lists; host 2 has no nvidia-smi at all
WORK_STEM = "hetlaunch-ssh-test-"
TORCHRUN = torchrun_flags.torchrun()
CHROOT_PYTHON = None  # with --chroot: the chroot's python3
KILL_AFTER = 3


def job_processes(marker):
    """(pid, command line) of the processes whose command line names `marker` (the work
    directory), other than this one."""
    needle = marker.encode()
    found = []

    def names_marker(proc):
        cmdline = (proc / "cmdline").read_bytes()
        if needle in cmdline:
            found.append((int(proc.name), cmdline.replace(b"\0", b" ").decode(errors="replace")[:200]))
        return needle in cmdline

    processes.matching(names_marker)
    return found


def remove_leftovers():
    """What a killed earlier run left: its processes (sshd, torchrun, workers, all named by its work
    directory), its namespaces and its /etc/netns files. Runs are told apart by their pid."""
    for work in processes.left_by_killed_runs(WORK_STEM):
        for p, _ in job_processes(str(work)):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    # The line writer's file of a node script that was killed (a host lost on purpose) before the
    # cases below kept it in their own directory.
    for f in pathlib.Path(tempfile.gettempdir()).glob("hetlaunch-rank-lines.*.py"):
        pid = f.name.split(".")[1]
        if processes.owner_gone(pid):
            f.unlink(missing_ok=True)
    netns.remove_stale("hs")


class cluster:
    """Three hosts, each with an sshd of its own."""

    def __init__(self, work):
        self.work = work
        self.sshd = [None] * 3
        self.privsep = False  # this suite uses sshd's privilege separation directory

    def create(self):
        w = self.work
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(w / "host_key")], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(w / "client_key")], check=True)
        shutil.copy(w / "client_key.pub", w / "authorized_keys")
        host_key = (w / "host_key.pub").read_text().split()
        (w / "known_hosts").write_text(f"{','.join(V4)} {host_key[0]} {host_key[1]}\n")
        NETWORK.create()
        for i in range(3):
            bin_dir = w / f"bin-{i}"
            bin_dir.mkdir()
            # Each host's temporary files in the work directory: a chroot's torchrun (mounted
            # there at the same path) sees the line writer run writes to it.
            (w / f"tmp-{i}").mkdir(mode=0o1777)
            if GPUS[i]:
                smi = bin_dir / "nvidia-smi"
                smi.write_text("#!/bin/sh\n[ \"$1\" = -L ] || exit 2\n" + "".join(
                    f"echo 'GPU {g}: Test GPU (UUID: GPU-{i}-{g})'\n" for g in range(GPUS[i])))
                smi.chmod(0o755)
            (w / f"sshd-{i}.conf").write_text(
                f"ListenAddress {V4[i]}:22\nHostKey {w / 'host_key'}\nPidFile {w / f'sshd-{i}.pid'}\n"
                f"AuthorizedKeysFile {w / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                f"LogLevel VERBOSE\nSetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin TMPDIR={w / f'tmp-{i}'}\n")
        sshd_privsep.enter()
        self.privsep = True
        for i in range(3):
            self.start_sshd(i)

    def start_sshd(self, i):
        listening = self.log(i).count("Server listening")
        log = open(self.work / f"sshd-{i}.log", "a")
        # Each test host has its own host name (unshare --uts), as a real host has.
        self.sshd[i] = subprocess.Popen(
            ["ip", "netns", "exec", HOSTS[i], "unshare", "--uts", "sh", "-c",
             'hostname "$0" && exec /usr/sbin/sshd -D -e -f "$1"', HOSTS[i], str(self.work / f"sshd-{i}.conf")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 10
        while self.log(i).count("Server listening") == listening:
            if time.monotonic() > deadline or self.sshd[i].poll() is not None:
                raise RuntimeError(f"sshd on {HOSTS[i]} did not start:\n{self.log(i)}")
            time.sleep(0.05)

    def stop_sshd(self, i):
        if self.sshd[i] and self.sshd[i].poll() is None:
            os.killpg(self.sshd[i].pid, signal.SIGTERM)
            self.sshd[i].wait()
        self.sshd[i] = None

    def log(self, i):
        path = self.work / f"sshd-{i}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def remove(self):
        for i in range(3):
            try:
                self.stop_sshd(i)
            except Exception:  # noqa: BLE001 - teardown goes on
                pass
        for p, _ in job_processes(str(self.work)):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        NETWORK.remove()
        if self.privsep:
            sshd_privsep.leave()
            self.privsep = False


def ssh_args(work):
    args = ["-F", "/dev/null", "-i", str(work / "client_key"), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={work / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
            "-o", "ConnectTimeout=10", "-l", "root"]
    return [x for a in args for x in ("--ssh-arg", a)]


def hetlaunch_on_host0(binary, args, **kwargs):
    """`hetlaunch ARGS` started on host 0, as a user starts it on the first node."""
    return subprocess.Popen(["ip", "netns", "exec", HOSTS[0], binary, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kwargs)


def finish(proc, timeout=240):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    if os.environ.get("SSH_TEST_SHOW"):  # the output docs/multi-host.md shows
        print(f"--- exit {proc.returncode}\n{out.decode(errors='replace')}{err.decode(errors='replace')}---")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def finish_timed(proc, needle, timeout=240):
    """finish(), reading as the output comes: also the monotonic times at which `needle` first
    appeared on stderr (None if never) and at which the process ended."""
    import selectors

    chunks = {proc.stdout: b"", proc.stderr: b""}
    seen = None
    selector = selectors.DefaultSelector()
    for pipe in chunks:
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.1):
            data = key.fileobj.read()
            if not data:
                selector.unregister(key.fileobj)
                continue
            chunks[key.fileobj] += data
            if seen is None and needle.encode() in chunks[proc.stderr]:
                seen = time.monotonic()
    try:
        proc.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    ended = time.monotonic()
    out, err = chunks[proc.stdout].decode(errors="replace"), chunks[proc.stderr].decode(errors="replace")
    if os.environ.get("SSH_TEST_SHOW"):  # the output docs/multi-host.md shows
        print(f"--- exit {proc.returncode}\n{out}{err}---")
    return proc.returncode, out, err, seen, ended


def left_on_hosts(work):
    """Processes of the job still running anywhere once `run` returned: none may be by the time a
    node script whose ssh was killed before it started has stopped its job by itself (within
    --kill-after, docs/multi-host.md), plus 2 s."""
    deadline = time.monotonic() + KILL_AFTER + 2
    while True:
        left = [p for p in job_processes(str(work)) if "sshd" not in p[1]]
        if not left or time.monotonic() > deadline:
            return [f"left running: {p}" for p in left]
        time.sleep(0.1)


def write_worker(work, name, body):
    path = work / name
    path.write_text("import os, signal, sys, time\n" + body)
    return path


def hostfile(work, lines, name="hostfile"):
    path = work / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def events_flag(work):
    return ["--events", str(work / "events.jsonl")]


def started(attempt, *nodes):
    """node_started rows of docs/events.md for these node indices (hosts as the hostfile names them)."""
    return [("node_started", attempt, i, V4[i], None) for i in nodes]


def exited(attempt, **reasons):
    """node_exited rows: exited(0, n0="stopped", n2="failed")."""
    return [("node_exited", attempt, int(k[1:]), V4[int(k[1:])], r) for k, r in reasons.items()]


def events_problems(work, expected, status):
    """What is wrong with the case's events file: a line the schema refuses, a sequence other than
    `expected`, or a job_exited whose status is not run's."""
    events, problems = job_events.read(work / "events.jsonl")
    problems += job_events.compare(events, expected)
    if events and events[-1].get("status") != status:
        problems.append(f"job_exited's status is {events[-1].get('status')}, run's {status}")
    return problems


# ---- the cases -------------------------------------------------------------------------------

def case_job(b, w, work, c):
    """4 + 2 + 1 workers on three hosts, two of them written slots=auto and asked over ssh: every
    worker checks its environment against the plan and joins a gloo all_reduce; every output
    line carries its node and host; the job's status is 0. With a global batch and a weighted
    host (whose weight survives the GPU count asked over ssh), check-env checks every worker's
    work share too."""
    hf = hostfile(work, [f"{V4[0]} slots=auto weight=2.5", f"{V4[1]} slots=auto", f"{V4[2]} slots=1"])
    plan = f"{V4[0]}:4,{V4[1]}:2,{V4[2]}:1"
    code, out, err = finish(hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29701", "--global-batch", "23",
        "--env", "GLOO_SOCKET_IFNAME=eth0", "--", w, str(work), b, "check-env", "--hosts", plan,
        "--weight", f"{V4[0]}=2.5", "--global-batch", "23"]))
    problems = [] if code == 0 else [f"run exited {code}:\n{err[-3000:]}"]
    problems += rank_problems(read_records(work), NPROC,
                              lambda rank, node: {"MASTER_ADDR": V4[0], "MASTER_PORT": "29701"})
    for line in (out + err).splitlines():
        if not re.match(r"\[[0-2] 198\.18\.1\.[1-3]\] |hetlaunch: ", line):
            problems.append(f"a line without its node: {line!r}")
    if f"[0 {V4[0]}] " not in err:
        problems.append("node 0's torchrun said nothing")
    if "hetlaunch: node started" in out:
        problems.append("the node-started line was shown")
    return problems + left_on_hosts(work)


HANG = """signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it
print(f"ready {os.environ['RANK']}", flush=True)
time.sleep(600)
"""


def case_worker_crash(b, w, work, c):
    """The last node's worker raises while the others hang in their work (ignoring SIGTERM): run
    reports the failed node, stops the others within --kill-after, and returns its status; the
    worker's entry point is wrapped in torch's @record, so node_exited names its rank, local rank,
    exit code and error, and job_exited the node and host, as --exit-status-by-reason's 1."""
    # Every rank says it is ready before rank 6 imports torch's @record (slow on a loaded machine).
    worker = write_worker(work, "crash.py", """print(f"ready {os.environ['RANK']}", flush=True)
if os.environ["RANK"] != "6":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
from torch.distributed.elastic.multiprocessing.errors import record
@record
def main():
    time.sleep(3)
    raise RuntimeError("rank 6 cannot go on\\nits second line")
main()
""")
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(3)])
    start = time.monotonic()
    failed = f"hetlaunch: node 2 ('{V4[2]}'): a worker failed (exit code 1)"
    # run says so as soon as it sees the failure, before it stops the others.
    stopping_line = "hetlaunch: node 2: a worker failed (exit code 1) and torchrun has no restart left: stopping every node"
    code, out, err, failed_at, ended = finish_timed(hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29702", "--kill-after",
        str(KILL_AFTER), "--exit-status-by-reason", *events_flag(work), "--", str(worker)]), stopping_line)
    seconds = ended - start
    problems = []
    # The others ignore SIGTERM: they end by SIGKILL, --kill-after after run saw the failure.
    stopping = None if failed_at is None else ended - failed_at
    if stopping is not None and stopping > KILL_AFTER + 2:
        problems.append(f"stopping the others took {stopping:.1f} s, more than --kill-after {KILL_AFTER} + 2")
    if code != 1:  # torchrun's status when a worker fails
        problems.append(f"run exited {code}, expected torchrun's 1")
    for expected in [failed, stopping_line,
                     f"hetlaunch: node 0 ('{V4[0]}'): stopped",
                     f"hetlaunch: node 1 ('{V4[1]}'): stopped"]:
        if expected not in err:
            problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    if out.count("ready") != 7:
        problems.append(f"{out.count('ready')} workers said ready")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2),
                                       *exited(0, n0="stopped", n1="stopped", n2="failed"),
                                       ("job_exited", 0, "worker_failed")], code)
    events, _ = job_events.read(work / "events.jsonl")
    root = {k: v for e in events if e["event"] == "node_exited" and e["node"] == 2
            for k, v in e.items() if k in ("rank", "local_rank", "exitcode", "error")}
    if root != {"rank": 6, "local_rank": 0, "exitcode": 1, "error": "RuntimeError: rank 6 cannot go on"}:
        problems.append(f"node 2's node_exited names {root}")
    blamed = {k: events[-1].get(k) for k in ("failed_node", "failed_host")} if events else {}
    if blamed != {"failed_node": 2, "failed_host": V4[2]}:
        problems.append(f"job_exited blames {blamed}")
    if "HETLAUNCH_ERROR" in out + err:
        problems.append("the relayed error line was shown")
    print(f"     worker crash: run ended {seconds:.1f} s after it started (the crash comes at about 3 s + start-up), "
          f"{'?' if stopping is None else f'{stopping:.2f}'} s after it reported the failure (--kill-after {KILL_AFTER})")
    return problems + left_on_hosts(work)


def case_sshd_down(b, w, work, c):
    """Host 2's sshd is down: its ssh is refused after nodes 0 and 1 have started (--fanout 1
    starts the nodes one after the other). The others are stopped, and run returns ssh's 255."""
    worker = write_worker(work, "hang.py", HANG)
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(3)])
    c.stop_sshd(2)
    try:
        code, out, err = finish(hetlaunch_on_host0(b, [
            "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29703", "--fanout", "1",
            "--kill-after", str(KILL_AFTER), *events_flag(work), "--", str(worker)]))
    finally:
        c.start_sshd(2)
    problems = [] if code == 255 else [f"run exited {code}, expected ssh's 255"]
    for expected in [f"[2 {V4[2]}] ssh: connect to host {V4[2]} port 22: Connection refused",
                     f"hetlaunch: node 2 ('{V4[2]}'): ssh failed (exit status 255) before the node started",
                     f"hetlaunch: node 0 ('{V4[0]}'): stopped"]:
        if expected not in err:
            problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1),
                                       *exited(0, n0="stopped", n1="stopped", n2="unreachable"),
                                       ("job_exited", 0, "unreachable")], code)
    return problems + left_on_hosts(work)


def case_interrupt(b, w, work, c):
    """SIGINT to run once every worker runs (and ignores SIGTERM): every node is stopped within
    --kill-after plus a second, and run exits 130."""
    worker = write_worker(work, "hang.py", HANG)
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(3)])
    proc = hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29704",
                                  "--kill-after", str(KILL_AFTER), *events_flag(work), "--", str(worker)])
    # Read until all seven workers are up.
    ready = 0
    out = b""
    deadline = time.monotonic() + 120
    os.set_blocking(proc.stdout.fileno(), False)
    while ready < 7 and time.monotonic() < deadline and proc.poll() is None:
        chunk = proc.stdout.read() or b""
        out += chunk
        ready = out.count(b"ready")
        time.sleep(0.1)
    problems = [] if ready == 7 else [f"only {ready} workers started"]
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc, timeout=60)
    seconds = time.monotonic() - start
    if code != 130:
        problems.append(f"run exited {code}, expected 130:\n{err[-2000:]}")
    if seconds > KILL_AFTER + 2:
        problems.append(f"stopping took {seconds:.1f} s, more than --kill-after {KILL_AFTER} + 2")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2),
                                       *exited(0, n0="stopped", n1="stopped", n2="stopped"),
                                       ("job_exited", 0, "interrupted")], code)
    print(f"     SIGINT: every node stopped and run exited {seconds:.2f} s after the signal (--kill-after {KILL_AFTER})")
    return problems + left_on_hosts(work)


# A program given as --program in torchrun's place: on SIGTERM it starts a process that ignores
# SIGTERM and exits at once, orphaning it. The orphan's command line names no work directory.
ORPHANING_WRAPPER = """#!/bin/sh
# {work}
trap 'sh -c "trap \\"\\" TERM; exec sleep {seconds}" & exit 0' TERM
echo ready
sleep 600 & wait
"""


def case_teardown_orphans(b, w, work, c):
    """A wrapper given as --program, which forks a child during the teardown and exits before it
    could be signalled: SIGINT to run, once every node runs, and again close to the start. Every
    process of the job is stopped on every host, the orphans too (found by their session)."""
    seconds = 700 + os.getpid() % 200
    wrapper = work / "wrapper.sh"
    wrapper.write_text(ORPHANING_WRAPPER.format(work=work, seconds=seconds))
    wrapper.chmod(0o755)
    hf = hostfile(work, [f"{V4[i]} slots=1" for i in range(3)])
    orphan = f"sleep\0{seconds}\0".encode()

    def orphans():
        return processes.matching(lambda proc: (proc / "cmdline").read_bytes() == orphan)

    problems = []
    for delay in (None, 0.3, 0.3):
        proc = hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work), "--kill-after", str(KILL_AFTER),
                                      "--program", str(wrapper), "--", "t.py"])
        if delay is None:  # every node's wrapper has said it is ready
            out = b""
            deadline = time.monotonic() + 60
            os.set_blocking(proc.stdout.fileno(), False)
            while out.count(b"ready") < 3 and time.monotonic() < deadline and proc.poll() is None:
                out += proc.stdout.read() or b""
                time.sleep(0.1)
        else:  # the nodes connecting: run has started its first ssh, and then `delay` passed
            processes.wait_for_child(proc.pid)
            time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        code, _, err = finish(proc, timeout=60)
        # A node whose connection took longer than twice --kill-after + 5 s had its ssh killed before
        # it started: its script, if sshd still runs it, sees its input end and stops its job within
        # --kill-after by itself.
        deadline = time.monotonic() + KILL_AFTER + 2
        while orphans() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = orphans()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        when = "once every node ran" if delay is None else f"{delay} s after the start"
        if code != 130 or left:
            problems.append(f"SIGINT {when}: run exited {code} and left {len(left)} orphans:\n{err[-1500:]}")
    return problems + left_on_hosts(work)


def case_invalid_hostfile(b, w, work, c):
    """An invalid hostfile: run refuses with the line and column, and no host is contacted (no
    connection in any sshd's log)."""
    hf = hostfile(work, [f"{V4[0]} slots=4", f"{V4[1]} slots=0", f"{V4[2]} slots=1"])
    before = [c.log(i).count("Connection from") for i in range(3)]
    code, _, err = finish(hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work), *events_flag(work),
                                                 "--", w]))
    after = [c.log(i).count("Connection from") for i in range(3)]
    problems = [] if code == 1 else [f"run exited {code}"]
    if f"{hf}:2:" not in err or "slots must be a positive integer, got '0'" not in err:
        problems.append(f"unexpected message: {err!r}")
    if before != after:
        problems.append(f"connections were made: {before} -> {after}")
    return problems + events_problems(work, [("job_exited", 0, "invalid_input")], code)


HOSTILE = [b"it's", b"$(touch /tmp/hetlaunch-pwned)", b"`id`", b"a\nb", b"\xff\xfe not UTF-8", b"", b"*", b"~",
           b"\\", b'"double"', b"--flag=x", b"; exit 3", b"\t tab"]


def case_hostile_arguments(b, w, work, c):
    """Script arguments with quotes, $(...), backticks, newlines, bytes that are not UTF-8, globs
    and an empty one arrive at every worker exactly as given."""
    worker = write_worker(work, "argv.py", """args = [os.fsencode(a) for a in sys.argv[1:]]
with open(os.path.join(os.path.dirname(__file__), "argv-" + os.environ["RANK"]), "wb") as f:
    f.write(b"\\0".join(args))
""")
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(3)])
    proc = subprocess.Popen([b"ip", b"netns", b"exec", HOSTS[0].encode(), b.encode(), b"run", b"--hostfile",
                             str(hf).encode(), *[a.encode() for a in ssh_args(c.work)],
                             *[a.encode() for a in TORCHRUN], b"--master-port", b"29705", b"--",
                             str(worker).encode(), *HOSTILE], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    code, _, err = finish(proc)
    problems = [] if code == 0 else [f"run exited {code}:\n{err[-2000:]}"]
    for rank in range(7):
        path = work / f"argv-{rank}"
        got = path.read_bytes().split(b"\0") if path.exists() else None
        if got != HOSTILE:
            problems.append(f"rank {rank} got {got!r}")
    if pathlib.Path("/tmp/hetlaunch-pwned").exists():
        problems.append("an argument was run as a command")
        pathlib.Path("/tmp/hetlaunch-pwned").unlink()
    return problems + left_on_hosts(work)


def case_discover(b, w, work, c):
    """discover asks the slots=auto hosts for their GPUs over ssh and prints the hostfile, with
    every weight it was given (in the hostfile, or by --weight); a host without nvidia-smi is an
    error that names it, with the shell's reason."""
    hf = hostfile(work, [f"{V4[0]} slots=auto weight=2.5", f"{V4[1]}:auto", f"{V4[2]} slots=1"])
    code, out, err = finish(hetlaunch_on_host0(b, ["discover", "--hostfile", str(hf), *ssh_args(c.work),
                                                   "--weight", f"{V4[2]}=0.5"]))
    problems = []
    expected = f"{V4[0]} slots=4 weight=2.5\n{V4[1]} slots=2\n{V4[2]} slots=1 weight=0.5\n"
    if code != 0 or out != expected:
        problems.append(f"discover: {code} {out!r} {err!r}")
    bad = hostfile(work, [f"{V4[0]} slots=auto", f"{V4[2]} slots=auto"], name="bad")
    code, out, err = finish(hetlaunch_on_host0(b, ["discover", "--hostfile", str(bad), *ssh_args(c.work)]))
    if code != 1 or f"slots=auto: host '{V4[2]}': 'nvidia-smi -L' failed (exit status 127)" not in err \
            or "not found" not in err or V4[0] in err:
        problems.append(f"no nvidia-smi: {code} {out!r} {err!r}")
    return problems


# A worker for the restart cases: it records its variables for its attempt, then, in attempt 0,
# fails on node 2 ("fail") or waits to be stopped ("hang"); from attempt 1 on it succeeds.
RESTART_WORKER = """work, mode = sys.argv[1], sys.argv[2]
count = os.environ.get("HETLAUNCH_RESTART_COUNT", "unset")
names = ["RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "HETLAUNCH_RESTART_COUNT",
         "HETLAUNCH_GLOBAL_BATCH", "HETLAUNCH_NODE_BATCH", "HETLAUNCH_NODE_BATCH_OFFSET"]
import socket
# Written whole or not at all (the test may read while a worker is stopped mid-write).
record = f"{work}/attempt-{count}-rank-{os.environ['RANK']}.env"
with open(record + ".tmp", "w") as f:
    f.write("".join(f"{n}={os.environ.get(n, '')}\\n" for n in names))
    f.write(f"HOST={socket.gethostname()}\\nSTARTED={time.time()}\\n")
os.replace(record + ".tmp", record)
print(f"ready {count} {os.environ['RANK']}", flush=True)
failing = {"fail": "2", "fail0": "0", "fail1": "1", "always": "2"}.get(mode)
if count == "0" or mode == "always":
    if os.environ["GROUP_RANK"] == failing:
        time.sleep(2)
        with open(f"{work}/failed-at-{count}", "w") as f:
            f.write(str(time.time()))
        sys.exit(3)
    time.sleep(600)
"""


def attempt_records(work, attempt):
    """{rank: {name: value}} of the workers of one attempt."""
    return read_records(work, f"attempt-{attempt}-rank-*.env")


def first_attempt_running(work, proc, timeout=120):
    """Waits until the first attempt's seven workers have recorded themselves (or run ended)."""
    deadline = time.monotonic() + timeout
    while len(attempt_records(work, 0)) < 7 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)


def restart_run(b, work, c, port, flags, mode="fail", hosts=3, kill_after=("--kill-after", str(KILL_AFTER)),
                **kwargs):
    worker = write_worker(work, "restart.py", RESTART_WORKER)
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(hosts)])
    return hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", port,
                                  *kill_after, *events_flag(work), *flags, "--", str(worker), str(work), mode],
                              **kwargs)


def failure_line(then):
    """The pattern of run's line about node 2's failed worker, followed by what run does next.
    run stops every node, the failing one too, as soon as torchrun logs the failure: torchrun's own
    status is 1 when it ends within --kill-after, 137 when it is still in its exit barrier then."""
    return (re.escape(f"hetlaunch: node 2 ('{V4[2]}') failed: a worker failed (exit code 3); torchrun ")
            + r"exit status (1|137); " + re.escape(then))


def case_restart_whole(b, w, work, c):
    """A worker of node 2 fails in the first attempt; with --restarts 1 the whole job starts again
    on the same three nodes (stopped first, every one of them), every worker of attempt 2 sees
    HETLAUNCH_RESTART_COUNT=1 and the same ranks, and run exits 0."""
    start = time.monotonic()
    code, out, err = finish(restart_run(b, work, c, "29711", ["--restarts", "1"]))
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    first, second = attempt_records(work, 0), attempt_records(work, 1)
    if sorted(first) != list(range(7)) or sorted(second) != list(range(7)):
        problems.append(f"ranks of attempt 1: {sorted(first)}, of attempt 2: {sorted(second)}")
    for rank, r in second.items():
        if r["HETLAUNCH_RESTART_COUNT"] != "1" or r["WORLD_SIZE"] != "7":
            problems.append(f"attempt 2, rank {rank} recorded {r}")
    expected = failure_line("restart 1 of 1: attempt 2 starts on 3 nodes, world size 7")
    if not re.search(expected, err):
        problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    print(f"     restart: run ended {time.monotonic() - start:.1f} s after it started, "
          f"{err.count('restart 1 of 1')} restart")
    return problems + left_on_hosts(work)


def case_restart_none_left(b, w, work, c):
    """The same failure with --restarts 0: no second attempt, and run exits 1, torchrun's status
    for a failed worker."""
    code, out, err = finish(restart_run(b, work, c, "29712", ["--restarts", "0"]))
    problems = [] if code == 1 else [f"run exited {code}, expected 1:\n{err[-3000:]}"]
    if attempt_records(work, 1):
        problems.append("a second attempt ran")
    expected = failure_line("no restart left (--restarts 0): the job failed after 1 attempt")
    if not re.search(expected, err):
        problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2),
                                       *exited(0, n0="stopped", n1="stopped", n2="failed"),
                                       ("job_exited", 0, "restarts_exhausted")], code)
    return problems + left_on_hosts(work)


def case_restart_exclude_failed(b, w, work, c):
    """With --exclude-failed the second attempt runs without node 2's host: 4 + 2 workers, new
    ranks, and the same global batch of 14 split over the two nodes that remain."""
    code, out, err = finish(restart_run(b, work, c, "29713", ["--restarts", "2", "--exclude-failed",
                                                              "--global-batch", "14"]))
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    second = attempt_records(work, 1)
    if sorted(second) != list(range(6)):
        problems.append(f"ranks of attempt 2: {sorted(second)}")
    batches = {}
    for rank, r in second.items():
        if r["WORLD_SIZE"] != "6" or r["HETLAUNCH_GLOBAL_BATCH"] != "14" or r["HETLAUNCH_RESTART_COUNT"] != "1":
            problems.append(f"attempt 2, rank {rank} recorded {r}")
        batches[r["GROUP_RANK"]] = int(r["HETLAUNCH_NODE_BATCH"])
    if sum(batches.values()) != 14:
        problems.append(f"the node batches of attempt 2 are {batches}, not 14 in all")
    expected = f"restart 1 of 2: attempt 2 starts on 2 nodes (without node 2 ('{V4[2]}')), world size 6"
    if expected not in err:
        problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    return problems + left_on_hosts(work)


def case_restart_master_moves(b, w, work, c):
    """--master-addr names node 0's host, and node 0 fails: the restart without it cannot wait
    for a rendezvous there. The master moves to the new node 0 (host 1), run says so, every worker
    of attempt 2 sees it as MASTER_ADDR, and the job ends well. The same run with another name of
    node 0, one no node is written as (its name in /etc/hosts, as a fast network's address would
    be), moves too."""
    problems = []
    for given, port in ((V4[0], "29717"), (f"{HOSTS[0]}", "29718")):
        for old in work.glob("attempt-*"):
            old.unlink()
        code, out, err = finish(restart_run(b, work, c, port, ["--restarts", "2", "--exclude-failed",
                                                              "--master-addr", given], mode="fail0"))
        if code != 0:
            problems.append(f"--master-addr {given}: run exited {code}, expected 0:\n{err[-3000:]}")
        second = attempt_records(work, 1)
        if sorted(second) != [0, 1, 2]:
            problems.append(f"--master-addr {given}: ranks of attempt 2: {sorted(second)}")
        for rank, r in second.items():
            if r["MASTER_ADDR"] != V4[1] or r["WORLD_SIZE"] != "3":
                problems.append(f"--master-addr {given}: attempt 2, rank {rank} recorded {r}")
        expected = (f"hetlaunch: the rendezvous moves to the new node 0 ('{V4[1]}'): --master-addr '{given}' "
                    "was on a node left out")
        if expected not in err:
            problems.append(f"no '{expected}' in:\n{err[-2000:]}")
        if f"attempt 2 starts on 2 nodes (without node 0 ('{V4[0]}')), world size 3" not in err:
            problems.append(f"--master-addr {given}: no restart without node 0 in:\n{err[-2000:]}")
    return problems + left_on_hosts(work)


def training_files(work, hosts):
    """examples/train_restarts.py, a hostfile of the first `hosts` hosts, the checkpoint directory
    every host writes to, and the path of the final parameters. The directory `positions` takes
    each rank's trained samples."""
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_restarts.py"
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(hosts)])
    for name in ("ckpt", "positions"):
        (work / name).mkdir()
        (work / name).chmod(0o777)
    return example, hf, work / "ckpt", work / "result.json"


def training_args(work, ckpt, result, steps, every=5):
    """train_restarts.py's arguments: checkpoints in `ckpt`, the final parameters in `result`, each
    rank's trained samples in work/positions."""
    return ["--checkpoint-dir", str(ckpt), "--steps", str(steps), "--every", str(every), "--result", str(result),
            "--positions", str(work / "positions")]


def trained_once(positions, batches):
    """Problems when the samples the final model was trained on differ from one process's: for each
    step, the last attempt that trained it is the one the final model keeps (a later attempt
    resumes from a checkpoint before it, or not at all); the samples its ranks trained at that step,
    together, must be that step's batch, each sample once, in the same epoch."""
    kept = {}  # step -> (attempt, epoch, indices of every rank)
    records = 0
    for f in sorted(positions.glob("attempt-*-rank-*.jsonl")):
        attempt = int(f.name.split("-")[1])
        for line in f.read_text().splitlines():
            r = json.loads(line)
            records += 1
            a, epoch, indices = kept.get(r["step"], (-1, None, []))
            if attempt > a:
                kept[r["step"]] = (attempt, r["epoch"], list(r["indices"]))
            elif attempt == a:
                if epoch != r["epoch"]:
                    return [f"step {r['step']} of attempt {a}: ranks in epochs {epoch} and {r['epoch']}"]
                indices.extend(r["indices"])
    problems = []
    for step, (epoch, batch) in enumerate(batches):
        attempt, got_epoch, got = kept.get(step, (None, None, []))
        if got_epoch != epoch or sorted(got) != sorted(batch):
            problems.append(f"step {step}: attempt {attempt} trained epoch {got_epoch}'s {sorted(got)}, "
                            f"one process epoch {epoch}'s {sorted(batch)}")
    if len(kept) != len(batches):
        problems.append(f"steps {sorted(set(kept) - set(range(len(batches))))} trained beyond the {len(batches)}")
    if not problems:
        print(f"     every sample of the {len(batches)} steps ({batches[-1][0] + 1} epochs) trained once in the "
              f"final model, as one process trains them ({records} rank records over "
              f"{len({a for a, _, _ in kept.values()})} attempts)")
    return problems


def same_as_one_process(example, result, label, steps=30, tolerance=1e-9, positions=None):
    """Problems when the parameters train_restarts.py wrote to `result` differ from those of the
    same steps in one process over each step's whole batch of 24 (float64), or, with `positions`,
    when the samples of a step in the final model are not that process's (trained_once)."""
    python = pathlib.Path("/usr/bin/torchrun").read_text().splitlines()[0][2:].strip()
    reference = subprocess.run([python, "-c", (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
        "import train_restarts as t, hetlaunch_shares as s; batches = [];"
        f"params = t.train(s.Share(24, 1, 24, 0), {steps}, 0.05, None, 5, 1,"
        " trained=lambda step, epoch, idx: batches.append([epoch, [int(i) for i in idx]]));"
        "print(json.dumps({'params': params, 'batches': batches}))"),
        str(example.parent), str(example.parents[1] / "python")], capture_output=True, text=True)
    if reference.returncode != 0 or not result.exists():
        return [f"no result to compare: {reference.stderr[-2000:]}"]
    one = json.loads(reference.stdout)
    want, got = one["params"], json.loads(result.read_text())
    worst = max(abs(a - b2) for a, b2 in zip(want, got))
    print(f"     {label}: final parameters off the single-process run by {worst:.2g}")
    problems = []
    if len(want) != len(got) or worst > tolerance:
        problems.append(f"the final parameters differ from one process's by {worst:.3g}")
    if positions is not None:
        problems += trained_once(positions, one["batches"])
    return problems


def case_restart_training(b, w, work, c):
    """examples/train_restarts.py (float64 DDP, a global batch of 24, the loss scaled by the share,
    a checkpoint every 5 steps): node 1 fails at step 12 of the first attempt; with --restarts 1
    --exclude-failed the second attempt resumes from step 10 on two hosts, and the final
    parameters equal those of one process training on every step's whole batch."""
    example, hf, ckpt, result = training_files(work, 3)
    code, out, err = finish(hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29717", "--kill-after",
        str(KILL_AFTER), "--restarts", "1", "--exclude-failed", "--global-batch", "24", "--env", "GLOO_SOCKET_IFNAME=eth0",
        "--", str(example), *training_args(work, ckpt, result, 30), "--fail-at", "12", "--fail-node", "1"]),
        timeout=400)
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    # Node 1's exit breaks its peers' collective at once, so the torchrun of any node may report a
    # failed worker first: that node is left out, and either way the smaller job goes on from the
    # checkpoint.
    m = re.search(r"restart 1 of 1: attempt 2 starts on 2 nodes \(without node ([012]) \('([0-9.]+)'\)\), "
                  r"world size (\d+)", err)
    if not m or m.group(2) != V4[int(m.group(1))] or int(m.group(3)) != 7 - NPROC[int(m.group(1))]:
        problems.append(f"no restart without one node in:\n{err[-2000:]}")
    elif f"attempt 1: 30 steps done on a world of {m.group(3)}" not in out + err:
        problems.append(f"the second attempt did not finish on a world of {m.group(3)}:\n{(out + err)[-2000:]}")
    else:
        print(f"     restart training: node {m.group(1)} left out, the second attempt's world size {m.group(3)}")
    return problems + same_as_one_process(example, result, "restart training", positions=work / "positions") + \
        left_on_hosts(work)

def case_spare_training(b, w, work, c):
    """examples/train_restarts.py on hosts 0 and 1 (4 + 2 workers, a global batch of 24, a
    checkpoint every 5 steps), host 2 standing by: node 1 fails at step 12. Whichever node's
    torchrun reports the failure first, the spare (4 GPUs, room for either node) takes its place;
    the second attempt resumes from step 10 on a world of 6 again, and the final parameters equal
    one process's training on every step's whole batch. With --grow-back the failed node's host,
    whose sshd still answers, is probed during the second attempt: a spare holds its place, so it
    stands by as a spare, and the job goes on as it is."""
    example, hf, ckpt, result = training_files(work, 2)
    code, out, err = finish(hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29721", "--kill-after",
        str(KILL_AFTER), "--restarts", "1", "--spare", f"{V4[2]}:4", "--grow-back", "--probe-every", "1",
        "--gpu-count-command", "echo 4", "--global-batch", "24", "--env", "GLOO_SOCKET_IFNAME=eth0",
        *events_flag(work), "--", str(example), *training_args(work, ckpt, result, 30), "--fail-at", "12",
        "--fail-node", "1", "--pace", "0.15"]), timeout=400)
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    events, _ = job_events.read(work / "events.jsonl")
    restart = [e for e in events if e["event"] == "restart"]
    culprit = restart[0]["failed_node"] if restart else 1
    hosts_after = [V4[2] if i == culprit else V4[i] for i in range(2)]
    problems += events_problems(work, [
        ("planned", 0), *started(0, 0, 1), *exited(0, **{f"n{i}": "failed" if i == culprit else "stopped"
                                                          for i in range(2)}),
        ("restart", 1), *[("node_started", 1, i, hosts_after[i], None) for i in range(2)],
        job_events.returned(1, V4[culprit]), *[("node_exited", 1, i, hosts_after[i], "succeeded") for i in range(2)],
        ("job_exited", 1, "succeeded")], code)
    want = {"replaced": [{"node": culprit, "host": V4[culprit], "spare": V4[2]}], "excluded": [], "nodes": 2,
            "world_size": 6}
    if not restart or {k: restart[0][k] for k in want} != want:
        problems.append(f"restart event {restart}, expected {want}")
    # The world size never changes: the planned event, the restart and the last attempt's script.
    if events and events[0].get("world_size") != 6:
        problems.append(f"planned world size {events[0].get('world_size')}")
    if "attempt 1: 30 steps done on a world of 6" not in out + err:
        problems.append(f"the second attempt did not finish on a world of 6:\n{(out + err)[-2000:]}")
    stands_by = f"hetlaunch: host '{V4[culprit]}' answers again: a spare holds its place, so it stands by as a spare"
    if stands_by not in err:
        problems.append(f"no {stands_by!r} in:\n{err[-2000:]}")
    print(f"     spare training: node {culprit} replaced by the spare; its host answered again and stands by")
    return problems + same_as_one_process(example, result, "spare training", positions=work / "positions") + \
        left_on_hosts(work)


def grow_back_times(answered, saved, events, positions):
    """How long the host that answered at `answered` (wall clock) took to be back in the job: to
    rank 0's checkpoint line (`saved`), to the shrunk attempt's every node stopped, to every node of
    the grown attempt started, and to the grown attempt's first trained step (the workers' logs);
    beside the goal and the job's own cold start, the probe interval (1 s) + the checkpoint interval (5 of the shrunk attempt's
    steps, median) + 10 s."""
    records = {}
    for f in positions.glob("attempt-*-rank-0.jsonl"):
        records[int(f.name.split("-")[1])] = [json.loads(line) for line in f.read_text().splitlines()]
    steps = [b2["time"] - a["time"] for a, b2 in zip(records.get(1, []), records.get(1, [])[1:])]
    interval = 5 * statistics.median(steps) if steps else float("nan")
    stopped = max(job_events.seconds(e) for e in events if e["event"] == "node_exited" and e["attempt"] == 1)
    started_all = max(job_events.seconds(e) for e in events if e["event"] == "node_started" and e["attempt"] == 2)
    first_step = min((r["time"] for r in records.get(2, [])), default=float("nan"))
    # The reference: the same job's cold start, from its plan to its first trained step.
    cold = min((r["time"] for r in records.get(0, [])), default=float("nan")) - job_events.seconds(events[0])
    return (f"grow-back: host 2 answered; {saved - answered:.1f} s later rank 0's checkpoint line, "
            f"{stopped - answered:.1f} s later the shrunk attempt stopped, {started_all - answered:.1f} s later every node "
            f"of the grown attempt started, {first_step - answered:.1f} s later its first step was trained (goal: "
            f"1 s probe + {interval:.1f} s checkpoint interval + 10 s = {11 + interval:.1f} s; --kill-after {KILL_AFTER}); "
            f"the job's cold start, plan to first step: {cold:.1f} s")


def case_grow_back_training(b, w, work, c):
    """examples/train_restarts.py on three hosts (4 + 2 + 1 workers, a global batch of 24, a
    checkpoint every 5 steps, 90 steps): host 2 is lost mid-run (every process of its namespace
    killed, sshd included): its ssh ends (255), and with --exclude-failed the job goes on from the
    last checkpoint on hosts 0 and 1. Host 2's sshd starts again once they train; with --grow-back
    its probe answers, and at rank 0's next checkpoint line the job starts again on all three hosts,
    host 2 at its place. The final parameters equal one process's training over the same 90 steps,
    to 1e-9, and each step's samples are that process's, each trained once."""
    example, hf, ckpt, result = training_files(work, 3)
    proc = hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29723", "--kill-after",
        str(KILL_AFTER), "--restarts", "1", "--exclude-failed", "--grow-back", "--probe-every", "1",
        "--gpu-count-command", "echo 1", "--global-batch", "24", "--env", "GLOO_SOCKET_IFNAME=eth0",
        # Host 2's node script is killed: the line writer's file it would remove stays in `work`.
        "--env", f"TMPDIR={work}",
        *events_flag(work), "--", str(example), *training_args(work, ckpt, result, 90), "--pace", "0.1"])
    # Host 2 is lost once the first checkpoint is written: every worker has run a step. It comes
    # back once the shrunk attempt trains (its rank 0 logged a step), as a host comes back minutes
    # or hours later: the wait to the next checkpoint is then the checkpoint interval, not the
    # shrunk attempt's start.
    positions = work / "positions"
    deadline = time.monotonic() + 120
    while not (ckpt / "latest.pt").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    try:
        for pid in namespace_pids([HOSTS[2]])[HOSTS[2]]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 120
        while not (positions / "attempt-1-rank-0.jsonl").exists() and time.monotonic() < deadline and \
                proc.poll() is None:
            time.sleep(0.05)
    finally:
        c.stop_sshd(2)
        c.start_sshd(2)  # the host is back: its probe answers from now on
    clock = time.time() - time.monotonic()
    code, out, err, saved, _ = finish_timed(proc, "hetlaunch: rank 0 saved the checkpoint of step", timeout=400)
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    events, _ = job_events.read(work / "events.jsonl")
    restarts = [{k: e[k] for k in ("reason", "failed_host", "excluded", "readmitted", "nodes", "world_size")}
                for e in events if e["event"] == "restart"]
    want = [{"reason": "failure", "failed_host": V4[2], "excluded": [V4[2]], "readmitted": [], "nodes": 2,
             "world_size": 6},
            {"reason": "grow", "failed_host": None, "excluded": [], "readmitted": [V4[2]], "nodes": 3,
             "world_size": 7}]
    if restarts != want:
        problems.append(f"restart events {restarts}, expected {want}")
    returned = [e for e in events if e["event"] == "node_returned"]
    if [(e["attempt"], e["host"]) for e in returned] != [(1, V4[2])]:
        problems.append(f"node_returned events {returned}")
    problems += events_problems(work, [
        ("planned", 0), *started(0, 0, 1, 2), *exited(0, n0="stopped", n1="stopped", n2="unreachable"),
        ("restart", 1), *started(1, 0, 1), job_events.returned(1, V4[2]), *exited(1, n0="stopped", n1="stopped"),
        ("restart", 2), *started(2, 0, 1, 2), *exited(2, n0="succeeded", n1="succeeded", n2="succeeded"),
        ("job_exited", 2, "succeeded")], code)
    shrunk = f"restart 1 of 1: attempt 2 starts on 2 nodes (without node 2 ('{V4[2]}')), world size 6"
    if shrunk not in err:
        problems.append(f"no '{shrunk}' in:\n{err[-2000:]}")
    if "attempt 2: 90 steps done on a world of 7" not in out + err:
        problems.append(f"the third attempt did not finish on a world of 7:\n{(out + err)[-2000:]}")
    if returned and saved is not None:
        print("     " + grow_back_times(job_events.seconds(returned[0]), clock + saved, events, positions))
    return problems + same_as_one_process(example, result, "grow-back training", steps=90,
                                          positions=work / "positions") + left_on_hosts(work)


def namespace_pids(names):
    """{name: [pid, ...]}: the processes in each of the network namespaces `names`, what `ip netns
    pids` prints, read from /proc in one pass. The throttles ask 20 times a second; an `ip` a host
    each time took a third of a core from the jobs they measure."""
    found = {name: [] for name in names}
    of_inode = {}
    for name in names:
        try:
            of_inode[f"net:[{os.stat(f'/run/netns/{name}').st_ino}]"] = name
        except OSError:  # no such namespace (yet, or any more): no processes
            pass
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                name = of_inode.get(os.readlink(f"/proc/{entry.name}/ns/net"))
            except OSError:  # ended meanwhile
                continue
            if name is not None:
                found[name].append(int(entry.name))
    return found


def workers_on(hosts, script="train_restarts.py"):
    """{host: pids} of a rank's processes on each of `hosts`: those of its namespace with RANK in
    their environment (torchrun itself has none), the worker and its line writer."""
    in_namespace = namespace_pids([HOSTS[h] for h in hosts])
    found = {}
    for host in hosts:
        found[host] = []
        for pid in in_namespace[HOSTS[host]]:
            try:
                env = pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if script.encode() in cmdline and any(v.startswith(b"RANK=") for v in env):
                found[host].append(pid)
    return found


def workers_of(host, script="train_restarts.py"):
    """The pids of a rank's processes on host `host` (workers_on)."""
    return workers_on([host], script)[host]


def case_hung_training(b, w, work, c):
    """examples/train_restarts.py on three hosts (4 + 2 + 1 workers) with --hang-timeout 10 (the
    first step of seven workers starting on two cores takes seconds, more on torch 2.14). The
    first checkpoint takes 12 s more (inside checkpointing(), within --checkpoint-timeout): no
    rank is hung then. After the second, host 2's worker (rank 6) is stopped with SIGSTOP. It goes
    silent, while the ranks waiting for it in the all-reduce go on saying they wait: rank_hung
    names rank 6 on node 2 and no other rank. With --restarts 1 --exclude-failed the job goes on
    from the checkpoint on hosts 0 and 1, each step's samples trained once and the final
    parameters one process's; the stopped worker is killed with the rest of its node."""
    example, hf, ckpt, result = training_files(work, 3)
    proc = hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--master-port", "29725", "--kill-after",
        str(KILL_AFTER), "--restarts", "1", "--exclude-failed", "--hang-timeout", "10", "--global-batch", "24",
        "--env", "GLOO_SOCKET_IFNAME=eth0", *events_flag(work), "--", str(example),
        *training_args(work, ckpt, result, 40), "--pace", "0.1", "--save-pause", "12"])
    log = work / "positions" / "attempt-0-rank-0.jsonl"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and \
            (not log.exists() or len(log.read_text().splitlines()) < 12):
        time.sleep(0.05)
    pids = workers_of(2)
    if not pids:
        proc.kill()
        code, out, err = finish(proc)
        events, _ = job_events.read(work / "events.jsonl")
        return [f"no worker on host 2 to stop (run exited {code}); events "
                f"{[(e['event'], e.get('rank'), e.get('step'), e.get('reason')) for e in events]}:\n{err[-3000:]}"] + \
            left_on_hosts(work)
    for pid in pids:  # the worker and the process that writes its lines: the rank stops whole
        os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    code, out, err, seen, _ = finish_timed(proc, "hung in step", timeout=400)
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    events, _ = job_events.read(work / "events.jsonl")
    hung = [(e["attempt"], e["node"], e["host"], e["rank"]) for e in events if e["event"] == "rank_hung"]
    if hung != [(0, 2, V4[2], 6)]:
        problems.append(f"rank_hung events {hung}, expected rank 6 of node 2 alone")
    restarts = [(e["reason"], e["failed_host"], e["excluded"]) for e in events if e["event"] == "restart"]
    if restarts != [("failure", V4[2], [V4[2]])]:
        problems.append(f"restart events {restarts}")
    if "attempt 1: 40 steps done on a world of 6" not in out + err:
        problems.append(f"the second attempt did not finish on a world of 6:\n{(out + err)[-2000:]}")
    if seen is not None:
        print(f"     hung training: rank 6 stopped; run said it hung {seen - stopped:.1f} s later (--hang-timeout 10)")
        if not 9 <= seen - stopped <= 40:  # silent from its last report, up to a second before the stop
            problems.append(f"the hang was seen {seen - stopped:.1f} s after the stop")
    return problems + same_as_one_process(example, result, "hung training", steps=40,
                                          positions=work / "positions") + left_on_hosts(work)


CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup/cpu")
CGROUP_STEM = "hetlaunch-ssh-test-"
CGROUP_PERIOD = 20000  # us: periods short enough not to stall a step


def remove_cgroups(stale_only):
    """The cgroups of this run (or, with `stale_only`, of killed earlier runs): their tasks killed,
    then the groups removed."""
    for group in CGROUP_ROOT.glob(CGROUP_STEM + "*"):
        pid = group.name[len(CGROUP_STEM):].split("-")[0]
        if stale_only and not processes.owner_gone(pid):
            continue
        if not stale_only and pid != str(os.getpid()):
            continue
        for _ in range(50):
            for task in (group / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(task), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


# How far slow_training cuts the slowed rank's quota. Under --on-slow rebalance the samplers move
# work off the rank at each window's end, and the windows after a halving measured 0.41 to 0.66 of
# the earlier rate, at --slow-factor 1.5's line of 0.67: in one of four runs here none was named
# while the weights went from 3:1 to 6:1. A quarter measures about 0.23. slow_training_exclude,
# where no work moves, halves it.
SLOWDOWN = 4
SLOW_JOB_WEIGHTS = (3, 1)  # hosts 0 and 1 of slow_job, as their quotas make them
CGROUP_SHARES = 65536  # 64 busy tasks' worth: ahead of the other suites on the machine


def cgroup(name, share_of_core, period_us=CGROUP_PERIOD):
    """A cgroup v1 cpu group of this run whose tasks get `share_of_core` of one core (set_share).
    Its cpu.shares put it ahead of the machine's other work, so that its quota, not the load, sets
    its speed: with the default shares a group weighs as one task among all of the machine's."""
    group = CGROUP_ROOT / f"{CGROUP_STEM}{os.getpid()}-{name}"
    group.mkdir()
    (group / "cpu.shares").write_text(str(CGROUP_SHARES))
    set_share(group, share_of_core, period_us)
    return group


def set_share(group, share_of_core, period_us=CGROUP_PERIOD):
    """`group`'s tasks get `share_of_core` of one core each period of `period_us`, lengthened where
    the quota would be under the kernel's least, 1 ms."""
    period = max(period_us, int(1000 / share_of_core) + 1)
    (group / "cpu.cfs_period_us").write_text(str(period))
    (group / "cpu.cfs_quota_us").write_text(str(int(period * share_of_core)))


class in_background:
    """A thread running self.watch() while the `with` block runs; self.done is set at its end."""

    def __enter__(self):
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.done.set()
        self.thread.join()


class throttle(in_background):
    """While it runs, each new worker of `script` on host k has its main thread, which computes
    (OMP_NUM_THREADS=1), moved into `groups[k]` once it has a second thread. Threads it starts
    later follow it; the quota slows its forwards and backwards as a slower GPU would, and the
    rank's own rate (its computation, before the all-reduce) with them. With `whole_worker`, every
    thread of the worker moves, those it started before (gloo's for the default group) included:
    the node is slower at everything, its communication too."""

    def __init__(self, script, groups, whole_worker=False):
        self.script, self.groups, self.moved = script, groups, set()
        self.into = "cgroup.procs" if whole_worker else "tasks"

    def watch(self):
        while not self.done.is_set():
            workers = workers_on(list(self.groups), self.script)
            for host, group in self.groups.items():
                for pid in workers[host]:
                    if pid in self.moved:
                        continue
                    try:
                        if len(list(pathlib.Path(f"/proc/{pid}/task").iterdir())) < 2:
                            continue
                        (group / self.into).write_text(str(pid))
                        self.moved.add(pid)
                    except OSError:
                        pass
            time.sleep(0.05)


class cut_quota_at(in_background):
    """While it runs, `group`'s quota is divided by `by` once rank 0's progress file says `step`
    steps."""

    def __init__(self, progress, group, step, by):
        self.progress, self.group, self.step, self.by = progress, group, step, by

    def watch(self):
        while not self.done.is_set():
            try:
                done = int(self.progress.read_text())  # rank 0 rewrites it each step
            except (OSError, ValueError):
                done = 0
            if done >= self.step:
                quota = int((self.group / "cpu.cfs_quota_us").read_text())
                period = int((self.group / "cpu.cfs_period_us").read_text())
                set_share(self.group, quota / period / self.by, period)
                return
            time.sleep(0.02)


def slow_job(b, work, c, port, on_slow, train, cut_by):
    """The slow-rank cases' job: examples/train_shares.py on DDP/gloo over hosts 0 and 1 at 3:1
    weights (given in the hostfile, as `calibrate --write-hostfile` writes them), their workers'
    computing threads at 60% and 20% of a core, under `run --slow-factor 1.5` and `on_slow`; host
    1's quota is divided by `cut_by` once rank 0 reports step 60. `train`: the script's steps and
    further arguments. Writes work/progress and work/report.json; returns finish()'s (code, out,
    err). The cgroups are removed whatever happens."""
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_shares.py"
    fast, slow = cgroup("fast", 0.6), cgroup("slow", 0.2)
    hf = hostfile(work, [f"{V4[k]} slots=1 weight={SLOW_JOB_WEIGHTS[k]}" for k in range(2)])
    progress = work / "progress"
    try:
        with throttle("train_shares.py", {0: fast, 1: slow}), cut_quota_at(progress, slow, 60, by=cut_by):
            proc = hetlaunch_on_host0(b, [
                "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--kill-after", str(KILL_AFTER),
                "--global-batch", "960", "--env", "GLOO_SOCKET_IFNAME=eth0", "--env", "OMP_NUM_THREADS=1",
                "--master-port", port, "--slow-factor", "1.5", *on_slow, *events_flag(work),
                "--", str(example), "--features", "128", "--hidden", "384", "--samples", "96000", "--warmup", "0",
                *train, "--progress", str(progress), "--report", str(work / "report.json")])
            return finish(proc, timeout=400)
    finally:
        remove_cgroups(stale_only=False)


def case_slow_training(b, w, work, c):
    """A mixed job at 3:1 speeds over real sshd: host 0's worker at 60% of a core, host 1's at 20%
    (cgroup v1 cpu quotas on their computing threads), examples/train_shares.py on DDP/gloo, the
    weights 3:1 in the hostfile (as `calibrate --write-hostfile` writes them: the shares suite
    runs that path), under `run --slow-factor 1.5 --on-slow rebalance` for 120 steps. For 60 steps
    nobody is slow: the T4-like rank is judged against its own rate, not the fast one's. Then host
    1's quota is cut to a SLOWDOWN-th: rank_slow names rank 1 on node 1 alone, first within two
    windows of 10 steps, and the samplers move work off it (the final weights are further apart
    than the given ones). Nothing is left running."""
    weights = SLOW_JOB_WEIGHTS
    report = work / "report.json"
    code, out, err = slow_job(b, work, c, "29737", ["--on-slow", "rebalance"], ["--steps", "120"], SLOWDOWN)
    problems = [] if code == 0 else [f"run exited {code}:\n{err[-3000:]}"]
    events, _ = job_events.read(work / "events.jsonl")
    named = [(e["node"], e["host"], e["rank"], e["step"]) for e in events if e["event"] == "rank_slow"]
    rates = [(e["samples_per_second"], e["expected"]) for e in events if e["event"] == "rank_slow"]
    final = json.loads(report.read_text())["weights"] if report.exists() else None
    print(f"     slow training: weights {weights}; rank_slow {named} (rate, expected: {rates}); final weights {final}")
    # One event an episode: once the samplers have moved work off rank 1, a shorter computation
    # fits its quota's periods better, and a window can come back above its expected rate / 1.5,
    # which ends the episode; a later window below it starts another. Each names rank 1.
    if not named or any(n[:3] != (1, V4[1], 1) for n in named):
        problems.append(f"rank_slow events {named}, expected rank 1 of node 1 alone:\n{err[-3000:]}")
    elif not 60 <= named[0][3] <= 60 + 3 * 10:  # two windows after the change, the change's own included
        problems.append(f"rank 1 was named at step {named[0][3]}, the quota was cut at step 60")
    if report.exists():
        final = [float(x) for x in final or []]
        if len(final) != 2 or final[0] / final[1] < 1.4 * weights[0] / weights[1]:
            problems.append(f"after the slowdown the weights are {final}, given {weights}: no work moved")
    elif code == 0:
        problems.append("no report")
    return problems + left_on_hosts(work)


def last_window_rates(metrics):
    """{host: samples per second of its rank's last window} from a `run --metrics` file of one rank a
    node."""
    found = {}
    if metrics.exists():
        for line in metrics.read_text().splitlines():
            m = re.fullmatch(r'hetlaunch_rank_samples_per_second\{rank="\d+",node="\d+",host="([^"]+)"\} (\S+)', line)
            if m:
                found[m.group(1)] = float(m.group(2))
    return found


def off_by(value, against):
    """How far `value` is from `against`, as a signed percentage of it: "+12%"."""
    return f"{(value / against - 1) * 100:+.0f}%"


def case_calibrate_advice(b, w, work, c):
    """Which nodes pay their way: three hosts whose workers get 1, 1/3 and 1/30 of a core (cgroup v1
    quotas on every thread of the worker, its communication's too) run examples/train_shares.py on
    DDP/gloo. `calibrate --json` measures each node (its rate and its own work between steps), the
    all-reduce and the all-reduce without each node, and predicts the step of the whole job and of
    the job without each node; then each of those four jobs runs, split by the measured rates, and
    its step is measured. The predictions and the measured steps are printed side by side, and each
    job's prediction from its ranks' own rates in it (the errors are measurements of a shared
    machine, docs/performance.md); the test asks for a prediction of each job, each figure
    measured, and every job to run. With ADVICE_CALIBRATE_AGAIN=1 in its environment `calibrate`
    measures once more after the jobs and prints how far the machine's rates moved (a measurement
    for docs/performance.md that checks nothing more: a minute and more a run, left out of CI).
    ADVICE_CALIBRATE_STEPS and ADVICE_JOB_STEPS (40 and 30 unless set) make calibration and the
    jobs' timed steps longer: each core of a shared machine changes speed on its own for seconds
    to minutes (tools/machine_speed.py), and longer windows measure both at the mean of that.

    The quotas' periods are the shortest the kernel allows (its least quota is 1 ms: 3 ms for the
    third, 30 ms for the thirtieth), and a step of 2,400 samples takes several periods: a node whose
    quota its computation has used up waits for the next period at each wake-up of its all-reduce,
    which a longer period would turn from a slower node into a bimodal one."""
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_shares.py"
    groups = {0: cgroup("advice-full", 1.0), 1: cgroup("advice-third", 1 / 3, period_us=1000),
              2: cgroup("advice-thirtieth", 1 / 30, period_us=1000)}
    common = [*ssh_args(c.work), *TORCHRUN, "--kill-after", str(KILL_AFTER), "--global-batch", "2400",
              "--env", "GLOO_SOCKET_IFNAME=eth0", "--env", "OMP_NUM_THREADS=1"]
    train = ["--features", "64", "--hidden", "256", "--samples", "192000"]
    hf = hostfile(work, [f"{V4[i]} slots=1" for i in range(3)])
    calibrate_steps = int(os.environ.get("ADVICE_CALIBRATE_STEPS", "40"))
    job_steps = int(os.environ.get("ADVICE_JOB_STEPS", "30"))

    def calibrate(port):
        code, out, err = finish(hetlaunch_on_host0(b, [
            "calibrate", "--hostfile", str(hf), *common, "--master-port", str(port), "--calibrate-steps", str(calibrate_steps),
            "--json", "--", str(example), *train, "--steps", "1000"]), timeout=300 + calibrate_steps)
        return json.loads(out) if code == 0 else f"calibrate exited {code}:\n{err[-3000:]}"

    problems, measured, in_job, again = [], {}, {}, None
    try:
        with throttle("train_shares.py", groups, whole_worker=True):
            advice = calibrate(29741)
            if isinstance(advice, str):
                return [advice] + left_on_hosts(work)
            rates = {n["host"]: n["samples_per_second"] for n in advice["nodes"]}
            for k, p in enumerate(advice["prediction"]):
                hosts = [h for h in V4[:3] if h != p["without"]]
                job_hf = hostfile(work, [f"{h} slots=1 weight={rates[h]:.6g}" for h in hosts], f"job-{k}")
                report, metrics = work / f"report-{k}.json", work / f"metrics-{k}.prom"
                code, out, err = finish(hetlaunch_on_host0(b, [
                    "run", "--hostfile", str(job_hf), *common, "--master-port", str(29743 + 2 * k),
                    "--metrics", str(metrics), "--", str(example), *train, "--steps", str(job_steps), "--warmup", "6",
                    "--report", str(report)]), timeout=300 + 2 * job_steps)
                if code != 0 or not report.exists():
                    problems.append(f"the job without {p['without']} exited {code}:\n{err[-2000:]}")
                    continue
                r = json.loads(report.read_text())
                measured[p["without"]] = r["seconds"] / r["steps"]
                in_job[p["without"]] = last_window_rates(metrics)
            if os.environ.get("ADVICE_CALIBRATE_AGAIN") == "1":
                again = calibrate(29751)
    finally:
        remove_cgroups(stale_only=False)
    if isinstance(again, str):
        problems.append(again)
    predicted = {p["without"]: p["step_seconds"] for p in advice["prediction"]}
    marked = [p["without"] for p in advice["prediction"] if p.get("slows_the_job")]
    own = {n["host"]: n.get("overhead_seconds") for n in advice["nodes"]}
    apart = {n["host"]: n.get("allreduce_seconds_without") for n in advice["nodes"]}
    print(f"     calibrate advice: all-reduce {advice.get('allreduce_seconds')} s, without each node {apart}; "
          f"rates {rates}; own work between steps {own}")
    for who, seconds in predicted.items():
        got = measured.get(who)
        error = off_by(seconds, got) if got else "?"
        print(f"     {'the whole job' if who is None else 'without ' + who}: predicted {seconds * 1000:.1f} ms, "
              f"measured {got * 1000 if got else float('nan'):.1f} ms ({error})")
    print(f"     marked as slowing the job: {marked}")
    for who, job_rates in in_job.items():
        # The job's own rates (its ranks' last window) in the prediction's place: what is left of
        # the error is the model's, not the rates'.
        hosts = [h for h in V4[:3] if h != who]
        allreduce = advice["allreduce_seconds"] if who is None else apart[who]
        # Not for a job whose ranks did not all report a rate (or an infinite one), nor without
        # its all-reduce measured: the checks below name those.
        if sorted(job_rates) != sorted(hosts) or not all(0 < job_rates[h] < math.inf for h in hosts) or \
                not isinstance(allreduce, (int, float)):
            continue
        total = sum(rates[h] for h in hosts)
        slowest = max(2400 * rates[h] / total / job_rates[h] + (own[h] or 0) for h in hosts)
        moved = {h: off_by(job_rates[h], rates[h]) for h in hosts}
        print(f"     {'the whole job' if who is None else 'without ' + who}: rates in the job against the "
              f"calibration {moved}; with them the prediction is {(slowest + allreduce) * 1000:.1f} ms "
              f"({off_by(slowest + allreduce, measured[who])})")
    if isinstance(again, dict):
        moved = {n["host"]: off_by(n["samples_per_second"], rates[n["host"]]) for n in again["nodes"]}
        later = {p["without"]: f"{p['step_seconds'] * 1000:.1f} ms" for p in again["prediction"]}
        print(f"     calibrated again after the jobs: rates moved {moved}; all-reduce "
              f"{again.get('allreduce_seconds')} s; predictions {later}")
    if sorted(predicted, key=str) != sorted([None, *V4[:3]], key=str):
        problems.append(f"predictions for {list(predicted)}, expected the whole job and each without one node")
    if not isinstance(advice.get("allreduce_seconds"), (int, float)) or advice["allreduce_seconds"] < 0:
        problems.append(f"allreduce_seconds {advice.get('allreduce_seconds')!r}")
    if not all(isinstance(o, (int, float)) and o >= 0 for o in own.values()):
        problems.append(f"overhead_seconds {own!r}")
    if not all(isinstance(a, (int, float)) and a >= 0 for a in apart.values()):
        problems.append(f"allreduce_seconds_without {apart!r}")
    return problems + left_on_hosts(work)


def case_preflight_mismatch(b, w, work, c):
    """Two hosts of different torch: host 0's Python is this machine's (torch 1.13), host 1's the
    sid chroot's (torch 2.14), each as `--python` finds it on that host. `preflight` names both
    versions; `run --preflight` refuses the job before any node starts, with preflight_failed and
    --exit-status-by-reason's 6."""
    if CHROOT_PYTHON is None:
        return ["needs --chroot: the second torch is the chroot's"]
    mixed = work / "python-by-host"
    mixed.write_text(f"#!/bin/sh\ncase $(hostname) in {HOSTS[1]}) exec {CHROOT_PYTHON} \"$@\";; esac\n"
                     "exec /usr/bin/python3 \"$@\"\n")
    mixed.chmod(0o755)
    hf = hostfile(work, [f"{V4[0]} slots=1", f"{V4[1]} slots=1"])
    code, out, err = finish(hetlaunch_on_host0(b, ["preflight", "--hostfile", str(hf), *ssh_args(c.work),
                                                   "--python", str(mixed), "--json"]))
    problems = [] if code == 1 else [f"preflight exited {code}, expected 1:\n{err[-2000:]}"]
    facts = json.loads(out) if out.strip().startswith("{") else {}
    torches = [h["torch"] for h in facts.get("hosts", [])]
    print(f"     preflight: the hosts' torch {torches}; {err.strip()}")
    if len(torches) != 2 or not torches[0].startswith("1.13") or not torches[1].startswith("2.14"):
        problems.append(f"the hosts' torch versions: {torches}")
    said = f"hosts '{V4[0]}' and '{V4[1]}' differ in torch (major.minor): {torches[0] if torches else '?'} and"
    if said not in err:
        problems.append(f"no {said!r} in {err!r}")
    start = time.monotonic()
    code, out, err = finish(hetlaunch_on_host0(b, [
        "run", "--hostfile", str(hf), *ssh_args(c.work), *TORCHRUN, "--preflight", "--python", str(mixed),
        "--exit-status-by-reason", *events_flag(work), "--", str(w), str(work)]))
    print(f"     run --preflight refused the job in {time.monotonic() - start:.1f} s")
    if code != 6:
        problems.append(f"run exited {code}, expected preflight_failed's 6:\n{err[-2000:]}")
    problems += events_problems(work, [("preflight", 0), ("job_exited", 0, "preflight_failed")], code)
    if list(work.glob("worker-*")):
        problems.append("a worker ran")
    return problems + left_on_hosts(work)


def case_slow_training_exclude(b, w, work, c):
    """The same 3:1 job, its weights given (3:1), under `run --slow-factor 1.5 --on-slow exclude
    --restarts 1`, a checkpoint every 10 steps (examples/train_shares.py --checkpoint-dir, rank 0's
    HETLAUNCH_CHECKPOINT line). Host 1's quota is halved at step 60: rank_slow names rank 1, and at
    rank 0's next checkpoint line the job stops and restarts without host 1 (restart reason slow,
    host 1 excluded, with no --exclude-failed), resumes from that checkpoint on host 0 alone and
    trains to its last step. Nothing is left running."""
    report, ckpt = work / "report.json", work / "ckpt"
    ckpt.mkdir()
    ckpt.chmod(0o777)
    code, out, err = slow_job(b, work, c, "29739", ["--on-slow", "exclude", "--restarts", "1"],
                              ["--steps", "140", "--checkpoint-dir", str(ckpt), "--every", "10"], 2)
    problems = [] if code == 0 else [f"run exited {code}:\n{err[-3000:]}"]
    events, _ = job_events.read(work / "events.jsonl")
    named = [(e["attempt"], e["node"], e["host"], e["rank"], e["step"]) for e in events if e["event"] == "rank_slow"]
    restarts = [(e["reason"], e["failed_host"], e["excluded"], e["world_size"]) for e in events
                if e["event"] == "restart"]
    print(f"     slow training, exclude: rank_slow {named}; restarts {restarts}")
    if [n[:4] for n in named] != [(0, 1, V4[1], 1)]:
        problems.append(f"rank_slow events {named}, expected rank 1 of node 1 alone:\n{err[-3000:]}")
    if restarts != [("slow", V4[1], [V4[1]], 1)]:
        problems.append(f"restart events {restarts}, expected one without host 1 (reason slow)")
    if "to start again without node 1" not in err:
        problems.append(f"no stop at the checkpoint in:\n{err[-2000:]}")
    if report.exists() and json.loads(report.read_text())["world_size"] != 1:
        problems.append(f"the last attempt's world: {json.loads(report.read_text())['world_size']}")
    elif not report.exists() and code == 0:
        problems.append("no report")
    return problems + left_on_hosts(work)


def case_restart_min_nodes(b, w, work, c):
    """--min-nodes 3 keeps the job from shrinking: node 2 fails, and run fails instead."""
    code, out, err = finish(restart_run(b, work, c, "29715", ["--restarts", "1", "--exclude-failed",
                                                              "--min-nodes", "3"]))
    problems = [] if code == 1 else [f"run exited {code}, expected 1:\n{err[-3000:]}"]
    if attempt_records(work, 1):
        problems.append("a second attempt ran")
    expected = "without it the job would have 2 nodes, fewer than --min-nodes 3: not restarting"
    if expected not in err:
        problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2),
                                       *exited(0, n0="stopped", n1="stopped", n2="failed"),
                                       ("job_exited", 0, "too_few_nodes")], code)
    return problems + left_on_hosts(work)


def case_restart_exhausted(b, w, work, c):
    """Node 2 fails in every attempt: after --restarts 1 the job fails, and the events say the
    restarts ran out."""
    code, out, err = finish(restart_run(b, work, c, "29719", ["--restarts", "1"], mode="always"))
    problems = [] if code == 1 else [f"run exited {code}, expected 1:\n{err[-3000:]}"]
    expected = failure_line("no restart left (--restarts 1): the job failed after 2 attempts")
    if not re.search(expected, err):
        problems.append(f"no '{expected}' in:\n{err[-2000:]}")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2),
                                       *exited(0, n0="stopped", n1="stopped", n2="failed"), ("restart", 1),
                                       *started(1, 0, 1, 2), *exited(1, n0="stopped", n1="stopped", n2="failed"),
                                       ("job_exited", 1, "restarts_exhausted")], code)
    return problems + left_on_hosts(work)


def case_spare(b, w, work, c):
    """A job on hosts 0 and 1 (4 + 2 workers) with host 2 standing by (--spare, slots=auto: asked
    only when needed). Node 1's worker fails: the spare takes node 1's place, with its index, its
    2 workers and its share, so every rank, the world size and the node batches of attempt 2 equal
    attempt 1's, and node 1's workers run on host 2. The default --kill-after. Printed: the time
    from the failure to the spare's workers running."""
    code, out, err = finish(restart_run(b, work, c, "29720", ["--restarts", "1", "--global-batch", "12",
                                                              "--spare", f"{V4[2]}:auto", "--gpu-count-command", "echo 4"],
                                        mode="fail1", hosts=2, kill_after=()))
    problems = [] if code == 0 else [f"run exited {code}, expected 0:\n{err[-3000:]}"]
    first, second = attempt_records(work, 0), attempt_records(work, 1)
    same = ["RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE", "HETLAUNCH_NODE_BATCH",
            "HETLAUNCH_NODE_BATCH_OFFSET", "MASTER_ADDR"]
    if sorted(first) != list(range(6)) or sorted(second) != list(range(6)):
        problems.append(f"ranks of attempt 1: {sorted(first)}, of attempt 2: {sorted(second)}")
    else:
        for rank in range(6):
            if [first[rank][n] for n in same] != [second[rank][n] for n in same]:
                problems.append(f"rank {rank}: attempt 1 {first[rank]}, attempt 2 {second[rank]}")
            host = HOSTS[2] if second[rank]["GROUP_RANK"] == "1" else HOSTS[0]
            if second[rank]["HOST"] != host:
                problems.append(f"rank {rank} of attempt 2 ran on {second[rank]['HOST']}, not {host}")
    line = (f"restart 1 of 1: attempt 2 starts on 2 nodes (node 1 on spare '{V4[2]}' instead of '{V4[1]}'), "
            "world size 6")
    if line not in err:
        problems.append(f"no '{line}' in:\n{err[-2000:]}")
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1), *exited(0, n0="stopped", n1="failed"),
                                       ("restart", 1), ("node_started", 1, 0, V4[0], None),
                                       ("node_started", 1, 1, V4[2], None),
                                       ("node_exited", 1, 0, V4[0], "succeeded"),
                                       ("node_exited", 1, 1, V4[2], "succeeded"), ("job_exited", 1, "succeeded")], code)
    events, _ = job_events.read(work / "events.jsonl")
    restart = [e for e in events if e["event"] == "restart"]
    want = {"attempt": 1, "failed_node": 1, "failed_host": V4[1], "excluded": [],
            "replaced": [{"node": 1, "host": V4[1], "spare": V4[2]}], "nodes": 2, "world_size": 6}
    if not restart or {k: restart[0][k] for k in want} != want:
        problems.append(f"restart event {restart}, expected {want}")
    failed_at = work / "failed-at-0"
    if failed_at.exists() and sorted(second) == list(range(6)):
        running = min(float(r["STARTED"]) for r in second.values() if r["GROUP_RANK"] == "1")
        seconds = running - float(failed_at.read_text())
        # Printed, not asserted: a time on a shared machine is a benchmark's (docs/performance.md).
        print(f"     spare: {seconds:.2f} s from the failure to the spare's workers running (--kill-after 10)")
    return problems + left_on_hosts(work)


def case_node_exited_in_time(b, w, work, c):
    """Each node's program writes the time just before it ends (node 0 after 1 s, node 1 after 2,
    node 2 fails once run has recorded both of their ends): each node_exited event comes no
    later than 1 s after it. Node 2 waits on the events file rather than a clock, so a node
    that ssh starts late on a loaded machine is not stopped by node 2's failure."""
    events = work / "events.jsonl"
    wait_for_others = (f'n=0; until [ "$(grep -c \'"node_exited".*"node": [01],\' {events})" = 2 ]; do '
                       'n=$((n+1)); [ $n -gt 600 ] && break; sleep 0.1; done')
    program = (f'case $(hostname) in *-h0) sleep 1; r=0;; *-h1) sleep 2; r=0;; *) {wait_for_others}; r=3;; esac; '
               f'date +%s.%N > {work}/end-$(hostname); exit $r')
    hf = hostfile(work, [f"{V4[i]} slots=1" for i in range(3)])
    code, out, err = finish(hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work),
                                                   *events_flag(work), "--program", "sh", "--program", "-c",
                                                   "--program", program, "--", "t.py"]))
    problems = [] if code == 3 else [f"run exited {code}, expected 3:\n{err[-2000:]}"]
    problems += events_problems(work, [("planned", 0), *started(0, 0, 1, 2), *exited(0, n0="succeeded"),
                                       *exited(0, n1="succeeded"), *exited(0, n2="failed"),
                                       ("job_exited", 0, "worker_failed")], code)
    events, _ = job_events.read(work / "events.jsonl")
    late = []
    for e in events:
        if e["event"] != "node_exited":
            continue
        end = work / f"end-{HOSTS[e['node']]}"
        if not end.exists():
            problems.append(f"node {e['node']} wrote no end time")
            continue
        late.append(job_events.seconds(e) - float(end.read_text()))
    if late:
        print(f"     node_exited came {min(late):.3f} to {max(late):.3f} s after each node's program ended")
        if max(late) > 1.0:
            problems.append(f"a node_exited came {max(late):.2f} s after the node ended, more than 1 s")
    return problems + left_on_hosts(work)


def case_restart_interrupt(b, w, work, c):
    """SIGINT never restarts: with --restarts 2, run stops every node and exits 130."""
    proc = restart_run(b, work, c, "29716", ["--restarts", "2"], mode="hang")
    first_attempt_running(work, proc)
    problems = [] if len(attempt_records(work, 0)) == 7 else ["the workers did not all start"]
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc, timeout=60)
    if code != 130:
        problems.append(f"run exited {code}, expected 130:\n{err[-2000:]}")
    if "restart" in err or attempt_records(work, 1):
        problems.append(f"a signal restarted the job:\n{err[-2000:]}")
    return problems + left_on_hosts(work)


def case_restart_refused(b, w, work, c):
    """Restart flags that cannot work are refused before any connection (sshd logs none)."""
    hf = hostfile(work, [f"{V4[i]} slots={NPROC[i]}" for i in range(3)])
    accepted = sum(c.log(i).count("Accepted publickey") for i in range(3))
    problems = []
    for flags, status, message in [
            (["--restarts", "-1"], 2, "--restarts needs an integer from 0 to 1000000, got '-1'"),
            (["--restarts", "two"], 2, "--restarts needs an integer from 0 to 1000000, got 'two'"),
            (["--min-nodes", "0", "--restarts", "1"], 2, "--min-nodes needs an integer from 1 to 2147483647, got '0'"),
            (["--exclude-failed"], 2, "--exclude-failed needs --restarts N"),
            (["--min-nodes", "2"], 2, "--min-nodes needs --restarts N"),
            (["--restarts", "1", "--min-nodes", "2"], 2, "--min-nodes needs --exclude-failed"),
            (["--restarts", "1", "--exclude-failed", "--min-nodes", "4"], 1,
             "--min-nodes 4 is more than the plan's 3 nodes"),
            (["--restarts", "1", "--ssh", "/nonexistent/ssh"], 1,
             "--ssh '/nonexistent/ssh': cannot run it here: No such file or directory")]:
        code, out, err = finish(hetlaunch_on_host0(b, ["run", "--hostfile", str(hf), *ssh_args(c.work), *flags,
                                                      "--", "t.py"]))
        if code != status or message not in err:
            problems.append(f"{flags}: exit {code}, expected {status} with '{message}':\n{err}")
    if sum(c.log(i).count("Accepted publickey") for i in range(3)) != accepted:
        problems.append("a refused run connected to a host")
    return problems

CASES = {
    "job": case_job,
    "worker_crash": case_worker_crash,
    "sshd_down": case_sshd_down,
    "interrupt": case_interrupt,
    "teardown_orphans": case_teardown_orphans,
    "invalid_hostfile": case_invalid_hostfile,
    "hostile_arguments": case_hostile_arguments,
    "discover": case_discover,
    "restart_whole": case_restart_whole,
    "restart_none_left": case_restart_none_left,
    "restart_exclude_failed": case_restart_exclude_failed,
    "restart_master_moves": case_restart_master_moves,
    "restart_training": case_restart_training,
    "restart_min_nodes": case_restart_min_nodes,
    "restart_exhausted": case_restart_exhausted,
    "spare": case_spare,
    "spare_training": case_spare_training,
    "grow_back_training": case_grow_back_training,
    "hung_training": case_hung_training,
    "slow_training": case_slow_training,
    "slow_training_exclude": case_slow_training_exclude,
    "calibrate_advice": case_calibrate_advice,
    "preflight_mismatch": case_preflight_mismatch,
    "node_exited_in_time": case_node_exited_in_time,
    "restart_interrupt": case_restart_interrupt,
    "restart_refused": case_restart_refused,
}


CHROOT_ONLY = {"preflight_mismatch"}


def chroot_torchrun(suite, work_root):
    """The chroot of `suite` mounted (proc, /dev, sysfs, the source tree and `work_root` at their
    own paths) and a torchrun of `work_root` that runs the chroot's, in the directory it was
    started in: (the mount, which releases it on exit, and the torchrun flags)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "chroot"))
    import suites_test

    root, how = suites_test.build(suite, suites_test.SUITES[suite]["extra"])
    if root is None:
        raise RuntimeError(f"no {suite} chroot: {how}")
    m = suites_test.mounted(root, [str(pathlib.Path(__file__).resolve().parents[2]), str(work_root)])
    root = m.root  # this suite's own view of the chroot
    # Named torchrun, as a node's own is: run prefixes the workers' lines (and relays their errors)
    # under a program of that name, on torch 2.14 as on 1.13.
    (work_root / f"{suite}-bin").mkdir(mode=0o755)
    wrapper = work_root / f"{suite}-bin" / "torchrun"
    # chroot starts in its /; the node's directory is the same path inside. Debian's torch 2.x has
    # no libuv, which its TCPStore takes by default: tests/chroot/sitecustomize.py with USE_LIBUV=0
    # turns that default off (docs/compatibility.md).
    site = pathlib.Path(suites_test.__file__).resolve().parent
    wrapper.write_text(f"#!/bin/sh\nexec {shutil.which('chroot') or '/usr/sbin/chroot'} {root} /bin/sh -c 'cd \"$0\" "
                       f"2>/dev/null; export USE_LIBUV=0 PYTHONPATH={site}; exec /usr/bin/torchrun \"$@\"' "
                       "\"$PWD\" \"$@\"\n")
    wrapper.chmod(0o755)
    # The chroot's Python, for a host whose Python is another torch's (preflight).
    global CHROOT_PYTHON
    CHROOT_PYTHON = work_root / f"python-{suite}"
    CHROOT_PYTHON.write_text(f"#!/bin/sh\nexec {shutil.which('chroot') or '/usr/sbin/chroot'} {root} /usr/bin/python3 \"$@\"\n")
    CHROOT_PYTHON.chmod(0o755)
    print(f"ssh: torchrun in the {suite} chroot ({how})")
    return m, torchrun_flags.torchrun(wrapper)


def main():
    binary, worker = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    suite = None
    if rest[:1] == ["--chroot"]:
        suite, rest = rest[1], rest[2:]
    without = []
    while rest[:1] == ["--without"]:
        if len(rest) < 2:
            sys.exit("--without needs the name of a case")
        without.append(rest[1])
        rest = rest[2:]
    pick(CASES, without)  # an unknown name is refused, as a case to run would be
    # A case that compares this machine's torch with the chroot's runs only with a chroot.
    chosen = pick(CASES, rest) if rest or suite else [n for n in CASES if n not in CHROOT_ONLY]
    chosen = [n for n in chosen if n not in without]
    if os.geteuid() != 0:
        print("ssh_test: needs root (network namespaces)")
        return 1
    remove_leftovers()
    remove_cgroups(stale_only=True)
    work_root = pathlib.Path(tempfile.gettempdir()) / f"{WORK_STEM}{os.getpid()}"
    work_root.mkdir(mode=0o755)
    c = cluster(work_root)
    mount = None

    def teardown():
        remove_cgroups(stale_only=False)
        c.remove()
        if mount:
            mount.__exit__(None, None, None)
        shutil.rmtree(work_root, ignore_errors=True)

    def leftovers():
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return ([f"namespaces left behind: {left}"] if PREFIX in left else []) + \
            [f"process left behind: {pid} {cmd}" for pid, cmd in job_processes(str(work_root))]

    global TORCHRUN
    with Suite("ssh" if suite is None else f"ssh in {suite}", teardown, leftovers) as run:
        if suite:
            # Mounted before sshd starts: each host's sshd, in its own mount namespace, sees them.
            mount, TORCHRUN = chroot_torchrun(suite, work_root)
            mount.__enter__()
            torch = mount.run(["python3", "-c", "import torch; print(torch.__version__)"])
            print(f"ssh: the nodes' torch {torch.stdout.strip() or torch.stderr[-500:]}", flush=True)
        c.create()
        for name in chosen:
            work = work_root / name
            work.mkdir()
            work.chmod(0o755)
            run.case(name, CASES[name], binary, worker, work, c)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
