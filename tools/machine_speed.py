#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How steady each CPU's speed is: the ground under every measured rate (`calibrate`, rank_slow,
admission advice). One process pinned to each CPU trains the MLP of examples/train_shares.py
(64-256-256-1, SGD, batches of 600, one thread) without pause and counts its samples in windows of
--window seconds, by the clock and by its own CPU time. It prints every window, then for each CPU
the least, median and greatest rate, and how often a rate differs from the rate --later seconds
after it by more than 15%: how often a rate measured at one moment (a calibration) misses the same
work a while later (the job) by more than a prediction may.

Its samples per CPU second equal its samples per second when nothing else ran on the CPU while it
waited; when both fall together, the CPU itself ran slower (a busy sibling hyperthread, another
guest of the host), which no process of this machine can see or prevent.

usage: machine_speed.py [--seconds S] [--window W] [--later L] [--cpus 0,1]   (Python with torch)
"""
import argparse
import contextlib
import math
import os
import signal
import statistics
import sys
import time
import traceback


def train(cpu, seconds, window, out):
    """The child pinned to `cpu`: one line a window, "cpu start wall_rate cpu_rate"."""
    os.sched_setaffinity(0, {cpu})
    import torch

    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(600, 64), torch.randn(600, 1)
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        start, cpu_start, samples = time.monotonic(), time.thread_time(), 0
        while time.monotonic() - start < window:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            samples += len(x)
        wall, used = time.monotonic() - start, time.thread_time() - cpu_start
        out.write(f"{cpu} {start - began:.1f} {samples / wall:.0f} {samples / used:.0f}\n")
        out.flush()


def summary(rates, window, later):
    """least, median, greatest; the share of pairs `later` seconds apart more than 15% apart; and
    the means of successive spans of `later` seconds (what a measurement that long sees)."""
    gap = max(1, round(later / window))
    pairs = [(a, b) for a, b in zip(rates, rates[gap:])]
    apart = sum(1 for a, b in pairs if abs(b / a - 1) > 0.15)
    share = f"{apart} of {len(pairs)}" if pairs else "no pairs (run longer than --later)"
    spans = [statistics.mean(rates[k:k + gap]) for k in range(0, len(rates) - gap + 1, gap)]
    means = ", ".join(f"{m:.0f}" for m in spans) or "none"
    return (f"{min(rates):.0f} / {statistics.median(rates):.0f} / {max(rates):.0f}; more than 15% apart after "
            f"{later:g} s: {share}; means of each {later:g} s: {means}")


def arguments():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=180)
    p.add_argument("--window", type=float, default=2)
    p.add_argument("--later", type=float, default=60, help="seconds between the rates compared")
    allowed = sorted(os.sched_getaffinity(0))
    p.add_argument("--cpus", default=",".join(str(c) for c in allowed))
    args = p.parse_args()
    if not all(0 < v < math.inf for v in (args.seconds, args.window, args.later)):
        p.error("--seconds, --window and --later are positive, finite numbers")
    if args.window > args.seconds:
        p.error(f"--window {args.window:g} is longer than --seconds {args.seconds:g}: no window would end")
    words = args.cpus.split(",")
    if not all(w.isdigit() and int(w) in allowed for w in words) or len(set(words)) != len(words):
        p.error(f"--cpus {args.cpus!r}: a comma-separated list of distinct CPUs this process may use ({allowed})")
    args.cpus = [int(w) for w in words]
    return args


def start(cpu, args):
    """A child that trains on `cpu`; (its pid, the pipe it writes its windows to)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            with os.fdopen(w, "w") as out:
                train(cpu, args.seconds, args.window, out)
            code = 0
        except BaseException:  # the child never returns into the parent's code
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(w)
    return pid, os.fdopen(r)


def main():
    args = arguments()
    children = {cpu: start(cpu, args) for cpu in args.cpus}
    rates = {cpu: [] for cpu in args.cpus}
    failed = []
    try:
        for cpu, (pid, lines) in children.items():
            for line in lines:
                _, began, wall, used = line.split()
                rates[cpu].append(float(wall))
                print(f"cpu {cpu} at {float(began):6.1f} s: {float(wall):8.0f} samples/s, {float(used):8.0f} per CPU second")
            if os.waitpid(pid, 0)[1] != 0 or not rates[cpu]:
                failed.append(cpu)
        print(f"samples a second in windows of {args.window:g} s, least / median / greatest:")
        for cpu in args.cpus:
            if rates[cpu]:
                print(f"  cpu {cpu}: {summary(rates[cpu], args.window, args.later)}")
        sys.stdout.flush()
    except OSError as e:  # the output cannot be written (a full disk, a closed pipe)
        for pid, _ in children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        print(f"machine_speed: cannot write the output: {e}", file=sys.stderr)
        return 1
    if failed:
        print(f"machine_speed: no measurement of CPU {', '.join(map(str, failed))} (what it printed is above)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
