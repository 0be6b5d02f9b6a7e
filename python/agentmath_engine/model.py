"""The embedded policy: a byte-level decoder-only transformer with a slot KV cache.

Pre-norm blocks (LayerNorm, causal self-attention with grouped-query heads and rotary position
embeddings, GELU MLP), tied input/output embeddings. Two ways to run it:
  - `forward(input_ids)`: full causal pass over a [batch, time] tensor (training, scoring,
    reference generation without a cache);
  - `prefill` / `decode` against a `SlotKVCache`: each running sequence owns a slot and its own
    position, so sequences of different lengths decode together in one batched step
    (continuous batching). Idle slots inside the decoded range are computed and ignored.
Optional digit positions (`digit_features`): learned embeddings of each digit's index within
its number and of the number's ordinal within its line, computed from the byte ids; the slot
cache carries the per-slot state that decoding needs to continue them.
Queries are laid out [batch, kv_heads, group·time, head_dim] so one matmul per layer serves all
query heads that share a key/value head. Initialisation depends only on `config.seed`.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import PAD_TOKEN_ID, ModelConfig


_ZERO = ord("0")
_NINE = ord("9")
_NEWLINE = ord("\n")
# Initial digit-match weight (logit units): e^4 ≈ 55 times the weight of an unmatched key, so
# copying heads exist from the first step and only the values' use has to be learned.
DIGIT_MATCH_INIT = 4.0


def digit_match(query_index, query_number, key_index, key_number) -> torch.Tensor:
    """1.0 where the key is the next digit of the query's number: same number index (within its
    line) and digit index one higher ([batch, T_q] and [batch, T_k] → [batch, T_q, T_k])."""
    same = query_number[:, :, None] == key_number[:, None, :]
    following = key_index[:, None, :] == query_index[:, :, None] + 1
    return (same & following).float()


def digit_features(ids: torch.Tensor, run_before: torch.Tensor, numbers_before: torch.Tensor):
    """Digit positions of a [batch, time] id tensor that continues a text whose state is
    (`run_before`, `numbers_before`), each [batch]: the length of the digit run the text ended
    in (0 after a non-digit) and the digit runs started in its last line (both 0 at the start).

    Returns (index, number, run_after, numbers_after):
      - index [batch, time]: for a digit byte ('0'..'9'), its 1-based index within its run of
        consecutive digits (counted from the left, uncapped); 0 for any other token;
      - number [batch, time]: the ordinal within the current line of the digit run a digit
        belongs to (1 = first number of the line); for a non-digit, the ordinal the next run of
        its line would get (runs so far + 1). A newline ends its line: it and the bytes after
        it count from 1 again. Uncapped;
      - run_after, numbers_after [batch]: the state after the last position (for the next chunk).
    """
    batch, time = ids.shape
    digit = (ids >= _ZERO) & (ids <= _NINE)
    newline = ids == _NEWLINE
    steps = torch.arange(time).expand(batch, time)
    # Index: distance to the last non-digit (a virtual one run_before places before the start).
    before = -1 - run_before[:, None]
    last_other = torch.where(digit, torch.full_like(steps, -(1 << 40)), steps).cummax(dim=1).values.maximum(before)
    index = torch.where(digit, steps - last_other, torch.zeros_like(steps))
    previous_digit = torch.cat(((run_before > 0)[:, None], digit[:, :-1]), dim=1)
    starts = (digit & ~previous_digit).long().cumsum(dim=1)
    # Runs counted in the line: starts so far minus the count at the line's newline, if any.
    base = torch.where(newline, starts, -numbers_before[:, None].expand(batch, time)).cummax(dim=1).values
    in_line = starts - base
    number = torch.where(digit, in_line, in_line + 1)
    return index, number, index[:, -1], in_line[:, -1]


class SlotKVCache:
    """Keys and values per layer, shaped [slots, kv_heads, context, head_dim]; per slot, the last
    token written (the previous token of the next one, for token shift) and the digit-position
    state after it (the length of the digit run it ends, the digit runs of its line)."""

    def __init__(self, config: ModelConfig, n_slots: int, dtype: torch.dtype = torch.float32) -> None:
        shape = (n_slots, config.n_kv_heads, config.context_length, config.head_dim)
        self.n_slots = n_slots
        self.keys = [torch.zeros(shape, dtype=dtype) for _ in range(config.n_layers)]
        self.values = [torch.zeros(shape, dtype=dtype) for _ in range(config.n_layers)]
        self.last_tokens = torch.full((n_slots,), PAD_TOKEN_ID, dtype=torch.long)
        # Digit positions of every cached position (keys of the digit match).
        self.key_index = torch.zeros((n_slots, config.context_length), dtype=torch.long)
        self.key_number = torch.zeros((n_slots, config.context_length), dtype=torch.long)
        self.digit_runs = torch.zeros(n_slots, dtype=torch.long)
        self.line_numbers = torch.zeros(n_slots, dtype=torch.long)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on the last dim (halves convention): x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.d_model
        self.n_kv_heads = config.n_kv_heads
        self.group = config.group_size
        self.head_dim = config.head_dim
        self.scale = 1.0 / math.sqrt(config.head_dim)
        self.norm_attention = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, d + 2 * config.n_kv_heads * config.head_dim)
        self.attention_out = nn.Linear(d, d)
        self.norm_mlp = nn.LayerNorm(d)
        self.mlp_in = nn.Linear(d, config.mlp_ratio * d)
        self.mlp_out = nn.Linear(config.mlp_ratio * d, d)
        self.digit_match = nn.Parameter(torch.empty(config.n_heads)) if config.digit_match else None

    def with_match(self, mask: torch.Tensor, match: Optional[torch.Tensor]) -> torch.Tensor:
        """The additive mask plus this layer's digit-match scores (match [batch, T_q, T_k])."""
        if self.digit_match is None or match is None:
            return mask
        batch, time, keys = match.shape
        weights = self.digit_match.view(1, self.n_kv_heads, self.group, 1, 1)
        scores = (weights * match[:, None, None]).reshape(batch, self.n_kv_heads, self.group * time, keys)
        return scores + mask

    def project(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """q: [batch, kv_heads, group, time, hd]; k, v: [batch, kv_heads, time, hd]; rotary applied.
        cos/sin: [time, hd/2] (one sequence layout for all rows) or [batch, time, hd/2]."""
        batch, time, _ = x.shape
        fused = self.qkv(self.norm_attention(x)).view(batch, time, self.n_kv_heads, self.group + 2, self.head_dim)
        q = _rotate(fused[:, :, :, : self.group], cos[..., None, None, :], sin[..., None, None, :])
        k = _rotate(fused[:, :, :, self.group], cos[..., None, :], sin[..., None, :])
        return q.permute(0, 2, 3, 1, 4), k.transpose(1, 2), fused[:, :, :, self.group + 1].transpose(1, 2)

    def attend(self, x, q, keys, values, mask):
        """Attention of q over keys/values ([batch, kv, T_k, hd]); mask additive, broadcastable to
        [batch, kv, group·T_q, T_k]. Adds the output projection to the residual x."""
        batch, time, d = x.shape
        # Scaling q (time × head_dim) is cheaper than scaling the scores (time × time); the
        # mask is added in place (matmul's backward needs its inputs, not its output).
        q = q.reshape(batch, self.n_kv_heads, self.group * time, self.head_dim) * self.scale
        scores = torch.matmul(q, keys.transpose(-1, -2)).add_(mask)
        attended = torch.matmul(torch.softmax(scores, dim=-1), values)
        attended = attended.view(batch, self.n_kv_heads, self.group, time, self.head_dim)
        x = x + self.attention_out(attended.permute(0, 3, 1, 2, 4).reshape(batch, time, d))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.norm_mlp(x))))


class ByteGPT(nn.Module):
    """Decoder-only transformer over the 258-token byte vocabulary."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(config.seed)
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        # Built only when enabled, so models without it initialise exactly as before.
        self.previous_embedding = nn.Embedding(config.vocab_size, config.d_model) if config.token_shift else None
        d = config.d_model
        self.digit_index_embedding = nn.Embedding(config.max_digit_index + 1, d) if config.digit_index else None
        self.number_index_embedding = nn.Embedding(config.max_number_index + 1, d) if config.number_index else None
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.norm_final = nn.LayerNorm(config.d_model)
        self._initialise()
        torch.random.set_rng_state(generator_state)
        half = config.head_dim // 2
        inverse_frequency = 1.0 / (config.rope_base ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(config.context_length, dtype=torch.float32), inverse_frequency)
        self.register_buffer("rope_cos", torch.cos(angles), persistent=False)
        self.register_buffer("rope_sin", torch.sin(angles), persistent=False)

    def _initialise(self) -> None:
        """GPT-2 style: N(0, 0.02), residual projections scaled by 1/sqrt(2·layers)."""
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layers)
        for name, parameter in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(parameter)
            elif "norm" in name:
                nn.init.ones_(parameter)
            elif name.endswith("digit_match"):
                # The first head of each key/value group starts as a copying head; the others at 0.
                nn.init.zeros_(parameter)
                with torch.no_grad():
                    parameter.view(self.config.n_kv_heads, self.config.group_size)[:, 0] = DIGIT_MATCH_INIT
            elif name.endswith("attention_out.weight") or name.endswith("mlp_out.weight"):
                nn.init.normal_(parameter, 0.0, residual_std)
            else:
                nn.init.normal_(parameter, 0.0, 0.02)

    @property
    def uses_digit_features(self) -> bool:
        return self.digit_index_embedding is not None or self.number_index_embedding is not None

    def _embed(self, input_ids: torch.Tensor, previous_ids: Optional[torch.Tensor], digits=None) -> torch.Tensor:
        """Token embedding, plus the previous token's (PAD before the first) under token shift,
        plus the digit positions (`digits` = digit_features' index and number) when enabled."""
        x = self.embedding(input_ids)
        if self.previous_embedding is not None and previous_ids is not None:
            x = x + self.previous_embedding(previous_ids)
        if digits is not None:
            index, number = digits
            if self.digit_index_embedding is not None:
                x = x + self.digit_index_embedding(index.clamp(max=self.config.max_digit_index))
            if self.number_index_embedding is not None:
                x = x + self.number_index_embedding(number.clamp(max=self.config.max_number_index))
        return x

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm_final(x), self.embedding.weight)

    def _check_length(self, length: int) -> None:
        if length > self.config.context_length:
            raise ValueError(f"sequence of {length} tokens exceeds the context length {self.config.context_length}")

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits [batch, time, vocab] for every position of a [batch, time] id tensor."""
        time = input_ids.shape[1]
        self._check_length(time)
        cos, sin = self.rope_cos[:time], self.rope_sin[:time]
        # Query row g·time + i is position i of head g in its group: same causal row for every g.
        mask = torch.full((time, time), float("-inf")).triu(1).repeat(self.config.group_size, 1)
        previous = F.pad(input_ids[:, :-1], (1, 0), value=PAD_TOKEN_ID)
        digits, match = None, None
        if self.uses_digit_features:
            zeros = torch.zeros(input_ids.shape[0], dtype=torch.long)
            digits = digit_features(input_ids, zeros, zeros)[:2]
            if self.config.digit_match:
                match = digit_match(digits[0], digits[1], digits[0], digits[1])
        x = self._embed(input_ids, previous, digits)
        for block in self.blocks:
            q, k, v = block.project(x, cos, sin)
            x = block.attend(x, q, k, v, block.with_match(mask, match))
        return self._logits(x)

    @torch.no_grad()
    def prefill(self, cache: SlotKVCache, slot: int, input_ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Runs 1-D ids into `slot` from position `start`; returns the last position's logits [vocab]."""
        time = input_ids.shape[0]
        end = start + time
        self._check_length(end)
        cos, sin = self.rope_cos[start:end], self.rope_sin[start:end]
        # Row i (absolute position start+i) sees cached positions 0..start+i.
        mask = torch.full((time, end), float("-inf")).triu(start + 1).repeat(self.config.group_size, 1)
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
        digits = (index, number) if self.uses_digit_features else None
        match = None
        if self.config.digit_match:
            match = digit_match(index, number, cache.key_index[state, :end], cache.key_number[state, :end])
        x = self._embed(input_ids[None], previous[None], digits)
        for layer, block in enumerate(self.blocks):
            q, k, v = block.project(x, cos, sin)
            cache.keys[layer][slot, :, start:end] = k[0]
            cache.values[layer][slot, :, start:end] = v[0]
            keys = cache.keys[layer][slot : slot + 1, :, :end]
            values = cache.values[layer][slot : slot + 1, :, :end]
            x = block.attend(x, q, keys, values, block.with_match(mask, match))
        return self._logits(x[0, -1])

    @torch.no_grad()
    def decode(
        self,
        cache: SlotKVCache,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        length: Optional[int] = None,
        active: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """One step for slots 0..n-1: token i sits at positions[i] of slot i. Returns [n, vocab].
        Only rows where `active` is true (all by default) write their keys and values to the
        cache; the others must leave their slot's cache as it is."""
        slots = tokens.shape[0]
        if length is None:
            length = int(positions.max().item()) + 1
        slot_index = torch.arange(slots)
        written = slot_index if active is None else slot_index[active]
        cos = self.rope_cos[positions][:, None, :]
        sin = self.rope_sin[positions][:, None, :]
        visible = torch.arange(length)[None, :] <= positions[:, None]
        mask = torch.zeros(slots, length).masked_fill_(~visible, float("-inf"))[:, None, None, :]
        first = positions == 0
        previous = torch.where(first, torch.full_like(tokens, PAD_TOKEN_ID), cache.last_tokens[:slots])
        zeros = torch.zeros_like(tokens)
        run_before = torch.where(first, zeros, cache.digit_runs[:slots])
        numbers_before = torch.where(first, zeros, cache.line_numbers[:slots])
        index, number, run_after, numbers_after = digit_features(tokens[:, None], run_before, numbers_before)
        # Only active rows advance their slot's state: an idle row may be a slot prefilled in
        # this very step, whose first decode (next step) continues from its prompt.
        cache.last_tokens[written] = tokens[written]
        cache.digit_runs[written] = run_after[written]
        cache.line_numbers[written] = numbers_after[written]
        cache.key_index[written, positions[written]] = index[written, 0]
        cache.key_number[written, positions[written]] = number[written, 0]
        digits = (index[:, 0], number[:, 0]) if self.uses_digit_features else None
        match = None
        if self.config.digit_match:
            # An idle row's match is computed against stale keys and ignored with the row.
            match = digit_match(index, number, cache.key_index[:slots, :length], cache.key_number[:slots, :length])
        x = self._embed(tokens, previous, digits)[:, None, :]
        for layer, block in enumerate(self.blocks):
            q, k, v = block.project(x, cos, sin)
            keys, values = cache.keys[layer], cache.values[layer]
            keys[written, :, positions[written]] = k[written, :, 0]
            values[written, :, positions[written]] = v[written, :, 0]
            x = block.attend(x, q, keys[:slots, :, :length], values[:slots, :, :length], block.with_match(mask, match))
        return self._logits(x[:, 0])
