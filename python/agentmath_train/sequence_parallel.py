"""Sequence parallelism (DeepSpeed-Ulysses): one packed row split across the N ranks of a group.

The world is DP × SP: ranks [g·N, (g+1)·N) form SP group g, and data-parallel rank g takes the
g-th share of the batch. The N ranks of a group pack the same micro-batch rows; each takes a
contiguous 1/N of a row's tokens (the row padded at its end to a multiple of N with a sequence
of its own) with their global position ids. In every attention layer q, k, v of the local
tokens, [1, H, T/N, D], go through an all-to-all to [1, H/N, T, D] (the whole row, a subset of
the heads), causal attention runs per packed sequence over the row's bounds, and a second
all-to-all brings [1, H, T/N, D] back. Key/value heads that N does not divide are repeated to
H first; query heads that N does not divide are refused (ring attention would not need that;
it is not implemented). The LM head scores each rank's tokens against the following token of
the whole row (so a slice's last token predicts the next slice's first), and the per-token
log-probs and entropies are gathered over the group: every rank of the group then holds the
row's values and computes the same loss. The gather's backward keeps the rank's own slice of
the gradient, so the group's parameter gradients sum to the gradient of that one loss, and
FSDP2's average over all ranks × the world size (step.py) is the sum over data-parallel groups.
Statistics are counted by the group's first rank only.

How it differs from verl (verl/utils/ulysses.py, verl/models/transformers/monkey_patch.py):
registered as a transformers attention function instead of patching flash attention, the row's
bounds travel as a forward keyword instead of an all-gather of position ids, and the inner
attention is `causal_attention_per_sequence`: the trainer's varlen attention (attention.py) over
the whole row's sequence bounds. Needs gloo's or NCCL's all_to_all_single and all_gather_into_tensor,
both present for CPU tensors on gloo in torch 2.15.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from transformers import AttentionInterface

from .lm_head_logprobs import chunked_logprobs_entropy, final_hidden_states

from .attention import varlen_attention
from .packing import PackedRow, pack

ATTENTION_NAME = "agentmath_ulysses"
# The keyword a forward passes down to every attention call.
ROW_KEYWORD = "sequence_parallel_row"


@dataclasses.dataclass(frozen=True)
class RowSplit:
    """What an attention call needs of the whole row: its group and the sequences' bounds
    ([0, end₁, …, T′], the padding's own sequence included)."""

    group: dist.ProcessGroup
    bounds: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class SequenceParallel:
    size: int
    rank: int  # within the group
    group: Optional[dist.ProcessGroup]
    data_parallel_size: int
    data_parallel_rank: int

    @classmethod
    def create(cls, size: int) -> "SequenceParallel":
        """This rank's groups (a collective: every rank creates every group, in order)."""
        world, rank = dist.get_world_size(), dist.get_rank()
        if size < 1 or world % size != 0:
            raise ValueError(f"--sp {size}: must divide the world of {world} ranks (world = data-parallel × --sp)")
        group = None
        if size > 1:
            for first in range(0, world, size):
                created = dist.new_group(list(range(first, first + size)))
                if first == rank - rank % size:
                    group = created
        return cls(size, rank % size, group, world // size, rank // size)

    @property
    def counts_statistics(self) -> bool:
        """The group's ranks hold the same statistics: one of them counts them."""
        return self.rank == 0

    def scores(
        self, model: torch.nn.Module, row: PackedRow, temperature: float, chunk_tokens: int, entropy: bool
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """`packing.packed_scores` of the whole row, [1, T] each, every rank of the group
        computing 1/N of it (the LM head always in chunks: `chunk_tokens` 0 is one chunk)."""
        total = int(row.input_ids.shape[1])
        width = -(-total // self.size)
        padding = width * self.size - total
        device = row.input_ids.device
        ids = F.pad(row.input_ids, (0, padding))
        positions = torch.cat((row.position_ids, torch.arange(padding, device=device)[None]), 1)
        # The token each position predicts; the row's last position predicts nothing (a 0, dropped).
        targets = F.pad(ids[:, 1:], (0, 1))
        bounds = (0, *(end for _, end in row.spans), *((width * self.size,) if padding else ()))
        mine = slice(self.rank * width, (self.rank + 1) * width)
        hidden, head = final_hidden_states(
            model, ids[:, mine], positions[:, mine], None, **{ROW_KEYWORD: RowSplit(self.group, bounds)}
        )
        next_logprobs, next_entropy = chunked_logprobs_entropy(
            hidden[0], head.weight, head.bias, targets[0, mine], temperature, chunk_tokens or width
        )
        gathered = gather_slices(torch.stack((next_logprobs, next_entropy), 1), self.group)
        # log π(x_t | x_<t) is scored at position t − 1; 0 at each sequence's first token.
        shifted = F.pad(gathered[: total - 1].t(), (1, 0))
        starts = torch.tensor([start for start, _ in row.spans], device=device)
        logprobs = shifted[0:1].index_fill(1, starts, 0.0)
        return logprobs, shifted[1:2].index_fill(1, starts, 0.0) if entropy else None

    def idle_forward(self, model: torch.nn.Module, device: torch.device) -> torch.Tensor:
        """A group with fewer micro-batches than others still joins every collective: one
        token per rank, a loss of 0."""
        row = pack([torch.zeros(self.size, dtype=torch.int64)], device)
        logprobs, _ = self.scores(model, row, 1.0, 0, entropy=False)
        return logprobs.sum() * 0.0


def check_heads(config, size: int) -> None:
    """Refuses (ValueError) a model whose attention Ulysses cannot split N ways."""
    if size == 1:
        return
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    if heads % size != 0:
        raise ValueError(
            f"--sp {size}: the model's {heads} attention heads ({kv_heads} key/value heads) do not split across "
            f"{size} ranks; Ulysses sequence parallelism needs the heads divisible by --sp (ring attention, which "
            "would not, is not implemented)"
        )
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        raise ValueError(f"--sp {size}: layers of kind {sorted(kinds - {'full_attention'})} are not supported, only full causal attention")


def use_ulysses_attention(model: torch.nn.Module, size: int) -> torch.nn.Module:
    """The model's attention becomes `ulysses_attention` (nothing changes when size is 1)."""
    if size > 1 and not getattr(model, "_supports_attention_backend", False):
        raise ValueError(
            f"--sp {size}: {type(model).__name__} computes its own attention (transformers does not dispatch it), "
            "so it cannot be split across ranks; use --sp 1"
        )
    check_heads(model.config, size)
    if size > 1:
        model.set_attn_implementation(ATTENTION_NAME)
    return model


# Collectives with a gradient -----------------------------------------------------------------
class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, scatter_dim: int, gather_dim: int, group):  # type: ignore[override]
        ctx.dims, ctx.group = (scatter_dim, gather_dim), group
        return _all_to_all(tensor, scatter_dim, gather_dim, group)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        scatter_dim, gather_dim = ctx.dims
        return _all_to_all(grad, gather_dim, scatter_dim, ctx.group), None, None, None


def _all_to_all(tensor: torch.Tensor, scatter_dim: int, gather_dim: int, group) -> torch.Tensor:
    size = dist.get_world_size(group)
    if tensor.shape[scatter_dim] % size != 0:
        raise ValueError(f"all-to-all: dimension {scatter_dim} of {tuple(tensor.shape)} does not split {size} ways")
    send = torch.stack(tensor.chunk(size, dim=scatter_dim)).contiguous()
    received = torch.empty_like(send)
    dist.all_to_all_single(received, send, group=group)
    # received[i]: rank i's piece of `gather_dim`, this rank's part of `scatter_dim`.
    return torch.cat(received.unbind(0), dim=gather_dim)


def all_to_all(tensor: torch.Tensor, scatter_dim: int, gather_dim: int, group) -> torch.Tensor:
    """Splits `scatter_dim` across the group's ranks and joins `gather_dim` from them, in rank
    order; its backward is the reverse all-to-all."""
    return _AllToAll.apply(tensor, scatter_dim, gather_dim, group)


class _GatherSlices(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, group):  # type: ignore[override]
        size, rank = dist.get_world_size(group), dist.get_rank(group)
        ctx.piece, ctx.rank = tensor.shape[0], rank
        out = tensor.new_empty((tensor.shape[0] * size, *tensor.shape[1:]))
        dist.all_gather_into_tensor(out, tensor.contiguous(), group=group)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        return grad[ctx.rank * ctx.piece : (ctx.rank + 1) * ctx.piece].contiguous(), None


def gather_slices(tensor: torch.Tensor, group) -> torch.Tensor:
    """The group's slices joined along dim 0, in rank order. Every rank computes the same loss
    of the result, so the backward keeps this rank's own slice of the gradient (no sum)."""
    return _GatherSlices.apply(tensor, group)


# Attention -----------------------------------------------------------------------------------
def causal_attention_per_sequence(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bounds: Sequence[int], scaling: Optional[float], dropout: float = 0.0
) -> torch.Tensor:
    """Causal attention within each packed sequence: query [1, h, T, D], key and value
    [1, k, T, D] with k dividing h (grouped-query), `bounds` [0, …, T] → [1, h, T, D]. The
    trainer's varlen attention (attention.py: flash-attn's varlen kernel where installed, else
    SDPA per sequence) over the whole row's bounds."""
    cu_seqlens = torch.tensor(list(bounds), dtype=torch.int32, device=query.device)
    lengths = [end - start for start, end in zip(bounds[:-1], bounds[1:])]
    out = varlen_attention(query, key, value, cu_seqlens, max(lengths, default=0), scaling, True, dropout)
    return out.transpose(1, 2)


def ulysses_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    dropout: float = 0.0,
    scaling: Optional[float] = None,
    sliding_window: Optional[int] = None,
    **kwargs,
) -> Tuple[torch.Tensor, None]:
    """A transformers attention function: query [1, H, T/N, D], key and value [1, K, T/N, D]
    of this rank's tokens → [1, T/N, H, D]."""
    split: Optional[RowSplit] = kwargs.get(ROW_KEYWORD)
    if split is None:
        raise RuntimeError(
            f"{ATTENTION_NAME} attention needs the row's split ({ROW_KEYWORD}=…): run the model through SequenceParallel.scores"
        )
    if sliding_window is not None or kwargs.get("softcap") is not None or getattr(module, "sinks", None) is not None:
        raise NotImplementedError(f"{ATTENTION_NAME}: sliding windows, soft-capping and attention sinks are not supported")
    size = dist.get_world_size(split.group)
    if key.shape[1] % size != 0:
        repeats = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(repeats, dim=1), value.repeat_interleave(repeats, dim=1)
    # Heads scattered, tokens gathered: [1, H/N, T, D] over the whole row.
    query, key, value = (all_to_all(tensor, 1, 2, split.group) for tensor in (query, key, value))
    out = causal_attention_per_sequence(query, key, value, split.bounds, scaling, dropout)
    # Tokens scattered back, heads gathered: [1, H, T/N, D].
    out = all_to_all(out, 2, 1, split.group)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION_NAME, ulysses_attention)
