# SPDX-License-Identifier: MIT
"""A data-parallel training script that uses hetlaunch's work shares: each rank trains on its
share of every step's global batch, and the loss is scaled so that DDP's gradient is the mean
over the whole batch. Synthetic data, a small MLP, gloo: it runs on CPUs anywhere.

    hetlaunch run --hostfile hosts --global-batch 512 -- examples/train_shares.py --steps 200

with `weight=W` on the hostfile lines (W: each worker's samples per second, measured). It prints,
from rank 0, the job's samples per second over the steps after the first few, and with
--report FILE writes them as JSON. --rebalance-every K lets the sampler measure the ranks and
split again every K steps; `hetlaunch calibrate` runs it in the sampler's calibrate mode.

With --checkpoint-dir DIR (shared by the nodes) rank 0 saves the model and the sampler's state,
learned rates by host among it, every --every steps, and a job started again resumes there on
any topology (`hetlaunch run --restarts N --exclude-failed --grow-back`); --step-log FILE has
rank 0 append each step's time, the attempt and the weights.
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5, help="steps not timed")
    p.add_argument("--samples", type=int, default=65536, help="the data set's size")
    p.add_argument("--features", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hook", action="store_true", help="weight the gradients in a DDP comm hook instead")
    p.add_argument("--report", help="write rank 0's measurement here (JSON)")
    p.add_argument("--rebalance-every", type=int, default=0, metavar="K",
                   help="measure and split again every K steps (the sampler as the comm hook's state with --hook)")
    p.add_argument("--progress", help="rank 0 writes the steps done here after each step")
    p.add_argument("--checkpoint-dir", help="save and resume here (a directory every node shares)")
    p.add_argument("--every", type=int, default=4, help="steps between checkpoints")
    p.add_argument("--step-log", help="rank 0 appends {attempt, step, time, weights} here after each step")
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    share = shares.share_from_env()
    g = torch.Generator()
    g.manual_seed(1)
    x = torch.randn(args.samples, args.features, generator=g)
    y = torch.randn(args.samples, 1, generator=g)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(args.features, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 1))
    ddp = DDP(model)
    # With HETLAUNCH_CALIBRATE_STEPS (hetlaunch calibrate) the sampler measures and then stops.
    sampler = shares.ShareBatchSampler(args.samples, share, seed=args.seed, rebalance_every=args.rebalance_every)
    if args.hook:
        ddp.register_comm_hook(sampler, shares.weighted_allreduce_hook)
    else:
        sampler.watch(ddp)  # times each step to this rank's last gradient, before DDP waits for the others
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    step, epoch, started, step_times = 0, 0, None, []
    latest = pathlib.Path(args.checkpoint_dir) / "latest.pt" if args.checkpoint_dir else None
    if latest and latest.exists():
        state = torch.load(latest)
        model.load_state_dict(state["model"])
        sampler.load_state_dict(state["sampler"])  # the learned rates by host, the position
        step, epoch = state["step"], sampler.epoch
    resumed_epoch = epoch if latest and latest.exists() else None
    attempt = int(os.environ.get("HETLAUNCH_RESTART_COUNT", "0"))
    log = open(args.step_log, "a") if args.step_log and dist.get_rank() == 0 else None
    while step < args.warmup + args.steps:
        sampler.set_epoch(epoch)
        yielded = 0
        for idx in sampler:
            yielded += 1
            if started is None and step >= args.warmup:  # a resumed job times from its first step
                dist.barrier()
                started, timed_from = time.perf_counter(), step
            loss = torch.nn.functional.mse_loss(ddp(x[idx]), y[idx])
            if not args.hook:
                # DDP divides by the world size: scaled by the current share, the whole batch's mean.
                loss = loss * sampler.share.loss_scale
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            step_times.append(time.perf_counter())
            if log:
                log.write(json.dumps({"attempt": attempt, "step": step, "time": time.time(),
                                      "weights": sampler.weights}) + "\n")
                log.flush()
            if latest and step % args.every == 0:
                if dist.get_rank() == 0:
                    torch.save({"model": model.state_dict(), "sampler": sampler.state_dict(), "step": step},
                               latest.with_suffix(".tmp"))
                    os.replace(latest.with_suffix(".tmp"), latest)
                dist.barrier()
                shares.checkpoint_saved(step)
            if args.progress and dist.get_rank() == 0:
                pathlib.Path(args.progress).write_text(str(step))
            if step == args.warmup + args.steps:
                break
        # A calibrating sampler has stopped; a resumed epoch may have had no step left.
        if yielded == 0 and epoch != resumed_epoch:
            break
        epoch += 1
    dist.barrier()
    if started is None:  # calibrated before the timed steps: nothing to report
        dist.destroy_process_group()
        return 0
    seconds = time.perf_counter() - started
    timed = step - timed_from
    rate = timed * share.global_batch / seconds
    if dist.get_rank() == 0:
        print(f"{timed} steps of {share.global_batch} samples in {seconds:.2f} s: {rate:.0f} samples/s "
              f"(rank 0 took {share.batch} a step)", flush=True)
        if args.report:
            pathlib.Path(args.report).write_text(json.dumps({"seconds": seconds, "samples_per_second": rate,
                                                             "global_batch": share.global_batch,
                                                             "steps": timed, "world_size": share.world_size,
                                                             "step_times": step_times,
                                                             "changes": sampler.changes,
                                                             "weights": sampler.weights}))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
