"""A test program (run by test_distributed.py under torchrun): one SFT and one GRPO step on a
fixed global batch for each model folder given, then the full updated weights and the steps'
statistics saved by rank 0, so runs with different process counts can be compared. An optional
third argument, JSON, overrides the trainer's settings (`{"sequence_parallel": 2}`) or names a
checkpoint to resume from (`{"resume": folder}`); the batch's logprobs scored before the steps
are saved too."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

from .batch_io import decode_batch, encode_batch
from .checkpoint import load_checkpoint
from .options import parse_step_options
from .service import TrainerCore, TrainerSettings


def fixed_batch(vocab: int, seed: int = 7):
    generator = torch.Generator().manual_seed(seed)
    ids, masks, olds, advantages = [], [], [], []
    for index, length in enumerate((23, 9, 31, 14, 5, 18)):
        ids.append(torch.randint(0, vocab, (length,), generator=generator).tolist())
        prompt = 1 + index % 4
        masks.append([0] * prompt + [1] * (length - prompt))
        olds.append((-torch.rand(length, generator=generator) * 3).tolist())
        advantages.append(float(index % 3) - 1.0)
    return ids, masks, olds, advantages


def probe_steps(core: TrainerCore) -> dict:
    """The probe's steps on its fixed batch: scores, one SFT and one GRPO step, the full weights."""
    vocab = core.model.config.vocab_size
    ids, masks, olds, advantages = fixed_batch(vocab)
    sft = decode_batch(encode_batch(ids, masks, options={"learningRate": 1e-2}))
    scores = core.runner.score_sequences(sft, 0.7)
    sft_stats = core.runner.sft_step(sft, parse_step_options(sft.options))
    grpo = decode_batch(
        encode_batch(ids, masks, advantages, olds, options={"learningRate": 1e-2, "temperature": 0.7, "klCoef": 0.1})
    )
    grpo_stats = core.runner.grpo_step(grpo, parse_step_options(grpo.options))
    state = get_model_state_dict(core.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {"sft": sft_stats, "grpo": grpo_stats, "scores": scores, "state": {k: v.clone() for k, v in state.items()}}


def main(out: str, folders: list, overrides: dict) -> None:
    # "resume": a checkpoint every model loads before its steps (one folder then).
    resume = overrides.pop("resume", None)
    results = {}
    for folder in folders:
        core = TrainerCore(TrainerSettings(**{"model": folder, "micro_batch_tokens": 40, **overrides}))
        if resume is not None:
            load_checkpoint(resume, core.model, core.optimizer)
        results[folder] = probe_steps(core)
    if dist.get_rank() == 0:
        torch.save(results, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
