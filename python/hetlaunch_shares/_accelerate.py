# SPDX-License-Identifier: MIT
"""accelerate's Accelerator with work shares: a loader that yields this rank's share of every step
on the accelerator's device, never dealt out again."""

from ._core import ShareBatchSampler, check_rebalance_every


def prepare_loader(accelerator, loader, rebalance_every=0):
    """`loader` (a torch DataLoader whose batch_sampler is a ShareBatchSampler) as accelerate's
    prepare would give it, without re-sharding: every batch is this rank's share of its step,
    moved to `accelerator.device`, and the loader takes part in accelerate's gradient state (the
    last batch of an epoch is its end, for `accelerator.accumulate`). `len()` is the number of
    steps; `set_epoch(e)` reshuffles as the sampler's does.

    rebalance_every=K > 0: the sampler measures the ranks and splits every K steps again
    (ShareBatchSampler's rebalance_every). Scale the loss by `loader.share.loss_scale` (the current
    share). The sampler times each step to the last gradient computed on this rank of the models
    the accelerator has prepared when the loader is first iterated (ShareBatchSampler.watch); a
    model prepared later, or not by the accelerator, is timed with `loader.watch(model)`."""
    if not isinstance(getattr(loader, "batch_sampler", None), ShareBatchSampler):
        raise TypeError("prepare_loader takes a DataLoader built with batch_sampler=ShareBatchSampler(...), "
                        f"got {type(loader).__name__} with batch_sampler "
                        f"{type(getattr(loader, 'batch_sampler', None)).__name__}")
    if check_rebalance_every(rebalance_every):
        loader.batch_sampler.rebalance_every = rebalance_every
    return _share_loader_class()(loader, accelerator)


def _prepared_models(accelerator):
    # Accelerator keeps the models its prepare() wrapped; only their parameters are used.
    return list(getattr(accelerator, "_models", []))


_CLASS = None


def _share_loader_class():
    """ShareLoader, defined on first use: it mixes in accelerate's loader state."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS
    from accelerate.data_loader import DataLoaderStateMixin
    from accelerate.state import GradientState
    from accelerate.utils import send_to_device

    class ShareLoader(DataLoaderStateMixin):
        """This rank's share of every step, on the accelerator's device (prepare_loader)."""

        def __init__(self, loader, accelerator):
            self.base_loader = loader
            self.device = accelerator.device
            self.gradient_state = GradientState()
            self._drop_last = True  # every step is a whole step: no remainder to gather
            self.dataset = loader.dataset
            self.accelerator = accelerator

        @property
        def batch_sampler(self):
            return self.base_loader.batch_sampler

        @property
        def share(self):
            return self.base_loader.batch_sampler.share

        def set_epoch(self, epoch):
            self.base_loader.batch_sampler.set_epoch(epoch)

        def watch(self, model):
            """Times each step to the last of `model`'s gradients computed on this rank
            (ShareBatchSampler.watch)."""
            return self.base_loader.batch_sampler.watch(model)

        def __len__(self):
            return len(self.base_loader)

        def __iter__(self):
            sampler = self.base_loader.batch_sampler
            if sampler.rebalance_every and not sampler.watching:
                for model in _prepared_models(self.accelerator):
                    sampler.watch(model)
            self.begin()
            try:
                # No batch is read ahead: a rebalancing sampler times a step from the moment it
                # hands out the step's indices. Every step is whole, so the epoch's last batch is
                # known by its count; the gradient state learns of it before it is used.
                steps = len(self.base_loader)
                for k, batch in enumerate(self.base_loader):
                    self.end_of_dataloader = k == steps - 1
                    yield send_to_device(batch, self.device)
            finally:
                self.end()

    _CLASS = ShareLoader
    return _CLASS
