# SPDX-License-Identifier: MIT
"""Each rank's progress, for a launcher that judges slow and hung ranks (`hetlaunch run
--hang-timeout`, `--slow-factor`, `--metrics`; include/hetlaunch/rank_health.hpp judges).

While HETLAUNCH_PROGRESS_SECONDS (a positive number of seconds) is set, a thread of the rank's own
prints one line that often on standard output:

    HETLAUNCH_PROGRESS {"rank": R, "step": S, "phase": P, "phase_seconds": T, "window": W,
                        "samples_per_second": X}

P is `computing` (step S started, its gradients not all computed), `computed` (done, waiting for
the other ranks in the collective; and before the rank's first step, its start-up) or
`checkpointing`; T how long the rank has been in P; W the
number of the rank's last complete window and X its samples per second of computation in it.
The training loop only sets a few fields: no collective, no I/O, nothing that waits. A rank
that stops stops printing; one that waits for a stopped rank goes on saying it waits.

Without the variable, every call here does nothing.
"""

import contextlib
import json
import os
import sys
import threading
import time
from typing import Optional

from . import _names as names

WINDOW_STEPS = 10  # a window when the sampler does not rebalance


class Progress:
    """One rank's reporter: what the loop marks, and the thread that prints it."""

    def __init__(self, interval: float, rank: int, out=None, clock=time.monotonic, window_steps: int = WINDOW_STEPS):
        self.interval, self.rank, self.clock = interval, rank, clock
        self.out = out
        self.window_steps = window_steps
        self.step = 0
        # Until its first step begins the rank starts up: loading data or a checkpoint, or waiting
        # in DDP's first broadcast for a rank still importing torch. That is no step to judge stuck
        # (a healthy start may take minutes); silence is still judged.
        self.phase = "computed"
        self.since = clock()
        self.window = 0
        self.samples_per_second = 0.0
        self._steps = self._samples = 0
        self._seconds = 0.0
        self._last_heartbeat: Optional[float] = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # a window closed: said by the thread now, not at the interval

    # ---- what the training loop marks ----

    def _enter(self, phase: str) -> None:
        if phase != self.phase:
            self.phase, self.since = phase, self.clock()

    def started(self, step: int) -> None:
        """Step `step` (counted from 0 over the job) begins its computation."""
        self.step = step
        self._enter("computing")

    def computed(self) -> None:
        """The current step's own computation is done: from now on the rank waits for the others."""
        self._enter("computed")

    def trained(self, samples: int, seconds: Optional[float]) -> None:
        """A step of `samples` samples was computed in `seconds` (None: untimed); every
        window_steps timed steps close a window."""
        if seconds is None or seconds <= 0:
            return
        self._steps += 1
        self._samples += samples
        self._seconds += seconds
        if self._steps >= self.window_steps:
            self.window += 1
            self.samples_per_second = self._samples / self._seconds
            self._steps = self._samples = 0
            self._seconds = 0.0
            self._wake.set()  # every window reaches the launcher, also windows shorter than the interval

    def heartbeat(self, step: int, samples: Optional[int] = None) -> None:
        """A script without the sampler: step `step` begins. With `samples` (the previous step's),
        the time since the previous heartbeat is that step's time, and windows are measured."""
        now = self.clock()
        if samples is not None and self._last_heartbeat is not None:
            self.trained(samples, now - self._last_heartbeat)
        self._last_heartbeat = now
        self.started(step)

    @contextlib.contextmanager
    def checkpointing(self):
        before = self.phase
        self._enter("checkpointing")
        try:
            yield
        finally:
            # After a checkpoint the rank goes on where it was (the next step marks its start),
            # and says so at once: a rank that stops before its next line would otherwise be
            # judged by the checkpoint's limit.
            self._enter(before if before != "checkpointing" else "computed")
            if self._thread is not None:
                try:
                    self._say()
                except (OSError, ValueError):
                    pass

    # ---- the line and the thread ----

    def line(self) -> str:
        return names.PROGRESS_LINE + json.dumps({
            "rank": self.rank, "step": self.step, "phase": self.phase,
            "phase_seconds": round(max(0.0, self.clock() - self.since), 3), "window": self.window,
            "samples_per_second": round(self.samples_per_second, 6)})

    def _say(self) -> None:
        out = self.out or sys.stdout
        out.write(self.line() + "\n")  # one write: never split by the loop's own prints
        out.flush()

    # At most this many lines a second: windows faster than that are said together, the last one's.
    MOST_LINES_A_SECOND = 10

    def start(self) -> "Progress":
        def run():
            while True:
                window_closed = self._wake.wait(self.interval)
                if self._stop.is_set():
                    return
                self._wake.clear()
                try:
                    self._say()
                except (OSError, ValueError):
                    return  # standard output closed: nobody reads any more
                if window_closed:
                    self._stop.wait(1 / self.MOST_LINES_A_SECOND)
        self._say()
        self._thread = threading.Thread(target=run, name="hetlaunch-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()


_reporter: Optional[Progress] = None
_lock = threading.Lock()


def interval_from(env) -> Optional[float]:
    """HETLAUNCH_PROGRESS_SECONDS as a positive number of seconds, None when it is not set."""
    value = env.get(names.PROGRESS_SECONDS)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not (0 < seconds <= 3600):
        raise ValueError(f"{names.PROGRESS_SECONDS}={value!r} must be a number of seconds, more than 0 and at most "
                         "3600")
    return seconds


def on_slow_rebalances(env) -> bool:
    """Whether the launcher asks that work move off a slow rank (HETLAUNCH_ON_SLOW=rebalance, `hetlaunch
    run --on-slow rebalance`); another value is refused, naming it."""
    value = env.get(names.ON_SLOW)
    if value is None:
        return False
    if value != "rebalance":
        raise ValueError(f"{names.ON_SLOW}={value!r}: the one value a launcher sets is 'rebalance'")
    return True


def reporter(env=None) -> Optional[Progress]:
    """The rank's reporter, started at the first call when the launcher asks for progress; None
    otherwise."""
    global _reporter
    if _reporter is not None:
        return _reporter
    env = os.environ if env is None else env
    interval = interval_from(env)
    if interval is None:
        return None
    with _lock:
        if _reporter is None:
            from ._lines import _global_rank

            _reporter = Progress(interval, _global_rank(env)).start()
    return _reporter


def heartbeat(step: int, samples: Optional[int] = None) -> None:
    """For a script without ShareBatchSampler: call at the start of each step, with its number
    (and, to have the rank's speed judged, the previous step's sample count). Costs a few
    assignments; nothing without HETLAUNCH_PROGRESS_SECONDS."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"heartbeat: step must be a non-negative int, got {step!r}")
    r = reporter()
    if r is not None:
        r.heartbeat(step, samples)


@contextlib.contextmanager
def checkpointing():
    """`with hetlaunch_shares.checkpointing(): save(...)`: while inside, the rank is judged by
    --checkpoint-timeout, not --hang-timeout (a checkpoint may take minutes)."""
    r = reporter()
    if r is None:
        yield
        return
    with r.checkpointing():
        yield
