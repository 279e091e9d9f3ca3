# SPDX-License-Identifier: MIT
"""accelerate's Accelerator with work shares: a loader that yields this rank's share of every step
on the accelerator's device, never dealt out again, in micro-batches under the node's ceiling."""

import contextlib
from collections.abc import Mapping

from ._core import ShareLoaderError, check_rebalance_every, micro_batches
from ._sampler import ShareBatchSampler


def prepare_loader(accelerator, loader, rebalance_every=0):
    """`loader` (a torch DataLoader whose batch_sampler is a ShareBatchSampler) as accelerate's
    prepare would give it, without re-sharding: every batch is this rank's share of its step,
    moved to `accelerator.device`, and the loader takes part in accelerate's gradient state (the
    last batch of an epoch is its end, for `accelerator.accumulate`). `len()` is the number of
    steps; `set_epoch(e)` reshuffles as the sampler's does.

    Scale each batch's loss by `loader.loss_scale`: the part of the step's whole gradient that
    the batch it yielded last carries (its samples x W / B, from the share its step was cut with).
    A share above the node's ceiling (HETLAUNCH_MAX_BATCH) comes as ceil(b/M) micro-batches of at
    most M samples: the loader keeps DDP from synchronising gradients and the optimizer from
    stepping on all but a step's last one (inside `accelerator.accumulate` too), so the step's
    gradient is the same as one batch's.

    rebalance_every=K > 0: the sampler measures the ranks and splits every K steps again
    (ShareBatchSampler's rebalance_every). The sampler times each step to the last gradient
    computed on this rank of the models the accelerator has prepared when the loader is first
    iterated (ShareBatchSampler.watch); a model prepared later, or not by the accelerator, is
    timed with `loader.watch(model)`."""
    if not isinstance(getattr(loader, "batch_sampler", None), ShareBatchSampler):
        raise TypeError("prepare_loader takes a DataLoader built with batch_sampler=ShareBatchSampler(...), "
                        f"got {type(loader).__name__} with batch_sampler "
                        f"{type(getattr(loader, 'batch_sampler', None)).__name__}")
    share = loader.batch_sampler.share
    if accelerator.num_processes != share.world_size:
        raise ValueError(f"prepare_loader: the Accelerator has {accelerator.num_processes} processes but the work "
                         f"share's world has {share.world_size} (WORLD_SIZE): each rank would train alone on its "
                         "share. Start the job with hetlaunch (torchrun) and let Accelerator() join its process group")
    if check_rebalance_every(rebalance_every):
        loader.batch_sampler.rebalance_every = rebalance_every
    return _share_loader_class()(loader, accelerator, micro_batching=True)


def _prepared_models(accelerator):
    # Accelerator keeps the models its prepare() was given (not their DDP wrappers); their
    # parameters are the wrappers' own.
    return list(getattr(accelerator, "_models", []))


def _ddp_wrappers(models):
    """The DistributedDataParallel wrappers of `models`: what holds gradients back from the
    all-reduce (no_sync). accelerate keeps only the models it was given, so the wrappers are found
    among the live objects, once a loader."""
    import gc

    from torch.nn.parallel import DistributedDataParallel

    wanted = {id(m) for m in models}
    return [o for o in gc.get_objects() if isinstance(o, DistributedDataParallel) and
            (id(o) in wanted or id(o.module) in wanted)]


def batch_size_of(batch):
    """The number of samples of a collated batch: the first dimension of its first tensor."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else None
    values = batch.values() if isinstance(batch, Mapping) else batch if isinstance(batch, (list, tuple)) else ()
    for value in values:
        size = batch_size_of(value)
        if size is not None:
            return size
    return None


def slice_batch(batch, start, stop, size):
    """Samples [start, stop) of a collated batch of `size`: every tensor whose first dimension is
    the batch's, and every list of one item a sample, cut alike; the rest (scalars, a structure's
    own fields) kept whole."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch[start:stop] if batch.dim() and batch.shape[0] == size else batch
    if isinstance(batch, Mapping):
        cut = {k: slice_batch(v, start, stop, size) for k, v in batch.items()}
        try:
            return type(batch)(cut)
        except TypeError:
            return cut
    if isinstance(batch, (list, tuple)):
        structured = any(isinstance(v, (torch.Tensor, Mapping, list, tuple)) for v in batch)
        if not structured and len(batch) == size:
            return type(batch)(batch[start:stop])
        parts = [slice_batch(v, start, stop, size) for v in batch]
        return type(batch)(*parts) if hasattr(batch, "_fields") else type(batch)(parts)
    return batch


def split_under_ceiling(batch, share):
    """The batch of a step cut with `share`, as micro-batches of at most share.max_batch samples
    (micro_batches' sizes): [(part, samples)]; [(batch, b)] when it fits."""
    size = batch_size_of(batch)
    if not share.max_batch or size is None or size <= share.max_batch:
        return [(batch, size if size is not None else share.batch)]
    out, start = [], 0
    for part in micro_batches(range(size), share.max_batch):
        out.append((slice_batch(batch, start, start + len(part), size), len(part)))
        start += len(part)
    return out


_CLASS = None


def _share_loader_class():
    """ShareLoader, defined on first use: it mixes in accelerate's loader state."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from collections import deque

    from accelerate.data_loader import DataLoaderStateMixin
    from accelerate.state import GradientState
    from accelerate.utils import send_to_device

    class ShareLoader(DataLoaderStateMixin):
        """This rank's share of every step, on the accelerator's device (prepare_loader)."""

        def __init__(self, loader, accelerator, micro_batching=True):
            self.base_loader = loader
            self.device = accelerator.device
            self.gradient_state = GradientState()
            self._drop_last = True  # every step is a whole step: no remainder to gather
            self.dataset = loader.dataset
            self.accelerator = accelerator
            self.micro_batching = micro_batching
            self.step_share = None  # the share of the step whose batch was yielded last
            self.loss_scale = None  # that batch's samples x W / B
            self._sync = True
            self._wrappers = None  # the prepared models' DDP wrappers, found when a step is cut

        @property
        def batch_sampler(self):
            return self.base_loader.batch_sampler

        @property
        def share(self):
            """The share of the step being trained (ShareBatchSampler.share)."""
            return self.base_loader.batch_sampler.share

        def set_epoch(self, epoch):
            self.base_loader.batch_sampler.set_epoch(epoch)

        def skip_first_batches(self, num_batches=0):
            """This loader, from step `num_batches` of the sampler's current epoch on (set_epoch
            first): the resume of a script that counts its own steps. accelerate's
            skip_first_batches would make a plain DataLoader of it, without the shares' scale,
            device and micro-batches. A position loaded with the loader's state (accelerate's
            load_state after register_for_checkpointing) resumes by itself: no skip is needed."""
            self.base_loader.batch_sampler.skip_to(num_batches)
            return self

        @property
        def sampler(self):
            # accelerate's skip_first_batches reads it first: it would rebuild this loader as a
            # plain DataLoader, so it gets an error that says what to call instead.
            raise ShareLoaderError(
                "accelerate's skip_first_batches would rebuild this share loader as a plain DataLoader, "
                "losing each batch's share (loss_scale), device and micro-batches: call "
                "loader.skip_first_batches(num_batches) instead, or nothing after accelerator.load_state() "
                "of a loader registered with accelerator.register_for_checkpointing(loader), which resumes "
                "at its saved position")

        def watch(self, model):
            """Times each step to the last of `model`'s gradients computed on this rank
            (ShareBatchSampler.watch)."""
            return self.base_loader.batch_sampler.watch(model)

        def state_dict(self):
            """The sampler's state (accelerator.register_for_checkpointing(loader) keeps it)."""
            return self.base_loader.batch_sampler.state_dict()

        def load_state_dict(self, state):
            self.base_loader.batch_sampler.load_state_dict(state)

        def __len__(self):
            return len(self.base_loader)

        def _hold_back(self):
            # The models whose gradients a step's micro-batches but the last keep to themselves.
            if self._wrappers is None:
                models = _prepared_models(self.accelerator)
                self._wrappers = _ddp_wrappers(models) if self.accelerator.use_distributed else []
                if self.accelerator.use_distributed and not self._wrappers:
                    raise RuntimeError(
                        "prepare_loader: this rank's share is cut into micro-batches under its ceiling "
                        f"(HETLAUNCH_MAX_BATCH={self.share.max_batch}), but no model prepared by the "
                        "accelerator is wrapped for data parallelism: prepare the model with "
                        "accelerator.prepare(model, optimizer) before iterating the loader")
            return self._wrappers

        def _do_sync(self):
            # accelerate's accumulate() asks this at every batch: a step's micro-batches but the
            # last must not synchronise or step, whatever gradient_accumulation_steps says.
            self.gradient_state._set_sync_gradients(self._sync)

        def __iter__(self):
            sampler = self.base_loader.batch_sampler
            if sampler.rebalance_every and not sampler.watching:
                for model in _prepared_models(self.accelerator):
                    sampler.watch(model)
            sampler._loader_steps = deque()
            accumulation = max(1, int(self.gradient_state.num_steps))
            # Only a loader that may cut a step (its rank has a ceiling) takes over the sync.
            own_sync = self.micro_batching and sampler.share.max_batch > 0 and \
                "_do_sync" not in vars(self.accelerator)
            if own_sync:
                self.accelerator._do_sync = self._do_sync
            self.begin()
            try:
                # Every step is whole, so the epoch's last batch is known by its count; the
                # gradient state learns of it before it is used. A DataLoader with workers reads
                # steps ahead: each batch's share is that of its own step, taken in order.
                steps = len(self.base_loader)
                for k, batch in enumerate(self.base_loader):
                    handed = sampler._loader_steps.popleft()
                    share = handed.share
                    parts = split_under_ceiling(batch, share) if self.micro_batching else \
                        [(batch, batch_size_of(batch) or share.batch)]
                    for j, (part, samples) in enumerate(parts):
                        last_part = j == len(parts) - 1
                        self.end_of_dataloader = k == steps - 1 and last_part
                        self._sync = last_part and ((k + 1) % accumulation == 0 or k == steps - 1)
                        self.step_share = share
                        self.loss_scale = samples * share.world_size / share.global_batch
                        with contextlib.ExitStack() as held:
                            if own_sync:
                                self.gradient_state._set_sync_gradients(self._sync)
                                if not last_part:
                                    for model in self._hold_back():
                                        held.enter_context(self.accelerator.no_sync(model))
                            yield send_to_device(part, self.device)
            finally:
                if own_sync:
                    del self.accelerator._do_sync
                sampler._loader_steps = None
                self.end()

    _CLASS = ShareLoader
    return _CLASS
