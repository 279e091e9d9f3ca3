# SPDX-License-Identifier: MIT
"""HF Trainer with work shares: ShareTrainer (imports transformers)."""

import torch
from torch.utils.data import DataLoader
from transformers import Trainer

from ._accelerate import prepare_loader
from ._core import ShareBatchSampler, check_rebalance_every, share_from_env


class ShareTrainer(Trainer):
    """A transformers.Trainer whose training loader yields this rank's share of every step (the
    steps of the work-share sampling rule, seeded by `args.data_seed`, else `args.seed`) and whose
    loss makes every step's gradient the whole step's:

    - a token loss (the model takes `num_items_in_batch`, as transformers' language models do, or
      a `compute_loss_func`): the Trainer sums the step's tokens over every rank
      (`average_tokens_across_devices`), so each rank's sum over its tokens, divided by that count,
      is already its part of the step's token mean;
    - any other loss (a mean over the rank's samples): scaled by the share's loss_scale, b·W/B.

    The share decides each rank's training batch; `per_device_train_batch_size` does not.
    `share` defaults to share_from_env(). `rebalance_every=K` > 0: the sampler measures each
    rank's steps and splits every K steps again (ShareBatchSampler's rebalance_every); the loss
    follows the current share. TrainingArguments values it cannot honour are errors
    that name them: gradient_accumulation_steps above 1, auto_find_batch_size,
    train_sampling_strategy='group_by_length' (the step's samples are the sampler's), and
    average_tokens_across_devices=False with a token loss."""

    def __init__(self, *args, share=None, rebalance_every=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.share = share if share is not None else share_from_env()
        self.rebalance_every = check_rebalance_every(rebalance_every)
        self.share_sampler = None  # the training loader's sampler, once made
        self._watch_handles = []
        a = self.args
        refused = []
        if a.gradient_accumulation_steps != 1:
            refused.append(f"gradient_accumulation_steps={a.gradient_accumulation_steps} (each step's share is "
                           "one batch; accumulate by a larger --global-batch)")
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
        if sampler.rebalance_every:  # asked for, or hetlaunch calibrate's
            # Timed to the last gradient this rank computes: the end of DDP's backward() waits for
            # every rank's. The wrapped model holds the same parameters.
            self._watch_handles = sampler.watch(self.model)
        loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collator,
                            num_workers=self.args.dataloader_num_workers, pin_memory=self.args.dataloader_pin_memory)
        return prepare_loader(self.accelerator, loader)

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
        share = self.share_sampler.share if self.share_sampler is not None else self.share  # the current one
        if return_outputs:
            loss, outputs = result
            return loss * share.loss_scale, outputs
        return result * share.loss_scale

