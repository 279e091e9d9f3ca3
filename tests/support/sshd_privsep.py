"""sshd's privilege separation directory, /run/sshd, shared by the suites that run sshd at the same
time (e2e.ssh and e2e.ssh.sid under one ctest): a suite that finds it missing makes it, and the last
suite out removes it when a suite made it. sshd chroots into it at every connection, so a suite
that removed it under another one's sshd would fail that suite's logins.

Who uses it is kept in /run/hetlaunch-sshd-users (each suite's pid and start time, and whether a
suite made the directory), changed only under an exclusive flock of that file. A suite that was
killed stays listed until a later suite finds its process gone: that suite then removes the
directory at its own end, and the file with it.
"""
import fcntl
import os
import pathlib
import shutil

DIRECTORY = pathlib.Path("/run/sshd")
USERS = pathlib.Path("/run/hetlaunch-sshd-users")


def _process(pid):
    """"PID:START" of a live process (its start time tells it from a later one with its pid), or
    None when it is gone."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return f"{pid}:{stat.rsplit(')', 1)[1].split()[19]}"


def _locked():
    """USERS open and exclusively locked. A file the last suite out unlinked while this one waited
    is opened again, so that every suite locks the same file."""
    while True:
        fd = os.open(USERS, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(USERS).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _read(fd):
    lines = os.pread(fd, 1 << 16, 0).decode().split()
    made = "made" in lines
    live = [u for u in lines if u != "made" and _process(u.split(":")[0]) == u]
    return made, live


def _write(fd, made, users):
    os.ftruncate(fd, 0)
    os.pwrite(fd, "".join(f"{u}\n" for u in (["made"] if made else []) + users).encode(), 0)


def enter():
    """This suite uses the directory: made when missing."""
    fd = _locked()
    try:
        made, users = _read(fd)
        if not DIRECTORY.exists():
            DIRECTORY.mkdir(mode=0o755)
            made = True
        _write(fd, made, users + [_process(os.getpid())])
    finally:
        os.close(fd)


def leave():
    """This suite's sshd are stopped: the last suite out removes the directory a suite made."""
    fd = _locked()
    try:
        made, users = _read(fd)
        me = _process(os.getpid())
        users = [u for u in users if u != me]
        if users:
            _write(fd, made, users)
            return
        if made:
            shutil.rmtree(DIRECTORY, ignore_errors=True)
        USERS.unlink(missing_ok=True)
    finally:
        os.close(fd)
