"""FSDP2, activation checkpointing and sequence parallelism, applied once over the plain model.

`fully_shard` per decoder layer, then the root (embeddings, final norm, head): parameters,
gradients and optimizer state are sharded across ranks; fp32 master weights, gradients reduced
in fp32, compute in the placement's dtype (bf16 on GPU, fp32 on CPU); with the placement's
`cpu_offload`, the shards live in pinned host memory and the optimizer steps there. With
`--sp N` > 1 the attention is Ulysses's (`sequence_parallel.py`); FSDP2 still shards over every
rank. The model may be on `meta` (`sharded_load.sharded_model` fills it afterwards) or already
loaded.

One rank computing in fp32 without offload is left unwrapped (`needs_fsdp`): there is nothing to
shard, cast or offload, and FSDP2 would still copy every parameter into its unsharded buffer
before each layer's forward and backward, and every gradient through its reduce-scatter buffers.
torchtitan (b5bcd76, `torchtitan/models/llama3/parallelize.py`) applies FSDP even at shard degree
1, for its mixed-precision policy; that is why bf16 keeps FSDP2 here, and only fp32, where the
policy casts nothing, goes without.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

from .model import Placement, decoder_layers
from .sequence_parallel import use_ulysses_attention


def parallelize(
    model: torch.nn.Module, where: Placement, activation_checkpointing: bool = False, sequence_parallel: int = 1
) -> torch.nn.Module:
    use_ulysses_attention(model, sequence_parallel)
    if activation_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if not needs_fsdp(where, dist.get_world_size()):
        return model
    policy = MixedPrecisionPolicy(param_dtype=where.compute_dtype, reduce_dtype=torch.float32)
    # Pinned host memory needs CUDA; a CPU placement with offload exists only in tests of this path.
    offload = CPUOffloadPolicy(pin_memory=where.device.type == "cuda") if where.cpu_offload else OffloadPolicy()
    for layer in decoder_layers(model):
        fully_shard(layer, mp_policy=policy, offload_policy=offload)
    fully_shard(model, mp_policy=policy, offload_policy=offload)
    return model


def needs_fsdp(where: Placement, world_size: int) -> bool:
    """FSDP2 shards over ranks, casts to the compute dtype and offloads to the host: with one rank,
    fp32 compute and no offload it would do none of them, only copies (docs/training.md: 7% of
    a SmolLM2-135M step on a CPU)."""
    return world_size > 1 or where.compute_dtype != torch.float32 or where.cpu_offload


def freeze(model: torch.nn.Module, where: Placement, sequence_parallel: int = 1) -> torch.nn.Module:
    """The KL reference: sharded the same way, no gradients, eval mode."""
    model.requires_grad_(False)
    model.eval()
    return parallelize(model, where, activation_checkpointing=False, sequence_parallel=sequence_parallel)
