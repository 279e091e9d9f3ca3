# SPDX-License-Identifier: MIT
"""The lines a script's rank 0 prints for `hetlaunch run` to read: whole lines on standard output
that begin with a word of _names and carry one JSON object."""

import json
import os
import sys
from typing import Mapping, Optional

from . import _names as names


def checkpoint_line(step: int) -> str:
    """The line that says a checkpoint resuming at `step` is complete: `HETLAUNCH_CHECKPOINT
    {"step": S}`. `step`: a non-negative int (a bool is refused: True is no step)."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"checkpoint_saved: step must be a non-negative int, got {step!r}")
    return names.CHECKPOINT_LINE + json.dumps({"step": step})


def _global_rank(env: Mapping[str, str]) -> int:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except ImportError:
        pass
    # No process group and no RANK: a process of its own, the rank 0 of a world of one.
    return names.integer(env, names.RANK) if names.RANK in env else 0


def checkpoint_saved(step: int, env: Optional[Mapping[str, str]] = None) -> None:
    """Call on every rank once a checkpoint is complete on every rank (after your save, and after
    a barrier when each rank writes its own part), with the step it resumes at: rank 0 prints
    `HETLAUNCH_CHECKPOINT {"step": S}`. `hetlaunch run --grow-back` restarts the job with a host
    that came back only at such a line, so that no trained step is lost. ShareTrainer calls it
    after each of its checkpoints."""
    line = checkpoint_line(step)
    if _global_rank(os.environ if env is None else env) == 0:
        print(line, flush=True)
        sys.stdout.flush()
