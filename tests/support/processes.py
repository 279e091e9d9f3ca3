"""Finding and killing the processes a test started, by what /proc says of them."""
import os
import pathlib
import re
import shutil
import signal
import tempfile
import time


def matching(test):
    """The pids, other than this process's, of processes for whose /proc directory `test` is true
    (a process that ends while it is read does not count)."""
    found = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        pid = int(proc.name)
        if pid == os.getpid():
            continue
        try:
            if test(proc):
                found.append(pid)
        except OSError:
            continue
    return found


def children(pid):
    """The pids of the live children of `pid`."""
    def is_child(proc):
        stat = (proc / "stat").read_text()  # "PID (COMM) STATE PPID ...": COMM may hold anything
        return int(stat.rsplit(")", 1)[1].split()[1]) == pid
    return matching(is_child)


def owner_gone(pid):
    """Whether `pid`, as a name of a run's leftovers holds it (text), is a process id that no
    process has now: the run that made them was killed."""
    return pid.isdigit() and not pathlib.Path(f"/proc/{pid}").exists()


def left_by_killed_runs(stem, parent=None):
    """The paths in `parent` (TMPDIR when None) named STEM<pid> or STEM<pid>-ANYTHING whose
    process is gone: a killed earlier run's work directories (its daemons and jobs may still run,
    named by them)."""
    return [path for path in pathlib.Path(parent or tempfile.gettempdir()).glob(stem + "*")
            if owner_gone(path.name[len(stem):].split("-", 1)[0])]


def wait_until(ready, seconds, pause=0.02):
    """Waits until `ready()` is true; whether it became true within `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
    return True


def wait_for_child(pid, seconds=60):
    """Waits until `pid` has started a child: for a launcher, its first node, so that a signal
    sent from then on finds its handlers installed, however loaded the machine. True when one
    came within `seconds`."""
    return wait_until(lambda: children(pid), seconds)


def kill_until_gone(find, rounds=5, pause=0.2):
    """SIGKILLs the pids `find()` gives until it gives none (new ones may appear while a parent
    dies), at most `rounds` times. Returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        pids = find()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(pause)
    return killed


def free_port():
    """A TCP port on loopback that no process listens on now (for a job's rendezvous)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return str(port)


class marker:
    """A value for the environment variable `name` that every process of this run carries, so
    that the run's processes can be found and killed, and a killed earlier run's too. The value
    starts with the owning test's pid: processes of another run that is still going (the same
    suite on the machine and in a chroot, run side by side) are never taken for leftovers."""

    def __init__(self, name):
        import uuid

        self.name = name
        self.value = f"{os.getpid()}-{uuid.uuid4().hex}"

    def carried_by(self, proc):
        """Whether the process of /proc directory `proc` belongs to this run."""
        return f"{self.name}={self.value}\0".encode() in (proc / "environ").read_bytes() + b"\0"

    def mine(self):
        """A finder of this run's processes, for kill_until_gone."""
        return lambda: matching(self.carried_by)

    def stale(self):
        """A finder of processes whose run has ended: they carry the variable, and the pid it
        starts with is gone."""
        pattern = re.compile(rf"(?:^|\0){re.escape(self.name)}=(\d+)-".encode())

        def orphaned(proc):
            m = pattern.search((proc / "environ").read_bytes())
            return bool(m) and not pathlib.Path(f"/proc/{int(m.group(1))}").exists()
        return lambda: matching(orphaned)


class scratch:
    """A suite's own processes (by a marker) and its work directory (PREFIX<pid>-...). Made at
    the suite's start, after stopping what a killed earlier run of the suite left running and
    removing its work directories. For Suite: `teardown` removes the directory; `leftovers` stops
    this run's processes still running and counts them as a failure, so that none survives the
    run and none goes unnoticed."""

    def __init__(self, marker_name, prefix, parent=None):
        self.marker = marker(marker_name)
        kill_until_gone(self.marker.stale())
        for path in left_by_killed_runs(prefix, parent):
            shutil.rmtree(path, ignore_errors=True)
        self.work = pathlib.Path(tempfile.mkdtemp(dir=parent, prefix=f"{prefix}{os.getpid()}-"))

    def teardown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def leftovers(self):
        found = self.marker.mine()()
        named = []
        for pid in found[:10]:
            try:
                named.append(f"{pid} " + pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                             .decode(errors="replace").strip()[:200])
            except OSError:
                named.append(f"{pid} (gone)")
        left = kill_until_gone(self.marker.mine())
        return [f"{max(left, len(found))} processes of the test were left running: " + "; ".join(named)] \
            if left or found else []


def torchrun_of(argv):
    """The torchrun of `--torchrun PATH` in argv, else the one on PATH (None when there is none)."""
    return argv[argv.index("--torchrun") + 1] if "--torchrun" in argv else shutil.which("torchrun")


def own_pid_namespace(command):
    """The body of an ssh stand-in for a host with a pid namespace and a /proc of its own, as every
    real host has, given the remote command as `"$1"` or `"$*"`: its first process runs the command
    and stays until every other process in the namespace is gone, so that the stand-in ends only then."""
    return ("exec unshare --fork --pid --mount-proc sh -c 'exec 3<&0; sh -c \"$1\" 0<&3 3<&- & wait $!; "
            f"s=$?; while set -- /proc/[0-9]*; [ $# -gt 1 ]; do sleep 0.1; done; exit $s' host {command}")
