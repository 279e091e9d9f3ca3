# SPDX-License-Identifier: MIT
"""Which steps a sampler has handed out, which of them training has finished, and how long each
took: the part of the sampler that a loader reading ahead must not fool (the standard library
only)."""

import time
from collections import deque
from typing import NamedTuple, Optional, Tuple

# A loader reads at most this many steps ahead of training (a DataLoader reads prefetch_factor x
# num_workers). A rebalancing sampler that has handed out more than rebalance_every + this many
# steps with no step of any rank marked trained is not being timed at all.
READ_AHEAD_LIMIT = 256


class HandedStep(NamedTuple):
    """A step handed out: its epoch and index within the epoch, and the share it was cut with."""

    epoch: int
    step: int
    share: object


class TrainedStep(NamedTuple):
    """A step training finished: the step, and its compute seconds when they are known."""

    handed: HandedStep
    seconds: Optional[float]


class StepLedger:
    """The steps handed out and not yet trained, oldest first. A DataLoader with workers takes
    steps from its sampler ahead of training; each step keeps the share it was cut with, so the
    step being trained is weighted by its own share whatever the sampler has cut since.

    A step is trained when one marker says so: the comm hook at a step's last bucket, computed(),
    or watch() once the step's backward passes are done. The first marker to mark a step is the
    one whose marks count, so a script that both registers the hook and watches counts each step
    once.

    A step's compute runs from the moment training could start it to its last gradient on this
    rank. Training can start a step when the loader hands the step's batch over; a loader asks its
    sampler for the next step exactly then (a DataLoader with workers refills its read-ahead when it
    returns a batch), so the newest hand-out after the previous step's mark is that moment. A step
    with no hand-out since the previous mark (a read-ahead loader's last steps of an epoch) is
    trained but not timed."""

    def __init__(self):
        self.pending = deque()
        self.marker = None  # "hook", "computed" or "watch": the marker whose marks count
        self.backwards = 0  # backward passes of the oldest pending step so far (watch)
        self.newest = None  # (epoch, step) of the newest step handed out
        self.handed_at = None  # when it was handed out
        self.marked_at = None  # when the last step was marked trained
        self.last_gradient = None  # when this rank last computed a gradient
        self.marked_total = 0  # steps marked trained, in every epoch
        # When the last trained step's gradients were reduced (None: not seen, or since then a
        # pause that is no step's own work, such as a rebalance's gather).
        self.reduced_at = None

    def abandon(self) -> None:
        """A new iteration: steps of the last one that were handed out and never trained (the
        loop left early) are not trained."""
        self.pending.clear()
        self.backwards = 0
        self.reduced_at = None

    def hand_out(self, epoch: int, step: int, share) -> Optional[float]:
        """A step handed out: the seconds since the last step's gradients were reduced, this rank's
        own work between the two steps (the optimizer's step, the loop, the loader), when seen."""
        now = time.perf_counter()
        between = now - self.reduced_at if self.reduced_at is not None and now >= self.reduced_at else None
        self.reduced_at = None
        self.pending.append(HandedStep(epoch, step, share))
        self.newest = (epoch, step)
        self.handed_at = now
        return between

    def front(self) -> Optional[HandedStep]:
        """The step training is on: the oldest handed out and not yet trained."""
        return self.pending[0] if self.pending else None

    def backward_ended(self) -> Optional[TrainedStep]:
        """watch(): one backward pass ended. The oldest step is trained once it has had its
        share's micro-batch count of them (one without a ceiling)."""
        if self.marker not in (None, "watch") or not self.pending:
            return None
        self.backwards += 1
        if self.backwards < self.pending[0].share.micro_batch_count:
            return None
        return self.mark("watch")

    def mark(self, marker: str) -> Optional[TrainedStep]:
        """`marker` says the oldest pending step is trained: the step and its seconds, or None
        when another marker's marks count or no step is pending."""
        if self.marker is None:
            self.marker = marker
        if marker != self.marker or not self.pending:
            return None
        handed = self.pending.popleft()
        self.backwards = 0
        started = self.handed_at if self.marked_at is None or self.handed_at > self.marked_at else None
        ended = self.last_gradient
        seconds = ended - started if started is not None and ended is not None and ended > started else None
        self.marked_at = time.perf_counter()
        self.marked_total += 1
        return TrainedStep(handed, seconds)

    def position(self) -> Optional[Tuple[int, int]]:
        """(epoch, step): the next step not yet trained; None before any step was handed out.
        With no marker (nothing ever marked a step), the steps handed out count as trained."""
        if self.marker is not None and self.pending:
            return self.pending[0].epoch, self.pending[0].step
        if self.newest is None:
            return None
        return self.newest[0], self.newest[1] + 1
