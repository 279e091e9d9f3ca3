# SPDX-License-Identifier: MIT
"""Work shares for training scripts started by hetlaunch with --global-batch.

Each optimizer step covers the same B samples of one shuffled order, whatever the topology;
hetlaunch splits them over the nodes by weight and passes each node its part
(HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH, HETLAUNCH_NODE_BATCH_OFFSET). This package gives a
worker its own part, a batch sampler that reads exactly those samples, and ways to keep the
gradient the mean over all B samples although the ranks' batches differ.

A plain DDP loop:

    import hetlaunch_shares as shares
    share = shares.share_from_env()                      # this rank's batch and offset
    loader = DataLoader(data, batch_sampler=shares.ShareBatchSampler(len(data), share, seed=0))
    for epoch in range(epochs):
        loader.batch_sampler.set_epoch(epoch)
        for x, y in loader:
            loss = loss_fn(model(x), y) * share.loss_scale   # DDP then averages to the whole batch
            loss.backward(); opt.step(); opt.zero_grad()

or, instead of scaling the loss, `ddp.register_comm_hook(share, shares.weighted_allreduce_hook)`.

accelerate's Accelerator: prepare the model and optimizer with `accelerator.prepare`, the loader
with `shares.prepare_loader(accelerator, loader)` (accelerate's own prepare of a share loader
raises ShareLoaderError rather than re-shard it), and scale each batch's loss by
`loader.loss_scale` (the share its step was cut with; micro-batches under a ceiling each have
their own).

With a rebalancing sampler, read the scale at each step (`sampler.share.loss_scale`), never from
a Share kept from before training: a loader's workers read steps ahead, and each step keeps the
share it was cut with.

HF Trainer: `shares.ShareTrainer` in place of `transformers.Trainer` (imports transformers).

After each checkpoint that is complete on every rank, `shares.checkpoint_saved(step)`: rank 0
prints the line `hetlaunch run --grow-back` restarts at. Wrap the save in `with
shares.checkpointing():` so that `hetlaunch run --hang-timeout` judges it by --checkpoint-timeout;
a script without ShareBatchSampler calls `shares.heartbeat(step)` at each step's start.

The core depends on the standard library and torch; accelerate and transformers are imported only
by the parts that use them. Install with `pip install --no-build-isolation ./python`, or put the
`python/` folder on PYTHONPATH.
"""

from ._core import (RESHARD_REFUSED, Share, ShareLoaderError, micro_batches, rank_batch, share_from_env, split_batch,
                    weights_from_rates)
from ._sampler import NOTHING_TIMED, ShareBatchSampler, weighted_allreduce_hook
from ._accelerate import prepare_loader
from ._lines import checkpoint_saved
from ._progress import checkpointing, heartbeat

__all__ = ["Share", "rank_batch", "share_from_env", "ShareBatchSampler", "ShareLoaderError",
           "weighted_allreduce_hook", "prepare_loader", "ShareTrainer", "micro_batches", "split_batch",
           "weights_from_rates", "checkpoint_saved", "checkpointing", "heartbeat"]


def __getattr__(name):
    # ShareTrainer subclasses transformers.Trainer: transformers is imported when it is asked for.
    if name == "ShareTrainer":
        from ._trainer import ShareTrainer
        return ShareTrainer
    raise AttributeError(f"module 'hetlaunch_shares' has no attribute {name!r}")
