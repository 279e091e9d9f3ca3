#!/usr/bin/env python3
"""Measures what work shares buy and what they cost; writes docs/performance.md (between its
shares-begin and shares-end markers) and docs/shares.png.

What they buy: a real data-parallel job (examples/train_shares.py: an MLP, DDP on gloo) of two
workers, each started by its own torchrun through `hetlaunch exec`, one computing on a full core
and one whose computing thread is throttled to a third of its core by a cgroup v1 CPU quota
(cpu.cfs_quota_us; tools/compute_quota.py). Its gloo threads stay outside the quota, as a slower
GPU slows compute and not its host's network. Samples a second of
the whole job with the equal split, with shares by weight (each worker's weight its own rate),
and the ideal: the two workers' rates alone, each measured in a job of its own, summed. Each
worker is pinned to its own core (taskset) so that the quota is the only difference.

Shares that measure themselves, on the same job: the sampler rebalancing from equal weights
(`--rebalance-every`), the weights `hetlaunch calibrate` measures (its hosts reached through a
stand-in ssh that pins each node and throttles the second), and a quota halved mid-run
while the sampler rebalances.

What they cost: `make_plan` of 1,000,000 nodes with and without a global batch
(bench/bench_plan.cpp), and `hetlaunch plan --json` of a 1,000,000-line hostfile with and
without one.

Needs root (the cgroup), torchrun (Debian: python3-torch), gnuplot for the plot, and the
benchmarks built (cmake -DHETLAUNCH_BUILD_BENCHMARKS=ON). The cgroup is removed afterwards, also
when a run fails or is interrupted, and one a killed earlier run left is removed first.
--rounds measures instead, in rounds, each self-measuring variant beside an ideal of its own
minutes, and writes that section alone. --grow-back measures instead the same job's throughput
before a node fails and after it grows back (`run --restarts 1 --exclude-failed --grow-back`
through the stand-in ssh, the learned rates kept in the checkpoint), and writes that section.
usage: tools/shares_performance.py HETLAUNCH BENCH_PLAN [--quick] [--rounds | --grow-back]
"""
import json
import os
import pathlib
import platform
import signal
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import performance_doc

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup/cpu")
CGROUP_PREFIX = "hetlaunch-shares-bench"
QUICK = "--quick" in sys.argv
PERIOD, QUOTA = 20000, 6600  # us: a third of a core, in periods short enough not to stall a step
# The worker's computing thread alone runs under the quota (tools/compute_quota.py): a slower GPU
# slows compute, not its host's all-reduce.
SCRIPT = [str(ROOT / "tools" / "compute_quota.py"), str(ROOT / "examples" / "train_shares.py")]
TRAIN = ["--features", "256", "--hidden", "512", "--samples", "65536"]
STEPS = 4 if QUICK else 12
GLOBAL_BATCH = 4096
REPEAT = 1 if QUICK else 3


def remove_cgroups():
    for group in CGROUP_ROOT.glob(f"{CGROUP_PREFIX}-*"):
        for _ in range(50):
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def make_cgroup():
    group = CGROUP_ROOT / f"{CGROUP_PREFIX}-{os.getpid()}"
    group.mkdir()
    (group / "cpu.cfs_period_us").write_text(str(PERIOD))
    (group / "cpu.cfs_quota_us").write_text(str(QUOTA))
    return group


def torch_python():
    first = pathlib.Path(shutil.which("torchrun")).read_text(errors="replace").splitlines()[0]
    return first[2:].strip().split()[0]


def job(binary, hosts, weights, global_batch, throttled_node, cgroup, work, core_offset=0, train=(), full=False):
    """One job: a torchrun a node through `hetlaunch exec`, node k pinned to core k, the node
    `throttled_node` in the cgroup. Its samples a second (rank 0's report)."""
    port = str(29900 + (os.getpid() + int(time.monotonic() * 1000) + 7 * core_offset) % 60)
    report = work / "report.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    agents = []
    for node in range(len(hosts.split(","))):
        argv = [binary, "exec", "--node", str(node), "--hosts", hosts, *weights, "--global-batch", str(global_batch),
                "--master-port", port, "--torchrun-arg", "--redirects", "--torchrun-arg", "2", "--torchrun-arg", "--tee",
                "--torchrun-arg", "2", "--", *SCRIPT, *TRAIN, "--steps", str(STEPS),
                "--report", str(report), *train]
        argv = ["taskset", "-c", str((node + core_offset) % os.cpu_count()), *argv]
        node_env = dict(env, COMPUTE_QUOTA_TASKS=str(cgroup / "tasks")) if node == throttled_node else env
        agents.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       env=node_env, start_new_session=True))
    logs = []
    for a in agents:
        try:
            out, _ = a.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            os.killpg(a.pid, signal.SIGKILL)
            out, _ = a.communicate()
        logs.append(out)
        if a.returncode != 0:
            raise RuntimeError(f"a job failed ({a.returncode}):\n" + "\n".join(logs)[-3000:])
    return json.loads(report.read_text()) if full else json.loads(report.read_text())["samples_per_second"]


def job_on_core(binary, hosts, global_batch, throttled_node, cgroup, work, core):
    """A one-node job pinned to `core`."""
    return job(binary, hosts, [], global_batch, throttled_node, cgroup, work, core_offset=core)


def median_job(*args, **kwargs):
    return statistics.median(job(*args, **kwargs) for _ in range(REPEAT))


def spread(values):
    return f"{min(values):.0f} to {max(values):.0f}"


# calibrate reaches its hosts through ssh; here a stand-in runs each node's command on this
# machine, pinned to its core, the second host's computing thread in the throttled cgroup.
FAKE_SSH = """#!/bin/sh
while [ "$1" != "--" ]; do shift; done
host=$2
shift 2
case $host in
  127.0.0.2) export COMPUTE_QUOTA_TASKS={tasks}; exec taskset -c 1 sh -c "$*";;
  *) exec taskset -c 0 sh -c "$*";;
esac
"""


def calibrate(binary, cgroup, work):
    """`hetlaunch calibrate` of the two-worker job: its weights, and how long it took."""
    ssh = work / "ssh"
    ssh.write_text(FAKE_SSH.format(tasks=cgroup / "tasks"))
    ssh.chmod(0o755)
    port = str(29960 + os.getpid() % 30)
    started = time.monotonic()
    r = subprocess.run([binary, "calibrate", "--hosts", "127.0.0.1:1,127.0.0.2:1", "--ssh", str(ssh), "--json",
                        "--global-batch", str(GLOBAL_BATCH), "--calibrate-steps", "8", "--master-addr", "127.0.0.1",
                        "--master-port", port, "--env", "OMP_NUM_THREADS=1", "--torchrun-arg", "--redirects",
                        "--torchrun-arg", "2", "--torchrun-arg", "--tee", "--torchrun-arg", "2", "--",
                        *SCRIPT, *TRAIN, "--steps", "1000", "--warmup", "1000"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"calibrate failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return [n["weight"] for n in json.loads(r.stdout)["nodes"]], time.monotonic() - started


def quota_change(binary, cgroup, work, at=9, every=3, steps=24):
    """A rebalancing job (from equal weights) whose throttled worker's quota is halved once rank 0
    has done `at` steps: its samples a second over the steps from one rebalance window after the
    change to the end."""
    progress = work / "progress"
    progress.unlink(missing_ok=True)
    done = threading.Event()

    def halve():
        while not done.is_set():
            if progress.exists() and progress.read_text().strip() and int(progress.read_text()) >= at:
                (cgroup / "cpu.cfs_quota_us").write_text(str(QUOTA // 2))
                return
            time.sleep(0.02)
    watcher = threading.Thread(target=halve)
    watcher.start()
    try:
        report = job(binary, "127.0.0.1:1,127.0.0.2:1", [], GLOBAL_BATCH, 1, cgroup, work, full=True,
                     train=["--rebalance-every", str(every), "--progress", str(progress), "--steps", str(steps),
                            "--hook"])
    finally:
        done.set()
        watcher.join()
        (cgroup / "cpu.cfs_quota_us").write_text(str(QUOTA))
    times = report["step_times"]
    after = times[at + every - 1:]
    return (len(after) - 1) * GLOBAL_BATCH / (after[-1] - after[0]), report["changes"]


def measured_shares(binary, cgroup, work, t):
    """Shares that measure themselves, beside the equal split and the static weights: rebalancing
    from equal weights, calibrated weights, and a quota halved mid-run. Three runs each."""
    hosts = "127.0.0.1:1,127.0.0.2:1"
    rebalanced = [job(binary, hosts, [], GLOBAL_BATCH, 1, cgroup, work, train=["--rebalance-every", "2", "--hook"])
                  for _ in range(REPEAT)]
    calibrations = [calibrate(binary, cgroup, work) for _ in range(REPEAT)]
    calibrated = [job(binary, hosts, ["--weight", f"127.0.0.1={w[0]}", "--weight", f"127.0.0.2={w[1]}"],
                      GLOBAL_BATCH, 1, cgroup, work) for w, _ in calibrations]
    (cgroup / "cpu.cfs_quota_us").write_text(str(QUOTA // 2))
    try:
        slow_half = median_job(binary, "127.0.0.2:1", [], GLOBAL_BATCH // 2, 0, cgroup, work)
    finally:
        (cgroup / "cpu.cfs_quota_us").write_text(str(QUOTA))
    changes = [quota_change(binary, cgroup, work) for _ in range(REPEAT)]
    return dict(rebalanced=rebalanced, calibrated=calibrated, calibrations=calibrations, slow_half=slow_half,
                new_ideal=t["fast"] + slow_half, after_change=[c[0] for c in changes],
                change_splits=[c[1] for c in changes])


def throughput(binary, cgroup, work):
    fast = median_job(binary, "127.0.0.1:1", [], GLOBAL_BATCH // 2, None, cgroup, work)
    slow = median_job(binary, "127.0.0.2:1", [], GLOBAL_BATCH // 2, 0, cgroup, work)
    hosts = "127.0.0.1:1,127.0.0.2:1"
    equal = median_job(binary, hosts, [], GLOBAL_BATCH, 1, cgroup, work)
    weights = ["--weight", f"127.0.0.1={fast:.3f}", "--weight", f"127.0.0.2={slow:.3f}"]
    weighted = median_job(binary, hosts, weights, GLOBAL_BATCH, 1, cgroup, work)
    return dict(fast=fast, slow=slow, ideal=fast + slow, equal=equal, weighted=weighted,
                concurrent=concurrent(binary, cgroup, work))


def concurrent(binary, cgroup, work):
    """Both workers' rates summed while each runs a job of its own at the same time: the machine's
    ceiling without any coordination between them."""
    runs = []
    for node, (host, throttled) in enumerate([("127.0.0.1", None), ("127.0.0.2", 0)]):
        sub = work / f"alone-{node}"
        sub.mkdir(exist_ok=True)
        runs.append((sub, host, throttled, node))
    rates = [0.0, 0.0]

    def one(k, sub, host, throttled, core):
        rates[k] = job_on_core(binary, f"{host}:1", GLOBAL_BATCH // 2, throttled, cgroup, sub, core)

    threads = [threading.Thread(target=one, args=(k, *r)) for k, r in enumerate(runs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(rates)


def bench_costs(bench):
    out = subprocess.run([bench, "--benchmark_filter=^(make_plan|make_plan_with_shares|split_batch)/1000000$",
                          f"--benchmark_repetitions={3 if QUICK else 7}", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            result[b["run_name"].split("/")[0]] = b["cpu_time"]
    return result


def cli_costs(binary, work):
    hostfile = work / "million.hostfile"
    with open(hostfile, "w") as f:
        for i in range(1000000):
            f.write(f"worker-{i:07d} slots={1 + i % 8}{' weight=2.5' if i % 3 == 0 else ''}\n")
    samples = {"plan": [], "plan with shares": []}
    for _ in range(3 if QUICK else 7):  # interleaved: drift in the machine's speed hits both alike
        for name, extra in [("plan", []), ("plan with shares", ["--global-batch", "2147483647"])]:
            started = time.monotonic()
            with open(os.devnull, "w") as sink:
                subprocess.run([binary, "plan", "--json", "--hostfile", str(hostfile), *extra], stdout=sink, check=True)
            samples[name].append(time.monotonic() - started)
    times = {name: statistics.median(s) for name, s in samples.items()}
    return times


def plot(t):
    if not shutil.which("gnuplot"):
        return False
    rows = [("slow alone", t["slow"]), ("fast alone", t["fast"]), ("equal split", t["equal"]),
            ("static weights", t["weighted"]), ("rebalanced", statistics.median(t["rebalanced"])),
            ("calibrated", statistics.median(t["calibrated"])), ("ideal (sum alone)", t["ideal"])]
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        for i, (name, value) in enumerate(rows):
            data.write(f'{i} "{name}" {value:.1f}\n')
    script = (f"set terminal pngcairo size 960,420 font ',11'\nset output '{DOCS / 'shares.png'}'\n"
              "set title 'A DDP job of a full core and a compute thread throttled to a third'\n"
              "set ylabel 'samples per second'\nset style fill solid 0.6\nset boxwidth 0.6\nset yrange [0:*]\n"
              "set grid ytics\nunset key\n"
              f"plot '{data.name}' using 1:3:xtic(2) with boxes lc rgb '#4477aa', "
              f"'' using 1:($3*1.04):(sprintf('%.0f', $3)) with labels\n")
    subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
    os.unlink(data.name)
    return True


# run reaches its hosts through the same stand-in; while the file DOWN exists, the second host
# cannot be reached (as ssh says, exit status 255): it has left the job and its probes fail. Every
# process of the second host is in the cgroup HOST, so that the host can be lost at once.
FAKE_SSH_DOWN = """#!/bin/sh
while [ "$1" != "--" ]; do shift; done
host=$2
shift 2
case $host in
  127.0.0.2) [ -e {down} ] && {{ echo "ssh: connect to host $host: No route to host" >&2; exit 255; }}
             echo $$ > {host}/cgroup.procs
             export COMPUTE_QUOTA_TASKS={tasks}; exec taskset -c 1 sh -c "$*";;
  *) exec taskset -c 0 sh -c "$*";;
esac
"""


def rate_of(records, first, last):
    """Samples a second of rank 0's steps `first`..`last` (inclusive) among `records`."""
    times = {r["step"]: r["time"] for r in records}
    return (last - first) * GLOBAL_BATCH / (times[last] - times[first])


def grow_back_run(binary, cgroup, work, every=4, fail_at=14, steps=44):
    """One job of the two workers, rebalancing from equal weights (`rebalance_every=2`), under
    `run --restarts 1 --exclude-failed --grow-back --probe-every 1`: the throttled node's host is
    lost at step `fail_at` (every process of it killed, and it cannot be reached); the job goes on
    alone from the last
    checkpoint; once the shrunk attempt has trained 3 steps, the host answers again, and at the
    next checkpoint the job grows back. The rates before the failure (steps 6 to `fail_at`, the
    first windows rebalancing) and after (the grown attempt's steps, its first one untimed)."""
    for name in ("ckpt", "log", "down"):
        path = work / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    (work / "ckpt").mkdir()
    ssh, down, log = work / "ssh", work / "down", work / "log"
    host = cgroup.with_name(cgroup.name + "-host")
    host.mkdir(exist_ok=True)
    ssh.write_text(FAKE_SSH_DOWN.format(down=down, tasks=cgroup / "tasks", host=host))
    ssh.chmod(0o755)
    port = str(29930 + os.getpid() % 30)
    proc = subprocess.Popen(
        [binary, "run", "--hosts", "127.0.0.1:1,127.0.0.2:1", "--ssh", str(ssh), "--global-batch", str(GLOBAL_BATCH),
         "--master-addr", "127.0.0.1", "--master-port", port, "--env", "OMP_NUM_THREADS=1", "--restarts", "1",
         "--exclude-failed", "--grow-back", "--probe-every", "1", "--gpu-count-command", "echo 1", "--kill-after", "3",
         "--torchrun-arg", "--redirects", "--torchrun-arg", "2", "--torchrun-arg", "--tee", "--torchrun-arg", "2",
         "--", *SCRIPT, *TRAIN, "--steps", str(steps), "--warmup", "0", "--rebalance-every", "2",
         "--checkpoint-dir", str(work / "ckpt"), "--every", str(every), "--step-log", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def records():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    try:
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            r = records()
            if not down.exists() and any(x["attempt"] == 0 and x["step"] >= fail_at for x in r) and \
                    not any(x["attempt"] == 1 for x in r):
                down.touch()  # the host is lost: its processes end, and no one reaches it
                for _ in range(50):
                    pids = (host / "cgroup.procs").read_text().split()
                    if not pids:
                        break
                    for pid in pids:
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    time.sleep(0.02)
            if down.exists() and sum(x["attempt"] == 1 for x in r) >= 3:
                down.unlink()  # the host is back
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    if proc.returncode != 0 or "grow-back at the checkpoint" not in out:
        raise RuntimeError(f"the grow-back job failed ({proc.returncode}):\n{out[-4000:]}")
    r = records()
    before = [x for x in r if x["attempt"] == 0]
    after = [x for x in r if x["attempt"] == 2]
    return dict(before=rate_of(before, 6, fail_at), after=rate_of(after, after[1]["step"], after[-1]["step"]),
                grown_at=after[0]["step"] - 1, weights_before=before[-1]["weights"], weights_after=after[0]["weights"])


def grow_back_section(runs):
    ratios = [x["after"] / x["before"] for x in runs]
    median = statistics.median(ratios)
    lines = [
        "<!-- grow-back-begin: written by tools/shares_performance.py --grow-back -->",
        "Throughput after growing back (`tools/shares_performance.py --grow-back`): the shares benchmark's two "
        "workers (one throttled to a third of its core), rebalancing from equal weights every 2 steps, a checkpoint "
        "every 4 steps, under `run --restarts 1 --exclude-failed --grow-back --probe-every 1` through a stand-in ssh. "
        "The throttled node's host is lost at step 14 (its processes killed, and it cannot be reached); the job goes "
        "on alone from step 12; once that attempt has trained 3 steps, the host answers, and at the next checkpoint "
        "the job grows back with the rates the checkpoint kept by host. Rank 0's samples a second, steps 6 to 14 "
        "before, the grown attempt's steps after its first:",
        "",
        "| run | before the failure | after growing back | ratio | grew back at step | weights before | weights "
        "at the grown attempt's first step |",
        "| ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for k, x in enumerate(runs, 1):
        w = ["/".join(f"{float(v):.2f}" for v in x[key]) if x[key] else "plan" for key in ("weights_before", "weights_after")]
        lines.append(f"| {k} | {x['before']:.0f} | {x['after']:.0f} | {ratios[k - 1]:.2f} | {x['grown_at']} | "
                     f"{w[0]} | {w[1]} |")
    lines += ["", f"Goal: after at least 0.95 of before, median of {len(runs)}: **{median:.2f}**, "
              f"{'met' if median >= 0.95 else 'not met'}.", "<!-- grow-back-end -->"]
    return "\n".join(lines) + "\n"


def rounds(binary, cgroup, work, count=3):
    """Each variant beside its own ideal, in rounds: in each, the two workers alone (the round's
    ideal and its static weights), then the static weights, rebalancing from equal weights,
    calibrate and a run of its weights. A round's ratios share its minutes, so the machine's drift
    between rounds cancels out of them."""
    hosts = "127.0.0.1:1,127.0.0.2:1"
    out = []
    for _ in range(count):
        fast = job(binary, "127.0.0.1:1", [], GLOBAL_BATCH // 2, None, cgroup, work)
        slow = job(binary, "127.0.0.2:1", [], GLOBAL_BATCH // 2, 0, cgroup, work)
        weights = ["--weight", f"127.0.0.1={fast:.3f}", "--weight", f"127.0.0.2={slow:.3f}"]
        static = job(binary, hosts, weights, GLOBAL_BATCH, 1, cgroup, work)
        rebalanced = job(binary, hosts, [], GLOBAL_BATCH, 1, cgroup, work, train=["--rebalance-every", "2", "--hook"])
        measured, seconds = calibrate(binary, cgroup, work)
        calibrated = job(binary, hosts, ["--weight", f"127.0.0.1={measured[0]}", "--weight", f"127.0.0.2={measured[1]}"],
                         GLOBAL_BATCH, 1, cgroup, work)
        out.append(dict(ideal=fast + slow, ratio=fast / slow, static=static, rebalanced=rebalanced,
                        calibrated=calibrated, measured=float(measured[0]) / float(measured[1]), seconds=seconds))
    return out


def rounds_section(result):
    def spread_of(key):
        values = [r[key] / r["ideal"] for r in result]
        return f"**{statistics.median(values):.2f}** ({min(values):.2f} to {max(values):.2f})"
    lines = [
        "<!-- shares-rounds-begin: written by tools/shares_performance.py --rounds -->",
        f"In rounds (`tools/shares_performance.py --rounds`): each of {len(result)} rounds measures the two workers "
        "alone (its ideal and its static weights), then the static weights, rebalancing from equal weights "
        "(`rebalance_every=2`), `hetlaunch calibrate` (8 steps) and a run of the weights it measured, so that each "
        "ratio compares jobs of the same minutes. The median of the rounds, their range in brackets:",
        "",
        "| over the round's ideal | ratio | goal |",
        "| --- | ---: | --- |",
        f"| static weights (the rates alone) | {spread_of('static')} | 0.9 |",
        f"| rebalancing from equal weights | {spread_of('rebalanced')} | 0.9 |",
        f"| calibrated weights | {spread_of('calibrated')} | 0.9 |",
        "",
        "| round | ideal (samples/s) | speed ratio alone | ratio calibrate measured | calibrate (s) |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for k, r in enumerate(result, 1):
        lines.append(f"| {k} | {r['ideal']:.0f} | {r['ratio']:.2f} | {r['measured']:.2f} | {r['seconds']:.0f} |")
    lines.append("<!-- shares-rounds-end -->")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, bench = sys.argv[1], sys.argv[2]
    try:
        import torch  # noqa: F401
    except ImportError:
        python = torch_python()
        os.execv(python, [python, __file__, *sys.argv[1:]])
    remove_cgroups()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if "--grow-back" in sys.argv:
        try:
            cgroup = make_cgroup()
            with tempfile.TemporaryDirectory() as tmp:
                section = grow_back_section([grow_back_run(binary, cgroup, pathlib.Path(tmp)) for _ in range(REPEAT)])
        finally:
            remove_cgroups()
        performance_doc.write_section("grow-back", section, before="<!-- binding-begin")
        print(section)
        return 0
    if "--rounds" in sys.argv:
        try:
            cgroup = make_cgroup()
            with tempfile.TemporaryDirectory() as tmp:
                section = rounds_section(rounds(binary, cgroup, pathlib.Path(tmp)))
        finally:
            remove_cgroups()
        performance_doc.write_section("shares-rounds", section, before="The same benchmark run")
        print(section)
        return 0
    try:
        cgroup = make_cgroup()
        with tempfile.TemporaryDirectory() as tmp:
            t = throughput(binary, cgroup, pathlib.Path(tmp))
            m = measured_shares(binary, cgroup, pathlib.Path(tmp), t)
    finally:
        remove_cgroups()
    with tempfile.TemporaryDirectory() as tmp:
        cli = cli_costs(binary, pathlib.Path(tmp))
    costs = bench_costs(bench)
    have_plot = plot({**t, **m})
    of_ideal, over_equal = t["weighted"] / t["ideal"], t["weighted"] / t["equal"]
    plan_ratio = costs["make_plan_with_shares"] / costs["make_plan"]
    cli_ratio = cli["plan with shares"] / cli["plan"]
    lines = [
        "<!-- shares-begin: written by tools/shares_performance.py -->",
        "## Work shares: what they buy and what they cost",
        "",
        f"Measured by `tools/shares_performance.py` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Linux {platform.release()}. A real DDP job on gloo (`examples/train_shares.py`: "
        f"an MLP of 256-512-512-1, float32, global batch {GLOBAL_BATCH}, {STEPS} timed steps, medians of {REPEAT} jobs) "
        "of two workers, each started by its own torchrun through `hetlaunch exec` and pinned to a core of its own; "
        f"the computing thread of one of them in a cgroup v1 CPU quota of {QUOTA} us a {PERIOD} us period, a third of "
        "its core (`tools/compute_quota.py`: its gloo threads stay outside, as a slower GPU slows compute and not its "
        "host's network). The weights are "
        "the workers' own rates, measured alone (with half the global batch each), as docs/shares.md recommends.",
        "",
        "| goal | measured | |",
        "| --- | --- | --- |",
        f"| shares by weight reach 0.9 of the ideal (the two workers' rates alone, summed) | {t['weighted']:.0f} vs "
        f"{t['ideal']:.0f} samples/s: **{of_ideal:.2f}** | {'met' if of_ideal >= 0.9 else 'not met'} |",
        f"| ... and 1.7x the equal split | {t['weighted']:.0f} vs {t['equal']:.0f} samples/s: **{over_equal:.2f}x** | "
        f"{'met' if over_equal >= 1.7 else 'not met'} |",
        f"| `make_plan` of 1,000,000 nodes with a global batch within 1.5x of the plan without | "
        f"{costs['make_plan_with_shares']:.0f} ms vs {costs['make_plan']:.0f} ms: **{plan_ratio:.2f}x** "
        f"(the split alone: {costs['split_batch']:.0f} ms) | {'met' if plan_ratio <= 1.5 else 'not met'} |",
        f"| `plan --json` of a 1,000,000-line hostfile with a global batch, end to end, within 1.5x of without | "
        f"{cli['plan with shares'] * 1000:.0f} ms vs {cli['plan'] * 1000:.0f} ms: **{cli_ratio:.2f}x** | "
        f"{'met' if cli_ratio <= 1.5 else 'not met'} |",
        "",
        "",
        "Shares that measure themselves, on the same job (three runs each; the range of the three):",
        "",
        "| goal | measured | |",
        "| --- | --- | --- |",
        f"| rebalancing from equal weights (`rebalance_every=2`, the first window untimed) reaches 0.9 of the ideal | "
        f"{statistics.median(m['rebalanced']):.0f} samples/s ({spread(m['rebalanced'])}): "
        f"**{statistics.median(m['rebalanced']) / t['ideal']:.2f}** | "
        f"{'met' if statistics.median(m['rebalanced']) / t['ideal'] >= 0.9 else 'not met'} |",
        f"| a run with the weights `hetlaunch calibrate` measured (8 steps, "
        f"{statistics.median(c[1] for c in m['calibrations']):.0f} s) reaches 0.9 of the ideal | "
        f"{statistics.median(m['calibrated']):.0f} samples/s ({spread(m['calibrated'])}), weights "
        f"{', '.join('/'.join(c[0]) for c in m['calibrations'])}: **{statistics.median(m['calibrated']) / t['ideal']:.2f}** | "
        f"{'met' if statistics.median(m['calibrated']) / t['ideal'] >= 0.9 else 'not met'} |",
        f"| the throttled worker's quota halved at step 9 of 24: from one rebalance window (3 steps) after, at least "
        f"0.85 of the new ideal ({m['new_ideal']:.0f} samples/s: the fast worker alone plus the slow one alone at the "
        f"new quota, {m['slow_half']:.0f}) | {statistics.median(m['after_change']):.0f} samples/s "
        f"({spread(m['after_change'])}), {'/'.join(str(c) for c in m['change_splits'])} split changes: "
        f"**{statistics.median(m['after_change']) / m['new_ideal']:.2f}** | "
        f"{'met' if statistics.median(m['after_change']) / m['new_ideal'] >= 0.85 else 'not met'} |",
        "",
        "| | samples/s |",
        "| --- | ---: |",
        f"| the slow worker alone | {t['slow']:.0f} |",
        f"| the fast worker alone | {t['fast']:.0f} |",
        f"| both, equal split | {t['equal']:.0f} |",
        f"| both, shares by weight | {t['weighted']:.0f} |",
        f"| ideal: the two alone, summed | {t['ideal']:.0f} |",
        f"| the two at once, each a job of its own | {t['concurrent']:.0f} |",
        "",
        "With the equal split every step waits for the throttled worker's half of the batch, so the job runs at "
        "twice the slow worker's rate; with shares each worker's part takes it about as long as the other's.",
        "",
        (f"Shares stay {GLOBAL_BATCH / t['weighted'] - GLOBAL_BATCH / t['ideal']:.2f} s a step below the ideal: "
         "each step adds the all-reduce of 1.6 MB in gloo's rounds, which a worker alone does not wait for."
         if of_ideal < 0.97 else
         "Shares reach or pass the ideal: the workers' rates alone are measured at half the global batch each, "
         "and a worker's rate per sample depends a little on its batch (its activations in cache); the rates alone "
         "were also measured minutes apart from the job, on a shared machine."),
        f"The two workers run at once as independent jobs reach {t['concurrent']:.0f} samples/s.",
    ]
    if have_plot:
        lines += ["", "![work shares](shares.png)"]
    lines.append("<!-- shares-end -->")
    section = "\n".join(lines) + "\n"
    performance_doc.write_section("shares", section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
