#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a training script as it is, on a "GPU" of a known speed: every forward of a
torch.nn.Linear sleeps a fixed time per sample, the node's from HETLAUNCH_TEST_SECONDS_PER_SAMPLE
(one value per node, by GROUP_RANK). The script's own code is untouched, so a rebalancing
sampler inside accelerate or Trainer sees the speeds as it would see different GPUs.

usage: slowed.py SCRIPT [ARG...]
"""
import os
import runpy
import sys
import time


def main():
    seconds = [float(s) for s in os.environ["HETLAUNCH_TEST_SECONDS_PER_SAMPLE"].split(",")]
    per_sample = seconds[int(os.environ.get("GROUP_RANK", "0"))]
    import torch

    def slow(module, inputs):
        if isinstance(module, torch.nn.Linear) and inputs and inputs[0].dim() > 1:
            time.sleep(per_sample * inputs[0].shape[0])
    torch.nn.modules.module.register_module_forward_pre_hook(slow)
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
