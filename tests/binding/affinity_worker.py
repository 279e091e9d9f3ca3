#!/usr/bin/env python3
"""A worker of a real torchrun job that records where it may run: it joins the job's process group
(gloo), sums its rank with the others, and writes OUT/rank-R.json with its variables and
sched_getaffinity. usage: affinity_worker.py OUT"""
import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank()])
dist.all_reduce(total)
record = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "CUDA_DEVICE_ORDER", "CUDA_VISIBLE_DEVICES")}
record["affinity"] = sorted(os.sched_getaffinity(0))
record["sum"] = int(total.item())
pathlib.Path(sys.argv[1], f"rank-{dist.get_rank()}.json").write_text(json.dumps(record))
dist.destroy_process_group()
