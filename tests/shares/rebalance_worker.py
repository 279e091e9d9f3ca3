# SPDX-License-Identifier: MIT
# A data-parallel worker whose "GPU" has a known speed: each forward sleeps a fixed time per
# sample (by node, from the command line), so the ideal split is known. It trains a float64 model
# with DDP on gloo, the hetlaunch_shares sampler rebalancing every K steps and timing itself as
# the comm hook's state, each rank's share run in micro-batches of at most HETLAUNCH_MAX_BATCH.
# Rank 0 writes what happened: each step's wall time and split, the largest forward of any rank,
# the sampler's split changes, and the final parameters.
# usage: rebalance_worker.py OUT STEPS K SECONDS_PER_SAMPLE[,NODE1,...] [SLOW_AT NODE FACTOR]
#        (REBALANCE_STATE=FILE: the sampler starts from a state_dict, as after a restart)
#        (with HETLAUNCH_CALIBRATE_STEPS set: runs until the sampler stops)
#        (REBALANCE_LOADER_WORKERS=N: the steps come through a DataLoader with N workers, which
#        reads 2N steps ahead of training)
import contextlib
import faulthandler
import signal
import datetime
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import hetlaunch_shares as shares  # noqa: E402

SAMPLES, FEATURES, SEED, LR = 4800, 4, 11, 0.05


def data():
    import torch

    g = torch.Generator()
    g.manual_seed(99)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64) + 0.1 * torch.randn(
        SAMPLES, 1, generator=g, dtype=torch.float64)
    return x, y


def model():
    import torch

    torch.manual_seed(5)
    return torch.nn.Linear(FEATURES, 1).double()


def reference(global_batch, steps):
    """The same steps in one process over each step's whole batch: the parameters to compare."""
    import torch

    x, y = data()
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=LR)
    sampler = shares.ShareBatchSampler(SAMPLES, shares.Share(global_batch, 1, global_batch, 0), seed=SEED)
    for step, idx in enumerate(sampler):
        if step == steps:
            break
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x[idx]), y[idx]).backward()
        opt.step()
    return [v for p in m.parameters() for v in p.detach().flatten().tolist()]


class Indices:
    """A dataset of its own indices: the loader's workers fetch them, the script reads x and y."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        return i


def main() -> int:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung job shows where
    out, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    seconds = [float(s) for s in sys.argv[4].split(",")]
    slow_at, slow_node, slow_factor = (int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])) if len(sys.argv) > 7 \
        else (-1, -1, 1.0)
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    rank, node = dist.get_rank(), int(os.environ["GROUP_RANK"])
    share = shares.share_from_env()
    sampler = shares.ShareBatchSampler(SAMPLES, share, seed=SEED, rebalance_every=every)
    if os.environ.get("REBALANCE_STATE"):  # a checkpoint's sampler state: the learned weights
        sampler.load_state_dict(json.loads(pathlib.Path(os.environ["REBALANCE_STATE"]).read_text()))
    x, y = data()
    ddp = DDP(model())
    scale_loss = bool(os.environ.get("REBALANCE_SCALE_LOSS"))  # the loss scaled, the steps timed by watch()
    if scale_loss:
        sampler.watch(ddp)
    else:
        ddp.register_comm_hook(sampler, shares.weighted_allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    per_sample = seconds[node]
    record = {"step_seconds": [], "batches": [], "largest_forward": 0}
    last = time.perf_counter()
    workers = int(os.environ.get("REBALANCE_LOADER_WORKERS", "0"))
    steps_of = sampler
    if workers:
        loader = torch.utils.data.DataLoader(Indices(), batch_sampler=sampler, num_workers=workers, prefetch_factor=2)
        steps_of = (batch.tolist() for batch in loader)
    for step, idx in enumerate(steps_of):
        if step == steps:
            break
        if step == slow_at and node == slow_node:
            per_sample *= slow_factor
        opt.zero_grad()
        parts = shares.micro_batches(idx, sampler.share.max_batch)
        for k, part in enumerate(parts):
            record["largest_forward"] = max(record["largest_forward"], len(part))
            with (contextlib.nullcontext() if k == len(parts) - 1 else ddp.no_sync()):
                time.sleep(per_sample * len(part))  # this "GPU"'s speed
                loss = torch.nn.functional.mse_loss(ddp(x[part]), y[part]) * (len(part) / len(idx))
                if scale_loss:
                    loss = loss * sampler.share.loss_scale  # the current share's
                loss.backward()
        opt.step()
        batches = [None] * dist.get_world_size()
        dist.all_gather_object(batches, (node, len(idx)))
        now = time.perf_counter()
        record["step_seconds"].append(now - last)
        record["batches"].append(batches)
        last = now
    largest = [None] * dist.get_world_size()
    dist.all_gather_object(largest, record["largest_forward"])
    if rank == 0:
        record.update({"largest_forward": max(largest), "changes": sampler.changes, "steps": len(record["batches"]),
                       "state": sampler.state_dict(),
                       "params": [v for p in ddp.module.parameters() for v in p.detach().flatten().tolist()]})
        pathlib.Path(out + ".tmp").write_text(json.dumps(record))
        os.replace(out + ".tmp", out)
    dist.barrier()  # no rank leaves while another still reduces
    dist.destroy_process_group()
    # torch 1.13's gloo can hang in a destructor while the interpreter exits (ddp_worker.py says
    # more); every record is written, nothing is left to clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
