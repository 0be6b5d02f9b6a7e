"""Causal attention within each sequence of a packed row, without a [T × T] mask.

A packed row [B, T] holds sequences end to end (packing.py); their bounds come as
`cu_seq_lens_q` (cumulative lengths over the row's B·T tokens, transformers' own
`FlashAttentionKwargs` name, passed through the model's forward kwargs) or, when not given,
from `position_ids` (a sequence starts wherever the position does not follow the previous
one, as transformers' `find_packed_sequence_indices` reads them). Each sequence attends
causally to itself only:

- `flash`: `flash_attn_varlen_func` over the whole row (GQA native), on CUDA where the
  `flash_attn` package is installed (it is not in our lock);
- `loop`: `scaled_dot_product_attention(is_causal=True)` per sequence on its slice — on CUDA
  torch's own flash/cuDNN kernels, on CPU its blockwise kernel — so memory is that of one
  sequence's attention at most. The default everywhere `flash` is not;
- `flex`: `flex_attention` (compiled on CUDA) with a document-causal `BlockMask` built from
  the bounds at block granularity. Not a default: untested on a GPU here, and a compiled
  flex that falls back to eager (after too many recompiles) computes all [T × T] scores;
  on CPU it has no backward (scoring only).

`varlen_attention_forward` has the signature of transformers' `AttentionInterface` and is
registered as `agentmath_varlen` (backend by device) and `agentmath_varlen_{flash,flex,loop}`
(one backend, to compare them), each with a mask function that never builds a mask: the
model's `create_causal_mask` returns None. A padding mask, a KV cache (query shorter than
keys), a sliding window, logit soft-capping and attention sinks are refused, not ignored.
Written against transformers 5.24 (`masking_utils.py`, `integrations/sdpa_attention.py`,
`modeling_flash_attention_utils.py`).
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface

ATTENTION_IMPLEMENTATION = "agentmath_varlen"
BACKENDS = ("flash", "flex", "loop")


def cu_seqlens_from_position_ids(position_ids: torch.Tensor, batch: int) -> torch.Tensor:
    """[B, T] (or [1, T], broadcast over B) → cumulative sequence lengths over the B·T tokens,
    int32: a sequence starts where the position is not the previous one plus 1, and at each row."""
    positions = position_ids.expand(batch, -1)
    starts = torch.ones_like(positions, dtype=torch.bool)
    starts[:, 1:] = positions[:, 1:] != positions[:, :-1] + 1
    flat = starts.reshape(-1).nonzero().reshape(-1).to(torch.int32)
    total = torch.tensor([positions.numel()], dtype=torch.int32, device=positions.device)
    return torch.cat((flat, total))


def choose_backend(device: torch.device) -> str:
    if device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None:
        return "flash"
    return "loop"


def varlen_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    cu_seqlens: torch.Tensor,
    max_length: Optional[int] = None,
    scaling: Optional[float] = None,
    causal: bool = True,
    dropout: float = 0.0,
    backend: Optional[str] = None,
) -> torch.Tensor:
    """query [1, Hq, N, D], key and value [1, Hkv, N, D] (Hkv divides Hq), cu_seqlens [S + 1]
    int32 over the N tokens → [1, N, Hq, D]: attention within each of the S sequences."""
    backend = backend or choose_backend(query.device)
    if backend == "flash":
        return _flash(query, key, value, cu_seqlens, max_length, scaling, causal, dropout)
    if backend == "flex":
        if dropout > 0:
            return _loop(query, key, value, cu_seqlens, scaling, causal, dropout)
        return _flex(query, key, value, cu_seqlens, scaling, causal)
    if backend == "loop":
        return _loop(query, key, value, cu_seqlens, scaling, causal, dropout)
    raise ValueError(f"attention backend {backend!r}: expected one of {', '.join(BACKENDS)}")


def _loop(query, key, value, cu_seqlens, scaling, causal, dropout) -> torch.Tensor:
    bounds = host_bounds(cu_seqlens)
    gqa = query.shape[1] != key.shape[1]
    parts = [
        F.scaled_dot_product_attention(
            query[:, :, start:end],
            key[:, :, start:end],
            value[:, :, start:end],
            dropout_p=dropout,
            is_causal=causal,
            scale=scaling,
            enable_gqa=gqa,
        )
        for start, end in zip(bounds[:-1], bounds[1:])
        if end > start
    ]
    return torch.cat(parts, dim=2).transpose(1, 2)


def _flash(query, key, value, cu_seqlens, max_length, scaling, causal, dropout) -> torch.Tensor:
    from flash_attn import flash_attn_varlen_func

    if max_length is None:
        max_length = int((cu_seqlens[1:] - cu_seqlens[:-1]).max())
    cu = cu_seqlens.to(torch.int32)
    # flash-attn takes [N, H, D] with GQA by head count.
    out = flash_attn_varlen_func(
        query[0].transpose(0, 1),
        key[0].transpose(0, 1),
        value[0].transpose(0, 1),
        cu_seqlens_q=cu,
        cu_seqlens_k=cu,
        max_seqlen_q=max_length,
        max_seqlen_k=max_length,
        dropout_p=dropout,
        softmax_scale=scaling,
        causal=causal,
    )
    return out[None]


class _RowCache:
    """What every layer of one forward (and its recomputation under activation checkpointing)
    derives alike from the row's cu_seqlens: its bounds on the host (one device sync per row,
    not per layer) and its BlockMask. Keyed on the tensor's identity: a packed row passes one."""

    def __init__(self) -> None:
        self.key: Optional[torch.Tensor] = None
        self.values: Dict[object, object] = {}

    def get(self, cu_seqlens: torch.Tensor, name: object, make: Callable[[], object]) -> object:
        if self.key is not cu_seqlens:
            self.key, self.values = cu_seqlens, {}
        if name not in self.values:
            self.values[name] = make()
        return self.values[name]


_row_cache = _RowCache()
_compiled_flex: Optional[Callable] = None


def host_bounds(cu_seqlens: torch.Tensor) -> List[int]:
    return _row_cache.get(cu_seqlens, "bounds", cu_seqlens.tolist)  # type: ignore[return-value]


def document_ids(cu_seqlens: torch.Tensor, tokens: int) -> torch.Tensor:
    """[N] int32: the index of the sequence each token belongs to."""
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).to(torch.int64)
    sequences = torch.arange(lengths.shape[0], device=cu_seqlens.device, dtype=torch.int32)
    return torch.repeat_interleave(sequences, lengths, output_size=tokens)


def document_block_layout(cu_seqlens: torch.Tensor, tokens: int, causal: bool = True, block: int = 128):
    """(partial, full): [N/128]² booleans over (query block, key block). A pair is kept when the
    two blocks share a sequence (and, causal, the key block is not after the query block); it is
    full (the kernel skips mask_mod) when both lie inside one sequence, wholly before the
    diagonal, with no padding; else partial."""
    blocks = (tokens + block - 1) // block
    documents = document_ids(cu_seqlens, tokens)
    starts = torch.arange(blocks, device=documents.device) * block
    first = documents[starts]
    last = documents[torch.clamp(starts + block, max=tokens) - 1]
    shares = torch.maximum(first[:, None], first[None, :]) <= torch.minimum(last[:, None], last[None, :])
    single = (first == last) & (starts + block <= tokens)
    full = single[:, None] & single[None, :] & (first[:, None] == first[None, :])
    if causal:
        index = torch.arange(blocks, device=documents.device)
        shares = shares & (index[None, :] <= index[:, None])
        full = full & (index[None, :] < index[:, None])
    return shares & ~full, full


def document_block_mask(cu_seqlens: torch.Tensor, tokens: int, causal: bool = True, block: int = 128):
    """flex_attention's BlockMask for attention within each sequence, built from the sequences'
    bounds block by block (`document_block_layout`), never from the [N × N] mask that
    `create_block_mask` evaluates its mask_mod over when not compiled."""
    from torch.nn.attention.flex_attention import BlockMask

    partial, full = document_block_layout(cu_seqlens, tokens, causal, block)
    # Padded to whole blocks with a sequence of its own: the kernels may call mask_mod on the
    # last block's padding.
    blocks = partial.shape[0]
    documents = F.pad(document_ids(cu_seqlens, tokens), (0, blocks * block - tokens), value=-1)

    def kv_blocks(keep: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        # Kept key blocks first, in order (a stable sort of "not kept"), as BlockMask reads them.
        order = torch.sort((~keep).to(torch.int8), dim=-1, stable=True).indices.to(torch.int32)
        return keep.sum(-1).to(torch.int32)[None, None], order[None, None]

    def same_document(_batch, _head, q_index, kv_index):
        inside = documents[q_index] == documents[kv_index]
        return inside & (q_index >= kv_index) if causal else inside

    partial_count, partial_indices = kv_blocks(partial)
    full_count, full_indices = kv_blocks(full)
    return BlockMask.from_kv_blocks(
        partial_count, partial_indices, full_count, full_indices, block, same_document, seq_lengths=(tokens, tokens)
    )


def _flex(query, key, value, cu_seqlens, scaling, causal) -> torch.Tensor:
    global _compiled_flex
    from torch.nn.attention.flex_attention import flex_attention

    tokens = query.shape[2]
    block_mask = _row_cache.get(cu_seqlens, ("block-mask", causal), lambda: document_block_mask(cu_seqlens, tokens, causal))
    # Uncompiled flex_attention computes every score ([T × T]); compiled, only the mask's blocks.
    if query.device.type == "cuda":
        if _compiled_flex is None:
            _compiled_flex = torch.compile(flex_attention)
        attend = _compiled_flex
    else:
        attend = flex_attention
    out = attend(query, key, value, block_mask=block_mask, scale=scaling, enable_gqa=query.shape[1] != key.shape[1])
    return out.transpose(1, 2)


def varlen_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    dropout: float = 0.0,
    scaling: Optional[float] = None,
    is_causal: Optional[bool] = None,
    attention_backend: Optional[str] = None,
    **kwargs,
) -> Tuple[torch.Tensor, None]:
    """transformers' attention signature: query [B, Hq, T, D], key/value [B, Hkv, T, D] →
    ([B, T, Hq, D], None). Sequence bounds from `cu_seq_lens_q` (over the B·T tokens) and
    `max_length_q`, else from `position_ids`, else one sequence per row. `attention_backend`:
    one of BACKENDS, else chosen by device (`choose_backend`)."""
    if attention_mask is not None:
        raise ValueError(f"{ATTENTION_IMPLEMENTATION} takes packed rows without padding; got an attention mask")
    for name in ("sliding_window", "softcap", "s_aux"):
        if kwargs.get(name) is not None:
            raise ValueError(f"{ATTENTION_IMPLEMENTATION} does not implement {name}; load the model with 'sdpa'")
    batch, _, length, _ = query.shape
    if key.shape[2] != length:
        raise ValueError(f"{ATTENTION_IMPLEMENTATION} is for training and scoring: {length} queries, {key.shape[2]} keys (a KV cache?)")
    cu_seqlens = kwargs.get("cu_seq_lens_q")
    max_length = kwargs.get("max_length_q")
    if cu_seqlens is None:
        position_ids = kwargs.get("position_ids")
        if position_ids is not None:
            cu_seqlens = cu_seqlens_from_position_ids(position_ids, batch)
        else:
            cu_seqlens = torch.arange(0, batch * length + 1, length, dtype=torch.int32, device=query.device)
            max_length = length
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    if batch > 1:
        # Rows end to end: [B, H, T, D] → [1, H, B·T, D] (the bounds already split at each row).
        query, key, value = (t.transpose(0, 1).reshape(1, t.shape[1], batch * length, -1) for t in (query, key, value))
    out = varlen_attention(query, key, value, cu_seqlens, max_length, scaling, causal, dropout, attention_backend)
    return out.reshape(batch, length, out.shape[2], out.shape[3]), None


def no_mask(attention_mask: Optional[torch.Tensor] = None, **_kwargs) -> None:
    """The mask function for our implementation: never builds one. A padding mask with a
    padded token is refused (the sequences' bounds say everything a packed row needs)."""
    if attention_mask is not None and not bool(attention_mask.all()):
        raise ValueError(f"{ATTENTION_IMPLEMENTATION} takes packed rows without padding; got a padding mask")
    return None


def implementation_name(backend: Optional[str] = None) -> str:
    """The attn_implementation to load a model with: the device's choice, or one backend (to measure it)."""
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"attention backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    return ATTENTION_IMPLEMENTATION if backend is None else f"{ATTENTION_IMPLEMENTATION}_{backend}"


for _backend in (None, *BACKENDS):
    _forward = functools.partial(varlen_attention_forward, attention_backend=_backend) if _backend else varlen_attention_forward
    AttentionInterface.register(implementation_name(_backend), _forward)
    AttentionMaskInterface.register(implementation_name(_backend), no_mask)
