"""The byte model's generation: a slot KV cache, and prefill / decode over it.

Each running sequence owns a slot and its own position, so sequences of different lengths
decode together in one batched step (continuous batching). Beside keys and values, a slot keeps
what decoding needs to continue the model's options from where its text stopped: the last token
written (token shift) and the digit positions (the run and line state, and every cached
position's digit and number index for the digit match). The arithmetic is the architecture's own
(`agentmath_models.byte_gpt`: the same layers, embeddings and digit functions), applied one
position at a time.

A decode step's attention reads each sequence's cache, so its cost is rows × columns. Reading
every row up to the longest one's length, as one matmul over the batch did, spent most of a step
on columns past a row's end (in an evaluation's mix of 40- to 768-token contexts, more than half
of them). So a slot lives in a cache *row*, and a step attends in groups of consecutive rows, each
over the columns of its longest row only: slices of the cache, no copy (`plan_rows`, the dynamic
programme the Hugging Face backend's packed batch plans with, over rows in cache order). Groups only pay where rows
of similar length sit side by side, so the cache re-sorts its rows, longest first, when what the
present order costs over the sorted order has added up to what a re-sort costs (a copy of the
occupied rows): rent until the rent paid would have bought it (`RESORT_CELLS_PER_CELL`). Slots
stay what the engine knows; rows are this module's.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

from agentmath_models.byte_gpt import PAD_TOKEN_ID, ByteGptModel, digit_features, digit_match, rotary_angles

from .decode_attention import plan_rows

# What one more attention group costs, in cells (a row × a cached position) of attention it would
# have to save: the fixed cost of its small kernels per layer over the time of one cell (measured
# on the 2-core AMD EPYC machine, one thread; docs/embedded-model.md).
GROUP_COST_CELLS = 512
# A re-sort copies every occupied row's keys, values and digit indices up to the longest row: about
# this many attention cells' time per copied cell.
RESORT_CELLS_PER_CELL = 2


class SlotKVCache:
    """Keys and values per layer, shaped [rows, kv_heads, context, head_dim], and per row the last
    token written and the digit-position state after it. `row_of[slot]` is the row a slot's
    sequence lives in; `lengths[row]` its cached positions (0: free)."""

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
        self.row_of = torch.arange(n_slots)
        self.slot_of = list(range(n_slots))
        self.lengths = [0] * n_slots
        self.resorts = 0
        self._plan: Optional[Tuple[Tuple[int, ...], List[Tuple[int, int]], int]] = None
        self._rent = 0

    def row(self, slot: int) -> int:
        return int(self.row_of[slot])

    def release(self, slot: int) -> None:
        """The slot's sequence is gone: its row is free (its stale cache is never read)."""
        self.lengths[self.row(slot)] = 0
        self._plan = None

    def sort_rows(self) -> None:
        """Moves the occupied rows to the front, longest first (ties keep their order), free
        rows after them; every slot keeps its sequence."""
        occupied = sorted((row for row in range(self.n_slots) if self.lengths[row] > 0), key=lambda row: -self.lengths[row])
        order = occupied + [row for row in range(self.n_slots) if self.lengths[row] == 0]
        if order == list(range(self.n_slots)):
            return
        if occupied:
            moved, width = torch.tensor(occupied), self.lengths[occupied[0]]
            for tensors in (self.keys, self.values):
                for tensor in tensors:
                    tensor[: len(occupied), :, :width] = tensor[moved, :, :width]
            for tensor in (self.key_index, self.key_number):
                tensor[: len(occupied), :width] = tensor[moved, :width]
        everything = torch.tensor(order)
        for name in ("last_tokens", "digit_runs", "line_numbers"):
            setattr(self, name, getattr(self, name)[everything])
        self.lengths = [self.lengths[row] for row in order]
        self.slot_of = [self.slot_of[row] for row in order]
        self.row_of[torch.tensor(self.slot_of)] = torch.arange(self.n_slots)
        self.resorts += 1
        self._plan = None
        self._rent = 0


def sorted_cost(lengths: Sequence[int], group_cost: int = GROUP_COST_CELLS) -> int:
    """What the same rows would cost sorted longest first (plan_groups' optimum)."""
    return plan_rows(range(len(lengths)), sorted(lengths, reverse=True), group_cost)[1]


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
    row = cache.row(slot)
    cos, sin = rotary_angles(config, torch.arange(start, end))
    # Row i (absolute position start+i) sees cached positions 0..start+i.
    mask = torch.full((time, end), float("-inf")).triu(start + 1).repeat(config.group_size, 1)
    first = cache.last_tokens[row : row + 1] if start > 0 else torch.tensor([PAD_TOKEN_ID])
    previous = torch.cat((first, input_ids[:-1]))
    cache.last_tokens[row] = input_ids[-1]
    state = slice(row, row + 1)
    zero = torch.zeros(1, dtype=torch.long)
    run_before = cache.digit_runs[state] if start > 0 else zero
    numbers_before = cache.line_numbers[state] if start > 0 else zero
    index, number, run_after, numbers_after = digit_features(input_ids[None], run_before, numbers_before)
    cache.digit_runs[state], cache.line_numbers[state] = run_after, numbers_after
    cache.key_index[row, start:end], cache.key_number[row, start:end] = index[0], number[0]
    cache.lengths[row] = end
    cache._plan = None
    digits = (index, number) if config.uses_digit_features else None
    match = None
    if config.digit_match:
        match = digit_match(index, number, cache.key_index[state, :end], cache.key_number[state, :end])
    x = model.embed(input_ids[None], previous[None], digits)
    for layer_index, layer in enumerate(model.layers):
        q, k, v = layer.project(x, cos, sin)
        cache.keys[layer_index][row, :, start:end] = k[0]
        cache.values[layer_index][row, :, start:end] = v[0]
        keys = cache.keys[layer_index][state, :, :end]
        values = cache.values[layer_index][state, :, :end]
        x = layer.attend(x, q, keys, values, layer.with_match(mask, match))
    return model.norm(x[0, -1])


@torch.no_grad()
def decode(
    model: ByteGptModel,
    cache: SlotKVCache,
    tokens: torch.Tensor,
    positions: torch.Tensor,
    active: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """One step for slots 0..n-1: token i sits at positions[i] of slot i. Returns the hidden states
    [n, d] after the final norm (zeros for inactive rows). Only the slots where `active` is true
    (all by default) are computed and write their keys, values and state; the others are left as
    they are."""
    config = model.config
    slots = tokens.shape[0]
    chosen = torch.arange(slots) if active is None else active.nonzero().flatten()
    hidden = torch.zeros(slots, config.hidden_size)
    if chosen.numel() == 0:
        return hidden
    _check_length(model, int(positions[chosen].max()) + 1)
    groups = _step_groups(cache, chosen, positions)
    # The step's entries in cache-row order.
    order = torch.argsort(cache.row_of[chosen])
    entries = chosen[order]
    rows = cache.row_of[entries]
    tokens, positions = tokens[entries], positions[entries]
    lengths = (positions + 1).tolist()
    for row, length in zip(rows.tolist(), lengths):
        cache.lengths[row] = length
    cos, sin = rotary_angles(config, positions[:, None])
    first = positions == 0
    previous = torch.where(first, torch.full_like(tokens, PAD_TOKEN_ID), cache.last_tokens[rows])
    zeros = torch.zeros_like(tokens)
    run_before = torch.where(first, zeros, cache.digit_runs[rows])
    numbers_before = torch.where(first, zeros, cache.line_numbers[rows])
    index, number, run_after, numbers_after = digit_features(tokens[:, None], run_before, numbers_before)
    cache.last_tokens[rows] = tokens
    cache.digit_runs[rows] = run_after
    cache.line_numbers[rows] = numbers_after
    cache.key_index[rows, positions] = index[:, 0]
    cache.key_number[rows, positions] = number[:, 0]
    digits = (index[:, 0], number[:, 0]) if config.uses_digit_features else None
    # Per group: its entries, its rows, the columns it reads, and its additive bias for every
    # layer at once ([layers, rows·kv, group, columns]: the digit match, plus -inf past a row's
    # end when its rows differ in length; None when neither applies).
    kv, per_kv, layers = config.num_key_value_heads, config.group_size, len(model.layers)
    weights = None
    if config.digit_match:
        weights = torch.stack([layer.digit_match for layer in model.layers]).view(layers, 1, kv, per_kv, 1)
    spans = []
    for first_entry, end_entry in groups:
        part = slice(first_entry, end_entry)
        count = end_entry - first_entry
        first_row = int(rows[first_entry])
        width = max(lengths[part])
        cells = slice(first_row, first_row + count)
        bias = None
        if weights is not None:
            match = digit_match(index[part], number[part], cache.key_index[cells, :width], cache.key_number[cells, :width])
            bias = weights * match[None, :, None, :, :]
        if min(lengths[part]) != width:
            beyond = torch.arange(width)[None, :] > positions[part, None]
            mask = torch.zeros(beyond.shape).masked_fill_(beyond, float("-inf"))[None, :, None, None, :]
            bias = mask if bias is None else bias + mask
        if bias is not None:
            bias = bias.expand(layers, count, kv, per_kv, width).reshape(layers, count * kv, per_kv, width)
        spans.append((part, cells, count * kv, width, bias))
    x = model.embed(tokens, previous, digits)[:, None, :]
    for layer_index, layer in enumerate(model.layers):
        q, k, v = layer.project(x, cos, sin)
        keys, values = cache.keys[layer_index], cache.values[layer_index]
        keys[rows, :, positions] = k[:, :, 0]
        values[rows, :, positions] = v[:, :, 0]
        q = q.reshape(q.shape[0], kv, per_kv, layer.head_dim) * layer.scale
        attended = torch.empty_like(q)
        for part, cells, heads, width, bias in spans:
            # The attention of `ByteGptLayer.attention`, in three batched kernels per group.
            query = q[part].view(heads, per_kv, layer.head_dim)
            group_keys = keys[cells, :, :width].reshape(heads, width, layer.head_dim).transpose(1, 2)
            scores = torch.bmm(query, group_keys) if bias is None else torch.baddbmm(bias[layer_index], query, group_keys)
            group_values = values[cells, :, :width].reshape(heads, width, layer.head_dim)
            torch.bmm(torch.softmax(scores, dim=-1), group_values, out=attended[part].view(heads, per_kv, layer.head_dim))
        x = layer.finish(x, attended)
    hidden[entries] = model.norm(x[:, 0])
    return hidden


def _step_groups(cache: SlotKVCache, chosen: torch.Tensor, positions: torch.Tensor) -> List[Tuple[int, int]]:
    """This step's attention groups (entry ranges in row order); re-sorts the cache first when the
    present row order has cost, over the sorted one, what a re-sort costs."""
    for _ in range(2):
        rows = cache.row_of[chosen]
        order = torch.argsort(rows)
        row_list = rows[order].tolist()
        length_list = (positions[chosen][order] + 1).tolist()
        key = tuple(row_list)
        if cache._plan is None or cache._plan[0] != key:
            # Rows joined or left: plan again. Between such changes every row grows by one column
            # a step, which keeps the groups right.
            groups, cost = plan_rows(row_list, length_list, GROUP_COST_CELLS)
            cache._plan = (key, groups, cost - sorted_cost(length_list, GROUP_COST_CELLS))
        _, groups, excess = cache._plan
        cache._rent += excess
        occupied = [length for length in cache.lengths if length > 0]
        if excess <= 0 or cache._rent < RESORT_CELLS_PER_CELL * len(occupied) * max(occupied, default=0):
            return groups
        cache.sort_rows()
    return groups
