"""Builds a worker from options: picks the backend for `--model` and wires engine and trainer.

`--model` is a preset (`tiny`, `test`), a folder this worker saved (config.json with
model_type agentmath-byte-gpt), or a local Hugging Face causal-LM folder (needs `transformers`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import torch

from .byte_backend import ByteBackend, is_byte_model_folder
from .config import PRESETS
from .engine import Engine
from .server import Worker
from .trainer import OptimizerSettings, Trainer


@dataclasses.dataclass
class WorkerOptions:
    model: str = "tiny"
    seed: Optional[int] = None
    max_running_requests: int = 64
    # Small batched decode matmuls gain little from a second thread and lose much when another
    # process holds a core; training's large matmuls use every core.
    decode_threads: int = 1
    train_threads: int = 0  # 0: the machine's cores
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    micro_batch_tokens: int = 8192
    device: str = "auto"


def build_backend(options: WorkerOptions):
    if options.model in PRESETS or is_byte_model_folder(options.model):
        return ByteBackend.create(options.model, options.max_running_requests, options.seed)
    if not os.path.isdir(options.model):
        raise ValueError(f"--model {options.model!r}: not a preset ({', '.join(PRESETS)}) and not a folder")
    if not os.path.isfile(os.path.join(options.model, "config.json")):
        raise ValueError(f"--model {options.model}: no config.json in the folder")
    # config.json decided the kind; a Hugging Face folder needs its fast tokenizer, else
    # `transformers` tries to convert a slow one and fails asking for sentencepiece.
    if not os.path.isfile(os.path.join(options.model, "tokenizer.json")):
        raise ValueError(f"--model {options.model}: a Hugging Face model folder without tokenizer.json (config.json names no byte model)")
    from .hf_backend import HuggingFaceBackend  # imports transformers, which is optional

    return HuggingFaceBackend.create(options.model, options.max_running_requests, options.device)


def build_worker(options: WorkerOptions) -> Worker:
    backend = build_backend(options)
    settings = OptimizerSettings(
        learning_rate=options.learning_rate, weight_decay=options.weight_decay, max_grad_norm=options.max_grad_norm
    )
    trainer = Trainer(backend, settings, options.micro_batch_tokens, options.train_threads or os.cpu_count() or 1)
    engine = Engine(backend, options.max_running_requests, options.decode_threads)
    return Worker(backend, trainer, engine, backend.vocab_size)
