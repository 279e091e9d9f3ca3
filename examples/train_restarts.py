# SPDX-License-Identifier: MIT
"""A data-parallel training script that survives gang restarts: it saves a checkpoint every few
steps and, when `hetlaunch run --restarts N` (or `sbatch --restarts`, or JobSet) starts it again,
resumes from the last one: the model and the sampler's position (`state_dict()`), which resumes
at the next step not trained on any topology. After each checkpoint it calls
`hetlaunch_shares.checkpoint_saved(step)`, the moment `run --grow-back` may restart the job to
let a host that left back in. With work shares and the loss scaled by the share, each step's
gradient is the mean over the same global batch whatever the nodes, so a restart on fewer nodes
(`--exclude-failed`) continues the same training. float64, synthetic data, gloo: it runs on CPUs.

    hetlaunch run --hostfile hosts --restarts 3 --exclude-failed --grow-back --global-batch 64 -- \\
        examples/train_restarts.py --checkpoint-dir /shared/ckpt --steps 200

The checkpoint directory must be shared by the nodes (rank 0 writes, every rank reads). With
--result FILE rank 0 writes the final parameters as JSON; with --positions DIR each rank writes
the samples of each step it trained (DIR/attempt-A-rank-R.jsonl: step, epoch, sample indices, the time of its update), to
show that each sample of an epoch is trained once in the final model. --fail-at STEP makes the worker of
GROUP_RANK --fail-node exit 1 at that step of the first attempt (HETLAUNCH_RESTART_COUNT 0), to
try a restart.
"""
import argparse
import datetime
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import hetlaunch_shares as shares  # noqa: E402

SAMPLES, FEATURES = 256, 6


def data():
    import torch

    g = torch.Generator()
    g.manual_seed(2024)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.linspace(-1, 1, FEATURES, dtype=torch.float64).unsqueeze(1) + 0.1 * torch.randn(
        SAMPLES, 1, generator=g, dtype=torch.float64)
    return x, y


def model():
    import torch

    torch.manual_seed(5)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()


def train(share, steps, lr, checkpoint_dir, every, seed, on_step=None, reduce=None, writer=False, pace=0.0,
          trained=None, save_pause=0.0):
    """Trains from the last checkpoint; returns the parameters as a list. `reduce` wraps the
    model for DDP (None: one process over the whole batch); `writer` saves the checkpoints;
    `trained(step, epoch, indices)` is called after each step's update; `save_pause` seconds are
    added to the writer's first checkpoint (a slow save, to try --checkpoint-timeout). The
    sampler keeps the position: its state, saved with the model, resumes at the next step not
    trained, on any topology (a restart on fewer nodes, on a spare, or on a node grown back)."""
    import torch

    net = model()
    sampler = shares.ShareBatchSampler(SAMPLES, share, seed=seed)
    done = 0
    latest = pathlib.Path(checkpoint_dir) / "latest.pt" if checkpoint_dir else None
    if latest and latest.exists():
        state = torch.load(latest)
        net.load_state_dict(state["model"])
        sampler.load_state_dict(state["sampler"])
        done = state["step"]
    wrapped = reduce(net) if reduce else net
    if reduce:
        # Times each step to this rank's last gradient, and tells `run --hang-timeout` when a step
        # starts and when this rank's part of it is done.
        sampler.watch(wrapped)
    opt = torch.optim.SGD(wrapped.parameters(), lr=lr)
    x, y = data()
    epoch = sampler.epoch
    while done < steps:
        sampler.set_epoch(epoch)  # the loaded epoch keeps the loaded position
        for idx in sampler:
            if on_step:
                on_step(done)
            loss = torch.nn.functional.mse_loss(wrapped(x[idx]), y[idx]) * share.loss_scale
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if trained:
                trained(done, epoch, idx)
            done += 1
            if latest and done % every == 0:
                # Judged by `run --checkpoint-timeout`, not --hang-timeout, while it saves.
                with shares.checkpointing():
                    if writer:
                        tmp = latest.with_suffix(".tmp")
                        torch.save({"model": net.state_dict(), "sampler": sampler.state_dict(), "step": done}, tmp)
                        os.replace(tmp, latest)
                        if save_pause and done == every:
                            time.sleep(save_pause)
                    if reduce:
                        import torch.distributed as dist

                        dist.barrier()  # the checkpoint is complete before any rank goes on
                # `hetlaunch run --grow-back` may restart the job here to let a host back in.
                shares.checkpoint_saved(done)
            if pace:
                time.sleep(pace)
            if done == steps:
                break
        epoch += 1
    return [v for p in net.parameters() for v in p.detach().reshape(-1).tolist()]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--every", type=int, default=5, help="steps between checkpoints")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--result")
    p.add_argument("--positions", help="a directory for each rank's trained samples, a file an attempt")
    p.add_argument("--fail-at", type=int)
    p.add_argument("--fail-node", type=int, default=0)
    p.add_argument("--pace", type=float, default=0.0, help="seconds to wait after each step (to watch a restart)")
    p.add_argument("--save-pause", type=float, default=0.0,
                   help="seconds rank 0 adds to the first checkpoint of the first attempt (a slow save)")
    args = p.parse_args()

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    share = shares.share_from_env()
    attempt = os.environ.get("HETLAUNCH_RESTART_COUNT", "0")

    def fail_once(step):
        if (args.fail_at is not None and step == args.fail_at and attempt == "0"
                and int(os.environ["GROUP_RANK"]) == args.fail_node):
            print(f"rank {os.environ['RANK']}: failing at step {step} on purpose", flush=True)
            os._exit(1)

    rank = int(os.environ["RANK"])
    log = open(pathlib.Path(args.positions) / f"attempt-{attempt}-rank-{rank}.jsonl", "a") if args.positions else None

    def trained(step, epoch, indices):
        log.write(json.dumps({"step": step, "epoch": epoch, "indices": [int(i) for i in indices],
                              "time": time.time()}) + "\n")
        log.flush()

    params = train(share, args.steps, args.lr, args.checkpoint_dir, args.every, args.seed, fail_once, DDP,
                   writer=rank == 0, pace=args.pace, trained=trained if log else None,
                   save_pause=args.save_pause if attempt == "0" else 0.0)
    if rank == 0:
        print(f"attempt {attempt}: {args.steps} steps done on a world of {share.world_size}", flush=True)
        if args.result:
            pathlib.Path(args.result).write_text(json.dumps(params))
    dist.barrier()
    dist.destroy_process_group()
    # torch 1.13's gloo can hang in a destructor while the interpreter exits; nothing is left.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
