# SPDX-License-Identifier: MIT
"""Training with accelerate's Accelerator on nodes whose GPUs differ, with work shares.

Start every node with hetlaunch and a global batch; each rank then takes its share of every
step, and the loss scaled by the loader's loss_scale keeps every step's gradient the mean over the
whole step:

    hetlaunch exec --node I --hosts a100:3,t4:1 --weight t4=3 --global-batch 24 -- train_accelerate.py

The recipe, in a few lines:

    accelerator = Accelerator()
    share = shares.share_from_env()
    model, optimizer = accelerator.prepare(model, optimizer)          # not the loader
    loader = shares.prepare_loader(accelerator, DataLoader(data, batch_sampler=shares.ShareBatchSampler(len(data), share)))
    for x, y in loader:
        with accelerator.accumulate(model):                            # optional
            accelerator.backward(loss_fn(model(x), y) * loader.loss_scale)
            optimizer.step(); optimizer.zero_grad()

`loader.loss_scale` is the scale of the batch the loader yielded last, from the share its step
was cut with: a rebalancing sampler's new split, a DataLoader's workers reading ahead and a node's
ceiling (HETLAUNCH_MAX_BATCH: the loader yields a step in micro-batches of at most that many
samples, and the optimizer steps after the last) all keep it right. A Share kept from before
training would not be. accelerate's own prepare(loader) would deal the steps out round-robin: it
raises ShareLoaderError instead. Runs on CPUs (gloo); a float64 linear model on a fixed random
data set.

Checkpoints, as accelerate's examples keep them: the loader registered with
`accelerator.register_for_checkpointing(loader)` keeps the sampler's position and learned rates in
`accelerator.save_state(dir)`; after each save `shares.checkpoint_saved(step)` prints the line
`hetlaunch run --grow-back` restarts at. To resume, `accelerator.load_state(dir)`, then for the
resumed epoch `loader.set_epoch(epoch)` and `loader.skip_first_batches(k)` (k: the epoch's steps
trained; the loaded position says the same), on any topology:

    accelerator.register_for_checkpointing(loader)
    accelerator.load_state(last)                      # after a restart
    for epoch in range(done // len(loader), epochs):
        loader.set_epoch(epoch)
        if epoch == done // len(loader):
            loader.skip_first_batches(done % len(loader))
        for x, y in loader: ...                         # every few steps:
            accelerator.save_state(f"ckpt/step-{done}"); shares.checkpoint_saved(done)

usage: train_accelerate.py [--epochs N] [--record DIR] [--standard-prepare] [--unguarded] [--rebalance-every K]
                           [--loader-workers N] [--accumulate]
                           [--checkpoint-dir DIR [--save-every K] [--stop-after S] [--resume]]
  --record DIR        each rank writes DIR/rank-R.json: every step's sample indices, the
                      parameters before the step and the gradient after backward (the tests)
  --standard-prepare  prepare the loader with accelerator.prepare, as accelerate's examples do
  --unguarded         (with --standard-prepare) a sampler without the guard, to show what
                      accelerate does to a share loader
  --rebalance-every K the sampler measures the ranks and splits again every K steps
  --loader-workers N  the DataLoader's workers (they read 2N steps ahead of training)
  --accumulate        each batch inside accelerator.accumulate(model)
  --checkpoint-dir DIR  accelerator.save_state(DIR/step-N) every --save-every steps (default 3)
  --stop-after S      end after step S (as a job that fails there would end)
  --resume            continue from the last DIR/step-N
"""
import contextlib
import argparse
import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import hetlaunch_shares as shares  # noqa: E402

SAMPLES, FEATURES = 120, 6


def data():
    g = torch.Generator()
    g.manual_seed(1234)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.linspace(-1, 1, FEATURES, dtype=torch.float64).unsqueeze(1) + 0.1 * torch.randn(
        SAMPLES, 1, generator=g, dtype=torch.float64)
    return x, y


def make_model():
    torch.manual_seed(7)
    return torch.nn.Linear(FEATURES, 1).double()


class UnguardedSampler:
    """A ShareBatchSampler without its guard: what accelerate did to share loaders before it."""

    def __init__(self, inner):
        self.inner = inner

    def __iter__(self):
        return iter(self.inner)

    def __len__(self):
        return len(self.inner)

    def set_epoch(self, epoch):
        self.inner.set_epoch(epoch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--record")
    parser.add_argument("--standard-prepare", action="store_true")
    parser.add_argument("--unguarded", action="store_true")
    parser.add_argument("--rebalance-every", type=int, default=0)
    parser.add_argument("--loader-workers", type=int, default=0)
    parser.add_argument("--accumulate", action="store_true")
    parser.add_argument("--checkpoint-dir")
    parser.add_argument("--save-every", type=int, default=3)
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from accelerate import Accelerator

    cpu = not torch.cuda.is_available()
    # On CPUs, Debian's torch is built with MPI, and accelerate would then pick the mpi backend
    # under torchrun: every process a world of one. The gloo group first, then the Accelerator.
    if cpu and not dist.is_initialized():
        dist.init_process_group("gloo")
    accelerator = Accelerator(cpu=cpu)
    share = shares.share_from_env()
    x, y = data()
    sampler = shares.ShareBatchSampler(SAMPLES, share, seed=0)
    loader = DataLoader(TensorDataset(x, y), batch_sampler=UnguardedSampler(sampler) if args.unguarded else sampler,
                        num_workers=args.loader_workers)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if args.standard_prepare:
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    else:
        model, optimizer = accelerator.prepare(model, optimizer)
        loader = shares.prepare_loader(accelerator, loader, rebalance_every=args.rebalance_every)

    done = 0  # steps trained, over every attempt
    if args.checkpoint_dir:
        accelerator.register_for_checkpointing(loader)  # the sampler's position and learned rates
        saved = sorted(pathlib.Path(args.checkpoint_dir).glob("step-*"), key=lambda p: int(p.name[5:]))
        if args.resume and saved:
            accelerator.load_state(str(saved[-1]))
            done = int(saved[-1].name[5:])
    record = {"rank": dist.get_rank(), "batch": share.batch, "offset": share.offset, "steps_in_loader": len(loader),
              "steps": [], "largest_forward": 0}
    stop = False
    for epoch in range(done // len(loader), args.epochs):
        loader.set_epoch(epoch)
        step, keys, before = 0, [], None
        if epoch == done // len(loader) and done % len(loader):
            step = done % len(loader)
            loader = loader.skip_first_batches(step)  # accelerate's recipe; the loaded position agrees
        for xb, yb in loader:
            if before is None:  # a step's first batch (more than one under a ceiling)
                before = [p.detach().reshape(-1).tolist() for p in model.parameters()]
            record["largest_forward"] = max(record["largest_forward"], len(xb))
            with accelerator.accumulate(model) if args.accumulate else contextlib.nullcontext():
                loss = torch.nn.functional.mse_loss(model(xb), yb) * getattr(loader, "loss_scale", share.loss_scale)
                accelerator.backward(loss)
                # Each sample's first feature identifies it (the tests map them back to indices).
                keys += xb[:, 0].tolist()
                if accelerator.sync_gradients:  # the step's last batch: its gradient is whole
                    current = getattr(loader, "step_share", None) or share
                    record["steps"].append({"epoch": epoch, "step": step, "keys": keys, "params": before,
                                            "batch": current.batch, "offset": current.offset,
                                            "grad": [p.grad.reshape(-1).tolist() for p in model.parameters()]})
                    step, keys, before = step + 1, [], None
                finished = accelerator.sync_gradients
                optimizer.step()
                optimizer.zero_grad()
            if finished:
                done += 1
                if args.checkpoint_dir and done % args.save_every == 0:
                    accelerator.save_state(str(pathlib.Path(args.checkpoint_dir) / f"step-{done}"))
                    accelerator.wait_for_everyone()  # complete on every rank before it is said
                    shares.checkpoint_saved(done)
                if args.stop_after is not None and done >= args.stop_after:
                    stop = True
                    break
        accelerator.print(f"epoch {epoch}: {len(loader)} steps, loss {loss.item():.6f}"
                          + (f", {sampler.changes} split changes" if args.rebalance_every else ""))
        if stop:
            break
    record["params"] = [p.detach().reshape(-1).tolist() for p in model.parameters()]
    record["rates"] = sampler.rates
    if args.record:
        path = pathlib.Path(args.record) / f"rank-{record['rank']}.json"
        path.write_text(json.dumps(record))
    accelerator.wait_for_everyone()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
