# SPDX-License-Identifier: MIT
# A data-parallel worker for the work-share tests, started by torchrun through `hetlaunch exec
# --global-batch`. On a fixed float64 data set and model it computes, for the first steps of
# epoch 0, the gradient DDP gives this rank in three ways: the mean loss scaled by the share
# (share.loss_scale), the mean loss unscaled (wrong on purpose), and the unscaled loss with
# hetlaunch_shares.weighted_allreduce_hook. No optimizer step: every step starts from the same
# parameters, so the test can compare each step with one full-batch gradient.
# usage: ddp_worker.py OUT_DIR STEPS [CHECK_COMMAND...]
import datetime
import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import hetlaunch_shares as shares  # noqa: E402

SAMPLES, FEATURES = 96, 5


def data():
    import torch

    g = torch.Generator()
    g.manual_seed(1234)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = torch.randn(SAMPLES, 1, generator=g, dtype=torch.float64)
    return x, y


def model():
    import torch

    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()


def main() -> int:
    out_dir, steps, check = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    rank = int(os.environ["RANK"])
    if check:
        checked = subprocess.run(check, capture_output=True, text=True)
        if checked.returncode != 0:
            sys.stderr.write(checked.stdout + checked.stderr)
            return checked.returncode
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    share = shares.share_from_env()
    sampler = shares.ShareBatchSampler(SAMPLES, share, seed=3)
    x, y = data()
    record = {"rank": rank, "batch": share.batch, "offset": share.offset, "indices": [], "grads": {}}
    for mode in ["scaled", "unscaled", "hook"]:
        ddp = DDP(model())
        if mode == "hook":
            ddp.register_comm_hook(share, shares.weighted_allreduce_hook)
        grads = []
        for step, idx in enumerate(sampler):
            if step == steps:
                break
            if mode == "scaled":
                record["indices"].append(idx)
            loss = torch.nn.functional.mse_loss(ddp(x[idx]), y[idx])
            if mode == "scaled":
                loss = loss * share.loss_scale
            loss.backward()
            grads.append(torch.cat([p.grad.reshape(-1) for p in ddp.parameters()]).tolist())
            ddp.zero_grad(set_to_none=True)
        record["grads"][mode] = grads
    path = pathlib.Path(out_dir) / f"rank-{rank}.json"
    path.with_suffix(".tmp").write_text(json.dumps(record))
    path.with_suffix(".tmp").replace(path)
    dist.barrier()  # no rank leaves while another still reduces
    dist.destroy_process_group()
    # torch 1.13's gloo can hang in a destructor while the interpreter exits (about one job in
    # ten on two cores, every rank's record already written); nothing is left to clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
