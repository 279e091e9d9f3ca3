"""The hetlaunch flags every test job passes to run Debian's torchrun: its torch 1.13 on Python
3.11 crashes on torchrun's default --redirects and --tee values, so they are given explicitly
(harmless on torch 2.x). With --redirects or --tee, torchrun writes its workers' streams under
--log_dir, and without one it makes a torchelastic_* directory in TMPDIR for every job and leaves
it: the flags name LOG_DIR, a directory of this process's, removed when it exits, or by the first
process of a later run that imports this module when it was killed."""
import atexit
import os
import pathlib
import shutil
import tempfile

import processes

STEM = "hetlaunch-torchelastic-"
LOG_DIR = pathlib.Path(tempfile.gettempdir()) / f"{STEM}{os.getpid()}"


def _remove_stale():
    for old in processes.left_by_killed_runs(STEM):
        shutil.rmtree(old, ignore_errors=True)


_made = False


def _log_dir():
    """LOG_DIR, made on first use; writable by every user, as TMPDIR is (some workers run as
    another user)."""
    global _made
    if not _made:
        _remove_stale()
        shutil.rmtree(LOG_DIR, ignore_errors=True)  # a killed process's of the same pid, reused
        LOG_DIR.mkdir()
        LOG_DIR.chmod(0o1777)
        owner = os.getpid()  # not a forked child's to remove
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(LOG_DIR, ignore_errors=True))
        _made = True
    return str(LOG_DIR)


def streams():
    """torchrun's stream flags and its log directory, as `--torchrun-arg`s."""
    return ["--torchrun-arg", "--redirects", "--torchrun-arg", "2", "--torchrun-arg", "--tee", "--torchrun-arg", "2",
            "--torchrun-arg", "--log_dir", "--torchrun-arg", _log_dir()]


def torchrun(program="/usr/bin/torchrun"):
    """--program and the stream flags, for `hetlaunch exec`, `run` and `jobset`."""
    return ["--program", str(program), *streams()]
