# SPDX-License-Identifier: MIT
"""HF Trainer with work shares: ShareTrainer (imports transformers)."""

import contextlib
import json
import os

import torch
from torch.utils.data import DataLoader
from transformers import Trainer

from ._accelerate import _share_loader_class, split_under_ceiling
from ._core import check_rebalance_every, share_from_env
from ._lines import checkpoint_saved
from ._sampler import ShareBatchSampler

# The sampler's state in each of the Trainer's checkpoint folders: its learned rates by host.
SAMPLER_STATE = "hetlaunch_sampler.json"


class ShareTrainer(Trainer):
    """A transformers.Trainer whose training loader yields this rank's share of every step (the
    steps of the work-share sampling rule, seeded by `args.data_seed`, else `args.seed`) and whose
    loss makes every step's gradient the whole step's:

    - a token loss (the model takes `num_items_in_batch`, as transformers' language models do, or
      a `compute_loss_func`): the Trainer sums the step's tokens over every rank
      (`average_tokens_across_devices`), so each rank's sum over its tokens, divided by that count,
      is already its part of the step's token mean;
    - any other loss (a mean over the rank's samples): scaled by the share's loss_scale, b·W/B.

    The share decides each rank's training batch; `per_device_train_batch_size` does not. A
    share above the node's ceiling (HETLAUNCH_MAX_BATCH, a hostfile's max_batch=) is trained as
    ceil(b/M) micro-batches of at most M samples, gradients synchronised on the last only: the
    step's gradient does not change. `share` defaults to share_from_env(). `rebalance_every=K` >
    0: the sampler measures each rank's steps and splits every K steps again
    (ShareBatchSampler's rebalance_every); each step's loss follows the share that step was cut
    with, also when the loader's workers read ahead. TrainingArguments values it cannot honour
    are errors that name them: gradient_accumulation_steps above 1 (the ceiling is how to save
    memory), auto_find_batch_size,
    train_sampling_strategy='group_by_length' (the step's samples are the sampler's), and
    average_tokens_across_devices=False with a token loss.

    Checkpoints: each of the Trainer's checkpoint folders also holds the sampler's state
    (hetlaunch_sampler.json: the rates learned by host), and after each one, complete on every
    rank, rank 0 prints the checkpoint line (checkpoint_saved) that `hetlaunch run --grow-back`
    restarts at. `train(resume_from_checkpoint=...)` resumes exactly where the checkpoint left,
    also in the middle of an epoch and on another topology (fewer nodes, a spare, more nodes),
    with the learned rates: the Trainer's skip of the epoch's trained steps is the sampler's."""

    def __init__(self, *args, share=None, rebalance_every=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.share = share if share is not None else share_from_env()
        self.rebalance_every = check_rebalance_every(rebalance_every)
        self.share_sampler = None  # the training loader's sampler, once made
        self._resume_dir = None  # the checkpoint train() resumes from
        self.share_loader = None  # the training loader, once made
        self._part_scale = None  # the part of the step's gradient the micro-batch being trained carries
        self._watch_handles = []
        a = self.args
        refused = []
        if a.gradient_accumulation_steps != 1:
            refused.append(f"gradient_accumulation_steps={a.gradient_accumulation_steps} (each step's share is "
                           "one batch; to hold fewer samples in one forward, give the node a ceiling, max_batch= in "
                           "the hostfile or --max-batch, and ShareTrainer trains the share in micro-batches)")
        if a.auto_find_batch_size:
            refused.append("auto_find_batch_size=True (the share decides each rank's batch)")
        if getattr(a, "train_sampling_strategy", "random") == "group_by_length":
            refused.append("train_sampling_strategy='group_by_length' (a step's samples are the work-share "
                           "sampler's, the same on every topology)")
        if getattr(a, "group_by_length", False):
            refused.append("group_by_length=True (a step's samples are the work-share sampler's)")
        if refused:
            raise ValueError("ShareTrainer cannot honour " + "; ".join(refused))
        if a.world_size != self.share.world_size:
            raise ValueError(f"ShareTrainer: the Trainer's world size is {a.world_size} but the work share's is "
                             f"{self.share.world_size} (WORLD_SIZE): start the job with hetlaunch")

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        resume = resume_from_checkpoint
        if resume is True:
            from transformers.trainer_utils import get_last_checkpoint

            resume = get_last_checkpoint(self.args.output_dir)
        self._resume_dir = resume if isinstance(resume, (str, os.PathLike)) else None
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _save_checkpoint(self, model, trial, *args, **kwargs):
        super()._save_checkpoint(model, trial, *args, **kwargs)
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        if self.share_sampler is not None and self.args.should_save and os.path.isdir(folder):
            with open(os.path.join(folder, SAMPLER_STATE), "w") as f:
                json.dump(self.share_sampler.state_dict(), f)
        self.accelerator.wait_for_everyone()  # complete on every rank before it is said
        checkpoint_saved(self.state.global_step)

    def _run_epoch(self, model, epoch, *args, **kwargs):
        # The Trainer skips a resumed epoch's trained steps with accelerate's skip_first_batches,
        # which would rebuild the share loader as a plain DataLoader: for it, the sampler starts
        # the epoch at that step instead.
        import transformers.trainer as trainer_module

        original = trainer_module.skip_first_batches

        def skip(loader, num_batches=0):
            if loader is not self.share_loader:
                return original(loader, num_batches)
            self.share_sampler.set_epoch(epoch)
            return loader.skip_first_batches(num_batches)
        trainer_module.skip_first_batches = skip
        try:
            return super()._run_epoch(model, epoch, *args, **kwargs)
        finally:
            trainer_module.skip_first_batches = original

    def _load_sampler_state(self, sampler):
        # The learned rates (and weights) of the checkpoint train() resumes from; the position is
        # the Trainer's own (its global step), so the checkpoint's is not taken.
        path = os.path.join(self._resume_dir, SAMPLER_STATE) if self._resume_dir else None
        if not path or not os.path.exists(path):
            return
        with open(path) as f:
            state = json.load(f)
        sampler.load_state_dict({k: v for k, v in state.items() if k not in ("epoch", "step")})

    def get_train_dataloader(self):
        if self.train_dataset is None:
            raise ValueError("Trainer: training requires a train_dataset.")
        dataset = self.train_dataset
        if isinstance(dataset, torch.utils.data.IterableDataset):
            raise ValueError("ShareTrainer needs a train_dataset with a length (a map-style dataset): an "
                             "IterableDataset has no shared order to split into steps")
        collator = self.data_collator
        try:
            import datasets

            if isinstance(dataset, datasets.Dataset):
                dataset = self._remove_unused_columns(dataset, description="training")
            else:
                collator = self._get_collator_with_removed_columns(collator, description="training")
        except ImportError:
            collator = self._get_collator_with_removed_columns(collator, description="training")
        seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
        sampler = ShareBatchSampler(len(dataset), self.share, seed=seed,
                                    shuffle=getattr(self.args, "train_sampling_strategy", "random") != "sequential",
                                    drop_last=self.args.dataloader_drop_last, rebalance_every=self.rebalance_every)
        for handle in self._watch_handles:  # a loader made again: only the new sampler times the steps
            handle.remove()
        self.share_sampler = sampler
        self._load_sampler_state(sampler)
        if sampler.rebalance_every:  # asked for, or hetlaunch calibrate's
            # Timed to the last gradient this rank computes: the end of DDP's backward() waits for
            # every rank's. The wrapped model holds the same parameters.
            self._watch_handles = sampler.watch(self.model)
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collator,
                            num_workers=self.args.dataloader_num_workers, pin_memory=self.args.dataloader_pin_memory)
        if self.accelerator.num_processes != self.share.world_size:
            raise ValueError(f"ShareTrainer: the Accelerator has {self.accelerator.num_processes} processes but the "
                             f"work share's world has {self.share.world_size} (WORLD_SIZE)")
        # Whole steps: training_step cuts a step under the ceiling itself, so that the Trainer's
        # own loop takes one optimizer step a sampler step.
        self.share_loader = _share_loader_class()(loader, self.accelerator, micro_batching=False)
        return self.share_loader

    def _step_share(self):
        # The share of the step being trained: the loader's, whose workers may read ahead.
        if self.share_loader is not None and self.share_loader.step_share is not None:
            return self.share_loader.step_share
        return self.share_sampler.share if self.share_sampler is not None else self.share

    def training_step(self, model, inputs, num_items_in_batch=None):
        share = self._step_share()
        parts = split_under_ceiling(inputs, share)
        if len(parts) == 1:
            self._part_scale = parts[0][1] * share.world_size / share.global_batch
            return super().training_step(model, inputs, num_items_in_batch)
        total = None
        for j, (part, samples) in enumerate(parts):
            self._part_scale = samples * share.world_size / share.global_batch
            held = self.accelerator.no_sync(model) if j < len(parts) - 1 else contextlib.nullcontext()
            with held:
                loss = super().training_step(model, part, num_items_in_batch)
            total = loss if total is None else total + loss
        return total

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        token_loss = (self.model_accepts_loss_kwargs or self.compute_loss_func is not None) and \
            num_items_in_batch is not None
        if token_loss and not self.args.average_tokens_across_devices:
            raise ValueError("ShareTrainer cannot honour average_tokens_across_devices=False with a token loss: "
                             "each rank's loss would be the mean over its own tokens, not the step's")
        result = super().compute_loss(model, inputs, return_outputs=return_outputs,
                                      num_items_in_batch=num_items_in_batch)
        if token_loss or not model.training:
            return result
        scale = self._part_scale if self._part_scale is not None else self._step_share().loss_scale
        if return_outputs:
            loss, outputs = result
            return loss * scale, outputs
        return result * scale

