"""Sequences → ranks → micro-batches packed by a token budget, with no padding.

A packed micro-batch is one row: the sequences' ids end to end, position ids restarting at 0
for each sequence, and each sequence's span and cumulative bounds (`cu_seqlens`). The model
gets the bounds as transformers' `cu_seq_lens_q/k` and `max_length_q/k` forward kwargs; the
trainer's attention (attention.py) attends within each sequence from them, with no [T × T]
mask (with `sdpa`, transformers derives a dense block-diagonal mask from the position ids
instead). `unpack` turns per-token values of the row back into padded [b, L] rows, so the
losses (written for padded batches) apply unchanged.
The first token of each sequence has no prediction: its log-prob is 0, as in a padded batch.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .lm_head_logprobs import model_token_logprobs
from .losses import token_entropy, token_logprobs


def split_across_ranks(lengths: Sequence[int], world_size: int) -> List[List[int]]:
    """Sequence indices per rank, balanced by tokens (longest first onto the lightest rank);
    each rank's list is in batch order so every rank packs deterministically."""
    loads = [0] * world_size
    owned: List[List[int]] = [[] for _ in range(world_size)]
    for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        rank = min(range(world_size), key=lambda r: (loads[r], r))
        owned[rank].append(index)
        loads[rank] += lengths[index]
    return [sorted(indices) for indices in owned]


def micro_batches(indices: Sequence[int], lengths: Sequence[int], token_budget: int) -> List[List[int]]:
    """First-fit decreasing into micro-batches of at most `token_budget` tokens (a longer
    sequence gets one of its own)."""
    bins: List[Tuple[int, List[int]]] = []
    for index in sorted(indices, key=lambda i: (-lengths[i], i)):
        for slot, (used, members) in enumerate(bins):
            if used + lengths[index] <= token_budget:
                bins[slot] = (used + lengths[index], members + [index])
                break
        else:
            bins.append((lengths[index], [index]))
    return [sorted(members) for _, members in bins]


@dataclasses.dataclass
class PackedRow:
    input_ids: torch.Tensor  # [1, T] int64
    position_ids: torch.Tensor  # [1, T] int64
    spans: List[Tuple[int, int]]  # [start, end) of each sequence in the row
    cu_seqlens: torch.Tensor  # [S + 1] int32 on the row's device: 0, then each span's end

    @property
    def max_length(self) -> int:
        return max(end - start for start, end in self.spans)

    def attention_kwargs(self) -> Dict[str, Union[torch.Tensor, int]]:
        """The sequence bounds as the model's forward kwargs (transformers' FlashAttentionKwargs);
        one tensor per row, so every layer's attention sees the same object."""
        return {
            "cu_seq_lens_q": self.cu_seqlens,
            "cu_seq_lens_k": self.cu_seqlens,
            "max_length_q": self.max_length,
            "max_length_k": self.max_length,
        }


def pack(sequences: Sequence[torch.Tensor], device: torch.device) -> PackedRow:
    spans, start = [], 0
    for ids in sequences:
        spans.append((start, start + int(ids.shape[0])))
        start += int(ids.shape[0])
    input_ids = torch.cat([ids.to(torch.int64) for ids in sequences])[None].to(device)
    positions = torch.cat([torch.arange(int(ids.shape[0]), dtype=torch.int64) for ids in sequences])[None].to(device)
    cu_seqlens = torch.tensor([0] + [end for _, end in spans], dtype=torch.int32).to(device)
    return PackedRow(input_ids, positions, spans, cu_seqlens)


def packed_logprobs(logits: torch.Tensor, row: PackedRow, temperature: float = 1.0) -> torch.Tensor:
    """log π(x_t | x_<t) over the packed row [1, T] at the sampling temperature; 0 at each
    sequence's first token (its 'prediction' would come from the previous sequence)."""
    logprobs = token_logprobs(logits, row.input_ids, temperature)
    starts = torch.tensor([start for start, _ in row.spans], device=logprobs.device)
    return logprobs.index_fill(1, starts, 0.0)


def packed_scores(
    model: torch.nn.Module, row: PackedRow, temperature: float = 1.0, chunk_tokens: int = 0, entropy: bool = True
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(log π, entropy) over the packed row, each [1, T], 0 at each sequence's first token.

    chunk_tokens > 0: from the hidden states, the LM head a chunk of tokens at a time (never
    [T × V]); 0: from the model's full logits (the entropy then carries no gradient)."""
    starts = torch.tensor([start for start, _ in row.spans], device=row.input_ids.device)
    if chunk_tokens > 0:
        logprobs, entropies = model_token_logprobs(
            model, row.input_ids, row.position_ids, None, temperature, chunk_tokens, **row.attention_kwargs()
        )
        return logprobs.index_fill(1, starts, 0.0), entropies.index_fill(1, starts, 0.0) if entropy else None
    logits = model(input_ids=row.input_ids, position_ids=row.position_ids, use_cache=False, **row.attention_kwargs()).logits
    logprobs = packed_logprobs(logits, row, temperature)
    if not entropy:
        return logprobs, None
    with torch.no_grad():
        entropies = token_entropy(logits, temperature).index_fill(1, starts, 0.0)
    return logprobs, entropies


def unpack(values: torch.Tensor, row: PackedRow, fill: float = 0.0) -> torch.Tensor:
    """[1, T] (or [T]) per-token values → [b, L] padded rows, one per sequence in the row."""
    flat = values.reshape(-1)
    out = flat.new_full((len(row.spans), row.max_length), fill)
    for slot, (start, end) in enumerate(row.spans):
        out[slot, : end - start] = flat[start:end]
    return out


def padded(rows: Sequence[torch.Tensor], width: int, fill: float = 0.0, dtype=torch.float32) -> torch.Tensor:
    out = torch.full((len(rows), width), fill, dtype=dtype)
    for slot, row in enumerate(rows):
        values = row if isinstance(row, torch.Tensor) else torch.from_numpy(np.array(row))
        out[slot, : values.shape[0]] = values.to(dtype)
    return out
