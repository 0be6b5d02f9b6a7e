"""Tiny random Hugging Face models and helpers for the HF backend's tests (no download)."""

from __future__ import annotations

import itertools
import os
import threading
from typing import Dict, List

import torch

CORPUS = "def f(x):\n    return x * 2\n\nprint(f(21))\n\nThe answer is \\boxed{42}.\n\nCompute 123 * 456 + 789.\n"
ARCHITECTURES = ("qwen3", "qwen3-moe", "llama")


def make_models(folder: str, seeds=(1,), architectures=ARCHITECTURES, hidden: int = 64) -> Dict[str, str]:
    """Writes one tiny model per (architecture, seed) under `folder`; returns {"arch-seed": path}."""
    from agentmath_models.init_model import init_model

    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as handle:
        handle.write(CORPUS)
    models = {}
    for arch in architectures:
        for seed in seeds:
            out = os.path.join(folder, f"{arch}-{seed}-{hidden}")
            init_model(arch, out, corpus, layers=2, hidden=hidden, vocab_size=400, seed=seed)
            models[f"{arch}-{seed}"] = out
    return models


@torch.no_grad()
def greedy_without_cache(model, prompt: List[int], count: int) -> List[int]:
    """Greedy tokens by re-running the whole sequence each step: the reference for any cache."""
    sequence = list(prompt)
    for _ in range(count):
        logits = model(input_ids=torch.tensor([sequence]), use_cache=False).logits[0, -1]
        sequence.append(int(logits.argmax()))
    return sequence[len(prompt):]


@torch.no_grad()
def transformers_greedy(model, prompt: List[int], count: int) -> List[int]:
    """`count` greedy tokens from `transformers`' own `generate` (EOS not stopping it)."""
    ids = torch.tensor([prompt])
    output = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                            max_new_tokens=count, min_new_tokens=count, pad_token_id=0)
    return output[0, len(prompt):].tolist()


class StepGate:
    """Holds the engine's `at`-th decode step (1-based) until `release` is set."""

    def __init__(self, backend, at: int) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        original = backend.decode_step
        counter = itertools.count(1)

        def gated(*arguments):
            if next(counter) == at:
                self.reached.set()
                self.release.wait(60)
            return original(*arguments)

        backend.decode_step = gated
