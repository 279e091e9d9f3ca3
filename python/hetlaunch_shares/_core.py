# SPDX-License-Identifier: MIT
"""The work share of a rank, the sampler of its part of every step, and the DDP hook that weights
its gradient (hetlaunch_shares' core: the standard library and torch only)."""

import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, replace
from typing import Iterator, List, Mapping, Optional, Tuple

__all__ = ["Share", "rank_batch", "share_from_env", "ShareBatchSampler", "ShareLoaderError",
           "weighted_allreduce_hook", "micro_batches", "split_batch", "weights_from_rates"]


class ShareLoaderError(RuntimeError):
    """A share loader used where its shares would be lost (accelerate's own prepare of it)."""


# What a library reads to re-shard a loader by its batch size (accelerate's BatchSamplerShard, its
# split_batches check) meets this instead: a share loader is never dealt out a second time.
RESHARD_REFUSED = (
    "this loader's batch sampler is a ShareBatchSampler, which gives each rank its own share of "
    "every step; accelerate's prepare(loader) would deal whole steps out round-robin instead (each "
    "rank would train on 1/W of the steps, with the wrong gradient). Prepare the model and optimizer "
    "with accelerator.prepare(model, optimizer), and the loader with "
    "hetlaunch_shares.prepare_loader(accelerator, loader)")


def rank_batch(node_batch: int, node_offset: int, local_world_size: int, local_rank: int) -> Tuple[int, int]:
    """A local rank's (batch, offset) within a step, from its node's: the node's samples dealt out
    evenly, the lower local ranks taking one more when they do not divide (hetlaunch's rule)."""
    if local_world_size < 1 or not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank} is not in 0..{local_world_size - 1}")
    base, extra = divmod(node_batch, local_world_size)
    return base + (1 if local_rank < extra else 0), node_offset + local_rank * base + min(local_rank, extra)


@dataclass(frozen=True)
class Share:
    """One rank's part of every optimizer step."""

    global_batch: int  # B: the samples of one step over the whole job
    world_size: int  # W
    batch: int  # b: this rank's samples a step
    offset: int  # where they start within the step's B
    group: Optional[object] = None  # the process group of weighted_allreduce_hook (None: the default)
    max_batch: int = 0  # M: the most samples this rank takes in one forward (0: no ceiling)

    def __post_init__(self):
        # A share that cannot be a rank's part of a step would make the sampler yield empty or
        # overlapping steps, or divide by zero: refused, naming the field.
        for name in ("global_batch", "world_size", "batch", "offset", "max_batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"Share.{name} must be an integer, got {value!r}")
        if self.max_batch < 0:
            raise ValueError(f"Share.max_batch must be 0 (no ceiling) or a positive integer, got {self.max_batch}")
        if self.world_size < 1:
            raise ValueError(f"Share.world_size must be at least 1, got {self.world_size}")
        if self.global_batch < self.world_size:
            raise ValueError(f"Share.global_batch {self.global_batch} is smaller than the world size "
                             f"{self.world_size}: every rank needs at least one sample a step")
        if not 1 <= self.batch <= self.global_batch:
            raise ValueError(f"Share.batch must be 1..{self.global_batch} (the global batch), got {self.batch}")
        if not 0 <= self.offset <= self.global_batch - self.batch:
            raise ValueError(f"Share.offset must be 0..{self.global_batch - self.batch}, so that the batch of "
                             f"{self.batch} lies within the step's {self.global_batch} samples; got {self.offset}")

    @property
    def micro_batch_count(self) -> int:
        """How many forwards this rank's share takes under its ceiling: ceil(b / M), 1 without one."""
        return -(-self.batch // self.max_batch) if self.max_batch else 1

    @property
    def loss_scale(self) -> float:
        """b * W / B: multiply the mean loss by it before backward(). DDP divides the summed
        gradient by W, so the result is the mean over all B samples."""
        return self.batch * self.world_size / self.global_batch


_DIGITS = re.compile(r"[0-9]{1,18}")


def _integer(env: Mapping[str, str], name: str, least: int = 0) -> int:
    """The variable's value: ASCII digits only (Python's isdigit and int() also take '８' and
    '²', which hetlaunch check-env refuses), at least `least`."""
    value = env.get(name)
    if value is None:
        raise ValueError(f"{name} is not set: start the job with hetlaunch and --global-batch")
    if not _DIGITS.fullmatch(value):
        raise ValueError(f"{name}={value!r} is not a non-negative integer of ASCII digits")
    number = int(value)
    if number < least:
        raise ValueError(f"{name}={value!r} must be at least {least}")
    return number


def share_from_env(env: Optional[Mapping[str, str]] = None) -> Share:
    """This rank's share, from the variables hetlaunch and torchrun set (HETLAUNCH_MAX_BATCH, the
    node's ceiling, only when the node has one)."""
    env = os.environ if env is None else env
    global_batch = _integer(env, "HETLAUNCH_GLOBAL_BATCH", 1)
    world_size = _integer(env, "WORLD_SIZE", 1)
    local_world_size = _integer(env, "LOCAL_WORLD_SIZE", 1)
    if local_world_size > world_size:
        raise ValueError(f"LOCAL_WORLD_SIZE={local_world_size} is more than WORLD_SIZE={world_size}")
    batch, offset = rank_batch(_integer(env, "HETLAUNCH_NODE_BATCH", 1), _integer(env, "HETLAUNCH_NODE_BATCH_OFFSET"),
                               local_world_size, _integer(env, "LOCAL_RANK"))
    if global_batch < world_size or not 1 <= batch or offset + batch > global_batch:
        raise ValueError(f"inconsistent work share: batch {batch} at {offset} of a global batch of {global_batch} "
                         f"over {world_size} workers")
    max_batch = _integer(env, "HETLAUNCH_MAX_BATCH", 1) if "HETLAUNCH_MAX_BATCH" in env else 0
    return Share(global_batch, world_size, batch, offset, max_batch=max_batch)


def micro_batches(indices, max_batch: int) -> list:
    """`indices` (a rank's share of one step) cut into ceil(len / max_batch) micro-batches of at most
    max_batch, their sizes as even as possible, the larger ones first; one batch when max_batch is
    0 (no ceiling). Run a forward and backward on each and synchronise gradients only on the last
    (DDP's no_sync() around the others): the step's gradient does not change, only how many
    samples one forward holds.

        for k, part in enumerate(micro_batches(step_indices, share.max_batch)):
            last = k == len(parts) - 1
            with (contextlib.nullcontext() if last else ddp.no_sync()):
                (loss_fn(ddp(x[part]), y[part]) * len(part) / len(step_indices) * share.loss_scale).backward()
    """
    if not isinstance(max_batch, int) or isinstance(max_batch, bool) or max_batch < 0:
        raise ValueError(f"max_batch must be 0 (no ceiling) or a positive integer, got {max_batch!r}")
    items = list(indices)
    if max_batch == 0 or len(items) <= max_batch:
        return [items] if items else []
    count = -(-len(items) // max_batch)
    base, extra = divmod(len(items), count)
    out, start = [], 0
    for k in range(count):
        size = base + (1 if k < extra else 0)
        out.append(items[start:start + size])
        start += size
    return out


_DECIMAL = re.compile(r"([0-9]+)(?:\.([0-9]{1,6}))?")


def _weight_millionths(weight: str) -> int:
    """A weight's exact value in millionths, read as hetlaunch reads it (at most 6 fractional
    digits, above 0, at most 1000000)."""
    m = _DECIMAL.fullmatch(weight) if isinstance(weight, str) else None
    if not m:
        raise ValueError(f"weight {weight!r} is not a decimal with at most 6 fractional digits")
    value = int(m.group(1)) * 10**6 + int((m.group(2) or "").ljust(6, "0"))
    if not 0 < value <= 10**12:
        raise ValueError(f"weight {weight!r} must be above 0 and at most 1000000")
    return value


def split_batch(global_batch: int, nproc, weights) -> List[Tuple[int, int]]:
    """Each node's (n_i, o_i) of one step: hetlaunch's split (docs/shares.md), in exact integers,
    equal to `hetlaunch plan --json`'s node_batch and node_batch_offset for every input. Every
    rank gets one sample; the E = B - W others go by d_i = p_i * w_i, floors first, then one each
    to the largest remainders, ties to the lower node."""
    nproc = list(nproc)
    if not nproc or any(not isinstance(p, int) or p < 1 for p in nproc):
        raise ValueError(f"every node needs at least one worker: {nproc}")
    if len(weights) != len(nproc):
        raise ValueError(f"{len(weights)} weights for {len(nproc)} nodes")
    world = sum(nproc)
    if global_batch < world:
        raise ValueError(f"the global batch {global_batch} is smaller than the world size {world}")
    d = [p * _weight_millionths(w) for p, w in zip(nproc, weights)]
    total, extra = sum(d), global_batch - world
    batch = [p + extra * di // total for p, di in zip(nproc, d)]
    left = global_batch - sum(batch)
    for i in sorted(range(len(d)), key=lambda i: (-(extra * d[i] % total), i))[:left]:
        batch[i] += 1
    offsets, at = [], 0
    for n in batch:
        offsets.append(at)
        at += n
    return list(zip(batch, offsets))


def weights_from_rates(rates) -> List[str]:
    """The weights of measured speeds (samples per second of one worker, by node): each rate over
    the slowest, to the millionth (half up), as decimal strings; the slowest node gets "1", none
    more than 1000000. The same rule as the C++ weights_from_rates (calibration.hpp)."""
    rates = list(rates)
    if not rates:
        raise ValueError("no node was measured")
    for i, r in enumerate(rates):
        if not isinstance(r, (int, float)) or not math.isfinite(r) or r <= 0:
            raise ValueError(f"node {i}: samples per second must be a positive finite number, got {r!r}")
    slowest = min(rates)
    out = []
    for r in rates:
        ratio = r / slowest
        micros = 10**12 if ratio >= 10**6 else int(math.floor(ratio * 10**6 + 0.5))
        whole, fraction = divmod(micros, 10**6)
        out.append(str(whole) + (("." + f"{fraction:06d}".rstrip("0")) if fraction else ""))
    return out


def _calibrate_steps(env) -> int:
    return _integer(env, "HETLAUNCH_CALIBRATE_STEPS", 1) if "HETLAUNCH_CALIBRATE_STEPS" in env else 0


def check_rebalance_every(value) -> int:
    """`value` if it is a valid rebalance_every (0: never, K > 0: every K steps); else ValueError."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"rebalance_every must be 0 (never) or a positive number of steps, got {value!r}")
    return value


NOTHING_TIMED = ("no rank timed a step, so the sampler cannot measure the ranks: register it as the DDP comm "
                 "hook's state (ddp.register_comm_hook(sampler, weighted_allreduce_hook)), or call "
                 "sampler.watch(model) once when the script scales its loss")


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
    share over its rate) by at least 5%, so a steady load never makes it oscillate. `share` is
    the current Share. The sampler measures a step's compute from the moment it hands out the
    step's indices to the step's last gradient bucket, when it is the state of the DDP comm hook:
    `ddp.register_comm_hook(sampler, weighted_allreduce_hook)`. A script that scales its loss
    instead (by `sampler.share.loss_scale`) calls `sampler.watch(model)` once: the sampler then
    times a step to the last of its gradients computed on this rank. Not to the end of
    backward(): DDP's backward() waits there for every rank's gradients, so every rank would
    measure the slowest one's step. Needs torch.distributed initialised (every rank calls it at
    the same steps); rebalancing with nothing timed is an error.

    With HETLAUNCH_CALIBRATE_STEPS=N in the environment (`hetlaunch calibrate`), the sampler
    rebalances every few steps, and after N steps rank 0 prints one line `HETLAUNCH_MEASURED
    {json}`, the rates of every step after the first window, and the sampler yields no more
    steps."""

    DEADBAND = 0.05

    def __init__(self, dataset_size: int, share: Share, seed: int = 0, shuffle: bool = True, drop_last: bool = True,
                 rebalance_every: int = 0):
        if dataset_size < 1:
            raise ValueError("the dataset is empty")
        if drop_last and dataset_size < share.global_batch:
            raise ValueError(f"the dataset has {dataset_size} samples, fewer than one step's {share.global_batch}")
        check_rebalance_every(rebalance_every)
        self.dataset_size = dataset_size
        self.share = share
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.epoch = 0
        self.calibrate_steps = _calibrate_steps(os.environ)
        if self.calibrate_steps and not rebalance_every:
            rebalance_every = max(2, self.calibrate_steps // 4)
        self.rebalance_every = rebalance_every
        self.weights = None  # each node's weight (decimal strings) once measured; None: the plan's
        self.changes = 0  # how many times the split changed
        self.steps_done = 0  # steps handed out in all epochs
        self.measured = None  # {"step": S, "nodes": [...]}: the last window's (calibrating: every window's
        # after the first) measurement
        self._window_seconds = 0.0
        self._window_samples = 0
        self._step_start = None
        self._last_gradient = None
        self._layout = None  # [(group_rank, local_world_size, local_rank) of each rank], by rank
        self.watching = 0  # parameters whose gradients time the steps (watch())
        self._calibration = None  # calibrating: each rank's seconds and samples after the first window

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def batch_size(self):
        """A share sampler has no one batch size: the ranks' shares differ. Reading it is how a
        loader is re-sharded by batch size (accelerate's prepare), which would lose the shares."""
        raise ShareLoaderError(RESHARD_REFUSED)

    def __len__(self) -> int:
        b = self.share.global_batch
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
        total = len(self) * self.share.global_batch
        if total > len(indices):
            padding = total - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return indices[:total]

    # ---- measuring ----

    def gradient_ready(self) -> None:
        """A gradient bucket of the current step is ready (the comm hook calls this)."""
        self._last_gradient = time.perf_counter()

    def computed(self) -> None:
        """The current step's own work is done: for a script that synchronises its gradients
        itself, called before it does. Under DDP use watch(): its backward() has waited for the
        other ranks by the time it returns."""
        self._last_gradient = time.perf_counter()

    def watch(self, module) -> list:
        """Times each step to the last gradient of `module`'s parameters computed on this rank
        (a hook on each parameter that needs one; DDP's wrapper or the module it wraps alike).
        For a script that scales its loss instead of registering the comm hook: one call, before
        training. Returns the hooks' handles (`.remove()` ends the watch)."""
        def stamp(grad):
            self._last_gradient = time.perf_counter()
        handles = [p.register_hook(stamp) for p in module.parameters() if p.requires_grad]
        if not handles:
            raise ValueError(f"{type(module).__name__} has no parameter that needs a gradient: nothing to time")
        self.watching += len(handles)
        return handles

    def _close_step(self) -> None:
        if self._step_start is not None and self._last_gradient is not None and self._last_gradient > self._step_start:
            self._window_seconds += self._last_gradient - self._step_start
            self._window_samples += self.share.batch
        self._step_start = self._last_gradient = None

    def _rebalance(self) -> None:
        """Every rank, at the same step: gather the window's measurements, split again."""
        import torch.distributed as dist

        mine = (int(os.environ.get("GROUP_RANK", "0")), int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
                int(os.environ.get("LOCAL_RANK", "0")), self._window_seconds, self._window_samples)
        gathered = [None] * dist.get_world_size(self.share.group)
        dist.all_gather_object(gathered, mine, group=self.share.group)
        self._window_seconds, self._window_samples = 0.0, 0
        nodes = sorted({g[0] for g in gathered})
        if nodes != list(range(len(nodes))):
            raise RuntimeError(f"GROUP_RANK values {nodes} are not 0..N-1: cannot rebalance")
        nproc = [next(g[1] for g in gathered if g[0] == i) for i in nodes]
        if not any(g[3] > 0 for g in gathered):
            raise RuntimeError(NOTHING_TIMED)
        if self.calibrate_steps:
            # Calibrating: every window after the first counts, each rank's seconds and samples
            # summed (a rate per sample does not depend on the split it was measured at). The
            # first window holds the job's first steps, slow everywhere; one window alone is used
            # when there is no other.
            if self._calibration is None:
                self._calibration = [(g[0], g[1], g[2], 0.0, 0) for g in gathered]
            else:
                self._calibration = [(g[0], g[1], g[2], c[3] + g[3], c[4] + g[4])
                                     for c, g in zip(self._calibration, gathered)]
                gathered = self._calibration
        rates = []
        for i in nodes:
            per_worker = [g[4] / g[3] for g in gathered if g[0] == i and g[3] > 0 and g[4] > 0]
            if len(per_worker) != nproc[i]:
                return  # a rank had no samples to time in this window (an empty share): keep the split
            rates.append(sum(per_worker) / len(per_worker))
        weights = weights_from_rates(rates)
        self.measured = {"step": self.steps_done,
                         "nodes": [{"node": i, "samples_per_second": rates[i], "weight": weights[i]} for i in nodes]}
        B = self.share.global_batch
        current = self._node_split(nproc)
        proposed = split_batch(B, nproc, weights)

        def predicted(split):
            # The step takes as long as its slowest rank: the largest share over its rate.
            return max(rank_batch(n, o, nproc[i], 0)[0] / rates[i] for i, (n, o) in enumerate(split))
        if proposed != current and predicted(proposed) <= (1 - self.DEADBAND) * predicted(current):
            self.weights = weights
            self.changes += 1
            self._apply(proposed, nproc)

    def _node_split(self, nproc):
        return split_batch(self.share.global_batch, nproc, self.weights) if self.weights else self._plan_split(nproc)

    def _plan_split(self, nproc):
        # The split the job started with: every node's (n, o), from the ranks' own shares.
        import torch.distributed as dist

        if self._layout is None:
            mine = (int(os.environ.get("GROUP_RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")),
                    self.share.batch, self.share.offset)
            self._layout = [None] * dist.get_world_size(self.share.group)
            dist.all_gather_object(self._layout, mine, group=self.share.group)
        split = []
        for i in range(len(nproc)):
            ranks = [x for x in self._layout if x[0] == i]
            split.append((sum(x[2] for x in ranks), min(x[3] for x in ranks)))
        return split

    def _apply(self, split, nproc):
        node = int(os.environ.get("GROUP_RANK", "0"))
        n, o = split[node]
        b, off = rank_batch(n, o, nproc[node], int(os.environ.get("LOCAL_RANK", "0")))
        self.share = replace(self.share, batch=b, offset=off)

    def state_dict(self) -> dict:
        """What a checkpoint keeps: the learned weights (None: the plan's split) and the counts."""
        return {"weights": list(self.weights) if self.weights else None, "changes": self.changes,
                "steps_done": self.steps_done}

    def load_state_dict(self, state: dict) -> None:
        """Takes the learned weights back (after a restart): the next step uses their split.
        Every rank must load the same state."""
        weights = state.get("weights")
        self.changes = int(state.get("changes", 0))
        self.steps_done = int(state.get("steps_done", 0))
        if weights:
            import torch.distributed as dist

            nproc_of = [None] * dist.get_world_size(self.share.group)
            dist.all_gather_object(nproc_of, (int(os.environ.get("GROUP_RANK", "0")),
                                              int(os.environ.get("LOCAL_WORLD_SIZE", "1"))), group=self.share.group)
            nproc = [n for _, n in sorted(set(nproc_of))]
            if len(nproc) != len(weights):
                raise ValueError(f"the checkpoint has weights for {len(weights)} nodes; this job has {len(nproc)}")
            self.weights = list(weights)
            self._apply(split_batch(self.share.global_batch, nproc, self.weights), nproc)

    def _print_measured(self) -> None:
        import torch.distributed as dist

        if self.measured is None:
            raise RuntimeError("calibration ended before any step was measured: " + NOTHING_TIMED)
        if dist.get_rank(self.share.group) == 0:
            print("HETLAUNCH_MEASURED " + json.dumps(self.measured), flush=True)
            sys.stdout.flush()

    def __iter__(self) -> Iterator[List[int]]:
        if self.calibrate_steps and self.measured is not None and self.steps_done >= self.calibrate_steps:
            return  # calibrated: no more steps, in any epoch
        indices = self.order()
        b = self.share.global_batch
        for step in range(len(self)):
            self._close_step()
            if self.rebalance_every and self.steps_done and self.steps_done % self.rebalance_every == 0:
                self._rebalance()
                if self.calibrate_steps and self.steps_done >= self.calibrate_steps:
                    self._print_measured()
                    return
            first = step * b + self.share.offset
            self.steps_done += 1
            self._step_start = time.perf_counter()
            yield indices[first:first + self.share.batch]


def weighted_allreduce_hook(state, bucket):
    """A DDP communication hook that weights each rank's gradient by its batch: each bucket is
    multiplied by b / B and summed over the ranks, which is the mean over all B samples.
    Register it with `ddp.register_comm_hook(share, weighted_allreduce_hook)` and do not scale
    the loss as well (DDP does not divide by the world size when a hook is registered). With a
    ShareBatchSampler as the state, the current share of a rebalancing sampler weights it, and
    the sampler times the step."""
    import torch.distributed as dist

    share = state.share if isinstance(state, ShareBatchSampler) else state
    if isinstance(state, ShareBatchSampler):
        state.gradient_ready()  # the sampler times the step's compute by its last bucket
    tensor = bucket.buffer()
    tensor.mul_(share.batch / share.global_batch)
    future = dist.all_reduce(tensor, group=share.group, async_op=True).get_future()
    return future.then(lambda f: f.value()[0])
