"""Batched next-token sampling with per-request reproducible randomness.

Every running sequence carries its own seed and temperature/top-p. The uniform draw for the
token at absolute position n of a sequence (prompt length + output index; the engine keeps the
counter) is a pure function of (seed, n) — a counter-based hash
computed for the whole batch at once — so a seeded request gives the same tokens whatever else
shares its batch, and no Python loop over sequences runs per step.

Logprobs returned are of the sampled token under the distribution that was sampled from
before top-p truncation: log_softmax(logits / temperature), or log_softmax(logits) when
temperature is 0 (greedy). A greedy row costs an argmax and a log-sum-exp; the draw over the
whole vocabulary (a cumulative sum in float64) runs for sampled rows only.
"""

from __future__ import annotations

from typing import Tuple

import torch

_MASK32 = 0xFFFFFFFF


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer mix (PCG output permutation style) on int64 tensors holding uint32 values.
    Products stay below 2^63, so int64 arithmetic is exact."""
    x = (x * 747796405 + 2891336453) & _MASK32
    shift = (x >> 28) + 4
    x = (((x >> shift) ^ x) * 277803737) & _MASK32
    return (x >> 22) ^ x


def uniform_draws(seeds: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """Uniform floats in [0, 1), one per row, from int64 `seeds` and `counters` (uint32 range)."""
    mixed = _hash32(_hash32(seeds & _MASK32) ^ (counters & _MASK32))
    mixed = _hash32(mixed ^ ((seeds >> 32) & _MASK32))
    return (mixed >> 8).to(torch.float64) / float(1 << 24)


def sample_tokens(
    logits: torch.Tensor,
    temperatures: torch.Tensor,
    top_ps: torch.Tensor,
    seeds: torch.Tensor,
    counters: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Samples one token per row of logits [n, vocab]. Returns (token ids [n], logprobs [n]).
    Greedy rows take the argmax of the logits and one log-sum-exp (what `transformers`' greedy
    search picks); only the sampled rows pay for the draw over the whole vocabulary."""
    logits = logits.float()
    greedy = temperatures <= 0
    if bool(greedy.all()):
        return _greedy(logits)
    if not bool(greedy.any()):
        return _draw(logits, temperatures, top_ps, seeds, counters)
    tokens = torch.empty(logits.shape[0], dtype=torch.long)
    chosen = torch.empty(logits.shape[0], dtype=torch.float32)
    greedy_rows, drawn = greedy.nonzero()[:, 0], (~greedy).nonzero()[:, 0]
    tokens[greedy_rows], chosen[greedy_rows] = _greedy(logits[greedy_rows])
    tokens[drawn], chosen[drawn] = _draw(logits[drawn], temperatures[drawn], top_ps[drawn], seeds[drawn], counters[drawn])
    return tokens, chosen


def _greedy(logits: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    tokens = logits.argmax(dim=-1)
    return tokens, logits.gather(-1, tokens[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)


def _draw(
    logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor, seeds: torch.Tensor, counters: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rows with temperature > 0: a draw from softmax(logits / temperature), top-p truncated."""
    log_probs = torch.log_softmax(logits / temperatures[:, None], dim=-1)
    draws = uniform_draws(seeds, counters)
    # Rows with top_p = 1: inverse-CDF draw over the unsorted distribution (no sort needed).
    cumulative = torch.cumsum(log_probs.exp().double(), dim=-1)
    index = torch.searchsorted(cumulative, (draws * cumulative[:, -1])[:, None], right=True)
    tokens = index.clamp_(max=logits.shape[-1] - 1)[:, 0]
    truncated = top_ps < 1.0
    if bool(truncated.any()):
        # The choice of path depends on the row's own top_p only, so a seeded request draws the
        # same token whatever shares its batch.
        sorted_log_probs, order = torch.sort(log_probs, dim=-1, descending=True)
        sorted_probs = sorted_log_probs.exp()
        # Keep the smallest prefix whose mass reaches top_p (the first token always stays).
        keep_sorted = (torch.cumsum(sorted_probs, dim=-1) - sorted_probs) < top_ps[:, None]
        # Draw over the kept tokens in vocabulary order, not sorted order: near-tied
        # probabilities may sort differently when the batch changes the rounding, and the
        # draw must not depend on that order.
        keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
        kept_cumulative = torch.cumsum((log_probs.exp() * keep).double(), dim=-1)
        index = torch.searchsorted(kept_cumulative, (draws * kept_cumulative[:, -1])[:, None], right=True)
        index = index.clamp_(max=logits.shape[-1] - 1)[:, 0]
        # A draw can land on a dropped token only through rounding; take the last kept one.
        last_kept = logits.shape[-1] - 1 - keep.flip(-1).to(torch.int64).argmax(dim=-1)
        index = torch.where(keep.gather(-1, index[:, None])[:, 0], index, last_kept)
        tokens = torch.where(truncated, index, tokens)
    chosen = log_probs.gather(-1, tokens[:, None])[:, 0]
    return tokens, chosen
