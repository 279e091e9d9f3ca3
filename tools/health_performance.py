#!/usr/bin/env python3
"""Measures the judgement of slow ranks on a real job and what the ranks' progress reports cost;
writes docs/performance.md between its health-begin and health-end markers.

The job is the shares benchmark's (tools/shares_performance.py): examples/train_shares.py, DDP on
gloo, two workers each pinned to a core of its own through a stand-in ssh, the second one's
computing thread under a cgroup v1 CPU quota of a third of its core (tools/compute_quota.py), so
the two run at about 3:1. Its shares are the weights `hetlaunch calibrate` measures first.

- No false rank_slow: 1,000 steps of that job under `run --slow-factor 1.75` (windows of 10
  steps, 100 a rank), two runs.
- A rank slowed mid-run: the throttled worker's quota halved at step 150 of 250; how many windows
  after the change `rank_slow` names it (steps from the change / 10), three runs each at
  --slow-factor 2, 1.75 and 1.5; and how much slower the rank computed after the change than
  before (its windows' rates, from `run --metrics`): what the halving did to it.
- What reporting costs the training loop: one job of 600 steps whose ranks report in alternate
  blocks of 10 steps (tools/progress_blocks.py); rank 0's median time a step in each block with
  the reports on over that in the next block, with them off (the median of those pairs); and the
  sampler's own marks a step, timed alone.

Needs root (the cgroup) and torchrun (Debian: python3-torch). The cgroup is removed afterwards, also
when a run fails or is interrupted, and one a killed earlier run left is removed first.
usage: tools/health_performance.py HETLAUNCH [--quick]
"""
import json
import math
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import performance_doc
import shares_performance as shares

QUICK = "--quick" in sys.argv
# Steps of a tenth of a second or more, each many of the quota's periods long: with steps as short
# as a period, a step that begins with a period's quota unspent runs at full speed, and the rank's
# rate swings with the phase of its steps against the periods; and a window of ten such steps
# averages out what the other processes on two cores take from a rank now and then.
GLOBAL_BATCH = 960
TRAIN = ["--features", "128", "--hidden", "384", "--samples", "96000", "--warmup", "0"]
PERIOD = 8000  # us; its sixth, the halved quota, stays above cgroup v1's least quota of 1000 us
HOSTS = "127.0.0.1:1,127.0.0.2:1"


def stand_in_ssh(cgroup, work):
    ssh = work / "ssh"
    ssh.write_text(shares.FAKE_SSH.format(tasks=cgroup / "tasks"))
    ssh.chmod(0o755)
    return ssh


def common(ssh, port):
    return ["--ssh", str(ssh), "--master-addr", "127.0.0.1", "--master-port", str(port), "--env", "OMP_NUM_THREADS=1",
            "--global-batch", str(GLOBAL_BATCH), "--torchrun-arg", "--redirects", "--torchrun-arg", "2",
            "--torchrun-arg", "--tee", "--torchrun-arg", "2"]


def port():
    return 29800 + (os.getpid() + int(time.monotonic() * 1000)) % 90


def calibrate(binary, ssh, work):
    r = subprocess.run([binary, "calibrate", "--hosts", HOSTS, *common(ssh, port()), "--json", "--calibrate-steps",
                        "40", "--", *shares.SCRIPT, *TRAIN, "--steps", "100000"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"calibrate failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return [n["weight"] for n in json.loads(r.stdout)["nodes"]]


RANK_METRIC = re.compile(r'hetlaunch_rank_(step|samples_per_second)\{rank="(\d+)",[^}]*\} (\S+)')


def read_windows(metrics, rank, done, windows):
    """Appends (step, samples per second) to `windows` for each window of `rank` that run's
    --metrics file shows until `done` is set. run replaces the file every second and at each
    event too: a window is a rate that differs from the one before."""
    last = None
    while not done.is_set():
        try:
            said = {(m[1], m[2]): float(m[3]) for m in map(RANK_METRIC.fullmatch, metrics.read_text().splitlines())
                    if m}
        except (OSError, ValueError):
            said = {}
        rate, step = said.get(("samples_per_second", str(rank))), said.get(("step", str(rank)))
        # A window's rate is a positive finite number (0 before the first: no window yet).
        if rate is not None and 0 < rate < math.inf and step is not None and 0 <= step < math.inf and rate != last:
            windows.append((int(step), rate))
            last = rate
        time.sleep(0.02)


def run(binary, ssh, work, weights, steps, flags, on_step=None, script=shares.SCRIPT, windows_of=None):
    """One job of `run`: its rank_slow events (step, rate, expected), rank 0's report, and the
    windows (step, rate) of rank `windows_of` (none when it is None)."""
    events, report, progress, metrics = work / "events.jsonl", work / "report.json", work / "progress", work / "prom"
    for f in (events, report, progress, metrics):
        f.unlink(missing_ok=True)
    weight_flags = ["--weight", f"127.0.0.1={weights[0]}", "--weight", f"127.0.0.2={weights[1]}"]
    metrics_flags = [] if windows_of is None else ["--metrics", str(metrics)]
    proc = subprocess.Popen([binary, "run", "--hosts", HOSTS, *weight_flags, *common(ssh, port()), *flags,
                             *metrics_flags, "--events", str(events), "--", *script, *TRAIN, "--steps", str(steps),
                             "--report", str(report), "--progress", str(progress)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    done = threading.Event()
    windows = []
    reader = None if windows_of is None else threading.Thread(
        target=read_windows, args=(metrics, windows_of, done, windows), daemon=True)
    if reader:
        reader.start()

    def watch():
        while on_step and not done.is_set():
            try:
                if on_step(int(progress.read_text())):
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, _ = proc.communicate(timeout=1800)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    done.set()
    watcher.join()
    if reader:
        reader.join()
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({proc.returncode}):\n{out[-3000:]}")
    slow = [(e["step"], e["samples_per_second"], e["expected"], e["rank"])
            for e in map(json.loads, events.read_text().splitlines()) if e["event"] == "rank_slow"]
    return slow, json.loads(report.read_text()), windows


# Between the swings of a rank on two shared cores (a window a third slower now and then: 1.5x)
# and the slowdown to name (2x): no false report needs F above the one, a halving named at once F
# below the other. A run without rank_slow at 1.75 has none at 2 either (its bound is lower).
FACTOR = "1.75"
FACTORS = ("2", FACTOR, "1.5")  # the halving, judged at each
WINDOW = 10  # steps: a window when the sampler does not rebalance (hetlaunch_shares._progress)
HALVED_AT, HALVED_STEPS = 150, 250  # the throttled rank's quota halved at this step of a job this long


def no_false_slow(binary, ssh, work, weights, steps):
    return [run(binary, ssh, work, weights, steps, ["--slow-factor", FACTOR])[0] for _ in range(1 if QUICK else 2)]


def make_cgroup():
    """The shares benchmark's cgroup, a third of a core, in periods of PERIOD."""
    cgroup = shares.make_cgroup()
    (cgroup / "cpu.cfs_quota_us").write_text(str(PERIOD // 3))
    (cgroup / "cpu.cfs_period_us").write_text(str(PERIOD))
    return cgroup


def slowed(binary, ssh, work, weights, cgroup, factor, at=HALVED_AT, steps=HALVED_STEPS):
    """The halving at step `at`, judged at `factor`: (the rank_slow events, how many times slower
    the throttled rank computed after the change than before it: the median of its windows before
    the change over that of the windows wholly after it)."""
    quota = cgroup / "cpu.cfs_quota_us"

    def halve(step):
        if step >= at:
            quota.write_text(str(PERIOD // 6))
            return True
        return False
    try:
        slow, _, windows = run(binary, ssh, work, weights, steps, ["--slow-factor", factor], on_step=halve,
                               windows_of=1)
    finally:
        quota.write_text(str(PERIOD // 3))
    # A window's step is the rank's when run wrote it: a window ends within a step of it.
    before = [rate for step, rate in windows if step < at]
    after = [rate for step, rate in windows if step > at + WINDOW]
    slowdown = statistics.median(before) / statistics.median(after) if before and after else None
    return slow, slowdown


BLOCK = 10  # steps with the reports on, then as many with them off


def cost(binary, ssh, work, weights, steps=600):
    """Rank 0's seconds a step with the reports on and with them off, in alternate blocks of one
    job (tools/progress_blocks.py), the first two blocks left out (the job's start): ([on], [off],
    [each pair of blocks' ratio of medians])."""
    script = [shares.SCRIPT[0], str(shares.ROOT / "tools" / "progress_blocks.py"), *shares.SCRIPT[1:]]
    _, report, _ = run(binary, ssh, work, weights, steps, ["--slow-factor", "2", "--env", f"PROGRESS_BLOCK_STEPS={BLOCK}"],
                    script=script)
    times = report["step_times"]  # times[k]: step k done; step k took times[k] - times[k - 1]
    took = {k: times[k] - times[k - 1] for k in range(2 * BLOCK, len(times))}
    on = [t for k, t in took.items() if (k // BLOCK) % 2 == 0]
    off = [t for k, t in took.items() if (k // BLOCK) % 2 == 1]
    pairs = []
    for first in range(2 * BLOCK, len(times) - 2 * BLOCK + 1, 2 * BLOCK):
        pairs.append(statistics.median(took[k] for k in range(first, first + BLOCK)) /
                     statistics.median(took[k] for k in range(first + BLOCK, first + 2 * BLOCK)))
    return on, off, pairs


def marks_cost(rounds=5, steps=200000):
    """What the training loop itself does for the reports each step (the sampler's marks: a step
    starts, its part is computed, it was trained), in seconds a step; the thread that prints is
    asleep between its lines."""
    import io
    sys.path.insert(0, str(shares.ROOT / "python"))
    from hetlaunch_shares import _progress
    costs = []
    for _ in range(rounds):
        reporter = _progress.Progress(3600, 0, out=io.StringIO())
        started = time.perf_counter()
        for k in range(steps):
            reporter.started(k)
            reporter.computed()
            reporter.trained(64, 0.01)
        costs.append((time.perf_counter() - started) / steps)
    return statistics.median(costs)


def section(weights, clean, runs, blocks, steps, marks):
    on, off, pairs = blocks
    false_slow = sum(len(r) for r in clean)
    lines = [
        "<!-- health-begin: written by tools/health_performance.py -->",
        "Slow ranks on a real job (`tools/health_performance.py`): the shares benchmark's two workers (DDP on gloo, "
        "an MLP of 128-384-384-1, global batch 960), one throttled to a third of its core (in periods of "
        f"{PERIOD} us), at the weights "
        f"`hetlaunch calibrate` measured ({'/'.join(weights)}), through a stand-in ssh. Windows of {WINDOW} steps.",
        "",
        "| goal | measured | |",
        "| --- | --- | --- |",
        f"| no false `rank_slow` in {steps} steps of the 3:1 job with calibrated shares (`--slow-factor {FACTOR}`, "
        "so none at 2 either) | "
        f"{false_slow} in {len(clean)} runs of {steps} steps ({len(clean) * steps // 10} windows a rank)"
        + "".join(f"; rank {e[3]} at step {e[0]}: {e[1]:.0f} vs {e[2]:.0f}" for r in clean for e in r) + " | "
        f"{'met' if false_slow == 0 else 'not met'} |",
    ]
    for factor, judged in runs:
        found = [events for events, _ in judged]
        # Each run's first rank_slow, in windows after the change: the window the change falls in,
        # then two more; one before the change, or of the other rank, is false.
        windows = [(s[0][0] - HALVED_AT) / WINDOW if s and s[0][3] == 1 else None for s in found]
        ok = all(w is not None and 0 <= w <= 2 + 1 for w in windows) and all(len(s) == 1 for s in found)
        said = ", ".join("never" if w is None else f"{w:.1f}" for w in windows)
        rates = "; ".join(f"{s[0][1]:.0f} vs {s[0][2]:.0f}" for s in found if s)
        slower = ", ".join("?" if x is None else f"{x:.2f}x" for _, x in judged)
        lines.append(f"| the throttled rank's quota halved at step {HALVED_AT} of {HALVED_STEPS}: `rank_slow` for it "
                     "alone, within 2 "
                     f"windows of the change (`--slow-factor {factor}`) | windows after the change: {said} (rate vs "
                     f"expected: {rates}); events a run: {'/'.join(str(len(s)) for s in found)}; the rank computed "
                     f"{slower} slower after the change (its windows' medians) | {'met' if ok else 'not met'} |")
    # Judged by the pairs: each compares two neighbouring blocks, a few seconds apart, so the
    # machine's own drift over the job (a fifth within minutes here) cancels out of it.
    quartiles = statistics.quantiles(pairs, n=4)
    lines += [
        f"| the training loop's time a step with the reports on and off, within 1% | one job "
        f"of {len(on) + len(off) + 2 * BLOCK} steps, in blocks of {BLOCK} alternately on and off "
        f"(`tools/progress_blocks.py`): rank 0's median step in each on block over the next off block's, "
        f"{len(pairs)} pairs: median **{quartiles[1]:.4f}** (quartiles {quartiles[0]:.3f} and {quartiles[2]:.3f}); "
        f"over all on and all off blocks {statistics.median(on) * 1000:.2f} vs {statistics.median(off) * 1000:.2f} ms "
        f"({statistics.median(on) / statistics.median(off):.4f}) | {'met' if abs(quartiles[1] - 1) <= 0.01 else 'not met'} |",
        f"| ... the loop's own part of it: the sampler's marks a step | {marks * 1e6:.2f} us a step, "
        f"{marks / statistics.median(off) * 100:.4f}% of the step | {'met' if marks / statistics.median(off) <= 0.01 else 'not met'} |",
        "",
        "Reports on and off are compared within one job: two jobs, one with them and one without, differ by up "
        "to a fifth on this shared machine (0.972 in four pairs of such jobs), which hides a cost of 1%; and "
        "within a job, block by block, each on block against the off block that follows it, since the machine's "
        "speed drifts over minutes (the two halves of one job have differed by 2%, either way). In an off "
        "block the rank runs as without reports (no reporter in the sampler, no forward hook, a silent thread). "
        "The loop's own part is what reporting adds to a step by construction: a few assignments, no collective "
        "and no I/O, with one line a second (or a window) printed by a thread of its own.",
        "",
        "What a halving did to the rank is the last figure of its rows: the rank's median window after the "
        "change against its median window before it. A halved quota slows the computing thread about 2x; the "
        "rank's gloo threads run outside the quota, and the machine's other processes take from both sides, so "
        "a run may slow it less than that, or more. With `--slow-factor 2` a slowdown of exactly 2x is at the "
        "edge by definition: it is named when the windows fall below half, late or never when they hover "
        "there.",
        "",
        "On these two shared cores a rank's windows swing by up to a third now and then (the other processes "
        "take its core). Pick F above the swings of your own ranks and below the slowdown you want named; "
        f"this benchmark judges its runs without a slowdown at {FACTOR}.",
        "<!-- health-end -->",
    ]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    try:
        import torch  # noqa: F401
    except ImportError:
        python = shares.torch_python()
        os.execv(python, [python, __file__, *sys.argv[1:]])
    shares.remove_cgroups()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    steps = 200 if QUICK else 1000
    try:
        cgroup = make_cgroup()
        with tempfile.TemporaryDirectory() as tmp:
            work = pathlib.Path(tmp)
            ssh = stand_in_ssh(cgroup, work)
            weights = calibrate(binary, ssh, work)
            clean = no_false_slow(binary, ssh, work, weights, steps)
            runs = [(factor, [slowed(binary, ssh, work, weights, cgroup, factor) for _ in range(1 if QUICK else 3)])
                    for factor in FACTORS]
            blocks = cost(binary, ssh, work, weights, steps=200 if QUICK else 600)
    finally:
        shares.remove_cgroups()
    text = section(weights, clean, runs, blocks, steps, marks_cost())
    performance_doc.write_section("health", text, before="<!-- binding-begin")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
