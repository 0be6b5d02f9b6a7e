"""One process's measurement of the trainer's step: a random-init model built from a shape (no
files, no download), SFT or GRPO steps over one packed row of T tokens (one sequence, or N
packed end to end) through the real `StepRunner` under FSDP2, and what they cost: seconds per step, tokens/s, model FLOPs
utilisation on a GPU, and peak memory (the CUDA allocator's peak on a GPU, the process's peak
resident set from the OS on CPU — one configuration per process there, since the OS's peak
cannot be reset).

`bench trainer --vocab-size V --tokens T` runs it on CPU once per LM-head path, each in its own
process, and with `--packed-sequences N` once per attention path (transformers' sdpa with its
dense mask, our varlen attention); `gpu_check` runs it on one GPU for the model shapes of the
paper's smaller Qwen3s.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import resource
import socket
import time
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist
import transformers

from .attention import BACKENDS, implementation_name
from .batch_io import Batch
from .model import Placement, init_distributed
from .options import parse_step_options
from .parallelize import parallelize
from .step import StepRunner

KINDS = ("sft", "grpo")
# --attention: transformers' sdpa (a dense block-diagonal mask for a packed row), or ours.
ATTENTIONS = {"sdpa": "sdpa", "varlen": implementation_name(), **{name: implementation_name(name) for name in BACKENDS}}


@dataclasses.dataclass(frozen=True)
class ModelShape:
    name: str
    vocab_size: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool = True

    def config(self) -> transformers.Qwen3Config:
        return transformers.Qwen3Config(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            head_dim=self.head_dim,
            tie_word_embeddings=self.tied,
            max_position_embeddings=131072,
            rope_theta=1_000_000.0,
        )


# The published Qwen3 configurations (config.json of Qwen/Qwen3-0.6B and Qwen/Qwen3-1.7B).
QWEN3_SHAPES = {
    "qwen3-0.6b": ModelShape("qwen3-0.6b", 151_936, 1024, 28, 16, 8, 128, 3072),
    "qwen3-1.7b": ModelShape("qwen3-1.7b", 151_936, 2048, 28, 16, 8, 128, 6144),
}


def tiny_shape(vocab_size: int, hidden: int, layers: int) -> ModelShape:
    heads = max(1, hidden // 16)
    return ModelShape(f"tiny-h{hidden}-l{layers}-v{vocab_size}", vocab_size, hidden, layers, heads, max(1, heads // 2), 16, hidden * 3)


@dataclasses.dataclass
class ProbeResult:
    shape: str
    kind: str
    tokens: int
    logits_chunk_tokens: int
    activation_checkpointing: bool
    device: str
    parameters: int
    status: str  # "ok" or "out-of-memory"
    sequences: int = 1
    attention: str = "varlen"
    steps: int = 0
    step_seconds: List[float] = dataclasses.field(default_factory=list)
    tokens_per_second: Optional[float] = None
    mfu: Optional[float] = None
    peak_memory_bytes: Optional[int] = None
    baseline_memory_bytes: Optional[int] = None
    error: Optional[str] = None


def camel_keys(values: Dict[str, object]) -> Dict[str, object]:
    """snake_case keys → camelCase, as the TypeScript side reads them."""

    def name(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.capitalize() for part in rest)

    return {name(key): value for key, value in values.items()}


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def step_flops(shape: ModelShape, parameters: int, lengths: Sequence[int]) -> float:
    """Training FLOPs of one step over causal sequences of these lengths (T in all): 6·N·T for
    the weights (forward and backward) plus 6·L·Σ Tᵢ²·(heads·head_dim) for causal attention's two
    matmuls (half of 12), within each sequence."""
    tokens = sum(lengths)
    squares = sum(length * length for length in lengths)
    return 6.0 * parameters * tokens + 6.0 * shape.layers * squares * shape.heads * shape.head_dim


# Dense bf16 peak of the cards the check is meant for (NVIDIA's data sheets, without sparsity).
PEAK_BF16_FLOPS = {"H100": 989e12, "H200": 989e12, "A100": 312e12}


def device_peak_flops(device: torch.device) -> Optional[float]:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((value for key, value in PEAK_BF16_FLOPS.items() if key in name), None)


def probe_batch(kind: str, tokens: int, vocab_size: int, seed: int = 0, sequences: int = 1) -> Batch:
    """`sequences` sequences of random ids, `tokens` in all (lengths differ by at most 1); the
    first quarter of each is the prompt (not trained)."""
    generator = np.random.default_rng(seed)
    lengths = np.array([tokens // sequences + (1 if i < tokens % sequences else 0) for i in range(sequences)], dtype=np.int32)
    ids = generator.integers(0, vocab_size, size=tokens, dtype=np.int32)
    mask = np.concatenate([(np.arange(length) >= length // 4) for length in lengths]).astype(np.uint8)
    options: Dict[str, object] = {"learningRate": 1e-5}
    if kind == "sft":
        return Batch(lengths, ids, mask, None, None, options)
    olds = (-generator.random(tokens, dtype=np.float32) * 3.0).astype(np.float32)
    advantages = np.where(np.arange(sequences) % 2 == 0, 1.0, -1.0).astype(np.float32)
    return Batch(lengths, ids, mask, advantages, olds, {**options, "temperature": 1.0})


# The MASTER_PORT this module chose (None: none yet, or torchrun's is in force).
_chosen_port: Optional[str] = None


def run_probe(
    shape: ModelShape,
    kind: str,
    tokens: int,
    where: Placement,
    steps: int = 1,
    logits_chunk_tokens: int = 512,
    activation_checkpointing: bool = False,
    warmup_steps: int = 0,
    sequences: int = 1,
    attention: str = "varlen",
) -> ProbeResult:
    """Builds the model, takes `warmup_steps + steps` steps of `kind` and measures the last `steps`.
    The `sequences` sequences fill one micro-batch (one packed row of `tokens`); `attention` is a
    key of ATTENTIONS."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    if attention not in ATTENTIONS:
        raise ValueError(f"attention {attention!r}: expected one of {', '.join(ATTENTIONS)}")
    global _chosen_port
    if not dist.is_initialized() and os.environ.get("MASTER_PORT") in (None, _chosen_port):
        # A lone process: a free port, and a fresh one for each probe (the last probe's store may
        # still hold its port: reusing it failed with EADDRINUSE); a port torchrun set is kept.
        _chosen_port = str(_free_port())
        os.environ["MASTER_PORT"] = _chosen_port
    init_distributed(where)
    torch.manual_seed(0)
    with torch.device(where.device):
        model = transformers.AutoModelForCausalLM.from_config(
            shape.config(), dtype=torch.float32, attn_implementation=ATTENTIONS[attention]
        )
    parameters = sum(p.numel() for p in model.parameters())
    model = parallelize(model, where, activation_checkpointing)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)
    runner = StepRunner(model, optimizer, where.device, tokens, 1.0, logits_chunk_tokens=logits_chunk_tokens)
    batch = probe_batch(kind, tokens, shape.vocab_size, sequences=sequences)
    options = parse_step_options(batch.options)
    result = ProbeResult(
        shape.name, kind, tokens, logits_chunk_tokens, activation_checkpointing, str(where.device), parameters, "ok", sequences, attention
    )
    cuda = where.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(where.device)
        torch.cuda.reset_peak_memory_stats(where.device)
        result.baseline_memory_bytes = torch.cuda.memory_allocated(where.device)
    else:
        result.baseline_memory_bytes = current_rss_bytes()
    try:
        for index in range(warmup_steps + steps):
            started = time.perf_counter()
            runner.sft_step(batch, options) if kind == "sft" else runner.grpo_step(batch, options)
            if cuda:
                torch.cuda.synchronize(where.device)
            if index >= warmup_steps:
                result.step_seconds.append(time.perf_counter() - started)
    except torch.OutOfMemoryError as error:
        result.status = "out-of-memory"
        result.error = str(error).split("\n")[0][:300]
    result.steps = len(result.step_seconds)
    result.peak_memory_bytes = torch.cuda.max_memory_allocated(where.device) if cuda else peak_rss_bytes()
    if result.step_seconds:
        seconds = sorted(result.step_seconds)[len(result.step_seconds) // 2]
        result.tokens_per_second = tokens / seconds
        peak = device_peak_flops(where.device)
        if peak is not None:
            result.mfu = step_flops(shape, parameters, [int(length) for length in batch.lengths]) / seconds / peak
    del runner, optimizer, model
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return result


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def release_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
