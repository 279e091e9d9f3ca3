#!/usr/bin/env python3
"""Work shares in the scripts people write: examples/train_accelerate.py (accelerate's
Accelerator) and examples/train_trainer.py (HF Trainer through hetlaunch_shares.ShareTrainer), run
as they are, on a 3 + 1 job with weights 1 and 3 and a global batch of 24 (ranks of 5, 4 and 4
samples on one node, 11 on the other), each node started by `hetlaunch exec`, DDP on gloo, float64.

  accelerate        with prepare_loader: every rank's samples of every step are its share of the
                    step's 24, every step is there (5 an epoch), and every step's gradient equals
                    the whole step's, computed here in one process (to 1e-12);
  accelerate-prepare  accelerate's own prepare(loader) of a share loader fails with a message that
                    names prepare_loader; the same loader without the guard shows what it did
                    before: fewer steps, and a gradient far from the whole step's (measured);
  accelerate-rebalance  the same with prepare_loader(..., rebalance_every=2), on "GPUs" of known
                    speeds (tests/shares/slowed.py: node 1's worker 4 times node 0's, where the
                    weights say 3): the split moves to a shorter step at the true speeds, each
                    step's shares tile it and its gradient is the whole step's;
  trainer-mse       ShareTrainer on a model whose loss is a mean over samples: after 6 steps the
                    parameters equal one process's run over every step's whole batch (to 1e-9);
  trainer-resume    ShareTrainer(..., rebalance_every=2) on the same speeds, saving every 3 steps
                    and ending after step 6: its parameters are one process's and its learned
                    weights the true ones within 25%; resumed from the checkpoint on 2 + 1 workers
                    with node 1 on another host, the last 2 steps end at one process's 8 steps,
                    from the rates learned;
  accelerate-resume  accelerate's save_state every 3 steps, ended after step 7, resumed from step 6
                    with load_state and skip_first_batches on 2 + 1 workers: every step once, the
                    parameters one process's before each step and at the end;
  trainer-lm        the same for a tiny Llama built from a config, on sequences of different
                    lengths (a token mean); scaling by the share's sample counts instead would not
                    be exact there (measured, and it must differ);
  accelerate-rebalance-workers  the same through a DataLoader whose workers read 4 steps ahead of a
                    sampler that rebalances every 2: each step's gradient is still the whole step's;
  accelerate-ceiling(-accumulate)  ceilings of 2 and 4 samples (--max-batch): no forward above them,
                    every gradient the whole step's, with and without accelerator.accumulate;
  trainer-mse-ceiling, trainer-lm-ceiling  ShareTrainer under the same ceilings: the same parameters;
  trainer-mse-rebalance-workers  ShareTrainer rebalancing with dataloader_num_workers=2: the same
                    parameters as one process;
  trainer-refusals  TrainingArguments that ShareTrainer cannot honour are errors naming them, and a
                    share whose world is not the Trainer's, or the Accelerator's, is refused (one
                    process, no job).

Needs torch, accelerate and transformers (the sid chroot has them). Nothing it starts outlives
it: the agents carry a marker in their environment and are killed at the end.

usage: scripts_test.py HETLAUNCH [--torchrun PATH] [CASE...]
"""
import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "support"))
sys.path.insert(0, str(ROOT / "python"))
import processes  # noqa: E402
import torchrun_flags  # noqa: E402
from harness import Suite, pick  # noqa: E402

MARKER_NAME = "HETLAUNCH_SCRIPTS_TEST"
FLAGS = ["--hosts", "127.0.0.1:3,127.0.0.2:1", "--weight", "127.0.0.2=3", "--global-batch", "24"]
GLOBAL_BATCH, WORLD = 24, 4


def example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



class Job:
    def __init__(self, binary, torchrun, marker):
        self.binary, self.torchrun, self.marker = binary, torchrun, marker

    def run(self, work, script, *args, seconds_per_sample=None, flags=(), hosts=None):
        """Every node of the job, each started by `hetlaunch exec`; their statuses and logs. With
        seconds_per_sample (one a node), each node's Linear forwards sleep that long a sample.
        `hosts`: the nodes' --hosts instead of FLAGS' two (no --weight: the plan's equal split)."""
        port = processes.free_port()
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS" and not k.startswith("PET_")}
        env[self.marker.name] = self.marker.value
        program = [str(ROOT / "examples" / script)]
        if seconds_per_sample:
            env["HETLAUNCH_TEST_SECONDS_PER_SAMPLE"] = ",".join(str(t) for t in seconds_per_sample)
            program.insert(0, str(HERE / "slowed.py"))
        topology = FLAGS if hosts is None else ["--hosts", hosts, "--global-batch", str(GLOBAL_BATCH)]
        agents = []
        nodes = len(topology[1].split(","))
        for node in range(nodes):
            log = open(work / f"agent-{node}.log", "w")
            agents.append(subprocess.Popen(
                [self.binary, "exec", "--node", str(node), *topology, *flags, "--master-port", port,
                 *torchrun_flags.torchrun(self.torchrun), "--", *program, *args],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=work))
        codes = []
        for a in agents:
            try:
                codes.append(a.wait(timeout=300))
            except subprocess.TimeoutExpired:
                os.killpg(a.pid, signal.SIGKILL)
                codes.append("timeout")
        return codes, "".join((work / f"agent-{n}.log").read_text(errors="replace") for n in range(nodes))


def whole_steps(dataset_size, seed=0, drop_last=True, epochs=1):
    """Every step's sample indices over the whole job, from the sampling rule."""
    import hetlaunch_shares as shares

    sampler = shares.ShareBatchSampler(dataset_size, shares.Share(GLOBAL_BATCH, 1, GLOBAL_BATCH, 0), seed=seed,
                                       drop_last=drop_last)
    steps = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        steps += [list(idx) for idx in sampler]
    return steps


def records(work):
    return [json.loads((work / f"rank-{r}.json").read_text()) for r in range(WORLD)]


def flat(values):
    return [v for part in values for v in part]


def samples_once(kept, steps, key_of):
    """Problems unless, for every step k of the final model, the samples its ranks trained
    (kept[k]: their first features, from every rank, in any order) are one process's batch
    steps[k], each once."""
    problems = []
    for k, want in enumerate(steps):
        got = sorted(key_of.get(v, -1) for v in kept.get(k, []))
        if got != sorted(want):
            problems.append(f"step {k + 1}: the ranks trained samples {got}, one process {sorted(want)}")
    return problems


def accelerate_gradient(module, params, indices):
    """The gradient of the whole step's mean loss at `params`, in one process."""
    import torch

    x, y = module.data()
    model = module.make_model()
    with torch.no_grad():
        for p, values in zip(model.parameters(), params):
            p.copy_(torch.tensor(values, dtype=torch.float64).reshape(p.shape))
    torch.nn.functional.mse_loss(model(x[indices]), y[indices]).backward()
    return flat(p.grad.reshape(-1).tolist() for p in model.parameters())


# "GPUs" of known speeds for the rebalancing cases: node 1's worker is 4 times as fast as each of
# node 0's three, where the job's weights (1 and 3) say 3. Sleeps long beside the tiny models'
# compute, short beside the test's time.
SECONDS_PER_SAMPLE = (0.008, 0.002)
TRUE_RATIO = SECONDS_PER_SAMPLE[0] / SECONDS_PER_SAMPLE[1]


# Ceilings of 2 samples on node 0's ranks (shares of 5 and 4) and 4 on node 1's (11).
CEILINGS = ["--max-batch", "127.0.0.1=2", "--max-batch", "127.0.0.2=4"]


def case_accelerate(job, work, rebalance_every=0, extra=(), flags=(), judge_split=True):
    """prepare_loader: each rank's samples are its share, every step is there, and every step's
    gradient is the whole step's (to 1e-12)."""
    module = example("train_accelerate")
    codes, logs = job.run(work, "train_accelerate.py", "--epochs", "2", "--record", str(work),
                          "--rebalance-every", str(rebalance_every), *extra,
                          seconds_per_sample=SECONDS_PER_SAMPLE if rebalance_every else None, flags=flags)
    if codes != [0, 0]:
        return [f"the agents exited {codes}:\n{logs[-4000:]}"]
    problems = []
    x, _ = module.data()
    key_of = {x[i, 0].item(): i for i in range(module.SAMPLES)}
    steps = whole_steps(module.SAMPLES, epochs=2)
    ranks = records(work)
    for r in ranks:
        if r["steps_in_loader"] != module.SAMPLES // GLOBAL_BATCH or len(r["steps"]) != len(steps):
            problems.append(f"rank {r['rank']}: {r['steps_in_loader']} steps in the loader, {len(r['steps'])} run; "
                            f"the job has {len(steps)}")
    worst = 0.0
    for s, indices in enumerate(steps):
        taken = []
        for r in ranks:
            mine = [key_of[k] for k in r["steps"][s]["keys"]]
            batch, offset = r["steps"][s]["batch"], r["steps"][s]["offset"]  # the share of this step
            want = indices[offset:offset + batch]
            if mine != want:
                problems.append(f"step {s}: rank {r['rank']} took {mine}, its share is {want}")
            taken += mine
        if sorted(taken) != sorted(indices):
            problems.append(f"step {s}: the ranks took {sorted(taken)}, the step is {sorted(indices)}")
        whole = accelerate_gradient(module, ranks[0]["steps"][s]["params"], indices)
        for r in ranks:
            worst = max(worst, max(abs(a - b) for a, b in zip(flat(r["steps"][s]["grad"]), whole)))
    if worst > 1e-12:
        problems.append(f"a rank's gradient is off the whole step's by {worst:.3g}")
    splits = sorted({tuple(r["steps"][s]["batch"] for r in ranks) for s in range(len(steps))})
    moved = ""
    if rebalance_every:
        # The weights start node 1's worker (rank 3) at 11 of the 24 samples, and each of node 0's
        # at 5 or 4: the step waits for a rank of 5 at 8 ms a sample. At the true speeds whole
        # samples allow no better than 4 a rank on node 0 (the ideal, 24 over the summed rates,
        # is 27 ms). Timing to the end of backward() would never move the split.
        def step_ms(s):
            return max(r["steps"][s]["batch"] * SECONDS_PER_SAMPLE[0 if r["rank"] < 3 else 1] for r in ranks) * 1000
        first, last = step_ms(0), step_ms(len(steps) - 1)
        moved = f"; at the true speeds a step of the first split takes {first:.0f} ms, of the last {last:.0f} ms"
        if judge_split and (last >= first or ranks[3]["steps"][-1]["batch"] <= 11):
            problems.append(f"the split did not follow the true speeds: the last step's shares "
                            f"{[r['steps'][-1]['batch'] for r in ranks]} take {last:.0f} ms, the first's {first:.0f} ms")
    if flags == CEILINGS:
        largest = [r["largest_forward"] for r in ranks]
        moved += f"; the largest forward of each rank {largest}"
        if largest != [2, 2, 2, 4]:
            problems.append(f"the ranks' largest forwards were {largest}, not the ceilings [2, 2, 2, 4]")
    print(f"     accelerate + prepare_loader{f' (rebalance_every={rebalance_every})' if rebalance_every else ''} "
          f"{' '.join(list(extra) + list(flags))}: {len(steps)} steps, ranks of {splits} samples; gradients off the whole step's "
          f"by at most {worst:.2g}" + moved)
    return problems


def accelerate_trajectory(module, steps):
    """One process's parameters before each of the whole steps, and after the last (SGD, lr 0.1)."""
    import torch

    x, y = module.data()
    model = module.make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for indices in steps:
        out.append(flat(p.detach().reshape(-1).tolist() for p in model.parameters()))
        torch.nn.functional.mse_loss(model(x[indices]), y[indices]).backward()
        optimizer.step()
        optimizer.zero_grad()
    return out + [flat(p.detach().reshape(-1).tolist() for p in model.parameters())]


def case_accelerate_resume(job, work):
    """The accelerate recipe of the docs with checkpoints: the loader registered for
    checkpointing, accelerator.save_state every 3 steps on three nodes (2 + 1 + 1 workers of
    different speeds) while the sampler learns the rates, and the job ends after step 7 (trained,
    never saved). It resumes from step 6 with load_state, set_epoch and skip_first_batches on two
    nodes (2 + 1 workers), node 1 on a host the first job did not have (a spare): the steps trained
    after the resume are steps 7 to 10 of the job, each rank's share of each, and the parameters
    before each and at the end are one process's (to 1e-12); each step's samples, the first job's up
    to the checkpoint and the resumed job's after, are one process's, each once. The resumed sampler
    starts from the rates learned, by host."""
    module = example("train_accelerate")
    ckpt, first = work / "ckpt", work / "first"
    first.mkdir()
    codes, logs = job.run(work, "train_accelerate.py", "--epochs", "2", "--checkpoint-dir", str(ckpt),
                          "--save-every", "3", "--stop-after", "7", "--rebalance-every", "2", "--record", str(first),
                          seconds_per_sample=(0.008, 0.002, 0.004), hosts="127.0.0.1:2,127.0.0.2:1,127.0.0.4:1")
    if codes != [0, 0, 0]:
        return [f"the first job's agents exited {codes}:\n{logs[-4000:]}"]
    problems = [f"no checkpoint line of step {s}" for s in (3, 6) if f'HETLAUNCH_CHECKPOINT {{"step": {s}}}' not in logs]
    codes, logs = job.run(work, "train_accelerate.py", "--epochs", "2", "--checkpoint-dir", str(ckpt), "--resume",
                          "--record", str(work), hosts="127.0.0.1:2,127.0.0.3:1")
    if codes != [0, 0]:
        return problems + [f"the resumed job's agents exited {codes}:\n{logs[-4000:]}"]
    x, _ = module.data()
    key_of = {x[i, 0].item(): i for i in range(module.SAMPLES)}
    steps = whole_steps(module.SAMPLES, epochs=2)
    trajectory = accelerate_trajectory(module, steps)
    per_epoch = module.SAMPLES // GLOBAL_BATCH
    ranks = [json.loads((work / f"rank-{r}.json").read_text()) for r in range(3)]
    worst = 0.0
    for r in ranks:
        done = [(s["epoch"], s["step"]) for s in r["steps"]]
        if done != [(k // per_epoch, k % per_epoch) for k in range(6, len(steps))]:
            problems.append(f"rank {r['rank']} trained steps {done} after the resume, not steps 7 to {len(steps)}")
            continue
        for s in r["steps"]:
            k = s["epoch"] * per_epoch + s["step"]
            mine = [key_of[v] for v in s["keys"]]
            if mine != steps[k][s["offset"]:s["offset"] + s["batch"]]:
                problems.append(f"step {k + 1}: rank {r['rank']} took {mine}")
            worst = max(worst, max(abs(a - b) for a, b in zip(flat(s["params"]), trajectory[k])))
        worst = max(worst, max(abs(a - b) for a, b in zip(flat(r["params"]), trajectory[-1])))
    # The final model: the first job's steps 1 to 6 (the checkpoint of step 6), then the resumed job's.
    kept = {}
    for r, ran_from, ran_to in [*[(x, 0, 6) for x in records(first)], *[(x, 6, len(steps)) for x in ranks]]:
        for s in r["steps"]:
            k = s["epoch"] * per_epoch + s["step"]
            if ran_from <= k < ran_to:
                kept.setdefault(k, []).extend(s["keys"])
    problems += samples_once(kept, steps, key_of)
    rates = ranks[0].get("rates") or {}
    if sorted(rates) != ["127.0.0.1", "127.0.0.2", "127.0.0.4"]:
        problems.append(f"the resumed sampler's rates {rates} are not the first job's, by host")
    print(f"     accelerate checkpointed on 2 + 1 + 1 workers, resumed after step 7 of {len(steps)} from the checkpoint "
          f"of step 6 on 2 + 1 workers, node 1 on a spare: the parameters before each step and at the end are off one process's by {worst:.2g}; "
          f"rates loaded {rates}; each step's samples one process's, each trained once")
    if worst > 1e-12:
        problems.append(f"the parameters are off one process's by {worst:.3g}")
    return problems


def case_accelerate_rebalance_workers(job, work):
    """The recipe of the docs with a DataLoader whose 2 workers read 4 steps ahead of a sampler
    that rebalances every 2: each step's gradient is still the whole step's (loader.loss_scale is
    the share the step was cut with)."""
    # The loader's 8 worker processes share the machine's cores with the ranks they feed, node 0's
    # three ranks more of them: the speeds measured are not the sleeps' alone, so only the
    # gradients are judged here (tests/shares/rebalance_test.py judges the split behind a reading
    # loader, with the sleeps far above the workers' share of the cores).
    return case_accelerate(job, work, rebalance_every=2, extra=("--loader-workers", "2"), judge_split=False)


def case_accelerate_ceiling(job, work):
    """Node ceilings: no forward holds more than the node's max_batch, and each step's gradient is
    the whole step's (the loader yields micro-batches and keeps the optimizer to the last)."""
    return case_accelerate(job, work, flags=CEILINGS)


def case_accelerate_ceiling_accumulate(job, work):
    """The same inside accelerator.accumulate(model), which decides when to synchronise."""
    return case_accelerate(job, work, extra=("--accumulate",), flags=CEILINGS)


def case_accelerate_rebalance(job, work):
    """prepare_loader(..., rebalance_every=2): whatever splits the measurements lead to, each step's
    shares tile it and every gradient is the whole step's."""
    return case_accelerate(job, work, rebalance_every=2)


def case_accelerate_prepare(job, work):
    """accelerate's own prepare(loader) is refused, naming prepare_loader; without the guard it
    re-shards (measured)."""
    module = example("train_accelerate")
    problems = []
    refused = work / "refused"
    refused.mkdir()
    codes, logs = job.run(refused, "train_accelerate.py", "--standard-prepare", "--record", str(refused))
    if 0 in codes or "hetlaunch_shares.prepare_loader(accelerator, loader)" not in logs or \
            "ShareLoaderError" not in logs:
        problems.append(f"the standard prepare: the agents exited {codes}, expected a ShareLoaderError naming "
                        f"prepare_loader:\n{logs[-3000:]}")
    unguarded = work / "unguarded"
    unguarded.mkdir()
    codes, logs = job.run(unguarded, "train_accelerate.py", "--standard-prepare", "--unguarded", "--record",
                          str(unguarded))
    if codes != [0, 0]:
        return problems + [f"the unguarded run: the agents exited {codes}:\n{logs[-3000:]}"]
    ranks = records(unguarded)
    steps = whole_steps(module.SAMPLES)
    first = ranks[0]["steps"][0]
    whole = accelerate_gradient(module, first["params"], steps[0])
    off = max(abs(a - b) for a, b in zip(flat(first["grad"]), whole))
    lengths = [r["steps_in_loader"] for r in ranks]
    print(f"     accelerate's prepare(loader) without the guard: {lengths} steps in each rank's loader (the job has "
          f"{len(steps)}); the first step's gradient off the whole step's by {off:.3g}")
    if off < 1e-3 or lengths == [len(steps)] * WORLD:
        problems.append(f"without the guard accelerate kept the shares ({lengths} steps, off by {off:.3g}): the "
                        "test cannot tell")
    return problems


def trainer_reference(kind, steps):
    """One process trained on every step's whole batch: the parameters after `steps` steps, and
    (for the language model) how far the first step's gradient would be off if each rank's token
    mean were weighted by its share of the samples instead."""
    import torch

    module = example("train_trainer")
    model, data, collate = module.build(kind)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    # The Trainer's defaults: seed 0, no data_seed, dataloader_drop_last False.
    order = whole_steps(len(data), seed=0, drop_last=False, epochs=steps)[:steps]
    off = None
    for s, indices in enumerate(order):
        loss = model(**collate([data[i] for i in indices]))["loss"]
        loss.backward()
        if s == 0 and kind == "lm":
            whole = [p.grad.clone() for p in model.parameters()]
            mixed = [torch.zeros_like(p) for p in model.parameters()]
            plan = [(5, 0), (4, 5), (4, 9), (11, 13)]  # the ranks' (batch, offset) of B=24 over 3 + 1, weights 1, 3
            for batch, offset in plan:
                model.zero_grad()
                (model(**collate([data[i] for i in indices[offset:offset + batch]]))["loss"] * batch /
                 GLOBAL_BATCH).backward()
                for m, p in zip(mixed, model.parameters()):
                    m += p.grad
            off = max((a - b).abs().max().item() for a, b in zip(whole, mixed))
            model.zero_grad()
            for p, g in zip(model.parameters(), whole):
                p.grad = g
        optimizer.step()
        optimizer.zero_grad()
    return module.parameters(model), off


def trainer_case(kind, rebalance_every=0, extra=(), flags=(), judge_weights=True):
    def case(job, work):
        steps = 6
        codes, logs = job.run(work, "train_trainer.py", "--model", kind, "--steps", str(steps), "--record", str(work),
                              "--rebalance-every", str(rebalance_every), *extra,
                              seconds_per_sample=SECONDS_PER_SAMPLE if rebalance_every else None, flags=flags)
        if codes != [0, 0]:
            return [f"the agents exited {codes}:\n{logs[-4000:]}"]
        got = json.loads((work / "final.json").read_text())["params"]
        want, sample_weighted_off = trainer_reference(kind, steps)
        worst = max(abs(a - b) for a, b in zip(flat(got), flat(want)))
        what = "a token mean" if kind == "lm" else "a sample mean"
        problems = []
        if rebalance_every:
            final = json.loads((work / "final.json").read_text())
            weights = final["weights"]
            ratio = float(weights[1]) / float(weights[0]) if weights else None
            what += f", rebalance_every={rebalance_every} ({final['changes']} split changes, learned weights " \
                    f"{weights}, true ratio {TRUE_RATIO:g})"
            if judge_weights and (ratio is None or abs(ratio / TRUE_RATIO - 1) > 0.25):
                problems.append(f"the learned weights {weights} are not the true speeds ({TRUE_RATIO:g}) within 25%")
        what += f" {' '.join(extra)}" if extra else ""
        print(f"     ShareTrainer, {what}: after {steps} steps the parameters are off one process's by {worst:.2g}"
              + ("" if sample_weighted_off is None else
                 f"; weighting each rank's token mean by its samples would put the first gradient off by "
                 f"{sample_weighted_off:.3g}"))
        if worst > 1e-9:
            problems.append(f"the parameters are off one process's run by {worst:.3g}")
        largest = json.loads((work / "final.json").read_text()).get("largest_forward")
        if flags == CEILINGS:
            what += f", ceilings: the ranks' largest forwards {largest}"
            if largest != [2, 2, 2, 4]:
                problems.append(f"the ranks' largest forwards were {largest}, not the ceilings [2, 2, 2, 4]")
        if sample_weighted_off is not None and sample_weighted_off < 1e-6:
            problems.append(f"the sample-weighted token means equal the token mean ({sample_weighted_off:.3g}): the "
                            "sequences do not tell the two apart")
        return problems
    return case


def case_trainer_resume(job, work):
    """ShareTrainer with rebalance_every=2 checkpoints every 3 steps on 3 + 1 workers whose speeds
    differ, and the job ends after step 6, in the middle of the second epoch: its parameters are
    one process's 6 steps, and the weights it learned are the true speeds within 25%. It resumes
    with resume_from_checkpoint on another topology: 2 + 1 workers, node 1 on another host (a
    spare). Steps 7 and 8 are the rest of that epoch: the parameters equal one process's 8 steps,
    each step's samples (the ranks' records of both jobs) are one process's, each once, and the
    resumed sampler starts from the rates learned, by host."""
    ckpt = work / "ckpt"
    codes, logs = job.run(work, "train_trainer.py", "--model", "mse", "--steps", "8", "--checkpoint-dir", str(ckpt),
                          "--save-steps", "3", "--stop-after", "6", "--rebalance-every", "2", "--record", str(work),
                          seconds_per_sample=SECONDS_PER_SAMPLE)
    if codes != [0, 0]:
        return [f"the first job's agents exited {codes}:\n{logs[-4000:]}"]
    problems = []
    first = json.loads((work / "final.json").read_text())
    want, _ = trainer_reference("mse", 6)
    worst = max(abs(a - b) for a, b in zip(flat(first["params"]), flat(want)))
    weights = first["weights"]
    ratio = float(weights[1]) / float(weights[0]) if weights else None
    print(f"     ShareTrainer, a sample mean, rebalance_every=2 ({first['changes']} split changes, learned weights "
          f"{weights}, true ratio {TRUE_RATIO:g}): after 6 steps the parameters are off one process's by {worst:.2g}")
    if worst > 1e-9:
        problems.append(f"after 6 steps the parameters are off one process's by {worst:.3g}")
    if ratio is None or abs(ratio / TRUE_RATIO - 1) > 0.25:
        problems.append(f"the learned weights {weights} are not the true speeds ({TRUE_RATIO:g}) within 25%")
    for step in (3, 6):
        if f'HETLAUNCH_CHECKPOINT {{"step": {step}}}' not in logs:
            problems.append(f"no checkpoint line of step {step} in the first job's output")
    state_file = ckpt / "checkpoint-6" / "hetlaunch_sampler.json"
    saved = json.loads(state_file.read_text()) if state_file.exists() else {}
    if sorted(saved.get("rates") or {}) != ["127.0.0.1", "127.0.0.2"]:
        return problems + [f"checkpoint-6 holds no rates of both hosts: {saved}"]
    codes, logs = job.run(work, "train_trainer.py", "--model", "mse", "--steps", "8", "--checkpoint-dir", str(ckpt),
                          "--resume", "--record", str(work), hosts="127.0.0.1:2,127.0.0.3:1")
    if codes != [0, 0]:
        return problems + [f"the resumed job's agents exited {codes}:\n{logs[-4000:]}"]
    final = json.loads((work / "final.json").read_text())
    want, _ = trainer_reference("mse", 8)
    worst = max(abs(a - b) for a, b in zip(flat(final["params"]), flat(want)))
    print(f"     ShareTrainer resumed after step 6 of 8 on 2 + 1 workers, node 1 on a spare: the parameters are off "
          f"one process's by {worst:.2g}; learned rates {saved['rates']}, resumed weights {final['weights']}")
    if worst > 1e-9:
        problems.append(f"the parameters are off one process's 8 steps by {worst:.3g}")
    if final["rates"] != saved["rates"] or not final["weights"]:
        problems.append(f"the resumed sampler has rates {final['rates']} and weights {final['weights']}, "
                        f"not the checkpoint's rates {saved['rates']}")
    # The final model: the first job's steps 1 to 6 (checkpoint-6), then the resumed job's 7 and 8.
    data = example("train_trainer").regression_data()
    key_of = {data[i]["x"][0].item(): i for i in range(len(data))}
    kept = {}
    for ranks, ran_from, ran_to in [(first["steps"], 0, 6), (final["steps"], 6, 8)]:
        for step, keys in [t for rank in ranks for t in rank]:
            if ran_from <= step < ran_to:
                kept.setdefault(step, []).extend(keys)
    once = samples_once(kept, whole_steps(len(data), seed=0, drop_last=False, epochs=8)[:8], key_of)
    if not once:
        print("     each of the 8 steps' samples one process's, each trained once")
    return problems + once


def case_trainer_refusals(job, work):
    """Each TrainingArguments value ShareTrainer cannot honour is an error that names it."""
    import hetlaunch_shares as shares
    from transformers import TrainingArguments

    module = example("train_trainer")
    model, data, collate = module.build("mse")
    problems = []
    for kwargs, says in (({"gradient_accumulation_steps": 2}, "gradient_accumulation_steps=2"),
                         ({"auto_find_batch_size": True}, "auto_find_batch_size=True"),
                         ({"train_sampling_strategy": "group_by_length"}, "train_sampling_strategy='group_by_length'")):
        args = TrainingArguments(output_dir=str(work), use_cpu=True, report_to=[], **kwargs)
        try:
            shares.ShareTrainer(model=model, args=args, train_dataset=data, data_collator=collate,
                                share=shares.Share(8, 1, 8, 0))
            problems.append(f"{kwargs} was accepted")
        except ValueError as e:
            if says not in str(e) or "ShareTrainer cannot honour" not in str(e):
                problems.append(f"{kwargs}: {e}")
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    accelerator = Accelerator(cpu=True)  # a world of one, as Accelerator() on CPUs with MPI gives each rank
    loader = DataLoader(data, batch_sampler=shares.ShareBatchSampler(len(data), shares.Share(8, 2, 4, 0)))
    try:
        shares.prepare_loader(accelerator, loader)
        problems.append("prepare_loader accepted a share of a world of 2 in an Accelerator of one process")
    except ValueError as e:
        if "the Accelerator has 1 processes but the work share's world has 2" not in str(e):
            problems.append(f"prepare_loader with a share of another world: {e}")
    args = TrainingArguments(output_dir=str(work), use_cpu=True, report_to=[])
    try:
        shares.ShareTrainer(model=model, args=args, train_dataset=data, data_collator=collate,
                            share=shares.Share(8, 2, 4, 0))
        problems.append("a share of a world of 2 was accepted by a Trainer of one process")
    except ValueError as e:
        if "the Trainer's world size is 1 but the work share's is 2" not in str(e):
            problems.append(f"a share of another world: {e}")
    return problems


CASES = {"accelerate": case_accelerate, "accelerate-prepare": case_accelerate_prepare,
         "accelerate-resume": case_accelerate_resume,
         "accelerate-rebalance": case_accelerate_rebalance,
         "accelerate-rebalance-workers": case_accelerate_rebalance_workers,
         "accelerate-ceiling": case_accelerate_ceiling, "accelerate-ceiling-accumulate": case_accelerate_ceiling_accumulate,
         "trainer-mse-ceiling": trainer_case("mse", flags=CEILINGS), "trainer-lm-ceiling": trainer_case("lm", flags=CEILINGS),
         # As accelerate-rebalance-workers: the parameters are judged, the learned weights shown.
         "trainer-mse-rebalance-workers": trainer_case("mse", rebalance_every=2, extra=("--loader-workers", "2"),
                                                       judge_weights=False),
         "trainer-mse": trainer_case("mse"), "trainer-lm": trainer_case("lm"),
         # trainer-resume's first job is the rebalancing Trainer's case: its weights are judged there.
         "trainer-resume": case_trainer_resume, "trainer-refusals": case_trainer_refusals}


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    torchrun = processes.torchrun_of(args)
    if "--torchrun" in args:
        del args[args.index("--torchrun"):args.index("--torchrun") + 2]
    binary = os.path.abspath(args[0])
    chosen = pick(CASES, args[1:])
    scratch = processes.scratch(MARKER_NAME, "hetlaunch-scripts-")
    marker, tmp = scratch.marker, scratch.work
    job = Job(binary, torchrun, marker)

    with Suite("scripts", scratch.teardown, scratch.leftovers) as run:
        for name in chosen:
            work = tmp / name
            work.mkdir()
            run.case(name, CASES[name], job, work)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
