"""The byte model's generation: a slot KV cache, and prefill / decode over it.

Each running sequence owns a slot and its own position, so sequences of different lengths
decode together in one batched step (continuous batching); idle slots inside the decoded range
are computed and ignored. Beside keys and values, a slot keeps what decoding needs to continue
the model's options from where its text stopped: the last token written (token shift) and the
digit positions (the run and line state, and every cached position's digit and number index for
the digit match). The arithmetic is the architecture's own (`agentmath_models.byte_gpt`: the
same layers, embeddings and digit functions), applied one position at a time.
"""

from __future__ import annotations

from typing import Optional

import torch

from agentmath_models.byte_gpt import PAD_TOKEN_ID, ByteGptModel, digit_features, digit_match, rotary_angles


class SlotKVCache:
    """Keys and values per layer, shaped [slots, kv_heads, context, head_dim], and per slot the
    last token written and the digit-position state after it."""

    def __init__(self, model: ByteGptModel, n_slots: int, dtype: torch.dtype = torch.float32) -> None:
        config = model.config
        shape = (n_slots, config.num_key_value_heads, config.max_position_embeddings, config.head_dim)
        self.n_slots = n_slots
        self.keys = [torch.zeros(shape, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.values = [torch.zeros(shape, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.last_tokens = torch.full((n_slots,), PAD_TOKEN_ID, dtype=torch.long)
        # Digit positions of every cached position (keys of the digit match).
        self.key_index = torch.zeros((n_slots, config.max_position_embeddings), dtype=torch.long)
        self.key_number = torch.zeros((n_slots, config.max_position_embeddings), dtype=torch.long)
        self.digit_runs = torch.zeros(n_slots, dtype=torch.long)
        self.line_numbers = torch.zeros(n_slots, dtype=torch.long)


def _check_length(model: ByteGptModel, length: int) -> None:
    if length > model.config.max_position_embeddings:
        raise ValueError(f"sequence of {length} tokens exceeds the context length {model.config.max_position_embeddings}")


@torch.no_grad()
def prefill(model: ByteGptModel, cache: SlotKVCache, slot: int, input_ids: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Runs 1-D ids into `slot` from position `start`; returns the last position's hidden state [d]
    after the final norm."""
    config = model.config
    time = input_ids.shape[0]
    end = start + time
    _check_length(model, end)
    cos, sin = rotary_angles(config, torch.arange(start, end))
    # Row i (absolute position start+i) sees cached positions 0..start+i.
    mask = torch.full((time, end), float("-inf")).triu(start + 1).repeat(config.group_size, 1)
    first = cache.last_tokens[slot : slot + 1] if start > 0 else torch.tensor([PAD_TOKEN_ID])
    previous = torch.cat((first, input_ids[:-1]))
    cache.last_tokens[slot] = input_ids[-1]
    state = slice(slot, slot + 1)
    zero = torch.zeros(1, dtype=torch.long)
    run_before = cache.digit_runs[state] if start > 0 else zero
    numbers_before = cache.line_numbers[state] if start > 0 else zero
    index, number, run_after, numbers_after = digit_features(input_ids[None], run_before, numbers_before)
    cache.digit_runs[state], cache.line_numbers[state] = run_after, numbers_after
    cache.key_index[slot, start:end], cache.key_number[slot, start:end] = index[0], number[0]
    digits = (index, number) if config.uses_digit_features else None
    match = None
    if config.digit_match:
        match = digit_match(index, number, cache.key_index[state, :end], cache.key_number[state, :end])
    x = model.embed(input_ids[None], previous[None], digits)
    for layer_index, layer in enumerate(model.layers):
        q, k, v = layer.project(x, cos, sin)
        cache.keys[layer_index][slot, :, start:end] = k[0]
        cache.values[layer_index][slot, :, start:end] = v[0]
        keys = cache.keys[layer_index][slot : slot + 1, :, :end]
        values = cache.values[layer_index][slot : slot + 1, :, :end]
        x = layer.attend(x, q, keys, values, layer.with_match(mask, match))
    return model.norm(x[0, -1])


@torch.no_grad()
def decode(
    model: ByteGptModel,
    cache: SlotKVCache,
    tokens: torch.Tensor,
    positions: torch.Tensor,
    length: Optional[int] = None,
    active: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """One step for slots 0..n-1: token i sits at positions[i] of slot i. Returns the hidden states
    [n, d] after the final norm. Only rows where `active` is true (all by default) write their
    keys, values and state to the cache; the others leave their slot as it is."""
    config = model.config
    slots = tokens.shape[0]
    if length is None:
        length = int(positions.max().item()) + 1
    slot_index = torch.arange(slots)
    written = slot_index if active is None else slot_index[active]
    cos, sin = rotary_angles(config, positions[:, None])
    visible = torch.arange(length)[None, :] <= positions[:, None]
    mask = torch.zeros(slots, length).masked_fill_(~visible, float("-inf"))[:, None, None, :]
    first = positions == 0
    previous = torch.where(first, torch.full_like(tokens, PAD_TOKEN_ID), cache.last_tokens[:slots])
    zeros = torch.zeros_like(tokens)
    run_before = torch.where(first, zeros, cache.digit_runs[:slots])
    numbers_before = torch.where(first, zeros, cache.line_numbers[:slots])
    index, number, run_after, numbers_after = digit_features(tokens[:, None], run_before, numbers_before)
    # Only active rows advance their slot's state: an idle row may be a slot prefilled in this
    # very step, whose first decode (next step) continues from its prompt.
    cache.last_tokens[written] = tokens[written]
    cache.digit_runs[written] = run_after[written]
    cache.line_numbers[written] = numbers_after[written]
    cache.key_index[written, positions[written]] = index[written, 0]
    cache.key_number[written, positions[written]] = number[written, 0]
    digits = (index[:, 0], number[:, 0]) if config.uses_digit_features else None
    match = None
    if config.digit_match:
        # An idle row's match is computed against stale keys and ignored with the row.
        match = digit_match(index, number, cache.key_index[:slots, :length], cache.key_number[:slots, :length])
    x = model.embed(tokens, previous, digits)[:, None, :]
    for layer_index, layer in enumerate(model.layers):
        q, k, v = layer.project(x, cos, sin)
        keys, values = cache.keys[layer_index], cache.values[layer_index]
        keys[written, :, positions[written]] = k[written, :, 0]
        values[written, :, positions[written]] = v[written, :, 0]
        x = layer.attend(x, q, keys[:slots, :, :length], values[:slots, :, :length], layer.with_match(mask, match))
    return model.norm(x[:, 0])
