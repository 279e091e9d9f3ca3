#!/usr/bin/env python3
"""The end-to-end torchrun tests (tests/e2e/torchrun_e2e.cpp: mixed, roles, single, wrong nproc,
pass-through, --virtual-local-rank, the direct launcher; and `hetlaunch exec`), the real
accelerate and HF Trainer (sid: the work-share scripts of tests/shares/scripts_test.py) and the
Slurm host-list conformance on a newer Debian: torch 2.6 and Slurm 24.11 in trixie, torch 2.14,
accelerate 1.14, transformers 5.12 and Slurm 26.05 in sid, each a chroot built with mmdebstrap
from the machine's own Debian mirror.

A chroot is built once (again when its packages change) and kept in the cache directory
(HETLAUNCH_CHROOT_CACHE, default /var/cache/hetlaunch-test/chroots) for later runs on the same
machine. The test programs built on
this machine run unchanged inside (the chroot's glibc is newer): the source and build directories
are bound at their own paths, with proc, /dev, /dev/shm and sysfs. Every mount is undone in
reverse order when the suite ends, fails or is interrupted, and mounts a killed earlier run left
under the cache directory are undone first. No process started inside a chroot outlives it.

Debian's torch 2.x is built without libuv, and its static rendezvous then fails at once: the
jobs run with USE_LIBUV=0 and tests/chroot/sitecustomize.py on PYTHONPATH (see docs/compatibility.md).

trixie gates: anything that fails there fails the test. sid changes daily: when its chroot cannot
be built (an archive in transition), this says so loudly, with apt's reason, and goes on; every
test that does run in sid must pass.

usage: suites_test.py SOURCE_DIR TEST_BIN_DIR [SUITE...]   (suites: trixie sid)
"""
import fcntl
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
import processes  # noqa: E402
from harness import Suite, signals_held  # noqa: E402
from worker_records import rank_problems, read_records  # noqa: E402

CACHE = pathlib.Path(os.environ.get("HETLAUNCH_CHROOT_CACHE", "/var/cache/hetlaunch-test/chroots"))
PACKAGES = "python3-torch,slurm-client,python3,ca-certificates"
SUITES = {"trixie": {"gates": True, "extra": ""},
          "sid": {"gates": False, "extra": ",python3-accelerate,python3-transformers"}}
# Restarts under the static rendezvous are unreliable on torch 2.x (docs/compatibility.md); 1.13 keeps that test.
TORCHRUN_CASES = ["mixed", "roles", "single", "wrong-nproc", "passthrough", "virtual", "direct"]


def mirror():
    """The machine's Debian mirror, as apt is configured."""
    for path in [pathlib.Path("/etc/apt/sources.list.d/debian.sources"), pathlib.Path("/etc/apt/sources.list")]:
        if path.exists():
            text = path.read_text()
            m = re.search(r"^URIs:\s*(\S+)", text, re.M) or re.search(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M)
            if m:
                return m.group(1)
    return "http://deb.debian.org/debian"


def mounts_under(root):
    found = []
    for line in pathlib.Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1].replace("\\040", " ")
        if target == str(root) or target.startswith(str(root) + "/"):
            found.append(target)
    return found


def processes_in(root):
    return processes.matching(lambda proc: os.readlink(proc / "root") == str(root))


def release(root):
    """No process inside `root`, nothing mounted under it."""
    processes.kill_until_gone(lambda: processes_in(root), rounds=10)
    for target in sorted(mounts_under(root), key=len, reverse=True):
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)


def build(suite, extra):
    """The suite's chroot, from the cache or built now; None with a message when it cannot be.
    One suite at a time checks and builds it (a lock of the cache's): the others that want it wait,
    then find it built."""
    CACHE.mkdir(parents=True, exist_ok=True)
    lock = os.open(CACHE / f"{suite}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(suite, extra)
    finally:
        os.close(lock)


def _build(suite, extra):
    root = CACHE / suite
    # sid's Release file on a mirror may have expired; the archive is still consistent.
    cmd = ["mmdebstrap", "--variant=apt", f"--include={PACKAGES}{extra}",
           "--aptopt=Acquire::Check-Valid-Until \"false\"", suite, str(CACHE / f"{suite}.partial"), mirror()]
    # The marker holds the command that built the chroot: other packages build it again.
    marker = root / ".hetlaunch-complete"
    if marker.exists() and marker.read_text() == f"{' '.join(cmd)}\n":
        return root, "cached"
    partial = CACHE / f"{suite}.partial"
    release(partial)
    shutil.rmtree(partial, ignore_errors=True)
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        release(partial)
        shutil.rmtree(partial, ignore_errors=True)
        reasons = [line for line in (r.stdout + r.stderr).splitlines()
                   if re.search(r"Depends:|but it is not|unmet|Unable to|Broken|E: ", line)]
        return None, "\n".join(reasons[-15:]) or (r.stdout + r.stderr)[-3000:]
    (partial / ".hetlaunch-complete").write_text(f"{' '.join(cmd)}\n")
    release(root)
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root, f"built in {time.monotonic() - started:.0f} s"


VIEW = ".view-"  # CACHE/SUITE.view-PID: suite PID's own view of the chroot SUITE


def remove_stale_views():
    """The views of suites that were killed: their processes, their mounts, their directories."""
    for view in CACHE.glob(f"*{VIEW}*"):
        pid = view.name.rsplit(VIEW, 1)[1]
        if processes.owner_gone(pid):
            release(view)
            try:
                view.rmdir()
            except OSError:
                pass


class mounted:
    """A view of the chroot `image` of this suite's own (the image bound at CACHE/SUITE.view-PID),
    with proc, /dev, /dev/shm, sysfs and the given directories at their own paths inside. Suites
    that use one chroot at once each have theirs: one suite's mounts, its processes and its
    teardown never touch another's. `root` is the view."""

    def __init__(self, image, binds):
        self.image, self.binds = image, binds
        self.root = image.parent / f"{image.name}{VIEW}{os.getpid()}"

    def __enter__(self):
        remove_stale_views()
        release(self.root)
        try:
            self.root.mkdir(exist_ok=True)
            subprocess.run(["mount", "--bind", str(self.image), str(self.root)], check=True, capture_output=True)
            for kind, source, target in [("proc", "proc", "proc"), ("bind", "/dev", "dev"), ("bind", "/dev/shm", "dev/shm"),
                                         ("sysfs", "sys", "sys")] + [("bind", b, b.lstrip("/")) for b in self.binds]:
                where = self.root / target
                where.mkdir(parents=True, exist_ok=True)
                args = ["mount", "--bind", source, str(where)] if kind == "bind" else ["mount", "-t", kind, source, str(where)]
                subprocess.run(args, check=True, capture_output=True)
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc):
        with signals_held():
            self._remove()
        return False

    def _remove(self):
        release(self.root)
        try:
            self.root.rmdir()
        except OSError:
            pass

    def argv(self, argv, env=None):
        base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "USE_LIBUV": "0",
                "PYTHONPATH": str(pathlib.Path(__file__).resolve().parent)}
        base.update(env or {})
        return ["chroot", str(self.root), "env", "-i", *[f"{k}={v}" for k, v in base.items()], *argv]

    def run(self, argv, timeout=300, env=None):
        return subprocess.run(self.argv(argv, env), capture_output=True, text=True, timeout=timeout)


def versions(m):
    torch = m.run(["python3", "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    slurm = m.run(["dpkg-query", "-W", "-f", "${Version}", "slurm-client"]).stdout.strip()
    return torch, slurm


def accelerate_case(m, source, bins):
    """Machines of 3 and 1 workers, each started with the `accelerate launch` command `hetlaunch
    accelerate` prints for it, form one job of 4: every worker's variables as the plan says, its
    work share included (check-env)."""
    hetlaunch = bins.parent / "tools" / "hetlaunch"
    hosts = "127.0.0.1:3,127.0.0.2:1"
    work = "/tmp/hetlaunch-accelerate"
    m.run(["rm", "-rf", work])
    m.run(["mkdir", "-p", work])
    port = processes.free_port()  # the chroot shares the machine's network: no fixed port
    shares = ["--weight", "127.0.0.2=3", "--global-batch", "13"]  # the machines' work shares reach the workers
    worker = [str(source / "tests/e2e/worker.py"), work, str(hetlaunch), "check-env", "--hosts", hosts, *shares]
    machines = []
    for node in range(2):
        cmd = subprocess.run([hetlaunch, "accelerate", "--node", str(node), "--hosts", hosts, "--master-port", port,
                              *shares, "--", *worker], capture_output=True, text=True, check=True).stdout
        argv = ["env", *__import__("shlex").split(cmd)]  # NAME=VALUE assignments first
        machines.append(subprocess.Popen(m.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                         start_new_session=True))
    failures, logs = [], []
    for p in machines:
        try:
            out, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            failures.append("an accelerate launch did not end")
        logs.append(out)
        if p.returncode != 0:
            failures.append(f"accelerate launch exited {p.returncode}")
    failures += rank_problems(read_records(m.root / work.lstrip("/")), [3, 1],
                              lambda rank, node: {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
    checks = "".join(p.read_text() for p in (m.root / work.lstrip("/")).glob("check-*.txt"))
    if checks.strip():
        failures.append("check-env: " + checks)
    if failures:
        print("\n".join(failures) + "\n" + "".join(logs)[-4000:])
    return failures


def output_end(r):
    return (r.stdout + r.stderr)[-4000:]


def run_suite(run, suite, source, bins):
    """Every test of one suite's chroot, each reported to `run`. False when the chroot could not
    be built (its tests did not run)."""
    root, how = build(suite, SUITES[suite]["extra"])
    if root is None:
        print(f"!!!! {suite}: the chroot could not be built; its tests did not run. apt said:\n{how}\n!!!!", flush=True)
        return False
    with mounted(root, sorted({str(source), str(bins.parent.parent)})) as m:
        torch, slurm = versions(m)
        print(f"{suite}: {how}; torch {torch}, Slurm {slurm}", flush=True)
        for case in TORCHRUN_CASES:
            work = f"/tmp/hetlaunch-e2e-{case}"
            m.run(["rm", "-rf", work])
            m.run(["mkdir", "-p", work])
            t = time.monotonic()
            r = m.run([str(bins / "torchrun_e2e"), case, str(source / "tests/e2e/worker.py"), str(bins / "env_checker"),
                       work, str(bins.parent / "examples" / "direct_launcher")])
            left = processes_in(m.root)
            run.report(f"{suite} torchrun {case}",
                       ([f"exit status {r.returncode}"] if r.returncode else []) +
                       ([f"processes left {left}"] if left else []),
                       time.monotonic() - t, output_end(r))
        hetlaunch = str(bins.parent / "tools" / "hetlaunch")

        def step(what, argv, timeout=300):
            """One test program run inside the chroot: it passes when it exits 0; 77 says it
            could not run here (the report says so)."""
            t = time.monotonic()
            r = m.run(argv, timeout=timeout)
            if r.returncode == 77:  # it could not run here: a skip, never a pass
                run.skip(f"{suite} {what}", "it cannot run in this chroot: " + output_end(r).strip()[-300:])
                return
            run.report(f"{suite} {what}", [f"exit status {r.returncode}"] if r.returncode else [],
                       time.monotonic() - t, output_end(r))

        # Each node's torchrun started by `hetlaunch exec`.
        step("hetlaunch exec", ["python3", str(source / "tests/cli/test_cli.py"), hetlaunch, "--e2e-only",
                                str(source / "tests/e2e/worker.py"), "/tmp/hetlaunch-e2e-exec"])
        # run: each worker's lines whole and begun with its rank (torch 2.x signals a worker's
        # whole process group, its line writer too; 2.14's rules are 2.6's, and the trixie suite
        # is the shorter one).
        if suite == "trixie":
            step("run: every worker line whole, with its rank",
                 ["python3", str(source / "tests/cli/rank_lines_test.py"), hetlaunch, "--torchrun", "/usr/bin/torchrun",
                  "--only", "lines,failure"])
        # Work shares: real DDP gradients equal the whole batch's on this torch too.
        step("work shares: DDP gradients of the whole batch",
             ["python3", str(source / "tests/shares/ddp_test.py"), hetlaunch, "--torchrun", "/usr/bin/torchrun"], timeout=900)
        # CPU binding: a torchrun job on this torch, every worker started through `hetlaunch bind`.
        step("torchrun --numa-binding node through hetlaunch bind",
             ["python3", str(source / "tests/binding/binding_test.py"), hetlaunch, "torchrun", "--torchrun",
              "/usr/bin/torchrun"], timeout=600)
        if (root / "usr/bin/accelerate").exists():
            t = time.monotonic()
            version = m.run(["python3", "-c", "import accelerate; print(accelerate.__version__)"]).stdout.strip()
            run.report(f"{suite} accelerate {version}: machines of 3 and 1 workers", accelerate_case(m, source, bins),
                       time.monotonic() - t)
        if (root / "usr/lib/python3/dist-packages/transformers").exists():
            # Work shares in accelerate and HF Trainer scripts: examples/train_accelerate.py and
            # examples/train_trainer.py, run as they are (tests/shares/scripts_test.py).
            step("work shares in accelerate and Trainer scripts",
                 ["python3", str(source / "tests/shares/scripts_test.py"), hetlaunch, "--torchrun", "/usr/bin/torchrun"],
                 timeout=1500)
        conf = "/tmp/hetlaunch-conformance"
        m.run(["mkdir", "-p", conf])
        t = time.monotonic()
        r = m.run([str(bins / "slurm_conformance"), str(source / "tests/slurm/malformed.txt"), conf])
        summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        run.report(f"{suite} slurm conformance: {summary}", [f"exit status {r.returncode}"] if r.returncode else [],
                   time.monotonic() - t,
                   "\n".join(line for line in (r.stdout + r.stderr).splitlines() if not line.startswith("ok"))[-4000:])
    return True


def main():
    source, bins = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    suites = sys.argv[3:] or list(SUITES)
    with Suite("chroot suites") as run:
        for suite in suites:
            if not run_suite(run, suite, source, bins) and SUITES[suite]["gates"]:
                run.report(f"{suite}: the chroot", ["it could not be built (apt's words above)"])
    return run.status


if __name__ == "__main__":
    sys.exit(main())
