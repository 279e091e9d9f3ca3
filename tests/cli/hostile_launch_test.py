#!/usr/bin/env python3
"""The launch commands under hostile conditions, each checked through the program that will read
what hetlaunch writes, or with a stand-in for ssh that misbehaves:

  started    `run` counts a node as started only when its remote command said so: an ssh that
             prints a banner and exits 0, or closes its output and exits 0, fails the job;
  discover   a GPU-count answer that floods, hangs, closes its output and keeps running, or
             prints 0 is a bounded error that names the host and shows what it printed; SIGTERM
             during discovery stops every ssh child;
  yaml       every string of a JobSet manifest reads back as the same string through PyYAML and
             through `kubectl` (YAML and JSON): numbers in every spelling, YAML 1.1 words, C1
             controls; text that is not UTF-8 is refused, naming it;
  env-file   a NUL byte in an --env-file is refused with its line and column;
  teardown   a node's processes are all stopped, also a child forked during the teardown whose
             parent then exits (a wrapper given as --program that starts a process ignoring
             SIGTERM when it gets SIGTERM), and after a SIGINT right after the start; a node
             whose connection is slower than --kill-after + 5 s still ends by itself before run,
             and a second signal still stops run at once; an orphan forked after the pid cursor
             wrapped round (a host with a pid namespace of its own) is stopped too;
  messages   --env with a bad name, a --group past the limit, jobset --env NAME, sbatch's help,
             compress of host lists scontrol reads and of one it refuses, run's exit status in
             its help.

Every command runs under a 1 GiB address-space limit and a timeout; after each case no process
the case started is left (its stand-ins carry a marker in their command line).
(The #SBATCH lines are checked on the real Slurm, tests/slurm/cluster_test.py, case directives.)

Without kubectl (Debian: kubernetes-client) the rest runs and the suite ends with 77, skipped,
saying so; with --require-kubectl (the real-component configurations) that is a failure.

usage: hostile_launch_test.py HETLAUNCH [--require-kubectl]
"""
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import processes  # noqa: E402
from harness import Suite  # noqa: E402

SUITE = None  # the running Suite, which every check reports to
SKIPPED = []  # parts that could not run here


def check(name, ok, detail=""):
    SUITE.report(name, [] if ok else [str(detail)])


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


class runner:
    def __init__(self, binary, tmp):
        self.binary = binary
        self.tmp = pathlib.Path(tmp)
        self.marker = f"hetlaunch-hostile-{os.getpid()}"
        # AddressSanitizer reserves terabytes of address space: a sanitized build is bounded by
        # its own resident-memory limit instead.
        probe = subprocess.run([binary, "--version"], capture_output=True, preexec_fn=limited)
        self.sanitized = b"AddressSanitizer" in probe.stderr
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        if self.sanitized:
            self.env["ASAN_OPTIONS"] = "hard_rss_limit_mb=1024"

    def stand_in(self, name, body):
        """An ssh stand-in: skips ssh's options up to `--`, exports HOST, then runs `body`."""
        path = self.tmp / name
        path.write_text(f"#!/bin/sh\n# {self.marker}\nwhile [ \"$1\" != \"--\" ]; do shift; done\n"
                        f"HOST=$2; export HOST; shift 2\n{body}\n")
        path.chmod(0o755)
        return str(path)

    def run(self, args, timeout=30, env=None, text=True):
        r = subprocess.run([self.binary, *args], capture_output=True, timeout=timeout, env=env or self.env,
                           preexec_fn=None if self.sanitized else limited)
        if text:
            return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
        return r.returncode, r.stdout, r.stderr

    def leftovers(self):
        """Processes whose command line names this run's marker (the stand-ins and their children)."""
        found = []
        for status in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if self.marker.encode() in status.read_bytes():
                    found.append(int(status.parent.name))
            except OSError:
                pass
        return [p for p in found if p != os.getpid()]

    def no_leftovers(self, name):
        deadline = time.monotonic() + 5
        left = self.leftovers()
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = self.leftovers()
        check(f"{name}: nothing left running", not left, f"left: {left}")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def started_cases(r):
    banner = r.stand_in("banner", 'echo "This account is for file transfer only."; exit 0')
    closed = r.stand_in("closed", "exec >&- 2>&-; exit 0")
    for name, ssh in (("banner", banner), ("closed", closed)):
        code, out, err = r.run(["run", "--hosts", "h1:1,h2:1", "--ssh", ssh, "--", "t.py"])
        check(f"started: a node whose ssh {name} and exits 0 fails the job", code == 1 and
              "node 0 ('h1'): ssh ended before the node started (exit status 0)" in err, (code, out, err))
    # Only the second host misbehaves: the first, started, is stopped; the job fails.
    mixed = r.stand_in("mixed", f'case $HOST in h2) echo banner; exit 0;; esac; exec sh -c "$*"')
    code, out, err = r.run(["run", "--hosts", "h1:1,h2:1", "--ssh", mixed, "--kill-after", "1", "--program", "sh",
                            "--program", "-c", "--program", f"exec sleep 60 # {r.marker}", "--", "t.py"])
    check("started: one node that never starts stops the others", code == 1 and
          "node 1 ('h2'): ssh ended before the node started (exit status 0)" in err and
          "node 0 ('h1'): stopped" in err, (code, out, err))
    r.no_leftovers("started")


def discover_cases(r):
    def discover(ssh_body, *extra, timeout=30):
        ssh = r.stand_in("count", ssh_body)
        t = time.monotonic()
        result = r.run(["discover", "--hosts", "a:auto,b:3", "--ssh", ssh, *extra], timeout=timeout)
        return (*result, time.monotonic() - t)

    code, out, err, _ = discover("exec yes 1")
    check("discover: a flooding answer is stopped at 64 KiB", code == 1 and
          "host 'a': 'nvidia-smi -L' printed more than 65536 bytes" in err, (code, err[:300]))
    code, out, err, _ = discover("exec yes 'GPU 0: x' >&2", "--gpu-count-command", "true")
    check("discover: a flooding error stream is stopped too", code == 1 and "printed more than 65536 bytes" in err,
          (code, err[:300]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, out, err, took = discover(f"exec sleep 300 # {r.marker}", "--discover-timeout", "2")
    check("discover: an answer that never comes times out", code == 1 and took < 10 and
          "host 'a': 'nvidia-smi -L' did not finish within 2 s (--discover-timeout)" in err, (code, err, took))
    code, out, err, took = discover(f"exec >&- 2>&-; exec sleep 300 # {r.marker}", "--discover-timeout", "2")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    check("discover: a child that closes its output and runs on times out", code == 1 and took < 10 and
          "did not finish within 2 s" in err, (code, err, took))
    # The two timed-out cases waited 4 s; a busy loop would have spent about that on the CPU.
    check("discover: waiting costs no CPU", cpu < 2.0, f"{cpu:.2f} s of CPU")
    code, out, err, _ = discover("echo 0", "--gpu-count-command", "x")
    check("discover: a count of 0 is shown", code == 1 and "printed no GPU count (expected one positive integer): "
          "it printed '0\\n'" in err, err)
    code, out, err, _ = discover("echo 'No devices were found'")
    check("discover: nvidia-smi's own words are shown", code == 1 and "(no 'GPU n:' lines): it printed "
          "'No devices were found\\n'" in err, err)
    code, out, err, _ = discover("printf 'GPU 0: A\\nGPU 1: B\\n'")
    check("discover: a real answer still counts", code == 0 and out == "a slots=2\nb slots=3\n", (code, out, err))
    r.no_leftovers("discover")

    # A signal during discovery stops every child: none is left, and the status says which signal.
    ssh = r.stand_in("slow", f"exec sleep 300 # {r.marker}")
    for sig in (signal.SIGTERM, signal.SIGINT):
        proc = subprocess.Popen([r.binary, "run", "--hosts", "a:auto,b:auto,c:auto", "--ssh", ssh, "--", "t.py"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=r.env)
        deadline = time.monotonic() + 10
        while len(r.leftovers()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        check(f"discover: {sig.name} stops every ssh child", proc.returncode == 128 + sig and
              b"stopping discovery" in err and not r.leftovers(), (proc.returncode, err, r.leftovers()))
        r.no_leftovers(f"discover {sig.name}")


# Strings that a YAML reader could take for another type, or that a reader would change.
YAML_VALUES = ["1e-4", "0x2a", "1_000", "012", "yes", "no", "on", "off", "~", "null", "Null", "NULL", "1:30", ".5",
               "-0", "+1", "0o17", "0b101", ".inf", "-.Inf", ".NaN", "true", "False", "y", "N", "=", "<<", "2001-12-14",
               "1.", "0.", "- x", "? x", "a: b", "a #b", "#x", "!x", "&x", "*x", "|", ">", "@x", "`x", "%x", "{}", "[]",
               "'", '"', "", " lead", "trail ", "a\u0085b", "a\u2028b", "a\u2029b", "\ufeffbom", "tab\tx", "a\nb", "\\",
               "caf\u00e9", "e1", "E", "1e3", "0.1", "inf", "nan", "8", "500m", "64Gi"]


def container(doc):
    return doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]


def yaml_cases(r):
    args = ["jobset", "--name", "t", "--image", "img", "--group", "1:8", "--cpu", "500m", "--memory", "64Gi"]
    for i, v in enumerate(YAML_VALUES):
        args += ["--env", f"V{i}={v}"]
    args += ["--", "train.py", *YAML_VALUES]
    expected_env = {f"V{i}": v for i, v in enumerate(YAML_VALUES)}

    def same(doc, how):
        c = container(doc)
        got_args = c["args"][c["args"].index("train.py") + 1:]
        got_env = {e["name"]: e.get("value") for e in c["env"] if "value" in e}
        bad = [(want, got) for want, got in zip(YAML_VALUES, got_args) if want != got]
        bad += [(k, expected_env[k], got_env.get(k)) for k in expected_env if got_env.get(k) != expected_env[k]]
        requests = c["resources"]["requests"]
        bad += [x for x in (("cpu", requests.get("cpu")), ("memory", requests.get("memory"))) if x[1] not in ("500m", "64Gi")]
        check(f"yaml: every argument and value reads back unchanged through {how}",
              not bad and len(got_args) == len(YAML_VALUES), bad[:8])

    for json_out in (False, True):
        code, out, err = r.run(args + [], text=True) if not json_out else r.run(args[:1] + ["--json"] + args[1:])
        if code != 0:
            check(f"yaml: manifest ({'json' if json_out else 'yaml'})", False, err)
            continue
        if json_out:
            same(json.loads(out), "json.loads")
        else:
            same(yaml.safe_load(out), "PyYAML (YAML 1.1)")
        kubectl = os.environ.get("HETLAUNCH_KUBECTL") or shutil.which("kubectl")
        if not kubectl:
            if "kubectl" not in SKIPPED:
                SKIPPED.append("kubectl")
            continue
        path = pathlib.Path(r.tmp) / ("m.json" if json_out else "m.yaml")
        path.write_text(out)
        k = subprocess.run([kubectl, "label", "--local", "-f", str(path), "x=y", "-o", "json"], capture_output=True,
                           text=True, timeout=60, env=dict(r.env, KUBECONFIG="/dev/null"))
        if k.returncode != 0:
            check(f"yaml: kubectl reads the {'JSON' if json_out else 'YAML'} manifest", False, k.stderr[:500])
        else:
            same(json.loads(k.stdout), f"kubectl ({'JSON' if json_out else 'YAML'})")

    # Text that is not UTF-8 cannot reach Kubernetes as it is: refused, naming what holds it.
    bad = "ok\udcff".encode("utf-8", "surrogateescape")
    for where, extra, name in ((["--", "t.py", bad], [], "the script argument 'ok\\xff'"),
                               (["--env", b"X=" + bad, "--", "t.py"], [], "the value of variable 'ok\\xff'"),
                               (["--torchrun-arg", b"--log-dir=" + bad, "--", "t.py"], [], "the torchrun argument"),
                               (["--", bad], [], "the script 'ok\\xff'")):
        for json_out in ([], ["--json"]):
            argv = [a if isinstance(a, bytes) else a.encode() for a in
                    ["jobset", *json_out, "--name", "t", "--image", "img", "--group", "1:1", *where]]
            p = subprocess.run([r.binary.encode(), *argv], capture_output=True, timeout=30, env=r.env)
            err = p.stderr.decode("utf-8", "replace")
            check(f"yaml: {name} that is not UTF-8 is refused {'(json)' if json_out else ''}", p.returncode == 1 and
                  name in err and "is not UTF-8" in err and not p.stdout, (p.returncode, err))


def env_file_cases(r):
    for name, text, where in (("value", b"A=1\nB=x\0y\n", ":2:4:"), ("comment", b"# a\0\nA=1\n", ":1:4:"),
                              ("name", b"\0A=1\n", ":1:1:")):
        path = pathlib.Path(r.tmp) / f"nul-{name}.env"
        path.write_bytes(text)
        for dry in (["--dry-run"], []):
            code, out, err = r.run(["run", "--hosts", "a:1", "--ssh", "/bin/false", "--env-file", str(path), *dry,
                                    "--", "t.py"], text=False)
            err = err.decode("utf-8", "replace")
            check(f"env-file: a NUL in a {name} is refused at its line and column {' '.join(dry)}", code == 1 and
                  f"nul-{name}.env{where} a NUL byte" in err and b"\0" not in out, (code, err, out[:200]))


ORPHAN_WRAPPER = """#!/bin/sh
# {marker}
# On SIGTERM: start a process that ignores SIGTERM, and exit at once, orphaning it.
trap 'sh -c "trap \\"\\" TERM; exec sleep {seconds}" & exit 0' TERM
sleep 300 & wait
"""


def teardown_cases(r):
    # A local stand-in runs each node's remote command as sshd would: the node script itself.
    ssh = r.stand_in("local-ssh", 'exec sh -c "$*"')
    seconds = 400 + os.getpid() % 500  # the orphan's command line: "sleep SECONDS", no marker
    wrapper = r.tmp / "wrapper.sh"
    wrapper.write_text(ORPHAN_WRAPPER.format(marker=r.marker, seconds=seconds))
    wrapper.chmod(0o755)

    def orphans():
        return _running(f"sleep\0{seconds}\0".encode())

    def orphans_left(within=0.0):
        """The orphans still running `within` seconds from now, killed."""
        deadline = time.monotonic() + within
        while orphans() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = orphans()
        processes.kill_until_gone(orphans)
        return left

    for name, delay in (("once the nodes run", 1.5), ("right after the start", 0.2)):
        for attempt in range(3):
            proc = subprocess.Popen([r.binary, "run", "--hosts", "h1:1,h2:1", "--ssh", ssh, "--kill-after", "2",
                                     "--program", str(wrapper), "--", "t.py"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=r.env)
            processes.wait_for_child(proc.pid)  # its handlers are installed: it has started a node
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            # A node killed before its script ran stops its processes by itself within --kill-after.
            left = orphans_left(within=2 + 2)
            check(f"teardown: SIGINT {name} (run {attempt + 1}): exit 130 and no orphan of a wrapper left",
                  proc.returncode == 130 and not left, (proc.returncode, left, err.decode(errors="replace")))

    wrapped_pid_cases(r, orphans_left, seconds)
    churning_proc_cases(r, ssh, seconds + 1)

    def wait_for(ready, what, seconds=30):
        if not processes.wait_until(ready, seconds, pause=0.05):
            raise subprocess.TimeoutExpired(what, seconds)

    connecting = r.tmp / "connecting"

    def interrupted_while_connecting(name, seconds, kill_after):
        """run on one node whose ssh takes `seconds` to connect, with the orphaning wrapper, and
        SIGINT once run has started that ssh (the stand-in marks its start)."""
        connecting.unlink(missing_ok=True)
        slow = r.stand_in(name, f'touch {connecting}; sleep {seconds}; exec sh -c "$*"')
        proc = subprocess.Popen([r.binary, "run", "--hosts", "h1:1", "--ssh", slow, "--kill-after", str(kill_after),
                                 "--program", str(wrapper), "--", "t.py"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=r.env)
        wait_for(connecting.exists, "the slow ssh's start")
        proc.send_signal(signal.SIGINT)
        return proc

    # A connection so slow that the node's script runs 5.3 s after the SIGINT, with --kill-after 1:
    # the node's teardown (SIGTERM, the orphan ignores it, SIGKILL 1 s later) ends after the stop's
    # grace of --kill-after + 5 s. run waits for that teardown, since the node started while the job
    # stopped, and ends only once the node has ended by itself: no orphan is left then.
    # The case says something only when run saw the node start within the grace and the node ended
    # after it. On a loaded machine the start can reach run past the grace; run then rightly kills
    # the node as one that never started, and the case is tried again, at most three times.
    grace = 1 + 5
    tries = []
    for attempt in range(3):
        if attempt:
            print(f"     the node started or ended outside the grace ({tries[-1][1]}): tried again", flush=True)
        proc = interrupted_while_connecting("slow-ssh", 5.3, kill_after=1)
        signalled = time.monotonic()
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - signalled
        left = orphans_left()
        err = err.decode(errors="replace")
        tries.append((proc.returncode, f"run ended {took:.1f} s after the signal", left, err))
        counts = "stopped before the node started" not in err and took >= grace
        if counts:
            break
    check("teardown: a node that starts while the job stops gets its own --kill-after + 5 s; no orphan at run's end",
          counts and proc.returncode == 130 and not left and "killed by signal" not in err, tries)

    # A second signal still stops at once, also while run waits for a node that started during the
    # stop (--kill-after 8: the node's own teardown would take 8 s). It comes once the node's
    # teardown has begun: the wrapper has had SIGTERM and its orphan runs. The node's script,
    # whose ssh was killed, still stops its processes within --kill-after by itself.
    # On a loaded machine the stop can reach the wrapper before its trap is set: it then ends with
    # no orphan, the node with it, and run by itself; the case is tried again, at most three times.
    for attempt in range(3):
        proc = interrupted_while_connecting("slower-ssh", 1, kill_after=8)
        wait_for(lambda: orphans() or proc.poll() is not None, "the node's teardown")
        if orphans():
            break
        _, err = proc.communicate(timeout=30)
        print(f"     the node ended before its wrapper's orphan started ({proc.returncode}, "
              f"{err.decode(errors='replace').strip()!r}): tried again", flush=True)
    said = ("teardown: a second signal stops at once while run waits for a node that started during the stop; "
            "the node's script still stops its processes")
    if proc.poll() is not None:
        check(said, False, "in three tries the node ended before its wrapper's orphan started")
        return
    proc.send_signal(signal.SIGINT)
    second = time.monotonic()
    _, err = proc.communicate(timeout=30)
    after_second = time.monotonic() - second
    left = orphans_left(within=8 + 2)
    err = err.decode(errors="replace")
    check(said, proc.returncode == 130 and after_second < 3 and
          "node 0 ('h1'): stopped (killed by signal 9 (Killed))" in err and not left,
          (proc.returncode, f"{after_second:.1f} s after the second signal", left, err))


# A wrapper whose processes run in a pid namespace of their own (each stand-in host has one). It
# moves the namespace's pid cursor (ns_last_pid) to 40 pids before the end of the pid space, so
# that the node script's first look sees a cursor near the end. On SIGTERM it starts BEFORE short
# processes, then the orphan, then AFTER more, and exits: with none before, the orphan's pid lies
# past that first cursor, and with 40 after, the cursor has wrapped round to 300 by the next look;
# with 40 before, the pids have wrapped and the orphan's lies below the first cursor. Each way the
# node script's next look, which reads only what was created since the first, must find it.
WRAPPING_WRAPPER = """#!/bin/sh
# {marker}
echo $(($(cat /proc/sys/kernel/pid_max) - 40)) > /proc/sys/kernel/ns_last_pid
spare() {{ i=0; while [ $i -lt $1 ]; do /bin/true; i=$((i + 1)); done; }}
trap 'spare {before}; sh -c "trap \\"\\" TERM; exec sleep {seconds}" & spare {after}; exit 0' TERM
sleep 300 & wait
"""

def wrapped_pid_cases(r, orphans_left, seconds):
    """The later looks of a node script read only the processes created since the previous one,
    found from the pid cursor: a cursor that wrapped round the pid space in between still finds them."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        SUITE.skip("teardown across a wrapped pid cursor", "needs root and unshare for a pid namespace")
        return
    ssh = r.stand_in("own-pid-namespace", processes.own_pid_namespace('"$*"'))
    for before, after, where in ((0, 0, "past the first look's cursor"),
                                 (0, 40, "past the first look's cursor, the cursor wrapped since"),
                                 (40, 0, "below the first look's cursor, the cursor wrapped since")):
        wrapper = r.tmp / f"wrapping-{before}-{after}.sh"
        wrapper.write_text(WRAPPING_WRAPPER.format(marker=r.marker, seconds=seconds, before=before, after=after))
        wrapper.chmod(0o755)
        proc = subprocess.Popen([r.binary, "run", "--hosts", "h1:1", "--ssh", ssh, "--kill-after", "2",
                                 "--program", str(wrapper), "--", "t.py"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=r.env)
        # SIGINT once the wrapper waits in its `sleep 300`: its trap is set. (b"\0300" would be
        # octal 030 and a "0": the NUL is spelled \x00.)
        if not processes.wait_until(lambda: any(str(wrapper).encode() in _read(pathlib.Path(f"/proc/{parent}/cmdline"))
                                                for parent in _parents_of(b"sleep\x00300\x00")), 30, pause=0.05):
            proc.kill()
            proc.communicate()
            raise subprocess.TimeoutExpired("the wrapper's sleep 300", 30)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        left = orphans_left()
        err = err.decode(errors="replace")
        check(f"teardown: an orphan forked during the teardown near the end of the pid space, its pid {where}, "
              "is stopped before run ends", proc.returncode == 130 and not left and "killed by signal" not in err,
              (proc.returncode, left, err))


def churning_proc_cases(r, ssh, seconds):
    """A process that ends while a node script reads /proc leaves a status file that opens and then
    reads as "No such process": the look passes over it and still finds the job. Forty nodes
    share this machine's /proc, each worker ignoring SIGTERM, while four loops start and end
    processes; after SIGINT every worker must be stopped by its own node's teardown (a reader that
    stops at such a file misses the job about once a run, and leaves its workers running)."""
    worker = r.tmp / "ignores-term.sh"
    worker.write_text(f"#!/bin/sh\n# {r.marker}\ntrap '' TERM\nexec sleep {seconds}\n")
    worker.chmod(0o755)
    nodes = 40

    def workers():
        return _running(f"sleep\0{seconds}\0".encode())

    churn = [subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"]) for _ in range(4)]
    try:
        for attempt in range(3):
            proc = subprocess.Popen([r.binary, "run", "--hosts", ",".join(f"h{i}:1" for i in range(nodes)),
                                     "--ssh", ssh, "--kill-after", "1", "--quiet-nodes", "--program", str(worker),
                                     "--", "t.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=r.env)
            up = processes.wait_until(lambda: len(workers()) == nodes or proc.poll() is not None, 60, pause=0.1)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            # The verdict does not race the clock: on a loaded machine run may give up on a node
            # whose teardown outlasts --kill-after + 5 s and kill its ssh, but the node's own
            # watcher still stops its workers. A look that missed the job leaves them for good
            # (they sleep `seconds`), so the workers must be gone within 30 s, however slow.
            gone = processes.wait_until(lambda: not workers(), 30, pause=0.2)
            left = workers()
            processes.kill_until_gone(workers)
            err = err.decode(errors="replace")
            given_up = err.count("killed by signal")
            if given_up:
                print(f"     run {attempt + 1}: run killed the ssh of {given_up} of {nodes} nodes at their deadline "
                      "(a loaded machine); their watchers stopped the workers")
            check(f"teardown: processes end while {nodes} node scripts read /proc (run {attempt + 1}): "
                  "every worker stopped by its node", up and proc.returncode == 130 and gone and not left,
                  (up, proc.returncode, left, err[-2000:]))
    finally:
        for loop in churn:
            loop.kill()
            loop.wait()


def _running(cmdline):
    """The pids of the processes whose command line is `cmdline` (NUL-separated, as /proc has it)."""
    return processes.matching(lambda proc: (proc / "cmdline").read_bytes() == cmdline)


def _parents_of(cmdline):
    """The parent pids of the processes whose command line is `cmdline`."""
    def parent(pid):
        fields = _read(pathlib.Path(f"/proc/{pid}/stat")).rsplit(b")", 1)  # COMM may hold anything
        return int(fields[1].split()[1]) if len(fields) == 2 else None
    found = (parent(pid) for pid in _running(cmdline))
    return [pid for pid in found if pid is not None]


def _read(path):
    try:
        return path.read_bytes()
    except OSError:
        return b""


def message_cases(r):
    code, out, err = r.run(["run", "--hosts", "a:1", "--env", "A B=1", "--dry-run", "--", "t.py"])
    check("messages: a bad --env name is blamed on --env", code == 1 and
          "--env 'A B=1': 'A B' is not a variable name" in err and "--hosts" not in err, err)
    code, out, err = r.run(["jobset", "--name", "t", "--image", "i", "--group", "1073741825:1", "--", "t.py"])
    check("messages: a --group count past the limit says so", code == 2 and
          "NODES '1073741825' is more than 1073741824, the most one group can have" in err, err)
    code, out, err = r.run(["jobset", "--name", "t", "--image", "i", "--group", "1:x", "--", "t.py"])
    check("messages: a --group count that is no number says so", code == 2 and "GPUS 'x' is not a positive integer" in err,
          err)
    env = dict(r.env, HETLAUNCH_TEST_VALUE="from here")
    code, out, err = r.run(["jobset", "--name", "t", "--image", "i", "--group", "1:1", "--env", "HETLAUNCH_TEST_VALUE",
                            "--", "t.py"], env=env)
    value = [e for e in container(yaml.safe_load(out))["env"] if e["name"] == "HETLAUNCH_TEST_VALUE"] if code == 0 else []
    check("messages: jobset --env NAME takes this environment's value, as its help says", code == 0 and
          value == [{"name": "HETLAUNCH_TEST_VALUE", "value": "from here"}], (code, err, value))
    code, out, err = r.run(["jobset", "--name", "t", "--image", "i", "--group", "1:1", "--env", "HETLAUNCH_UNSET_X",
                            "--", "t.py"])
    check("messages: jobset --env NAME of an unset variable is refused", code == 1 and "is not set here" in err, err)
    code, out, err = r.run(["sbatch", "--help"])
    check("messages: sbatch's help speaks of nodes, not pods", code == 0 and "pods" not in out and "NODES nodes" in out, out)
    code, out, err = r.run(["run", "--help"])
    check("messages: run's help says what its exit status means", code == 0 and "Exit status:" in out and
          "128+N" in out and "126 or 127" in out, out)
    # Each argument is a host list, as scontrol reads its one (the peers case in test_cli.py).
    for name, host, want in (("a bracketed list", "n[2-3]", "n[1-3]\n"), ("a comma", "a,b", "n1,a,b\n"),
                             ("an empty list", "", "n1\n"), ("empty items", ",,m,", "n1,m\n")):
        code, out, err = r.run(["compress", "n1", host])
        check(f"messages: compress reads {name} as scontrol does", code == 0 and out == want and not err,
              (code, out, err))
    code, out, err = r.run(["compress", "n1", "x[", "m"])
    check("messages: compress refuses an open bracket, naming its argument", code == 1 and not out and
          "compress: argument 2, column 2: '[' without a matching ']'" in err, (code, out, err))
    code, out, err = r.run(["compress", "n1", "n2", "m"])
    check("messages: compress of plain names still works", code == 0 and out == "n[1-2],m\n", (code, out, err))
    code, out, err = r.run(["sbatch", "--group", "1:1", "--sbatch-arg", "hetjob", "--", "t.py"])
    check("messages: an --sbatch-arg that is not an option is refused", code == 2 and "is not an sbatch option" in err, err)
    code, out, err = r.run(["sbatch", "--group", "1:1", "--sbatch-arg", "--comment=a\nb", "--", "t.py"])
    check("messages: an --sbatch-arg with a line break is refused", code == 2 and "line break" in err, err)


def main():
    global SUITE
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp, Suite("hostile launch") as suite:
        SUITE = suite
        r = runner(binary, tmp)
        for cases in (started_cases, discover_cases, yaml_cases, env_file_cases, teardown_cases, message_cases):
            try:
                cases(r)
            except subprocess.TimeoutExpired as e:
                check(cases.__name__, False, f"timed out: {e}")
            r.no_leftovers(cases.__name__)
        if "kubectl" in SKIPPED and "--require-kubectl" in sys.argv:
            check("yaml: kubectl reads the manifests", False, "kubectl is not installed (Debian: kubernetes-client)")
    if SKIPPED and suite.status == 0 and "--require-kubectl" not in sys.argv:
        print("skipped: kubectl is not installed (Debian: kubernetes-client); the manifests were not read by it")
        return 77
    return suite.status

if __name__ == "__main__":
    sys.exit(main())
