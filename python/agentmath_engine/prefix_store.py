"""The Hugging Face backend's prefix cache: KV caches of earlier sequences, kept so that a prompt
which begins like one of them prefills only the rest.

What it saves: an agent's next turn is a new request whose prompt is the whole trajectory so far
(the first prompt, the model's code, the interpreter's output), and every prompt of a run starts
with the same system prompt; a GRPO group sends one prompt G times. Without a cache each of them
is prefilled from its first token. SGLang keeps a radix tree of cached prefixes for this (read in
the sglang 0.5.23 wheel: `srt/mem_cache/radix_cache.py` `match_prefix`; a request reuses at most
its input length less one, `srt/managers/schedule_batch.py` `_compute_max_prefix_len`; a
successful `flush_cache` resets the tree, `srt/managers/scheduler.py`). This store is a simple
form of it for a CPU engine of a few dozen slots: a list scanned per prompt.

An entry is a token sequence and its per-layer keys and values ([1, kv_heads, length, head_dim],
owned copies). A lookup finds the entry sharing the longest prefix with the prompt (at most the
prompt's length less one: the last prompt token is run to get the logits) and returns views of
its first columns: a position's key and value depend only on the tokens up to it. Entries are
evicted least recently used first when their bytes exceed the budget; an entry that is a prefix
of a newer one is dropped (the newer one answers every lookup it would). The keys and values are
of the weights that computed them: the backend clears the store whenever its weights change.
"""

from __future__ import annotations

import collections
from typing import List, Optional, Tuple

import torch

LayerTensors = List[Tuple[torch.Tensor, torch.Tensor]]

# The default budget: SmolLM2-135M's keys and values take 46 KB a token in fp32, so about 23k
# tokens, a few hundred trajectories of an evaluation.
PREFIX_CACHE_MB = 1024
# A prefix shorter than this is not worth a prefill of its own (a hit is prefilled alone, a miss
# shares a batched forward pass with the other prompts admitted in the same step).
MIN_REUSED_TOKENS = 16


class PrefixStore:
    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = max(0, int(budget_bytes))
        self._entries: "collections.OrderedDict[int, Tuple[torch.Tensor, LayerTensors, int]]" = collections.OrderedDict()
        self._next_key = 0
        self.bytes = 0
        self.hits = 0
        self.reused_tokens = 0
        self.lookups = 0

    @property
    def enabled(self) -> bool:
        return self.budget_bytes > 0

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, tokens: List[int], layers: LayerTensors) -> None:
        """Keeps `layers` (copied) as the keys and values of `tokens`' first positions; the layers
        may cover fewer positions than `tokens` has (the last sampled token is never run)."""
        if not self.enabled or not layers:
            return
        length = int(layers[0][0].shape[2])
        if length < MIN_REUSED_TOKENS or length > len(tokens):
            return
        ids = torch.tensor(tokens[:length], dtype=torch.long)
        size = sum(keys.element_size() * keys.numel() + values.element_size() * values.numel() for keys, values in layers)
        if size > self.budget_bytes:
            return
        for key, (held, _, _) in list(self._entries.items()):
            common = _common_prefix(held, ids)
            if common == held.shape[0]:  # an older entry this one extends, or the same sequence
                self._drop(key)
            elif common == length:  # this one is a prefix of a kept entry: nothing to add
                self._entries.move_to_end(key)
                return
        owned = [(keys.detach().clone(), values.detach().clone()) for keys, values in layers]
        self._entries[self._next_key] = (ids, owned, size)
        self._next_key += 1
        self.bytes += size
        while self.bytes > self.budget_bytes:
            self._drop(next(iter(self._entries)))

    def longest(self, tokens: List[int]) -> Optional[Tuple[int, LayerTensors]]:
        """The longest kept prefix of `tokens` (at most len(tokens) - 1, at least MIN_REUSED_TOKENS
        positions) and views of its keys and values; None when there is none."""
        if not self.enabled or len(tokens) <= MIN_REUSED_TOKENS:
            return None
        self.lookups += 1
        ids = torch.tensor(tokens[:-1], dtype=torch.long)
        best_key, best = None, 0
        for key, (held, _, _) in self._entries.items():
            common = _common_prefix(held, ids)
            if common > best:
                best_key, best = key, common
        if best_key is None or best < MIN_REUSED_TOKENS:
            return None
        self._entries.move_to_end(best_key)
        self.hits += 1
        self.reused_tokens += best
        _, layers, _ = self._entries[best_key]
        return best, [(keys[:, :, :best], values[:, :, :best]) for keys, values in layers]

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def describe(self) -> dict:
        return {"budget_mb": self.budget_bytes / 2**20, "entries": len(self._entries), "mb": round(self.bytes / 2**20, 1),
                "lookups": self.lookups, "hits": self.hits, "reused_tokens": self.reused_tokens}

    def _drop(self, key: int) -> None:
        _, _, size = self._entries.pop(key)
        self.bytes -= size


def _common_prefix(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many leading tokens two id sequences share."""
    length = min(a.shape[0], b.shape[0])
    differ = (a[:length] != b[:length]).nonzero()
    return int(differ[0]) if differ.numel() else length
