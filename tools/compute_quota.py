#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a training script as it is, with only its computing thread under a cgroup v1 CPU quota:
the thread that builds the DistributedDataParallel model joins the cgroup whose `tasks` file
COMPUTE_QUOTA_TASKS names, once the model is built. gloo's threads (made when the process group
starts) stay outside, so the quota slows forwards and backwards as a slower GPU would, and leaves
the all-reduce at the host's own speed. Without COMPUTE_QUOTA_TASKS the script runs unthrottled.

usage: compute_quota.py SCRIPT [ARG...]
"""
import os
import runpy
import sys
import threading


def main():
    tasks = os.environ.get("COMPUTE_QUOTA_TASKS")
    if tasks:
        from torch.nn.parallel import DistributedDataParallel
        build = DistributedDataParallel.__init__

        def build_then_throttle(self, *args, **kwargs):
            build(self, *args, **kwargs)
            # cgroup v1's tasks file moves one thread; threads made later by this one follow it.
            with open(tasks, "w") as f:
                f.write(str(threading.get_native_id()))
        DistributedDataParallel.__init__ = build_then_throttle
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
