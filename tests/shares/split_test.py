#!/usr/bin/env python3
"""Work shares as a training script sees them, with no job running:

1. The split `hetlaunch plan --json` prints equals an independent reference of the rule in
   Python's exact integers and fractions, and hetlaunch_shares.split_batch (the package's own,
   which rebalancing uses), for random topologies, weights and global batches (up to 2^31 - 1),
   and every rank's part (hetlaunch_shares.rank_batch) tiles its node's. micro_batches cuts a
   share under a ceiling.
2. The sampler: over an epoch, with drop_last, every sample of the permutation is used exactly
   once by exactly one rank and every step has B samples; without it, every sample at least once
   and the padding repeats the head, as DistributedSampler pads; every rank has the same number
   of steps; the same seed gives the same steps on any topology and another seed other steps.
3. share_from_env refuses missing or inconsistent variables with a message naming them.
4. Rebalancing with no step timed is an error that says how to time one; watch() times them.
5. Steps a loader reads ahead keep the share they were cut with, and the position a checkpoint
   keeps is what training finished; a loaded position resumes there.
6. Calibration's all-reduce without each node: only the job without the slowest node reduces
   faster than the whole job.

usage: split_test.py HETLAUNCH [--torchrun PATH]
"""
import itertools
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
from fractions import Fraction

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
sys.path.insert(0, str(HERE.parent / "support"))
import hetlaunch_shares as shares  # noqa: E402
from harness import Suite  # noqa: E402

SPLIT_TOPOLOGIES = 153  # 3 extreme ones and 150 random
WEIGHTS = ["1", "2", "3", "0.5", "2.5", "1.000001", "0.000001", "1000000", "7.123456", "1.50", "03"]


def reference(nproc, weights, global_batch):
    """The rule, written from its statement with fractions."""
    world = sum(nproc)
    d = [p * Fraction(w) for p, w in zip(nproc, weights)]
    extra = global_batch - world
    quota = [extra * di / sum(d) for di in d]
    batch = [p + q.numerator // q.denominator for p, q in zip(nproc, quota)]
    left = global_batch - sum(batch)
    order = sorted(range(len(nproc)), key=lambda i: (-(quota[i] - int(quota[i])), i))
    for i in order[:left]:
        batch[i] += 1
    offsets = [sum(batch[:i]) for i in range(len(batch))]
    return list(zip(batch, offsets))


def plan(binary, nproc, weights, global_batch):
    hosts = ",".join(f"h{i}:{p}" for i, p in enumerate(nproc))
    args = [binary, "plan", "--json", "--hosts", hosts, "--global-batch", str(global_batch)]
    for i, w in enumerate(weights):
        args += ["--weight", f"h{i}={w}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout)


def split_cases(binary):
    failures = []
    rng = random.Random(31)
    cases = [([1, (1 << 31) - 3, 1], ["1000000", "0.000001", "1"], (1 << 31) - 1),
             ([1, 1], ["1000000", "0.000001"], (1 << 31) - 1),
             ([3, 1], ["1", "3"], 13)]
    for _ in range(SPLIT_TOPOLOGIES - 3):
        n = rng.randint(1, 7)
        nproc = [rng.randint(1, 9) for _ in range(n)]
        weights = [rng.choice(WEIGHTS) for _ in range(n)]
        b = rng.choice([sum(nproc), sum(nproc) + rng.randint(1, 400), (1 << 31) - 1, rng.randint(sum(nproc), 10**6)])
        cases.append((nproc, weights, b))
    for nproc, weights, b in cases:
        got = plan(binary, nproc, weights, b)
        nodes = [(node["node_batch"], node["node_batch_offset"]) for node in got["nodes"]]
        want = reference(nproc, weights, b)
        if nodes != want or got["global_batch"] != b or [node["weight"] for node in got["nodes"]] != weights:
            failures.append(f"nproc {nproc} weights {weights} B {b}: hetlaunch {nodes}, the rule {want}")
            continue
        # The package splits again when it rebalances: its split must be the C++ one.
        python_split = shares.split_batch(b, nproc, weights)
        if python_split != nodes:
            failures.append(f"nproc {nproc} weights {weights} B {b}: hetlaunch {nodes}, "
                            f"hetlaunch_shares.split_batch {python_split}")
            continue
        for (batch, offset), p in zip(nodes, nproc):
            if p > 1000:  # the extreme cases' ranks are too many to list
                continue
            ranks = [shares.rank_batch(batch, offset, p, l) for l in range(p)]
            tiled = all(r[1] == offset + sum(x[0] for x in ranks[:l]) for l, r in enumerate(ranks))
            if not tiled or sum(r[0] for r in ranks) != batch or min(r[0] for r in ranks) < 1:
                failures.append(f"node of {p} workers with {batch} samples: ranks {ranks}")
    return failures


def micro_batch_cases():
    """micro_batches: for every share size up to 200 and every ceiling up to 40, the parts are
    the share in order, ceil(b/M) of them, none above M, sizes differing by at most one with the
    larger first; no ceiling is one part; a ceiling below 0 or not an integer is refused."""
    failures = []
    for b in range(0, 201):
        items = list(range(100, 100 + b))
        for m in range(0, 41):
            parts = shares.micro_batches(items, m)
            sizes = [len(p) for p in parts]
            want_count = (0 if b == 0 else 1) if m == 0 else -(-b // m)
            if [x for p in parts for x in p] != items or len(parts) != want_count or \
                    (m and any(s > m for s in sizes)) or sizes != sorted(sizes, reverse=True) or \
                    (sizes and max(sizes) - min(sizes) > 1):
                failures.append(f"micro_batches({b} samples, {m}): sizes {sizes}")
    for bad in (-1, 1.5, "4", True):
        try:
            shares.micro_batches([1, 2], bad)
            failures.append(f"micro_batches accepted max_batch={bad!r}")
        except ValueError as e:
            if "max_batch must be 0 (no ceiling) or a positive integer" not in str(e):
                failures.append(f"micro_batches({bad!r}) says {e}")
    share = shares.Share(12, 2, 7, 0, max_batch=3)
    if share.micro_batch_count != 3 or shares.Share(12, 2, 7, 0).micro_batch_count != 1:
        failures.append(f"micro_batch_count: {share.micro_batch_count}")
    return failures


def topology_shares(nproc, batches, global_batch):
    """Every rank's Share for one split."""
    world = sum(nproc)
    out = []
    for p, (n, o) in zip(nproc, batches):
        for l in range(p):
            b, off = shares.rank_batch(n, o, p, l)
            out.append(shares.Share(global_batch, world, b, off))
    return out


def sampler_cases():
    failures = []
    rng = random.Random(5)
    for trial in range(60):
        n = rng.randint(1, 4)
        nproc = [rng.randint(1, 4) for _ in range(n)]
        weights = [rng.choice(WEIGHTS[:6]) for _ in range(n)]
        world = sum(nproc)
        b = world + rng.randint(0, 30)
        size = rng.randint(b, 6 * b + 7)
        ranks = topology_shares(nproc, reference(nproc, weights, b), b)
        for drop_last in (True, False):
            samplers = [shares.ShareBatchSampler(size, s, seed=trial, drop_last=drop_last) for s in ranks]
            for s in samplers:
                s.set_epoch(2)
            steps = [list(s) for s in samplers]
            counts = {len(x) for x in steps}
            if counts != {len(samplers[0])}:
                failures.append(f"{nproc}/{weights} B={b}: ranks have {counts} steps")
                continue
            order = samplers[0].order()
            for k in range(len(samplers[0])):
                taken = [i for rank in steps for i in rank[k]]
                if sorted(taken) != sorted(order[k * b:(k + 1) * b]) or len(taken) != b:
                    failures.append(f"{nproc}/{weights} B={b}: step {k} is not positions [{k * b}, {(k + 1) * b})")
                    break
            used = [i for rank in steps for step in rank for i in step]
            if drop_last and (len(used) != len(set(used)) or len(used) != size // b * b):
                failures.append(f"B={b}, {size} samples, drop_last: {len(used)} used, {len(set(used))} distinct")
            if not drop_last and (set(used) != set(range(size)) or len(used) != -(-size // b) * b):
                failures.append(f"B={b}, {size} samples, padded: {len(set(used))} distinct of {len(used)}")
            if not drop_last and used and order[size:] != (order[:size] * (1 + b // size))[:len(order) - size]:
                failures.append(f"B={b}, {size} samples: the padding does not repeat the head")
        # The same seed gives the same steps on another topology; another seed does not.
        other = [shares.Share(b, 1, b, 0)]  # one rank that takes every sample
        mine = [sorted(i for s in ranks for i in list(shares.ShareBatchSampler(size, s, seed=trial))[k])
                for k in range(size // b)]
        theirs = [sorted(list(shares.ShareBatchSampler(size, other[0], seed=trial))[k]) for k in range(size // b)]
        elsewhere = [sorted(list(shares.ShareBatchSampler(size, other[0], seed=trial + 1000))[k]) for k in range(size // b)]
        if mine != theirs:
            failures.append(f"{nproc}/{weights} B={b}: the steps depend on the topology")
        if size > b and mine == elsewhere:
            failures.append(f"B={b}, {size} samples: another seed gave the same steps")
    return failures


def rates_cases():
    """A checkpoint's rates by host on another topology: measured hosts keep their rates, others
    get their plan weight times the median of rate / plan weight; no measured host, an unknown
    host or a host twice keeps the plan's split (None). For every subset and order of 5 hosts."""
    import itertools

    from hetlaunch_shares._core import rates_on_topology
    failures = []
    saved = {"a": 10.0, "b": 30.0, "c": 20.0}
    plan = {"a": 1.0, "b": 2.0, "c": 1.0, "d": 4.0, "e": 0.5}
    for size in range(1, 6):
        for hosts in itertools.permutations("abcde", size):
            got = rates_on_topology(hosts, [plan[h] for h in hosts], saved)
            known = sorted(saved[h] / plan[h] for h in hosts if h in saved)
            if not known:
                if got is not None:
                    failures.append(f"{hosts}: {got} with no host measured")
                continue
            m = len(known) // 2
            median = known[m] if len(known) % 2 else (known[m - 1] + known[m]) / 2
            want = [saved[h] if h in saved else plan[h] * median for h in hosts]
            if got is None or any(abs(x - y) > 1e-12 * y for x, y in zip(got, want)):
                failures.append(f"{hosts}: {got}, want {want}")
    for hosts in (["a", ""], ["a", "a"], []):
        if rates_on_topology(hosts, [1.0] * len(hosts), saved) is not None:
            failures.append(f"{hosts}: a split from rates")
    # Rates no node could have are not used.
    if rates_on_topology(["a", "b"], [1.0, 1.0], {"a": -1, "b": float("nan")}) is not None:
        failures.append("negative and NaN rates were used")
    return failures


def env_cases():
    failures = []
    good = {"HETLAUNCH_GLOBAL_BATCH": "13", "WORLD_SIZE": "4", "HETLAUNCH_NODE_BATCH": "8",
            "HETLAUNCH_NODE_BATCH_OFFSET": "0", "LOCAL_WORLD_SIZE": "3", "LOCAL_RANK": "2", "GROUP_RANK": "1"}
    share = shares.share_from_env(good)
    if (share.batch, share.offset, share.loss_scale, share.max_batch, share.node, share.local_rank,
            share.local_world_size) != (2, 6, 2 * 4 / 13, 0, 1, 2, 3):
        failures.append(f"share_from_env: {share}")
    if shares.share_from_env({**good, "HETLAUNCH_MAX_BATCH": "16"}).max_batch != 16:
        failures.append("share_from_env does not read HETLAUNCH_MAX_BATCH")
    if shares.share_from_env({**good, "HETLAUNCH_NODE_HOST": "gpu-b"}).host != "gpu-b" or share.host != "":
        failures.append("share_from_env does not read HETLAUNCH_NODE_HOST (or invents one)")
    for name, value, says in [("HETLAUNCH_GLOBAL_BATCH", None, "HETLAUNCH_GLOBAL_BATCH is not set"),
                              ("HETLAUNCH_NODE_BATCH", "x8", "HETLAUNCH_NODE_BATCH='x8'"),
                              ("HETLAUNCH_NODE_BATCH_OFFSET", "10", "inconsistent work share"),
                              ("LOCAL_RANK", "3", "local rank 3 is not in 0..2"),
                              # Impossible values, each named: no world, a node larger than the world, digits
                              # Python reads as numbers but are not ASCII, a global batch of 0.
                              ("WORLD_SIZE", "0", "WORLD_SIZE='0' must be at least 1"),
                              ("LOCAL_WORLD_SIZE", "5", "LOCAL_WORLD_SIZE=5 is more than WORLD_SIZE=4"),
                              ("LOCAL_WORLD_SIZE", "0", "LOCAL_WORLD_SIZE='0' must be at least 1"),
                              ("HETLAUNCH_GLOBAL_BATCH", "\uff11\uff13", "HETLAUNCH_GLOBAL_BATCH='\uff11\uff13' is not a"),
                              ("HETLAUNCH_NODE_BATCH", "\u00b2", "HETLAUNCH_NODE_BATCH='\u00b2' is not a"),
                              ("LOCAL_RANK", "\u0662", "LOCAL_RANK='\u0662' is not a"),
                              ("GROUP_RANK", None, "GROUP_RANK is not set"),
                              ("GROUP_RANK", "0_1", "GROUP_RANK='0_1' is not a"),
                              ("GROUP_RANK", "\u0661", "GROUP_RANK='\u0661' is not a"),
                              ("WORLD_SIZE", " 4", "WORLD_SIZE=' 4' is not a"),
                              ("WORLD_SIZE", "4\n", "WORLD_SIZE='4\\n' is not a"),
                              ("WORLD_SIZE", "+4", "WORLD_SIZE='+4' is not a"),
                              ("WORLD_SIZE", "4_0", "WORLD_SIZE='4_0' is not a"),
                              ("HETLAUNCH_NODE_BATCH_OFFSET", "9" * 40, "is not a non-negative integer"),
                              ("HETLAUNCH_GLOBAL_BATCH", "0", "HETLAUNCH_GLOBAL_BATCH='0' must be at least 1"),
                              ("HETLAUNCH_NODE_BATCH", "0", "HETLAUNCH_NODE_BATCH='0' must be at least 1"),
                              ("HETLAUNCH_MAX_BATCH", "0", "HETLAUNCH_MAX_BATCH='0' must be at least 1"),
                              ("HETLAUNCH_MAX_BATCH", "-3", "HETLAUNCH_MAX_BATCH='-3' is not a"),
                              ("HETLAUNCH_MAX_BATCH", "x", "HETLAUNCH_MAX_BATCH='x' is not a")]:
        env = dict(good)
        if value is None:
            del env[name]
        else:
            env[name] = value
        try:
            shares.share_from_env(env)
            failures.append(f"share_from_env accepted {name}={value!r}")
        except ValueError as e:
            if says not in str(e):
                failures.append(f"share_from_env with {name}={value!r} says {e!r}")
    return failures


def hand_made_share_cases():
    """A Share made by hand is checked as one from the environment: never an empty or overlapping
    step, never a division by zero."""
    failures = []
    for fields, says in [((0, 1, 1, 0), "Share.global_batch 0 is smaller than the world size 1"),
                         ((4, 0, 1, 0), "Share.world_size must be at least 1"),
                         ((4, 2, 0, 0), "Share.batch must be 1..4"),
                         ((4, 2, 5, 0), "Share.batch must be 1..4"),
                         ((4, 2, 2, 3), "Share.offset must be 0..2"),
                         ((4, 2, 2, -1), "Share.offset must be 0..2"),
                         ((4, 8, 1, 0), "smaller than the world size 8"),
                         ((4.0, 2, 2, 0), "Share.global_batch must be an integer"),
                         ((4, 2, True, 0), "Share.batch must be an integer"),
                         ((4, 2, 2, 0, None, 0, -1), "Share.node must be 0 or more"),
                         ((4, 2, 2, 0, None, 0, 0, 2, 2), "Share.local_rank must be 0..1"),
                         ((4, 2, 2, 0, None, 0, 0, 0, 3), "Share.local_world_size must be 1..2"),
                         ((4, 2, 2, 0, None, 0, 0, 0, 0), "Share.local_world_size must be 1..2")]:
        try:
            shares.Share(*fields)
            failures.append(f"Share{fields} was accepted")
        except ValueError as e:
            if says not in str(e):
                failures.append(f"Share{fields} says {e!r}")
    if shares.Share(4, 2, 2, 2).loss_scale != 1.0:
        failures.append("Share(4, 2, 2, 2) is a valid share")
    return failures


# A one-process gloo job and train(sampler, steps), over as many epochs as it takes.
ONE_PROCESS_TRAINING = r"""
import sys, tempfile, torch, torch.distributed as dist
sys.path.insert(0, sys.argv[1])
import hetlaunch_shares as shares
dist.init_process_group("gloo", store=dist.FileStore(tempfile.mktemp(), 1), rank=0, world_size=1)
model = torch.nn.Linear(3, 1)
x = torch.randn(64, 3)

def train(sampler, steps):
    k = 0
    while k < steps:
        for idx in sampler:
            if k == steps:
                break
            model(x[idx]).sum().backward()
            k += 1
        sampler.set_epoch(sampler.epoch + 1)
"""

TIMING_PROBE = ONE_PROCESS_TRAINING + r"""
untimed = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0), rebalance_every=2)
try:
    train(untimed, 3)  # a loader may read this far ahead before training starts: not yet an error
    train(untimed, 300)
    print("untimed: no error")
except RuntimeError as e:
    print("untimed:", e)
try:
    untimed.watch(torch.nn.ReLU())
    print("no parameters: accepted")
except ValueError as e:
    print("no parameters:", e)
watched = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0), rebalance_every=2)
handles = watched.watch(model)
train(watched, 3)
print("watched:", len(handles), watched.measured is not None and watched.measured["nodes"][0]["samples_per_second"] > 0)
"""


def timing_cases():
    """Rebalancing needs each step timed: with nothing timed (no comm hook, no watch) rebalancing
    is an error that says how to time, once the sampler has handed out more steps than any loader
    reads ahead; watch() of a model times it; watch() of a module without parameters is
    refused."""
    r = subprocess.run([sys.executable, "-c", TIMING_PROBE, str(HERE.parents[1] / "python")], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "GROUP_RANK": "0", "LOCAL_RANK": "0",
                                                    "LOCAL_WORLD_SIZE": "1"})
    lines = r.stdout.splitlines()
    want = ["untimed: " + shares.NOTHING_TIMED,
            "no parameters: ReLU has no parameter that needs a gradient: nothing to time",
            "watched: 2 True"]
    return [] if lines == want else [f"got {lines} ({r.stderr[-2000:]}), expected {want}"]


ON_SLOW_PROBE = ONE_PROCESS_TRAINING + r"""
untimed = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0))
print("untimed every:", untimed.rebalance_every)
train(untimed, 300)
print("untimed after:", untimed.rebalance_every)
watched = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0))
watched.watch(model)
train(watched, 10)
print("watched measured:", watched.measured is not None and watched.measured["step"] == 10)
own = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0), rebalance_every=4)
print("own every:", own.rebalance_every)
"""


def on_slow_cases():
    """HETLAUNCH_ON_SLOW=rebalance (run --on-slow rebalance): a sampler that does not rebalance by
    itself rebalances every window of 10 steps; one whose steps nobody times says so once and
    keeps the plan's split, never failing the job; a sampler's own rebalance_every stays. Any
    other value is refused, naming it."""
    from hetlaunch_shares import _names, _progress

    env = {**os.environ, "GROUP_RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", _names.ON_SLOW: "rebalance"}
    r = subprocess.run([sys.executable, "-c", ON_SLOW_PROBE, str(HERE.parents[1] / "python")], capture_output=True,
                       text=True, timeout=120, env=env)
    want = ["untimed every: 10", "untimed after: 0", "watched measured: True", "own every: 4"]
    failures = [] if r.stdout.splitlines() == want else [f"got {r.stdout.splitlines()} ({r.stderr[-2000:]}), " \
                                                         f"expected {want}"]
    said = [line for line in r.stderr.splitlines() if "--on-slow rebalance cannot move work" in line]
    if len(said) != 1 or "watch(model)" not in said[0]:
        failures.append(f"the untimed sampler said {said}, expected one line that says how to time")
    if _progress.on_slow_rebalances({}) or not _progress.on_slow_rebalances({_names.ON_SLOW: "rebalance"}):
        failures.append("HETLAUNCH_ON_SLOW is not read")
    for bad in ("", "report", "exclude", "Rebalance"):
        try:
            _progress.on_slow_rebalances({_names.ON_SLOW: bad})
            failures.append(f"HETLAUNCH_ON_SLOW={bad!r} was taken")
        except ValueError as e:
            if _names.ON_SLOW not in str(e):
                failures.append(f"{bad!r}: {e}")
    return failures


READ_AHEAD_PROBE = r"""
import json, sys, tempfile, torch, torch.distributed as dist
from torch.utils.data import DataLoader
sys.path.insert(0, sys.argv[1])
import hetlaunch_shares as shares
dist.init_process_group("gloo", store=dist.FileStore(tempfile.mktemp(), 1), rank=0, world_size=1)

class Indices(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return i

def sampler():
    return shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0), seed=3)

out = {}
for marking in ["hook", "watch", "none"]:
    model = torch.nn.Linear(1, 1)
    s = sampler()
    if marking == "watch":
        s.watch(model)
    loader = DataLoader(Indices(), batch_sampler=s, num_workers=2, prefetch_factor=2)
    for k, batch in enumerate(loader):
        if k == 3:
            break
        model(batch.float().unsqueeze(1)).sum().backward()
        if marking == "hook":
            s.computed()
    state = s.state_dict()
    resumed = sampler()
    resumed.load_state_dict(json.loads(json.dumps(state)))
    resumed.set_epoch(0)
    order = resumed.order()
    rest = [list(b) for b in resumed]
    out[marking] = [state["epoch"], state["step"], rest == [order[i * 8:(i + 1) * 8] for i in range(state["step"], 8)]]
    resumed.set_epoch(1)
    out[marking].append(len(list(resumed)))
# skip_to(k): the epoch from step k on; it replaces a loaded position of the epoch (never twice)
s = sampler()
s.load_state_dict({"epoch": 2, "step": 5})
s.set_epoch(2)
s.skip_to(3)
order = s.order()
skipped = [list(b) for b in s] == [order[i * 8:(i + 1) * 8] for i in range(3, 8)]
s.skip_to(6)
s.set_epoch(4)  # another epoch: from its first step
out["skip_to"] = [skipped, len(list(s))]
for bad in (-1, True, 2.0):
    try:
        s.skip_to(bad)
        out["skip_to"].append(f"took {bad!r}")
    except ValueError:
        pass
print(json.dumps(out))
"""


def read_ahead_cases():
    """A DataLoader with workers reads steps ahead of training: the position a checkpoint keeps
    is the next step training has not finished (marked by computed() or watch()), never one the
    loader only read; with nothing that marks steps, the steps handed out count. A sampler that
    loads the state yields the rest of that epoch from there, then whole epochs. skip_to(k) starts
    the current epoch at step k instead of a loaded position (a skip said twice is one skip)."""
    r = subprocess.run([sys.executable, "-c", READ_AHEAD_PROBE, str(HERE.parents[1] / "python")],
                       capture_output=True, text=True, timeout=120)
    got = json.loads(r.stdout) if r.returncode == 0 else r.stderr[-2000:]
    want = {"hook": [0, 3, True, 8], "watch": [0, 3, True, 8], "none": [0, 8, True, 8], "skip_to": [True, 8]}
    return [] if got == want else [f"got {got}, expected {want}"]


CALIBRATE_PROBE = r"""
import sys, tempfile, torch, torch.distributed as dist
sys.path.insert(0, sys.argv[1])
import hetlaunch_shares as shares
dist.init_process_group("gloo", store=dist.FileStore(tempfile.mktemp(), 1), rank=0, world_size=1)
model = torch.nn.Linear(3, 1)
x = torch.randn(64, 3)
sampler = shares.ShareBatchSampler(64, shares.Share(8, 1, 8, 0))  # 8 steps an epoch
sampler.watch(model)
trained = 0
for epoch in range(5):  # the usual loop: it ends when the sampler yields no more steps
    sampler.set_epoch(epoch)
    for idx in sampler:
        model(x[idx]).sum().backward()
        trained += 1
print("trained", trained)
"""


def calibrate_epoch_end_cases():
    """hetlaunch calibrate's N-th step ends an epoch (every toy dataset of a few steps): the
    sampler prints its line at the next epoch's start and yields nothing more, rather than
    returning without a word."""
    env = {**os.environ, "HETLAUNCH_CALIBRATE_STEPS": "8"}
    r = subprocess.run([sys.executable, "-c", CALIBRATE_PROBE, str(HERE.parents[1] / "python")],
                       capture_output=True, text=True, timeout=120, env=env)
    lines = r.stdout.splitlines()
    measured = [line for line in lines if line.startswith("HETLAUNCH_MEASURED ")]
    failures = []
    if len(measured) != 1:
        failures.append(f"{len(measured)} measured lines: {r.stdout[-1000:]} {r.stderr[-1500:]}")
    if "trained 8" not in lines:
        failures.append(f"the sampler did not stop after its 8 steps: {lines}")
    return failures


def ledger_cases():
    """Each step handed out keeps the share it was cut with until training marks it trained, so a
    split taken while a loader reads ahead weights only the steps cut after it; only the first
    marker's marks count; watch() counts a step after its micro-batch count of backward passes."""
    from hetlaunch_shares._steps import StepLedger

    failures = []
    old, new = shares.Share(12, 2, 4, 0, max_batch=2), shares.Share(12, 2, 9, 0, max_batch=3)
    ledger = StepLedger()
    for step, share in enumerate([old, old, new, new]):
        ledger.hand_out(0, step, share)
    seen = []
    while ledger.front() is not None:
        seen.append(ledger.front().share.batch)
        if ledger.mark("hook") is None:
            failures.append("a pending step was not marked")
            break
    if seen != [4, 4, 9, 9]:
        failures.append(f"the steps in flight were weighted by {seen}, not [4, 4, 9, 9]")
    if ledger.position() != (0, 4):
        failures.append(f"position after four trained steps: {ledger.position()}")
    ledger.hand_out(0, 4, old)
    if ledger.mark("watch") is not None or ledger.backward_ended() is not None:
        failures.append("a second marker counted a step")
    watched = StepLedger()
    watched.hand_out(0, 0, old)  # 4 samples under a ceiling of 2: two backward passes
    watched.hand_out(0, 1, new)
    if watched.backward_ended() is not None or watched.backward_ended() is None:
        failures.append("watch() did not count the step after its two micro-batches")
    if watched.position() != (0, 1) or watched.front().share is not new:
        failures.append(f"after one step under watch(): position {watched.position()}")
    untracked = StepLedger()
    untracked.hand_out(2, 0, old)
    untracked.hand_out(2, 1, old)
    if untracked.position() != (2, 2):
        failures.append(f"with no marker the steps handed out count: {untracked.position()}")
    return failures + own_work_cases()


def own_work_cases():
    """A rank's own work between steps runs from its gradients reduced to its next step handed
    out; a pause that is no step's (a rebalance, a new epoch) is not counted; each node's is the
    mean of its workers' where every one of them measured it, and the all-reduce is the least of
    the ranks' reductions (the last to compute its gradients waits for nobody)."""
    import time

    from hetlaunch_shares._sampler import RankLayout, RankWindow, least_reduce, measurement, summed
    from hetlaunch_shares._steps import StepLedger

    failures = []
    share = shares.Share(12, 2, 4, 0)
    ledger = StepLedger()
    if ledger.hand_out(0, 0, share) is not None:
        failures.append("the first step has own work before it")
    ledger.mark("hook")
    ledger.reduced_at = time.perf_counter() - 0.25
    between = ledger.hand_out(0, 1, share)
    if between is None or not 0.25 <= between < 5:
        failures.append(f"own work between steps {between}, expected the 0.25 s since the reduction")
    if ledger.hand_out(0, 2, share) is not None:
        failures.append("a step handed out with no reduction since the last one has own work before it")
    ledger.reduced_at = time.perf_counter()
    ledger.abandon()  # a new epoch's iteration: its order is computed before its first step
    if ledger.hand_out(1, 0, share) is not None:
        failures.append("a new epoch's first step counts the epoch's start as own work")
    layout = [RankLayout(0, 1, 0, 4, 0, 12, 5, 0), RankLayout(1, 2, 0, 4, 4, 12, 5, 0),
              RankLayout(1, 2, 1, 4, 8, 12, 5, 0)]
    windows = [RankWindow(1.0, 40, 10, True, True, 2.0, 0.02, 10, 0.5, 10),
               RankWindow(1.0, 40, 10, True, True, 2.0, 0.06, 10, 0.3, 10),
               RankWindow(1.0, 40, 10, True, True, 2.0, 0.1, 10, 0.4, 10)]
    m = measurement(20, layout, windows, [40.0, 40.0], ["1", "1"])
    own = [n.get("overhead_seconds") for n in m["nodes"]]
    if [round(o, 9) for o in own] != [0.002, 0.008] or round(m["allreduce_seconds"], 9) != 0.03:
        failures.append(f"measured {m}: expected own work 0.002 and 0.008 s, all-reduce 0.03 s")
    windows[2] = windows[2]._replace(overhead=0.0, overhead_steps=0, reduce=0.0, reduce_steps=0)
    m = measurement(20, layout, windows, [40.0, 40.0], ["1", "1"])
    if "overhead_seconds" in m["nodes"][1] or round(m["allreduce_seconds"], 9) != 0.03:
        failures.append(f"a node with a worker that measured no own work: {m}")
    nothing = [w._replace(overhead=0.0, overhead_steps=0, reduce=0.0, reduce_steps=0) for w in windows]
    m = measurement(20, layout, nothing, [40.0, 40.0], ["1", "1"])
    if round(m.get("allreduce_seconds", -1), 9) != 0.1:  # (2 s on the clock - 1 s computing) / 10 steps
        failures.append(f"with no reduction seen, the time outside the computation: {m}")
    total = summed(windows[0], windows[1])
    if total != RankWindow(2.0, 80, 20, True, True, 4.0, 0.08, 20, 0.8, 20):
        failures.append(f"two windows summed: {total}")
    # Calibration's all-reduce is each window's least, averaged over the steps: rank 0 computed
    # last in the first window and rank 1 in the second, and neither one's wait counts.
    first = [RankWindow(1.0, 40, 10, True, True, 2.0, 0.0, 0, 0.1, 10),
             RankWindow(1.0, 40, 10, True, True, 2.0, 0.0, 0, 0.5, 10), nothing[2]]
    second = [first[1], first[0], nothing[2]]
    reductions = [least_reduce(first), least_reduce(second)]
    m = measurement(20, layout, [summed(a, b) for a, b in zip(first, second)], [40.0, 40.0], ["1", "1"], reductions)
    if reductions != [(0.01, 10), (0.01, 10)] or round(m["allreduce_seconds"], 9) != 0.01:
        failures.append(f"two windows, each rank last in one: {reductions}, {m}: expected 0.01 s, not 0.03")
    m = measurement(20, layout, windows, [40.0, 40.0], ["1", "1"], [(0.02, 5), (0.01, 15)])
    if round(m["allreduce_seconds"], 9) != 0.0125:
        failures.append(f"windows of 5 and 15 steps at 20 and 10 ms: {m}, expected their mean over the steps")
    if least_reduce(nothing) is not None:
        failures.append("a window where no rank saw a reduction end has an all-reduce")
    return failures


def probe_cases():
    """The all-reduce of the job without each node: an all-reduce is as slow as its slowest
    member. With three nodes or more, only the job without the slowest node (the probe's fastest
    group) reduces faster than the whole job, by the probe's ratio; every other keeps the whole
    job's all-reduce, whatever its group probed. With two nodes each group is one node and keeps
    its own ratio. No ratio is above 1."""
    from hetlaunch_shares._probe import without_each_node

    failures = []

    def expect(probed, want, why):
        got = without_each_node(0.2, probed)
        if len(got) != len(want) or any(abs(g - w) > 1e-12 for g, w in zip(got, want)):
            failures.append(f"{why}: {probed} gave {got}, expected {want}")

    # The probed groups that keep the slowest node (node 2, at 1/30 of a core) vary from run to
    # run; the jobs keep the whole job's all-reduce.
    for keeps in ((0.037, 0.046), (0.112, 0.073), (0.26, 1.23), (0.1, 0.1)):
        expect({"whole": 0.1, "without": [*keeps, 0.004]}, [0.2, 0.2, 0.008], f"keeping the slowest {keeps}")
    expect({"whole": 0.1, "without": [0.02, 0.1, 0.1, 0.1]}, [0.04, 0.2, 0.2, 0.2], "the first node slowest of four")
    expect({"whole": 0.1, "without": [0.1, 0.1, 0.1]}, [0.2, 0.2, 0.2], "nodes alike")
    expect({"whole": 0.1, "without": [0.3, 0.2, 0.15]}, [0.2, 0.2, 0.2], "every group probed slower than the whole")
    expect({"whole": 0.1, "without": [0.05, 0.3]}, [0.1, 0.2], "two nodes: each group its own ratio, at most 1")
    expect({"whole": 0.1, "without": [0.0, 0.05]}, [0.0, 0.1], "two nodes, one a single rank: nothing to reduce")
    # The property, for every probe of three to five nodes over a grid of times: one group at most
    # below the whole job's all-reduce, the one probed fastest, and none above it.
    grid = (0.0, 0.01, 0.05, 0.1, 0.2)
    for n in (3, 4, 5):
        for without in itertools.product(grid, repeat=n):
            got = without_each_node(0.2, {"whole": 0.1, "without": list(without)})
            below = [j for j, g in enumerate(got) if g < 0.2]
            if any(g > 0.2 for g in got) or len(below) > 1 or (below and without[below[0]] != min(without)):
                failures.append(f"{without} gave {got}")
                break
    return failures


def names_cases():
    """The Python side names hetlaunch's variables once (hetlaunch_shares._names), and they are
    the C++ side's: the launch-owned variables of include/hetlaunch/worker_variables.hpp."""
    import re
    from hetlaunch_shares import _names

    header = (HERE.parents[1] / "include" / "hetlaunch" / "worker_variables.hpp").read_text()
    values = dict(re.findall(r'inline constexpr std::string_view (\w+) = "([A-Z0-9_]+)";', header))
    owned = re.search(r"owned = \{([^}]*)\}", header).group(1)
    want = {values[name.strip()] for name in owned.split(",")}
    failures = [] if set(_names.HETLAUNCH) == want else [f"Python names {sorted(_names.HETLAUNCH)}, C++ owns {sorted(want)}"]
    source = "".join(p.read_text() for p in (HERE.parents[1] / "python" / "hetlaunch_shares").glob("*.py")
                     if p.name != "_names.py")
    spelled = sorted(set(re.findall(r'"(HETLAUNCH_[A-Z_]+|GROUP_RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|WORLD_SIZE)"', source)))
    if spelled:
        failures.append(f"variable names spelled outside _names.py: {spelled}")
    # The words of rank 0's lines are the ones run reads.
    include = HERE.parents[1] / "include" / "hetlaunch"
    for python_word, header, constant in ((_names.MEASURED_LINE, "calibration.hpp", "measured_prefix"),
                                          (_names.CHECKPOINT_LINE, "checkpoint_line.hpp", "checkpoint_prefix"),
                                          (_names.PROGRESS_LINE, "rank_health.hpp", "progress_prefix")):
        found = re.search(rf'inline constexpr std::string_view {constant} = "([^"]*)";', (include / header).read_text())
        if not found or found.group(1) != python_word:
            failures.append(f"{header}'s {constant} is {found and found.group(1)!r}, Python's {python_word!r}")
    spelled_lines = sorted(set(re.findall(r'"(HETLAUNCH_(?:MEASURED|CHECKPOINT|PROGRESS) )', source)))
    if spelled_lines:
        failures.append(f"line words spelled outside _names.py: {spelled_lines}")
    return failures


def checkpoint_line_cases():
    """checkpoint_saved(step): rank 0 alone prints the line run reads, and only a step can be said."""
    import contextlib
    import io
    from hetlaunch_shares import _lines

    failures = []
    if _lines.checkpoint_line(120) != 'HETLAUNCH_CHECKPOINT {"step": 120}':
        failures.append(f"checkpoint_line(120) is {_lines.checkpoint_line(120)!r}")
    for bad in (-1, 1.0, True, "3", None):
        try:
            _lines.checkpoint_line(bad)
            failures.append(f"checkpoint_line({bad!r}) was taken")
        except ValueError as e:
            if "step must be a non-negative int" not in str(e):
                failures.append(f"checkpoint_line({bad!r}): {e}")
    for rank, want in (("0", 'HETLAUNCH_CHECKPOINT {"step": 7}\n'), ("1", ""), ("12", "")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            _lines.checkpoint_saved(7, env={"RANK": rank})
        if out.getvalue() != want:
            failures.append(f"rank {rank} printed {out.getvalue()!r}, expected {want!r}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _lines.checkpoint_saved(7, env={})  # a process of its own: rank 0 of a world of one
    if out.getvalue() != 'HETLAUNCH_CHECKPOINT {"step": 7}\n':
        failures.append(f"without RANK or a process group it printed {out.getvalue()!r}")
    try:
        _lines.checkpoint_saved(7, env={"RANK": "x"})
        failures.append("RANK=x was taken")
    except ValueError as e:
        if "not a non-negative integer" not in str(e):
            failures.append(f"RANK=x: {e}")
    return failures


def progress_cases():
    """A rank's progress reporter: its line says the step, the phase and how long it has lasted,
    and the last window's samples a second; before its first step the rank says it waits (its
    start-up is no step to judge); the loop's marks change only fields; nothing at all
    without HETLAUNCH_PROGRESS_SECONDS."""
    import io
    import time
    from hetlaunch_shares import _names, _progress

    failures = []
    now = [100.0]
    out = io.StringIO()
    p = _progress.Progress(1.0, 3, out=out, clock=lambda: now[0], window_steps=2)

    def said():
        return json.loads(p.line()[len(_names.PROGRESS_LINE):])
    if not p.line().startswith("HETLAUNCH_PROGRESS {"):
        failures.append(f"the line {p.line()!r}")
    now[0] = 160.0  # a minute of start-up before the first step: waiting, never stuck
    if (said()["phase"], said()["step"], said()["phase_seconds"]) != ("computed", 0, 60.0):
        failures.append(f"before the first step: {said()}")
    now[0] = 100.0
    p.started(5)
    now[0] = 101.5
    want = {"rank": 3, "step": 5, "phase": "computing", "phase_seconds": 1.5, "window": 0, "samples_per_second": 0.0}
    if said() != want:
        failures.append(f"computing: {said()}, expected {want}")
    p.trained(10, 0.5)
    p.computed()
    p.trained(30, None)  # untimed: no part of a window
    p.trained(30, 1.5)
    now[0] = 103.0
    got = said()
    if (got["phase"], got["phase_seconds"], got["window"], got["samples_per_second"]) != ("computed", 1.5, 1, 20.0):
        failures.append(f"after a window of 40 samples in 2 s: {got}")
    with p.checkpointing():
        now[0] = 110.0
        if said()["phase"] != "checkpointing" or said()["phase_seconds"] != 7.0:
            failures.append(f"inside checkpointing(): {said()}")
    if said()["phase"] != "computed":
        failures.append(f"after checkpointing(): {said()}")
    p.heartbeat(6)
    now[0] = 111.0
    p.heartbeat(7, samples=24)
    now[0] = 113.0
    p.heartbeat(8, samples=24)
    if said()["step"] != 8 or said()["window"] != 2 or said()["samples_per_second"] != 16.0:
        failures.append(f"heartbeats of 24 samples in 1 s and 2 s: {said()}")
    p._say()
    if out.getvalue().count("\n") != 1 or not out.getvalue().startswith("HETLAUNCH_PROGRESS "):
        failures.append(f"one line a report: {out.getvalue()!r}")
    # Leaving checkpointing() is said at once by a started reporter, not at its next interval.
    out3 = io.StringIO()
    r = _progress.Progress(3600, 2, out=out3)
    r.started(4)
    r.start()
    r.computed()
    with r.checkpointing():
        pass
    r.stop()
    phases = [json.loads(x[len(_names.PROGRESS_LINE):])["phase"] for x in out3.getvalue().splitlines()]
    if phases != ["computing", "computed"]:
        failures.append(f"leaving checkpointing(): lines of phases {phases}, expected computing then computed")
    # The thread: a line at once and one an interval, until stopped.
    out2 = io.StringIO()
    t = _progress.Progress(0.05, 0, out=out2).start()
    time.sleep(0.3)
    t.stop()
    lines = out2.getvalue().splitlines()
    if not 3 <= len(lines) <= 8 or any(not x.startswith("HETLAUNCH_PROGRESS {") for x in lines):
        failures.append(f"in 0.3 s at an interval of 0.05 s: {lines}")
    # Every window is said when it closes, also windows shorter than the interval; faster than
    # ten a second they are said together.
    out3 = io.StringIO()
    t = _progress.Progress(30, 0, out=out3, window_steps=1).start()
    for _ in range(3):
        time.sleep(0.15)
        t.trained(10, 0.1)
    time.sleep(0.15)
    windows = [json.loads(x.split(" ", 1)[1])["window"] for x in out3.getvalue().splitlines()]
    for _ in range(20):
        t.trained(10, 0.1)
    time.sleep(0.3)
    t.stop()
    burst = len(out3.getvalue().splitlines()) - len(windows)
    if windows != [0, 1, 2, 3]:
        failures.append(f"windows said at an interval of 30 s: {windows}, expected each as it closed")
    if not 1 <= burst <= 4:
        failures.append(f"20 windows at once were said in {burst} lines, expected a few")
    # The launcher's variable.
    if _progress.interval_from({}) is not None or _progress.interval_from({_names.PROGRESS_SECONDS: "0.5"}) != 0.5:
        failures.append("HETLAUNCH_PROGRESS_SECONDS is not read as seconds")
    for bad in ("0", "-1", "x", "nan", "inf", "3601", ""):
        try:
            _progress.interval_from({_names.PROGRESS_SECONDS: bad})
            failures.append(f"HETLAUNCH_PROGRESS_SECONDS={bad!r} was taken")
        except ValueError as e:
            if "must be a number of seconds" not in str(e):
                failures.append(f"{bad!r}: {e}")
    if _progress.reporter({}) is not None:
        failures.append("a reporter without HETLAUNCH_PROGRESS_SECONDS")
    for bad in (-1, 1.5, True, "2"):
        try:
            _progress.heartbeat(bad)
            failures.append(f"heartbeat({bad!r}) was taken")
        except ValueError:
            pass
    with _progress.checkpointing():  # without the variable: nothing
        pass
    return failures


def install_cases():
    """hetlaunch_shares installs offline, with nothing but pip and setuptools, and imports from
    where it was installed without importing accelerate or transformers."""
    import tempfile

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp) / "src"
        shutil.copytree(HERE.parents[1] / "python", source, ignore=shutil.ignore_patterns("__pycache__", "build"))
        target = pathlib.Path(tmp) / "site"
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                            "--no-index", "--target", str(target), str(source)], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"pip install --no-build-isolation ./python failed: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        else:
            probe = ("import sys, hetlaunch_shares as s; "
                     "print(s.__file__, s.Share(4, 2, 2, 2).loss_scale, 'accelerate' in sys.modules, "
                     "'transformers' in sys.modules, callable(s.prepare_loader))")
            r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=str(target)), cwd=tmp)
            want = f"{target / 'hetlaunch_shares' / '__init__.py'} 1.0 False False True"
            if r.stdout.strip() != want:
                failures.append(f"the installed package: {r.stdout!r} {r.stderr[-2000:]!r}, expected {want!r}")
    return failures


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    try:
        import torch  # noqa: F401  (the sampler's permutation)
    except ImportError:  # torch is on the interpreter torchrun runs on
        torchrun = sys.argv[sys.argv.index("--torchrun") + 1] if "--torchrun" in sys.argv else shutil.which("torchrun")
        first = pathlib.Path(torchrun).read_text(errors="replace").splitlines()[0]
        python = first[2:].strip().split()[0]
        os.execv(python, [python, __file__, *sys.argv[1:]])
    with Suite("shares split") as run:
        run.case(f"split: {SPLIT_TOPOLOGIES} topologies equal the rule's reference", split_cases, sys.argv[1])
        run.case("micro_batches: every share and ceiling up to 200 x 40", micro_batch_cases)
        run.case("sampler: 60 topologies, every sample once, same steps on any topology", sampler_cases)
        run.case("share_from_env: refuses missing and inconsistent variables", env_cases)
        run.case("a checkpoint's rates by host, on every topology of 5 hosts", rates_cases)
        run.case("Share: refuses a share no rank can have", hand_made_share_cases)
        run.case("rebalancing: a step must be timed, and watch() times it", timing_cases)
        run.case("--on-slow rebalance: a sampler rebalances every window, untimed it says so once", on_slow_cases)
        run.case("steps in flight keep their share; only the first marker counts; own work between steps", ledger_cases)
        run.case("calibration whose last step ends an epoch still prints its line", calibrate_epoch_end_cases)
        run.case("a loader that reads ahead: the position is what training finished", read_ahead_cases)
        run.case("the all-reduce without each node: as slow as its slowest member", probe_cases)
        run.case("variable names: once in Python, equal to worker_variables.hpp's", names_cases)
        run.case("checkpoint_saved: rank 0 prints the checkpoint line, for a step only", checkpoint_line_cases)
        run.case("progress: each rank's line of its step, phase and rate, nothing without the launcher's variable",
                 progress_cases)
        run.case("install: pip install --no-build-isolation ./python, offline", install_cases)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
