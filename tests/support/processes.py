"""Finding and killing the processes a test started, by what /proc says of them."""
import os
import pathlib
import signal
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
