# SPDX-License-Identifier: MIT
"""The variables hetlaunch and torchrun hand a worker, named once (the C++ side names them in
include/hetlaunch/worker_variables.hpp; a test holds the two lists equal), and the one strict way
they are read: ASCII digits only."""

import re
from typing import Mapping

# hetlaunch's (worker_variables.hpp, variables::)
GLOBAL_BATCH = "HETLAUNCH_GLOBAL_BATCH"
NODE_BATCH = "HETLAUNCH_NODE_BATCH"
NODE_BATCH_OFFSET = "HETLAUNCH_NODE_BATCH_OFFSET"
NODE_HOST = "HETLAUNCH_NODE_HOST"
MAX_BATCH = "HETLAUNCH_MAX_BATCH"
RESTART_COUNT = "HETLAUNCH_RESTART_COUNT"
CALIBRATE_STEPS = "HETLAUNCH_CALIBRATE_STEPS"
# Set by `hetlaunch run` when it judges slow and hung ranks: how often each rank reports.
PROGRESS_SECONDS = "HETLAUNCH_PROGRESS_SECONDS"
# Set to "rebalance" by `hetlaunch run --on-slow rebalance`: a sampler that does not rebalance by
# itself rebalances every window.
ON_SLOW = "HETLAUNCH_ON_SLOW"
# Set by `hetlaunch run --preflight` from the GPUs the hosts report: the least compute capability
# ("7.5") and "1" when every GPU has bf16.
MIN_COMPUTE_CAPABILITY = "HETLAUNCH_MIN_COMPUTE_CAPABILITY"
BF16 = "HETLAUNCH_BF16"
# torchrun's
RANK = "RANK"
WORLD_SIZE = "WORLD_SIZE"
GROUP_RANK = "GROUP_RANK"
LOCAL_RANK = "LOCAL_RANK"
LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE"

# The lines rank 0 prints for `hetlaunch run` (calibration.hpp's measured_prefix,
# checkpoint_line.hpp's checkpoint_prefix): the word, a space, then one JSON object.
MEASURED_LINE = "HETLAUNCH_MEASURED "
CHECKPOINT_LINE = "HETLAUNCH_CHECKPOINT "
# Every rank's progress line (rank_health.hpp's progress_prefix), from a thread of its own.
PROGRESS_LINE = "HETLAUNCH_PROGRESS "

HETLAUNCH = (GLOBAL_BATCH, NODE_BATCH, NODE_BATCH_OFFSET, NODE_HOST, MAX_BATCH, RESTART_COUNT, CALIBRATE_STEPS,
             PROGRESS_SECONDS, ON_SLOW, MIN_COMPUTE_CAPABILITY, BF16)

_DIGITS = re.compile(r"[0-9]{1,18}")


def integer(env: Mapping[str, str], name: str, least: int = 0) -> int:
    """The variable's value: ASCII digits only (Python's isdigit and int() also take '８', '²',
    '١' and '0_1', which hetlaunch check-env refuses), at least `least`."""
    value = env.get(name)
    if value is None:
        raise ValueError(f"{name} is not set: start the job with hetlaunch and --global-batch")
    if not _DIGITS.fullmatch(value):
        raise ValueError(f"{name}={value!r} is not a non-negative integer of ASCII digits")
    number = int(value)
    if number < least:
        raise ValueError(f"{name}={value!r} must be at least {least}")
    return number


def optional_integer(env: Mapping[str, str], name: str, least: int = 0, absent: int = 0) -> int:
    """`absent` when the variable is not set, else integer()."""
    return integer(env, name, least) if name in env else absent
