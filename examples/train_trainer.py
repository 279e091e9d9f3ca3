# SPDX-License-Identifier: MIT
"""Training with HF Trainer on nodes whose GPUs differ, with work shares.

Start every node with hetlaunch and a global batch, and use ShareTrainer where you would use
Trainer: each rank trains on its share of every step, and every step's gradient is the whole
step's (the token mean for language models, the sample mean otherwise):

    hetlaunch exec --node I --hosts a100:3,t4:1 --weight t4=3 --global-batch 24 -- train_trainer.py --model lm

The recipe, in a few lines:

    args = TrainingArguments(output_dir="out", max_steps=100)     # per_device_train_batch_size: unused
    trainer = shares.ShareTrainer(model=model, args=args, train_dataset=data, data_collator=collate)
    trainer.train()

Runs on CPUs (gloo), in float64, with models built from code or a config (nothing downloaded):
`--model mse`, a small regression network whose loss is a mean over samples, or `--model lm`, a
tiny Llama on sequences of different lengths, whose loss is a mean over tokens.

A node's ceiling (max_batch= in a hostfile, --max-batch) is honoured: ShareTrainer trains a share
above it in micro-batches of at most that many samples, with the same gradient.

Checkpoints and resuming: with --checkpoint-dir the Trainer saves every --save-steps steps there
(ShareTrainer adds the sampler's learned rates to each checkpoint and prints the checkpoint line
`hetlaunch run --grow-back` restarts at); --resume continues from the last one, in the middle of
an epoch and on any topology, exactly where it left.

usage: train_trainer.py [--model mse|lm] [--steps N] [--record DIR] [--rebalance-every K] [--loader-workers N]
                        [--checkpoint-dir DIR [--save-steps K] [--stop-after S] [--resume]]
  --record DIR        rank 0 writes DIR/final.json: the parameters after the last step, the
                      largest forward of any rank, and (--model mse) each step's samples on each
                      rank (the tests)
  --loader-workers N  dataloader_num_workers (the workers read 2N steps ahead of training)
  --stop-after S      end the training after step S (as a job that fails there would end)
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile

import torch
import torch.distributed as dist

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import hetlaunch_shares as shares  # noqa: E402

SAMPLES = 96
VOCAB, MAX_LEN = 40, 12


class Regression(torch.nn.Module):
    """A small network whose loss is the mean squared error over the batch's samples."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()

    def forward(self, x, labels=None):
        out = self.net(x)
        loss = None if labels is None else torch.nn.functional.mse_loss(out, labels)
        return {"loss": loss, "logits": out}


class Samples(torch.utils.data.Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def regression_data():
    g = torch.Generator()
    g.manual_seed(1234)
    x = torch.randn(SAMPLES, 5, generator=g, dtype=torch.float64)
    y = torch.sin(x.sum(dim=1, keepdim=True))
    return Samples([{"x": x[i], "labels": y[i]} for i in range(SAMPLES)])


def regression_collate(items):
    return {"x": torch.stack([i["x"] for i in items]), "labels": torch.stack([i["labels"] for i in items])}


def language_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(7)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=MAX_LEN,
                         bos_token_id=None, eos_token_id=None, pad_token_id=0, attn_implementation="eager")
    return LlamaForCausalLM(config).double()


def language_data():
    """Sequences of 3 to MAX_LEN tokens: the step's token mean differs from its sample mean."""
    g = torch.Generator()
    g.manual_seed(99)
    lengths = torch.randint(3, MAX_LEN + 1, (SAMPLES,), generator=g).tolist()
    return Samples([{"input_ids": torch.randint(1, VOCAB, (n,), generator=g)} for n in lengths])


def language_collate(items):
    """Right-padded with 0; padding is masked and has label -100."""
    width = max(len(i["input_ids"]) for i in items)
    ids = torch.zeros(len(items), width, dtype=torch.long)
    mask = torch.zeros(len(items), width, dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, :len(item["input_ids"])] = item["input_ids"]
        mask[row, :len(item["input_ids"])] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def build(kind):
    """The model, the data set and the collator of a kind."""
    if kind == "mse":
        return Regression(), regression_data(), regression_collate
    return language_model(), language_data(), language_collate


def parameters(model):
    return [p.detach().reshape(-1).tolist() for p in model.parameters()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["mse", "lm"], default="mse")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--record")
    parser.add_argument("--rebalance-every", type=int, default=0)
    parser.add_argument("--loader-workers", type=int, default=0)
    parser.add_argument("--checkpoint-dir")
    parser.add_argument("--save-steps", type=int, default=3)
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from transformers import TrainerCallback, TrainingArguments

    class StopAfter(TrainerCallback):
        def on_step_end(self, training_args, state, control, **kwargs):
            if args.stop_after is not None and state.global_step >= args.stop_after:
                control.should_training_stop = True

    # On CPUs, Debian's torch is built with MPI, and accelerate (under the Trainer) would then pick
    # the mpi backend under torchrun: every process a world of one. The gloo group first.
    if not torch.cuda.is_available() and not dist.is_initialized():
        dist.init_process_group("gloo")
    model, data, collate = build(args.model)
    largest = [0]
    trained = []  # (step, the first feature of each sample): a sample's first feature names it
    trainer = None

    def forward_size(module, inputs, kwargs):
        batch = next((v for v in list(inputs) + list(kwargs.values()) if isinstance(v, torch.Tensor)), None)
        if batch is not None and module.training:
            largest[0] = max(largest[0], batch.shape[0])
            if args.model == "mse" and trainer is not None:
                trained.append((trainer.state.global_step, batch[:, 0].tolist()))
    model.register_forward_pre_hook(forward_size, with_kwargs=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    with tempfile.TemporaryDirectory() as scratch:
        saving = {"save_strategy": "steps", "save_steps": args.save_steps} if args.checkpoint_dir else \
            {"save_strategy": "no"}
        training = TrainingArguments(output_dir=args.checkpoint_dir or scratch, max_steps=args.steps,
                                     use_cpu=not torch.cuda.is_available(), max_grad_norm=0.0, logging_steps=1,
                                     report_to=[], seed=0, remove_unused_columns=False, disable_tqdm=True,
                                     dataloader_num_workers=args.loader_workers, **saving)
        trainer = shares.ShareTrainer(model=model, args=training, train_dataset=data, data_collator=collate,
                                      optimizers=(optimizer, schedule), rebalance_every=args.rebalance_every,
                                      callbacks=[StopAfter()])
        trainer.train(resume_from_checkpoint=True if args.resume else None)
    forwards = [None] * dist.get_world_size()
    dist.all_gather_object(forwards, largest[0])
    steps = [None] * dist.get_world_size()
    dist.all_gather_object(steps, trained)
    if args.record and dist.get_rank() == 0:
        sampler = trainer.share_sampler
        pathlib.Path(args.record, "final.json").write_text(json.dumps({"params": parameters(model),
                                                                      "changes": sampler.changes if sampler else 0,
                                                                      "weights": sampler.weights if sampler else None,
                                                                      "rates": sampler.rates if sampler else None,
                                                                      "largest_forward": forwards,
                                                                      "steps": steps}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
