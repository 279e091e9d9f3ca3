# SPDX-License-Identifier: MIT
"""The work share of a rank, the sampler of its part of every step, and the DDP hook that weights
its gradient (hetlaunch_shares' core: the standard library and torch only)."""

import math
import os
import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Tuple

from . import _names as names

__all__ = ["Share", "rank_batch", "share_from_env", "ShareLoaderError", "micro_batches", "split_batch",
           "weights_from_rates"]


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
    node: int = 0  # the node's index (GROUP_RANK)
    local_rank: int = 0  # LOCAL_RANK
    local_world_size: int = 1  # the node's workers (LOCAL_WORLD_SIZE)
    host: str = ""  # the node's host as the plan names it (HETLAUNCH_NODE_HOST; "": not known)

    def __post_init__(self):
        # A share that cannot be a rank's part of a step would make the sampler yield empty or
        # overlapping steps, or divide by zero: refused, naming the field.
        for name in ("global_batch", "world_size", "batch", "offset", "max_batch", "node", "local_rank",
                     "local_world_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"Share.{name} must be an integer, got {value!r}")
        if not isinstance(self.host, str):
            raise ValueError(f"Share.host must be a string, got {self.host!r}")
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
        if self.node < 0:
            raise ValueError(f"Share.node must be 0 or more, got {self.node}")
        if not 1 <= self.local_world_size <= self.world_size:
            raise ValueError(f"Share.local_world_size must be 1..{self.world_size} (the world size), got "
                             f"{self.local_world_size}")
        if not 0 <= self.local_rank < self.local_world_size:
            raise ValueError(f"Share.local_rank must be 0..{self.local_world_size - 1}, got {self.local_rank}")

    @property
    def micro_batch_count(self) -> int:
        """How many forwards this rank's share takes under its ceiling: ceil(b / M), 1 without one."""
        return -(-self.batch // self.max_batch) if self.max_batch else 1

    @property
    def loss_scale(self) -> float:
        """b * W / B: multiply the mean loss by it before backward(). DDP divides the summed
        gradient by W, so the result is the mean over all B samples."""
        return self.batch * self.world_size / self.global_batch


def share_from_env(env: Optional[Mapping[str, str]] = None) -> Share:
    """This rank's share, from the variables hetlaunch and torchrun set (HETLAUNCH_MAX_BATCH, the
    node's ceiling, only when the node has one). Each variable is read here, once, strictly."""
    env = os.environ if env is None else env
    global_batch = names.integer(env, names.GLOBAL_BATCH, 1)
    world_size = names.integer(env, names.WORLD_SIZE, 1)
    local_world_size = names.integer(env, names.LOCAL_WORLD_SIZE, 1)
    if local_world_size > world_size:
        raise ValueError(f"{names.LOCAL_WORLD_SIZE}={local_world_size} is more than {names.WORLD_SIZE}={world_size}")
    local_rank = names.integer(env, names.LOCAL_RANK)
    node = names.integer(env, names.GROUP_RANK)
    batch, offset = rank_batch(names.integer(env, names.NODE_BATCH, 1), names.integer(env, names.NODE_BATCH_OFFSET),
                               local_world_size, local_rank)
    if global_batch < world_size or not 1 <= batch or offset + batch > global_batch:
        raise ValueError(f"inconsistent work share: batch {batch} at {offset} of a global batch of {global_batch} "
                         f"over {world_size} workers")
    max_batch = names.optional_integer(env, names.MAX_BATCH, 1)
    return Share(global_batch, world_size, batch, offset, max_batch=max_batch, node=node, local_rank=local_rank,
                 local_world_size=local_world_size, host=env.get(names.NODE_HOST, ""))


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


def rates_on_topology(hosts, plan_weights, saved_rates) -> Optional[List[float]]:
    """Each node's samples per second of one worker for a job whose nodes are `hosts` (by node
    index), from a checkpoint's rates by host: a host it measured gets its rate; another (a
    spare, a node added or back) its plan weight times the median, over the hosts of both, of
    rate / plan weight. None when no host of this job was measured, or a host is unknown ("") or
    given twice: the plan's split then stands."""
    hosts = list(hosts)
    if not hosts or any(not h for h in hosts) or len(set(hosts)) != len(hosts) or len(plan_weights) != len(hosts):
        return None
    rates = {}
    for host, rate in dict(saved_rates or {}).items():
        if isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0:
            rates[str(host)] = float(rate)
    known = [i for i, h in enumerate(hosts) if h in rates]
    if not known:
        return None
    ratios = sorted(rates[hosts[i]] / plan_weights[i] for i in known)
    middle = len(ratios) // 2
    factor = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return [rates[h] if h in rates else plan_weights[i] * factor for i, h in enumerate(hosts)]


def check_rebalance_every(value) -> int:
    """`value` if it is a valid rebalance_every (0: never, K > 0: every K steps); else ValueError."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"rebalance_every must be 0 (never) or a positive number of steps, got {value!r}")
    return value
