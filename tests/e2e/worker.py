# SPDX-License-Identifier: MIT
# An end-to-end test worker. Started by torchrun (or by a launcher that spawns workers itself), it
#  1. optionally runs a check command (env_checker PLAN, or hetlaunch check-env ...), which
#     compares this worker's environment with the plan through hetlaunch::check_worker_env, and
#     stops with its exit status if they disagree;
#  2. records its whole environment in OUT_DIR/worker-RANK.environ (NAME=VALUE, NUL-terminated),
#     and the variables torchrun sets, CUDA_VISIBLE_DEVICES and the host name, in
#     OUT_DIR/worker-RANK.env;
#  3. joins one gloo all_reduce of RANK + 1 and records the sum.
# --crash-once: rank 0 fails torchrun's first attempt (TORCHELASTIC_RESTART_COUNT 0);
# --fail-first-attempt: rank 0 fails the job's first attempt (HETLAUNCH_RESTART_COUNT 0).
# usage: worker.py OUT_DIR [CHECK_COMMAND...] [--crash-once] [--fail-first-attempt]
import datetime
import os
import socket
import subprocess
import sys

KEYS = ["LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE", "WORLD_SIZE",
        "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
        "NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS"]


def main() -> int:
    out_dir = sys.argv[1]
    args = [a for a in sys.argv[2:] if a not in ("--crash-once", "--fail-first-attempt")]
    rank = os.environ.get("RANK", "unknown")
    # The whole environment as the worker got it, before anything here (torch's import) adds to it.
    with open(os.path.join(out_dir, f"worker-{rank}.environ.tmp"), "wb") as f:
        f.write(b"".join(k + b"=" + v + b"\0" for k, v in os.environb.items()))
    os.replace(os.path.join(out_dir, f"worker-{rank}.environ.tmp"), os.path.join(out_dir, f"worker-{rank}.environ"))
    if args:
        checked = subprocess.run(args, capture_output=True, text=True)
        with open(os.path.join(out_dir, f"check-{rank}.txt"), "w") as f:
            f.write(checked.stdout + checked.stderr)
        if checked.returncode != 0:
            sys.stderr.write(checked.stdout)
            return checked.returncode
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    if "--crash-once" in sys.argv and restart == "0" and rank == "0":
        return 7  # fail the first attempt; torchrun restarts the group
    if "--fail-first-attempt" in sys.argv and os.environ.get("HETLAUNCH_RESTART_COUNT") == "0" and rank == "0":
        return 7  # fail the job's first attempt; the launcher starts the whole job again
    import torch
    import torch.distributed as dist

    # After a crash, the workers of the other nodes only fail, and so get restarted by their
    # agents, when this times out: keep it short in the crashing attempt, and long in the restarted
    # one, whose workers must wait for the other nodes' restarts.
    failing = ("--crash-once" in sys.argv and restart == "0") or \
        ("--fail-first-attempt" in sys.argv and os.environ.get("HETLAUNCH_RESTART_COUNT") == "0")
    seconds = 15 if failing else 120
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=seconds))
    value = torch.tensor([float(int(rank) + 1)])
    dist.all_reduce(value)
    lines = [f"{k}={os.environ.get(k, '<unset>')}" for k in KEYS + ["CUDA_VISIBLE_DEVICES"]]
    lines.append(f"HOST={socket.gethostname()}")
    lines.append(f"SUM={int(value.item())}")
    path = os.path.join(out_dir, f"worker-{rank}.env")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
