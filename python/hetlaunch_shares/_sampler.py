# SPDX-License-Identifier: MIT
"""The sampler of a rank's part of every step, in its parts: the epoch's order and the position
in it, the steps in flight (_steps.StepLedger), rebalancing and calibration; and the DDP hook that
weights a rank's gradient by the share its step was cut with."""

import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass, replace
from typing import Iterator, List, NamedTuple, Optional, Tuple

from . import _names as names
from . import _probe, _progress
from ._core import RESHARD_REFUSED, Share, ShareLoaderError, check_rebalance_every, rank_batch, rates_on_topology, \
    split_batch, weights_from_rates
from ._steps import READ_AHEAD_LIMIT, StepLedger

__all__ = ["ShareBatchSampler", "weighted_allreduce_hook", "NOTHING_TIMED"]

NOTHING_TIMED = ("no rank timed a step, so the sampler cannot measure the ranks: register it as the DDP comm "
                 "hook's state (ddp.register_comm_hook(sampler, weighted_allreduce_hook)), or call "
                 "sampler.watch(model) once when the script scales its loss")


class RankLayout(NamedTuple):
    """What every rank says of itself once, before the first rebalance: checked to agree."""

    node: int
    local_world_size: int
    local_rank: int
    batch: int
    offset: int
    global_batch: int
    rebalance_every: int
    calibrate_steps: int
    host: str = ""


class RankWindow(NamedTuple):
    """What a rank measured over one window: its trained steps' compute seconds and samples."""

    seconds: float
    samples: int
    trained: int  # steps trained in the window, timed or not
    ever_timed: bool
    ever_trained: bool
    wall: float = 0.0  # the window's seconds on the clock: its computation and everything else
    overhead: float = 0.0  # its own work between steps (optimizer, loader, Python), over overhead_steps
    overhead_steps: int = 0
    reduce: float = 0.0  # from its last gradient to the gradients reduced, over reduce_steps
    reduce_steps: int = 0


def summed(a: RankWindow, b: RankWindow) -> RankWindow:
    """Two windows of a rank as one (calibration's running total)."""
    return RankWindow(*((x or y) if isinstance(x, bool) else x + y for x, y in zip(a, b)))


@dataclass
class WindowSums:
    """What this rank measures over the window being measured (RankWindow, once gathered)."""

    seconds: float = 0.0  # the trained steps' compute
    samples: int = 0  # the timed steps' samples
    trained: int = 0  # steps trained, timed or not
    overhead: float = 0.0
    overhead_steps: int = 0
    reduce: float = 0.0
    reduce_steps: int = 0


def least_reduce(gathered: List[RankWindow]) -> Optional[Tuple[float, int]]:
    """A window's all-reduce and the steps it is over: from the last gradient to the gradients
    reduced, the least of the ranks' means (the last to compute its gradients waits for nobody);
    None when no rank saw a reduction end."""
    means = [(w.reduce / w.reduce_steps, w.reduce_steps) for w in gathered if w.reduce_steps]
    return min(means) if means else None


def measurement(step: int, layout: List[RankLayout], gathered: List[RankWindow], rates: List[float],
                weights: List[str], reductions: Optional[List[Tuple[float, int]]] = None) -> dict:
    """What HETLAUNCH_MEASURED says: each node's rate and weight, its workers' own work between
    steps (`overhead_seconds`, where each of them measured it), and the gradient all-reduce.
    `reductions`: calibration's windows, each least_reduce's; their mean over the steps is the
    all-reduce. Summed over windows first instead, a rank that was last in one window and not in
    the next would count its wait for the others as the all-reduce's."""
    nodes = []
    for i, (rate, weight) in enumerate(zip(rates, weights)):
        node = {"node": i, "samples_per_second": rate, "weight": weight}
        own = [w.overhead / w.overhead_steps for r, w in zip(layout, gathered) if r.node == i and w.overhead_steps]
        if own and len(own) == sum(1 for r in layout if r.node == i):
            node["overhead_seconds"] = sum(own) / len(own)
        nodes.append(node)
    measured = {"step": step, "nodes": nodes}
    # The all-reduce's own time: from the last gradient to the gradients reduced on the rank that
    # waits least for the others (the last to compute its gradients).
    if not reductions:
        window = least_reduce(gathered)
        reductions = [window] if window is not None else []
    if reductions:
        measured["allreduce_seconds"] = sum(s * n for s, n in reductions) / sum(n for _, n in reductions)
    else:
        # Nothing saw the reduction end (a script that reduces by itself): each step's time outside
        # the computation of the rank that waits least, its own work between steps included.
        outside = [(w.wall - w.seconds) / w.trained for w in gathered if w.trained > 0 and w.wall > w.seconds]
        if outside:
            measured["allreduce_seconds"] = min(outside)
    return measured


def check_layout(layout: List[RankLayout]) -> List[int]:
    """Each node's worker count, from every rank's own account; RuntimeError naming the ranks
    when they disagree (a node whose ranks' LOCAL_WORLD_SIZE differ would leave part of every
    step untrained; ranks that rebalance at different steps wait for each other forever)."""
    for field, what in [("global_batch", names.GLOBAL_BATCH), ("rebalance_every", "rebalance_every"),
                        ("calibrate_steps", names.CALIBRATE_STEPS)]:
        values = {getattr(r, field) for r in layout}
        if len(values) > 1:
            by_rank = ", ".join(f"rank {k}: {getattr(r, field)}" for k, r in enumerate(layout))
            raise RuntimeError(f"the ranks disagree on {what} ({by_rank}): every rank must rebalance at the same steps")
    nodes = sorted({r.node for r in layout})
    for node in nodes:
        hosts = {r.host for r in layout if r.node == node}
        if len(hosts) > 1:
            raise RuntimeError(f"the ranks of node {node} name different hosts {sorted(hosts)} in {names.NODE_HOST}")
    if nodes != list(range(len(nodes))):
        raise RuntimeError(f"{names.GROUP_RANK} values {nodes} are not 0..N-1: cannot rebalance")
    nproc = []
    for node in nodes:
        ranks = [k for k, r in enumerate(layout) if r.node == node]
        sizes = {layout[k].local_world_size for k in ranks}
        local = sorted(layout[k].local_rank for k in ranks)
        if sizes != {len(ranks)} or local != list(range(len(ranks))):
            said = ", ".join(f"rank {k}: {names.LOCAL_RANK} {layout[k].local_rank} of {layout[k].local_world_size}"
                             for k in ranks)
            raise RuntimeError(f"node {node} has {len(ranks)} ranks, but they say {said}: every rank of a node "
                               f"must have the node's {names.LOCAL_WORLD_SIZE} and its own {names.LOCAL_RANK}")
        nproc.append(len(ranks))
    return nproc


class ShareBatchSampler:
    """Yields this rank's sample indices of each step of an epoch (use as a DataLoader's
    batch_sampler). Step s covers positions [s*B, (s+1)*B) of one permutation of the dataset,
    the same on every rank (torch.randperm seeded with seed + epoch, as DistributedSampler);
    this rank takes its `batch` positions from its `offset`. With drop_last the last partial
    step is dropped; without, the order is padded by repeating its head, as DistributedSampler
    pads. Every rank has the same number of steps, so none waits in a collective for another.

    rebalance_every=K > 0: every K steps the ranks share what each measured (its compute seconds
    and samples over the window), and split the same B again by hetlaunch's rule, each node's
    weight its workers' samples per second. Which samples form a step never changes, only who
    takes them. A new split is taken only when it shortens the predicted step (the slowest rank's
    share over its rate) by at least 5%, so a steady load never makes it oscillate.

    `share` is the share of the step training is on: the oldest step handed out and not yet
    trained. A DataLoader with workers takes steps ahead of training; those keep the share they
    were cut with, so a step is always weighted by its own share (scale the loss by
    `sampler.share.loss_scale` read in the training loop, never by a Share kept from before).

    The sampler measures a step's compute from the moment training can start it to the step's
    last gradient bucket, when it is the state of the DDP comm hook:
    `ddp.register_comm_hook(sampler, weighted_allreduce_hook)`. A script that scales its loss
    instead calls `sampler.watch(model)` once: the sampler then times a step to the last of its
    gradients computed on this rank, and counts the step trained after its share's
    micro_batch_count backward passes. Not to the end of backward(): DDP's backward() waits there
    for every rank's gradients, so every rank would measure the slowest one's step. Needs
    torch.distributed initialised (every rank calls it at the same steps, and every rank's loader
    reads ahead alike); rebalancing with nothing timed is an error.

    state_dict() keeps the position (the epoch and the next step not yet trained) and the learned
    weights; load_state_dict() resumes there.

    With HETLAUNCH_CALIBRATE_STEPS=N in the environment (`hetlaunch calibrate`), the sampler
    rebalances every few steps, and after N steps rank 0 prints one line `HETLAUNCH_MEASURED
    {json}`: the rates of every step after the first window, each node's own work between steps,
    the all-reduce, and the all-reduce without each node (every rank times a gradient-sized
    all-reduce over the job and over the job without each node first); the sampler then yields no
    more steps."""

    DEADBAND = 0.05

    def __init__(self, dataset_size: int, share: Share, seed: int = 0, shuffle: bool = True, drop_last: bool = True,
                 rebalance_every: int = 0):
        if dataset_size < 1:
            raise ValueError("the dataset is empty")
        if drop_last and dataset_size < share.global_batch:
            raise ValueError(f"the dataset has {dataset_size} samples, fewer than one step's {share.global_batch}")
        check_rebalance_every(rebalance_every)
        self.dataset_size = dataset_size
        self._cut = share  # the share new steps are cut with
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.epoch = 0
        self.calibrate_steps = names.optional_integer(os.environ, names.CALIBRATE_STEPS, 1)
        if self.calibrate_steps and not rebalance_every:
            rebalance_every = max(2, self.calibrate_steps // 4)
        # `hetlaunch run --on-slow rebalance`: work moves off a rank that slowed down at the next
        # window, also in a script that never asked the sampler to rebalance.
        self._rebalance_imposed = not rebalance_every and _progress.on_slow_rebalances(os.environ)
        if self._rebalance_imposed:
            rebalance_every = _progress.WINDOW_STEPS
        self.rebalance_every = rebalance_every
        self.weights = None  # each node's weight (decimal strings) once measured; None: the plan's
        self.changes = 0  # how many times the split changed
        self.steps_done = 0  # steps handed out in all epochs
        self.measured = None  # {"step": S, "nodes": [...]}: the last window's (calibrating: every window's
        # after the first) measurement
        self.rates = {}  # {host: samples per second of one worker}: every host measured, this job or before
        self.steps = StepLedger()
        self._window = WindowSums()
        self._window_began = None  # when the window began, on this rank's clock (time.perf_counter)
        self._ever_timed = False
        self._layout = None  # [RankLayout] by rank, once gathered
        self._nproc = None  # each node's workers, from the layout
        self._resume = None  # (epoch, step) loaded and not yet reached
        self._loader_steps = None  # steps handed out and not yet read by a ShareLoader (it sets this)
        self._callback_queued = False
        self._pass_end_queued = False  # the comm hook's end-of-pass callback is queued
        self._reduction_queued = False  # the stamp of the gradients reduced is queued
        self._gradient = None  # what a step's all-reduce carries (_probe.Gradient), once seen
        self._bucket_elements = 0  # the current pass's buckets so far (the comm hook)
        self.watching = 0  # parameters whose gradients time the steps (watch())
        self._calibration = None  # calibrating: each rank's seconds and samples after the first window
        self._reductions = []  # calibrating: each window's all-reduce after the first (least_reduce)
        self._printed = False
        # Progress for a launcher that judges slow and hung ranks (HETLAUNCH_PROGRESS_SECONDS), if asked.
        self._progress = _progress.reporter()
        if self._progress is not None:
            self._progress.window_steps = rebalance_every or _progress.WINDOW_STEPS
        self._trained_steps = 0  # the steps of the job trained before the next (from a loaded position)

    # ---- order and position ----

    @property
    def share(self) -> Share:
        """The share of the step training is on (the oldest handed out and not yet trained), else
        the share the next step will be cut with."""
        front = self.steps.front()
        return front.share if front is not None else self._cut

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration yields. The epoch of a loaded position keeps it; any
        other starts at its first step."""
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None
        self.epoch = epoch

    def skip_to(self, step: int) -> None:
        """The first `step` steps of the current epoch are trained: the next iteration yields its
        steps from `step` on (what a script that counts its own steps says after a restart, as
        accelerate's skip_first_batches and Trainer's resume do). It replaces a loaded position
        of this epoch: said twice, a skip is not skipped twice."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"skip_to: step must be a non-negative int, got {step!r}")
        self._resume = (self.epoch, step)

    @property
    def batch_size(self):
        """A share sampler has no one batch size: the ranks' shares differ. Reading it is how a
        loader is re-sharded by batch size (accelerate's prepare), which would lose the shares."""
        raise ShareLoaderError(RESHARD_REFUSED)

    def __len__(self) -> int:
        b = self._cut.global_batch
        return self.dataset_size // b if self.drop_last else math.ceil(self.dataset_size / b)

    def order(self) -> List[int]:
        """The epoch's order of sample indices, padded or cut to a whole number of steps."""
        import torch

        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(self.dataset_size, generator=g).tolist()
        else:
            indices = list(range(self.dataset_size))
        total = len(self) * self._cut.global_batch
        if total > len(indices):
            padding = total - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return indices[:total]

    def position(self):
        """(epoch, step): the next step not yet trained (a step a loader read ahead but training
        did not reach is not trained); a loaded position until the sampler reaches it."""
        if self._resume is not None:
            return self._resume
        at = self.steps.position()
        return at if at is not None else (self.epoch, 0)

    def __iter__(self) -> Iterator[List[int]]:
        self.steps.abandon()
        if self._loader_steps is not None:
            self._loader_steps.clear()
        first = 0
        if self._resume is not None and self._resume[0] == self.epoch:
            first = self._resume[1]
        self._resume = None
        if self.calibrate_steps and self.steps_done >= self.calibrate_steps:
            # Calibrated already, or the N-th step ended the last epoch: measure and stop here.
            if not self._printed:
                self._rebalance()
                self._print_measured()
            return
        indices = self.order()
        b = self._cut.global_batch
        for step in range(first, len(self)):
            if self.rebalance_every and self._layout is None:
                self._gather_layout()
            if self.rebalance_every and self.steps_done and self.steps_done % self.rebalance_every == 0:
                self._rebalance()
                if self.calibrate_steps and self.steps_done >= self.calibrate_steps:
                    self._print_measured()
                    return
            share = self._cut
            self.steps_done += 1
            between = self.steps.hand_out(self.epoch, step, share)
            if between is not None:
                self._window.overhead += between
                self._window.overhead_steps += 1
            if self._loader_steps is not None:
                self._loader_steps.append(self.steps.pending[-1])
            start = step * b + share.offset
            if self._progress is not None and not self.watching:
                # Unwatched, a step is said to start when its indices are taken (a loader that reads
                # ahead takes them early; watch() marks the real start and end).
                self._progress.started(self.steps_done - 1)
            yield indices[start:start + share.batch]

    # ---- marking steps trained, and timing them ----

    def _trained(self, result) -> None:
        if result is None:
            return
        self._window.trained += 1
        if result.seconds is not None:
            self._window.seconds += result.seconds
            self._window.samples += result.handed.share.batch
            self._ever_timed = True
        self._trained_steps += 1
        if self._progress is not None:
            self._progress.trained(result.handed.share.batch, result.seconds)
            self._progress.computed()

    def gradient_ready(self, last: bool = False, bucket=None) -> None:
        """A gradient bucket of the current step is ready (the comm hook calls this); `last`: the
        step's last bucket, so the step is trained. `bucket`: its tensor, whose size calibration's
        all-reduce probe takes."""
        self.steps.last_gradient = time.perf_counter()
        if bucket is not None:
            self._bucket_elements += bucket.numel()
            if last:
                self._gradient = _probe.Gradient(self._bucket_elements, bucket.dtype, bucket.device)
                self._bucket_elements = 0
        if not self._pass_end_queued:
            from torch.autograd import Variable

            try:
                Variable._execution_engine.queue_callback(self._reducing_pass_ended)
                self._pass_end_queued = True
            except Exception:  # called outside a backward pass: there is no reduction to time
                pass
        if last:
            self._trained(self.steps.mark("hook"))

    def _reducing_pass_ended(self) -> None:
        self._pass_end_queued = False
        self._time_reduction()

    def _time_reduction(self) -> None:
        """At the end of a backward pass whose gradients are reduced: one more callback, run after
        DDP's own (queued when its last bucket was ready, it waits for the all-reduce), stamps the
        gradients reduced. From this rank's last gradient to then is the all-reduce with the wait
        for the others; from then to the next step handed out is this rank's own work."""
        from torch.autograd import Variable

        if self._reduction_queued:
            return

        def reduced():
            self._reduction_queued = False
            now = self.steps.reduced_at = time.perf_counter()
            last = self.steps.last_gradient
            if last is not None and now >= last:
                self._window.reduce += now - last
                self._window.reduce_steps += 1
        try:
            Variable._execution_engine.queue_callback(reduced)
            self._reduction_queued = True
        except Exception:  # no backward pass to follow: the reduction is not timed
            pass

    def computed(self) -> None:
        """The current step's own work is done: for a script that synchronises its gradients
        itself, called once a step before it does. Under DDP use watch(): its backward() has
        waited for the other ranks by the time it returns."""
        self.steps.last_gradient = time.perf_counter()
        self._trained(self.steps.mark("computed"))

    def watch(self, module) -> list:
        """Times each step to the last gradient of `module`'s parameters computed on this rank
        (a hook on each parameter that needs one; DDP's wrapper or the module it wraps alike), and
        counts a step trained once its backward passes are done (micro_batch_count of its share).
        For a script that scales its loss instead of registering the comm hook: one call, before
        training. Returns the hooks' handles (`.remove()` ends the watch)."""
        from torch.autograd import Variable

        def backward_ended():
            self._callback_queued = False
            trained = self.steps.backward_ended()
            self._trained(trained)
            if trained is not None:
                self._time_reduction()

        def stamp(grad):
            self.steps.last_gradient = time.perf_counter()
            if not self._callback_queued:  # once a backward pass, run when it ends
                self._callback_queued = True
                Variable._execution_engine.queue_callback(backward_ended)

        handles = [p.register_hook(stamp) for p in module.parameters() if p.requires_grad]
        if not handles:
            raise ValueError(f"{type(module).__name__} has no parameter that needs a gradient: nothing to time")
        self.watching += len(handles)
        watched = [p for p in module.parameters() if p.requires_grad]
        self._gradient = _probe.Gradient(sum(p.numel() for p in watched), watched[0].dtype, watched[0].device)
        if self._progress is not None:
            import torch

            def forward_starts(m, inputs):
                # A training step's computation begins (an evaluation's forwards are no step).
                if m.training and torch.is_grad_enabled():
                    self._progress.started(self._trained_steps)
            handles.append(module.register_forward_pre_hook(forward_starts))
        return handles

    # ---- rebalancing ----

    def _gather(self, mine):
        import torch.distributed as dist

        gathered = [None] * dist.get_world_size(self._cut.group)
        dist.all_gather_object(gathered, mine, group=self._cut.group)
        return gathered

    def _gather_layout(self) -> None:
        s = self._cut
        layout = self._gather(tuple(RankLayout(s.node, s.local_world_size, s.local_rank, s.batch, s.offset,
                                               s.global_batch, self.rebalance_every, self.calibrate_steps,
                                               s.host)))
        self._layout = [RankLayout(*r) for r in layout]
        self._nproc = check_layout(self._layout)

    def _rebalance(self) -> None:
        """Every rank, at the same step: gather the window's measurements, split again."""
        if self._layout is None:
            self._gather_layout()
        w, self._window = self._window, WindowSums()
        now = time.perf_counter()
        wall = now - self._window_began if self._window_began is not None else 0.0
        self._window_began = now
        gathered = [RankWindow(*g) for g in self._gather(tuple(RankWindow(
            w.seconds, w.samples, w.trained, self._ever_timed, self.steps.marked_total > 0, wall,
            w.overhead, w.overhead_steps, w.reduce, w.reduce_steps)))]
        # The gather's own time is no step's: the next step's start is not measured from the
        # last reduction.
        self.steps.reduced_at = None
        if not any(w.seconds > 0 for w in gathered):
            if any(w.ever_timed for w in gathered):
                return  # only untimed steps this window (a read-ahead loader's end of an epoch)
            if self.steps_done > self.rebalance_every + READ_AHEAD_LIMIT or any(w.ever_trained for w in gathered):
                if self._rebalance_imposed:
                    return self._stop_imposed_rebalancing()
                raise RuntimeError(NOTHING_TIMED)
            return  # nothing trained yet: the loader reads ahead of the first steps
        untimed = [k for k, w in enumerate(gathered) if w.trained and not w.seconds > 0]
        if untimed:
            raise RuntimeError(f"ranks {untimed} trained steps but timed none, while other ranks timed theirs: "
                               "every rank must time its steps the same way (" + NOTHING_TIMED.split(': ', 1)[1] + ")")
        nproc = self._nproc
        if self.calibrate_steps:
            # Calibrating: every window after the first counts, each rank's seconds and samples
            # summed (a rate per sample does not depend on the split it was measured at). The
            # first window holds the job's first steps, slow everywhere; one window alone is used
            # when there is no other.
            if self._calibration is None:
                self._calibration = [RankWindow(0.0, 0, 0, False, False) for _ in gathered]
            else:
                self._calibration = [summed(c, g) for c, g in zip(self._calibration, gathered)]
                window = least_reduce(gathered)
                if window is not None:
                    self._reductions.append(window)
                gathered = self._calibration
        rates = []
        for node in range(len(nproc)):
            per_worker = [w.samples / w.seconds for r, w in zip(self._layout, gathered)
                          if r.node == node and w.seconds > 0 and w.samples > 0]
            if len(per_worker) != nproc[node]:
                return  # a rank of this node timed nothing this window: keep the split
            rates.append(sum(per_worker) / len(per_worker))
        weights = weights_from_rates(rates)
        for host, rate in zip(self._hosts(), rates):
            if host:
                self.rates[host] = rate
        self.measured = measurement(self.steps_done, self._layout, gathered, rates, weights, self._reductions)
        current = self._node_split(nproc)
        proposed = split_batch(self._cut.global_batch, nproc, weights)

        def predicted(split):
            # The step takes as long as its slowest rank: the largest share over its rate.
            return max(rank_batch(n, o, nproc[i], 0)[0] / rates[i] for i, (n, o) in enumerate(split))
        if proposed != current and predicted(proposed) <= (1 - self.DEADBAND) * predicted(current):
            self.weights = weights
            self.changes += 1
            self._apply(proposed)

    def _stop_imposed_rebalancing(self) -> None:
        """--on-slow rebalance in a script whose steps nobody times: said once (rank 0), and the
        split stays the plan's. Every rank saw the same gathered windows, so all stop alike."""
        import torch.distributed as dist

        self.rebalance_every = 0
        self._rebalance_imposed = False
        if dist.get_rank(self._cut.group) == 0:
            print("hetlaunch_shares: --on-slow rebalance cannot move work: " + NOTHING_TIMED.split(': ', 1)[1]
                  + "; the split stays as planned", file=sys.stderr, flush=True)

    def _hosts(self) -> List[str]:
        """Each node's host, from the layout ("" where HETLAUNCH_NODE_HOST was not set)."""
        return [next(r.host for r in self._layout if r.node == i) for i in range(len(self._nproc))]

    def _node_split(self, nproc):
        if self.weights:
            return split_batch(self._cut.global_batch, nproc, self.weights)
        # The split the job started with: every node's (n, o), from the ranks' own shares.
        return [(sum(r.batch for r in self._layout if r.node == i), min(r.offset for r in self._layout if r.node == i))
                for i in range(len(nproc))]

    def _apply(self, split) -> None:
        """New steps are cut with this split; steps already handed out keep theirs."""
        s = self._cut
        n, o = split[s.node]
        b, off = rank_batch(n, o, s.local_world_size, s.local_rank)
        self._cut = replace(s, batch=b, offset=off)

    # ---- checkpoints ----

    def state_dict(self) -> dict:
        """What a checkpoint keeps: the position (`epoch`, and `step`, the next step of that epoch
        not yet trained), the learned weights (None: the plan's split), `rates` ({host: samples
        per second of one worker} of every host measured, by HETLAUNCH_NODE_HOST) and the counts."""
        epoch, step = self.position()
        return {"weights": list(self.weights) if self.weights else None, "rates": dict(self.rates),
                "changes": self.changes, "steps_done": self.steps_done, "epoch": epoch, "step": step}

    def load_state_dict(self, state: dict) -> None:
        """Takes a checkpoint's state back (after a restart): the next iteration of the loaded
        epoch yields its steps from the loaded position, and the next step uses what was learned
        of each node's speed, on any topology: a host the checkpoint measured gets its rate, a
        host it did not (a spare, a node added) its plan weight times the median over the measured
        hosts of rate / plan weight. A checkpoint without rates (or a job without host names)
        keeps its weights when the node count is the same, and the plan's split otherwise. Every
        rank must load the same state."""
        weights = state.get("weights")
        rates = state.get("rates") or {}
        if not isinstance(rates, dict):
            raise ValueError(f"the checkpoint's rates must map hosts to samples per second, got {rates!r}")
        for host, rate in rates.items():
            if not isinstance(host, str) or not host or isinstance(rate, bool) or \
                    not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
                raise ValueError(f"the checkpoint's rate {rate!r} of host {host!r} is not a positive number of "
                                 "samples per second")
        rates = {host: float(rate) for host, rate in rates.items()}
        self.changes = int(state.get("changes", 0))
        self.steps_done = int(state.get("steps_done", 0))
        if "epoch" in state and "step" in state:
            epoch, step = int(state["epoch"]), int(state["step"])
            if epoch < 0 or step < 0:
                raise ValueError(f"the checkpoint's position (epoch {epoch}, step {step}) is negative")
            self._resume = (epoch, step)
            self.epoch = epoch
            self._trained_steps = epoch * len(self) + step
        if not weights and not rates:
            return
        if self._layout is None:
            self._gather_layout()
        nproc = self._nproc
        # The plan's split stands for the plan's weights: a node's samples a worker.
        plan_per_worker = [sum(r.batch for r in self._layout if r.node == i) / nproc[i] for i in range(len(nproc))]
        learned = rates_on_topology(self._hosts(), plan_per_worker, rates)
        # Hosts not in this job keep their rates for a checkpoint of this job (a host back later).
        self.rates = {**rates, **self.rates}
        if learned:
            self.weights = weights_from_rates(learned)
        elif weights and len(weights) == len(nproc):
            self.weights = list(weights)
        else:
            if weights:
                warnings.warn(f"the checkpoint has weights for {len(weights)} nodes and no rates by host for this "
                              f"job's {len(nproc)}: the job starts at the plan's split", stacklevel=2)
            return
        self._apply(split_batch(self._cut.global_batch, nproc, self.weights))

    # ---- calibration ----

    def _print_measured(self) -> None:
        import torch.distributed as dist

        if self.measured is None:
            raise RuntimeError("calibration ended before any step was measured: " + NOTHING_TIMED)
        self._printed = True
        self._time_allreduce_without_each_node()
        if dist.get_rank(self._cut.group) == 0:
            print(names.MEASURED_LINE + json.dumps(self.measured), flush=True)
            sys.stdout.flush()

    def _time_allreduce_without_each_node(self) -> None:
        """Each node's `allreduce_seconds_without`: the all-reduce measured while training, for
        the job without the slowest node scaled by how much faster the rest reduce a
        gradient-sized tensor (_probe.without_each_node).
        Every rank decides alike: on the default group, with an all-reduce measured and a
        gradient seen on every rank."""
        if self._cut.group is not None or "allreduce_seconds" not in self.measured:
            return
        if not all(self._gather(self._gradient is not None)):
            return
        probed = _probe.allreduce_without_each_node([r.node for r in self._layout], self._gradient)
        if probed is None:
            return
        without = _probe.without_each_node(self.measured["allreduce_seconds"], probed)
        for node, seconds in zip(self.measured["nodes"], without):
            node["allreduce_seconds_without"] = seconds


def weighted_allreduce_hook(state, bucket):
    """A DDP communication hook that weights each rank's gradient by its batch: each bucket is
    multiplied by b / B and summed over the ranks, which is the mean over all B samples.
    Register it with `ddp.register_comm_hook(share, weighted_allreduce_hook)` and do not scale
    the loss as well (DDP does not divide by the world size when a hook is registered). With a
    ShareBatchSampler as the state, the share the step being trained was cut with weights it (a
    loader's read-ahead cut with an older or newer split does not), and the sampler times the
    step and counts it trained at its last bucket."""
    import torch.distributed as dist

    sampler = state if isinstance(state, ShareBatchSampler) else None
    share = sampler.share if sampler is not None else state
    tensor = bucket.buffer()
    tensor.mul_(share.batch / share.global_batch)
    if sampler is not None:
        sampler.gradient_ready(last=bucket.is_last(), bucket=tensor)
    future = dist.all_reduce(tensor, group=share.group, async_op=True).get_future()
    return future.then(lambda f: f.value()[0])
