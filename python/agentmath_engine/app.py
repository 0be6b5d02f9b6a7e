"""Builds the engine from options: picks the backend for `--model` by what its config.json
declares (`model_type` agentmath-byte-gpt: the byte model's slot-cache decode; any other: the
Hugging Face backend), or a byte-model shape name (`tiny`, `test`) for a random-init model.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import torch

from agentmath_models import register_architectures
from agentmath_models.byte_gpt import BYTE_GPT_SHAPES

from .byte_backend import ByteBackend, is_byte_model_folder
from .engine import Engine
from .prefix_store import PREFIX_CACHE_MB
from .server import Worker

# int8: int8 weights, bf16 activations (int8_linear.py); auto: timed at start (decode_dtype_choice.py).
DECODE_DTYPES = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "int8": torch.int8}


@dataclasses.dataclass
class WorkerOptions:
    model: str = "tiny"
    seed: Optional[int] = None
    max_running_requests: int = 64
    # None: what the backend declares (the byte model's small decode matmuls gain little from
    # a second thread and lose much when another process holds a core; a Hugging Face model's
    # decode reads hundreds of MB of weights per step and uses every core). Training's large
    # matmuls use every core.
    decode_threads: Optional[int] = None
    # float32: the master weights, so the engine's logprobs are the trainer's (what RL needs).
    # auto: bf16 where this CPU runs the model's layers faster in it (timed at start), else fp32.
    # int8: int8 weights with bf16 activations (a quarter of fp32's bytes).
    decode_dtype: str = "float32"
    # packed: a CPU decodes on linear weights reordered once for oneDNN (packed_linear.py).
    decode_linear: str = "packed"
    device: str = "auto"
    # Hugging Face models: the prefix cache's budget in MiB (prefix_store.py; 0: none).
    prefix_cache_mb: float = PREFIX_CACHE_MB


def build_backend(options: WorkerOptions):
    register_architectures()
    if options.model in BYTE_GPT_SHAPES or is_byte_model_folder(options.model):
        return ByteBackend.create(options.model, options.max_running_requests, options.seed)
    if not os.path.isdir(options.model):
        found = "is a file, not a folder" if os.path.exists(options.model) else "no such folder"
        raise ValueError(f"--model {options.model}: not a byte-model shape ({', '.join(BYTE_GPT_SHAPES)}) and {found}")
    if not os.path.isfile(os.path.join(options.model, "config.json")):
        raise ValueError(f"--model {options.model}: no config.json in the folder")
    # config.json decided the kind; a Hugging Face folder needs its fast tokenizer, else
    # `transformers` tries to convert a slow one and fails asking for sentencepiece.
    if not os.path.isfile(os.path.join(options.model, "tokenizer.json")):
        raise ValueError(f"--model {options.model}: a Hugging Face model folder without tokenizer.json (config.json names no byte model)")
    from .hf_backend import HuggingFaceBackend  # imports transformers, which is optional

    return HuggingFaceBackend.create(
        options.model,
        options.max_running_requests,
        options.device,
        decode_dtype=resolve_decode_dtype(options),
        decode_linear=options.decode_linear,
        prefix_cache_mb=options.prefix_cache_mb,
    )


def resolve_decode_dtype(options: WorkerOptions) -> Optional[torch.dtype]:
    """The decode dtype to build the backend with; None: `auto` on a CPU, timed by the backend."""
    if options.decode_dtype not in DECODE_DTYPES:
        raise ValueError(f"--decode-dtype {options.decode_dtype!r}: expected one of {', '.join(DECODE_DTYPES)}")
    if options.decode_dtype != "auto":
        return DECODE_DTYPES[options.decode_dtype]
    on_cpu = options.device == "cpu" or (options.device == "auto" and not torch.cuda.is_available())
    # On a GPU the forward passes already run under bf16 autocast.
    return None if on_cpu else torch.float32


def build_worker(options: WorkerOptions) -> Worker:
    backend = build_backend(options)
    decode_threads = backend.default_decode_threads if options.decode_threads is None else options.decode_threads
    engine = Engine(backend, options.max_running_requests, decode_threads or os.cpu_count() or 1)
    return Worker(backend, engine, backend.vocab_size)
