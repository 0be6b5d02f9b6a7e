"""Will a step's longest micro-batch fit one rank? An estimate made before the step, so a
sequence that cannot fit is refused with its length and the options that would make it fit,
instead of an out-of-memory error in the middle of a step.

Per rank, for a micro-batch of T tokens (b = bytes of the compute dtype, N parameters, P ranks,
L layers, hidden H, MLP width I (routed experts × their width for a MoE), KV width K, vocab V):
  state        16·N/P (fp32 weights, gradients, AdamW's two moments; none with CPU offload)
               + b·N/P for a loaded KL reference (none with CPU offload) + the unsharded compute
               copies of two decoder layers and of the embeddings/head (FSDP2's gather)
  activations  L·T·(b·(10·H + 4·I + 4·K) + 16·H)  kept for backward, or with activation
               checkpointing L·T·H·b (each layer's input) + one layer's worth
  LM head      20·V·T bytes with full fp32 logits (logits, log-softmax, entropy temporaries,
               backward), or 12·min(C, T)·V + 4·V·H with chunks of C tokens
It is a planning figure (a sequence whose estimate exceeds the device is refused), not a
measurement: `bench trainer --vocab-size V --tokens T` and scripts/gpu-check.sh measure.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence

GIB = 2**30
# What the refusal suggests: checkpointing on, and this chunk size where the head was in full.
SUGGESTED_CHUNK_TOKENS = 512


@dataclasses.dataclass(frozen=True)
class ModelDims:
    parameters: int
    layers: int
    hidden: int
    mlp_width: int
    kv_width: int
    vocab_size: int
    tied: bool

    @classmethod
    def of(cls, config, parameters: int) -> "ModelDims":
        experts = getattr(config, "num_experts", None) or 0
        if experts:
            mlp = int(config.moe_intermediate_size) * int(config.num_experts_per_tok)
        else:  # a configuration without the field: the usual 4·H
            mlp = int(getattr(config, "intermediate_size", None) or 4 * config.hidden_size)
        heads = int(config.num_attention_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
        kv = int(getattr(config, "num_key_value_heads", None) or heads) * head_dim
        tied = bool(getattr(config, "tie_word_embeddings", False))
        return cls(parameters, int(config.num_hidden_layers), int(config.hidden_size), mlp, kv, int(config.vocab_size), tied)


@dataclasses.dataclass(frozen=True)
class MemoryOptions:
    activation_checkpointing: bool
    logits_chunk_tokens: int  # 0: full logits
    # Sharded state in host memory (--cpu-offload): the device holds only what a step gathers.
    cpu_offload: bool = False
    # A KL reference is held beside the policy (sharded, in the compute dtype).
    reference: bool = False

    def describe(self) -> str:
        checkpointing = "activation checkpointing on" if self.activation_checkpointing else "activation checkpointing off"
        head = f"the LM head in chunks of {self.logits_chunk_tokens} tokens" if self.logits_chunk_tokens else "full [T × V] logits"
        offload = ", parameters and optimizer state offloaded to the CPU" if self.cpu_offload else ""
        return f"{checkpointing}, {head}{offload}"

    def flags(self) -> str:
        parts = ["--activation-checkpointing"] if self.activation_checkpointing else []
        return " ".join(parts + [f"--logits-chunk-tokens {self.logits_chunk_tokens}"])


def state_bytes(dims: ModelDims, world_size: int, compute_bytes: int, options: Optional[MemoryOptions] = None) -> int:
    embeddings = dims.vocab_size * dims.hidden * (1 if dims.tied else 2)
    layer = (dims.parameters - embeddings) // max(1, dims.layers)
    offloaded = options is not None and options.cpu_offload
    sharded = 0 if offloaded else 16 * dims.parameters // world_size
    reference = compute_bytes * dims.parameters // world_size if options is not None and options.reference and not offloaded else 0
    return sharded + reference + compute_bytes * (2 * layer + embeddings)


def micro_batch_bytes(dims: ModelDims, tokens: int, options: MemoryOptions, compute_bytes: int) -> int:
    per_layer_token = compute_bytes * (10 * dims.hidden + 4 * dims.mlp_width + 4 * dims.kv_width) + 16 * dims.hidden
    if options.activation_checkpointing:
        activations = dims.layers * tokens * dims.hidden * compute_bytes + tokens * per_layer_token
    else:
        activations = dims.layers * tokens * per_layer_token
    if options.logits_chunk_tokens > 0:
        head = 12 * min(options.logits_chunk_tokens, tokens) * dims.vocab_size + 4 * dims.vocab_size * dims.hidden
    else:
        head = 20 * dims.vocab_size * tokens
    return activations + head + 3 * tokens * dims.hidden * 4


def rank_bytes(dims: ModelDims, tokens: int, world_size: int, options: MemoryOptions, compute_bytes: int) -> int:
    return state_bytes(dims, world_size, compute_bytes, options) + micro_batch_bytes(dims, tokens, options, compute_bytes)


def refusal(
    dims: ModelDims,
    lengths: Sequence[int],
    micro_batch_tokens: int,
    world_size: int,
    options: MemoryOptions,
    compute_bytes: int,
    capacity_bytes: int,
    device: str,
    sequence_parallel: int = 1,
) -> Optional[str]:
    """None when the step's largest micro-batch fits; else why not, naming the longest
    sequence's length and the options under which it would fit (or that none would). With
    `sequence_parallel` N a row holds N × the budget and each rank 1/N of it."""
    longest = max(range(len(lengths)), key=lambda i: (lengths[i], -i))
    # A micro-batch holds up to the budget, or one longer sequence alone.
    row = max(int(lengths[longest]), min(micro_batch_tokens * sequence_parallel, int(sum(lengths))))
    largest = -(-row // sequence_parallel)
    need = rank_bytes(dims, largest, world_size, options, compute_bytes)
    if need <= capacity_bytes:
        return None
    # The longest sequence's tokens on one rank.
    length = -(-int(lengths[longest]) // sequence_parallel)
    where = f"sequence {longest} has {int(lengths[longest]):,} tokens"
    if sequence_parallel > 1:
        where += f" ({length:,} per rank with --sp {sequence_parallel})"
    if largest > length:
        where += f" (packed micro-batches of up to {largest:,} tokens{' per rank' if sequence_parallel > 1 else ''})"
    message = (
        f"{where}: a micro-batch of {largest:,} tokens{' per rank' if sequence_parallel > 1 else ''} needs ~{need / GIB:.1f} GiB per rank with "
        f"{options.describe()}, more than the {capacity_bytes / GIB:.1f} GiB of {device}"
    )
    if largest > length and rank_bytes(dims, length, world_size, options, compute_bytes) <= capacity_bytes:
        return f"{message}; it fits alone: --micro-batch-tokens {length}"
    # The smallest change first: the head in chunks, then checkpointing, then both.
    candidates: List[MemoryOptions] = []
    chunk = options.logits_chunk_tokens or SUGGESTED_CHUNK_TOKENS
    for candidate in (
        dataclasses.replace(options, logits_chunk_tokens=chunk),
        dataclasses.replace(options, activation_checkpointing=True, logits_chunk_tokens=chunk),
    ):
        if candidate != options and candidate not in candidates:
            candidates.append(candidate)
    for candidate in candidates:
        for tokens in (largest, length):
            fits = rank_bytes(dims, tokens, world_size, candidate, compute_bytes)
            if fits <= capacity_bytes:
                budget = f" --micro-batch-tokens {length}" if tokens < largest else ""
                return f"{message}; it fits with {candidate.flags()}{budget} (~{fits / GIB:.1f} GiB)"
    best = candidates[-1] if candidates else options
    floor = rank_bytes(dims, length, world_size, best, compute_bytes)
    return (
        f"{message}; it does not fit even with {best.flags()} (~{floor / GIB:.1f} GiB): "
        "shorten the sequences (--max-tokens) or train on devices with more memory"
    )
