#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a training script as it is, with the rank's progress reports on and off in alternate
blocks of PROGRESS_BLOCK_STEPS steps, so that what reporting costs a step is measured within one
job: the machine's drift over minutes is the same for both halves, which two jobs, one with the
reports and one without, never have. Step k (counted from 0 over the job) reports when
k // PROGRESS_BLOCK_STEPS is even.

In a block without reports the script runs as it does when the launcher asks for none: the
sampler has no reporter (no marks), the forward hook that marks a step's start is out of the
module, and the thread that prints says nothing. The launcher must ask for progress
(HETLAUNCH_PROGRESS_SECONDS), and the script must use ShareBatchSampler and its watch().

usage: progress_blocks.py SCRIPT [ARG...]   (tools/compute_quota.py may run it)
"""
import os
import pathlib
import runpy
import sys


def main():
    block = os.environ.get("PROGRESS_BLOCK_STEPS", "")
    if not block.isdigit() or int(block) < 1:
        sys.exit(f"progress_blocks: PROGRESS_BLOCK_STEPS={block!r} must be a number of steps, 1 or more")
    block = int(block)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
    from hetlaunch_shares import _sampler

    iterate, watch = _sampler.ShareBatchSampler.__iter__, _sampler.ShareBatchSampler.watch
    state = {"step": 0, "reporter": None, "on": True, "hooks": []}

    def switch(sampler, on):
        if state["reporter"] is None:
            if sampler._progress is None:
                sys.exit("progress_blocks: the launcher asks for no progress (HETLAUNCH_PROGRESS_SECONDS)")
            reporter = state["reporter"] = sampler._progress
            say = reporter._say
            reporter._say = lambda: say() if state["on"] else None  # the thread's lines, in on blocks only
        if on == state["on"] and sampler._progress is (state["reporter"] if on else None):
            return
        state["on"] = on
        sampler._progress = state["reporter"] if on else None
        for hooks, key, hook in state["hooks"]:
            if on:
                hooks[key] = hook
            else:
                hooks.pop(key, None)

    def in_blocks(self):
        for indices in iterate(self):
            switch(self, (state["step"] // block) % 2 == 0)
            state["step"] += 1
            yield indices

    def watched(self, module):
        handles = watch(self, module)
        if self._progress is not None:  # the last handle is the forward hook's
            hooks = handles[-1].hooks_dict_ref()
            state["hooks"].append((hooks, handles[-1].id, hooks[handles[-1].id]))
        return handles

    _sampler.ShareBatchSampler.__iter__ = in_blocks
    _sampler.ShareBatchSampler.watch = watched
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
