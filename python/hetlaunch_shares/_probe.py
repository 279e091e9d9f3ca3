# SPDX-License-Identifier: MIT
"""Calibration's last measurement: how long the gradient all-reduce takes without each node.

An all-reduce is as slow as its slowest member (a node with an old network, or CPUs whose
communication threads are throttled), so the all-reduce of the job without a node is not the
whole job's. Every rank, at the same point, all-reduces a tensor of the gradient's size over the
whole job and over the job without each node in turn (one group each), several rounds, one
all-reduce a group a round, so that every group sees the same state of the machines (a round
that follows the groups' creation, say, is not one group's alone). The least of the members' means
is a group's time. The mean, not the median: where a member's CPU time is capped (a cgroup quota),
an all-reduce takes either a moment or the rest of the quota's period, and the step waits for the
mean of the two."""

import time
from typing import Dict, List, NamedTuple, Optional

# Beyond this many nodes the probe is not run (a group a node, each connecting its members):
# every job without a node then gets the whole job's all-reduce.
MOST_NODES = 32
ROUNDS = 10  # timed rounds, after one that is not timed


def without_each_node(measured: float, probed: Dict[str, object]) -> List[float]:
    """Each node's all-reduce of the job without it, from the whole job's `measured` while training
    and the probe's groups (allreduce_without_each_node's result).

    An all-reduce is as slow as its slowest member. With three nodes or more, every group but
    the one without the slowest node keeps it, and reduces as the whole job does: those get
    `measured`. The probe's group time serves only to find the slowest node (its group is the
    fastest) and how much faster the rest reduce: `measured` scaled by that group's ratio to the
    probed whole, never above 1. Timed apart from training, a group that keeps a member whose
    CPU time is capped (a cgroup quota) came out anywhere from a quarter of the whole job's to
    above it from run to run, while every job that kept that member reduced at least as slowly
    as the whole one. With two nodes each group is one node, reduced within it, and each keeps
    its probed ratio; a group of one rank has nothing to reduce (0)."""
    whole, without = float(probed["whole"]), [float(s) for s in probed["without"]]  # type: ignore[union-attr]
    ratios = [min(1.0, s / whole) if whole > 0 else 0.0 for s in without]
    if len(without) >= 3:
        fastest = min(range(len(without)), key=without.__getitem__)
        ratios = [ratio if j == fastest else 1.0 for j, ratio in enumerate(ratios)]
    return [measured * ratio for ratio in ratios]


class Gradient(NamedTuple):
    """What a step's all-reduce carries on this rank: its elements, their dtype and device."""

    elements: int
    dtype: object
    device: object


def _timed(tensor, group) -> float:
    import torch.distributed as dist

    dist.barrier(group=group)  # the members start together: the time is the all-reduce's own
    started = time.perf_counter()
    dist.all_reduce(tensor, group=group)
    return time.perf_counter() - started


def allreduce_without_each_node(node_of_rank: List[int], gradient: Gradient) -> Optional[Dict[str, object]]:
    """Every rank of the default group calls it at the same point. `node_of_rank`: each rank's
    node. Returns {"whole": seconds, "without": [seconds of the job without node j, ...]} (0 for
    a job of one rank, which has nothing to reduce), the same on every rank; None when the job
    has one node or more than MOST_NODES."""
    import torch
    import torch.distributed as dist

    nodes = max(node_of_rank) + 1
    if nodes < 2 or nodes > MOST_NODES:
        return None
    me = dist.get_rank()
    tensor = torch.zeros(max(1, gradient.elements), dtype=gradient.dtype, device=gradient.device)
    # (group, its ranks) for the whole job, then without each node; every rank creates every
    # group, in the same order. The whole job gets a group of its own too, not the default one:
    # a group's communication threads start where its creator runs at that moment (a cgroup, a
    # CPU set applied after the default group began), and groups are compared alike.
    everyone = list(range(len(node_of_rank)))
    groups = [(dist.new_group(everyone), everyone)]
    for j in range(nodes):
        ranks = [k for k, node in enumerate(node_of_rank) if node != j]
        groups.append((dist.new_group(ranks), ranks))
    sums = [0.0] * len(groups)
    for round_ in range(ROUNDS + 1):
        for g, (group, ranks) in enumerate(groups):
            if me in ranks and len(ranks) > 1:
                seconds = _timed(tensor, group)
                sums[g] += seconds if round_ else 0.0
    for group, ranks in groups:
        if me in ranks:
            dist.destroy_process_group(group)
    mine = [s / ROUNDS if me in ranks else None for s, (_, ranks) in zip(sums, groups)]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, mine)
    least = [min(m[g] for m in gathered if m[g] is not None) for g in range(len(groups))]
    return {"whole": least[0], "without": least[1:]}
