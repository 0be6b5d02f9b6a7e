"""Attention for the packed decode batch: grouped-query heads without copies of the keys and values,
and no work over the padding of rows shorter than the batch.

`transformers` lets a model run any registered attention function (`AttentionInterface`); this
module registers one, `agentmath_decode`, that is SDPA's own (`sdpa_attention_forward`, and
`sdpa_mask` for masks) for every call but a decode step of the packed batch (one query token per
row, with a `DecodePlan` passed down as the `decode_plan` keyword, which `transformers` hands every
attention call). There, per group of rows:

  SDPA(q, K, V, padding mask)   with q viewed as [rows, kv heads, query heads per kv head, dim],
                                so every query head reads its key/value head as it is in the
                                cache (no `repeat_kv`), and no mask at all for a group of rows of
                                one length.

The packed batch keeps its rows sorted by length, longest first, left-padded: row r's cache is the
last `lengths[r]` columns. A group of consecutive rows [first, end) only needs the columns of its
longest row, the last `lengths[first]`, so it attends over that slice (a view, no copy); the
plan's groups are chosen when rows join or leave (`plan_groups`), to balance the padding a group
still reads against the fixed cost of one more group.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence, Tuple

import torch

NAME = "agentmath_decode"
# What one more group costs, in row × column cells of attention it would have to save: about the
# time of the 4 extra small kernels a group runs per layer, over the time one cell (a key and a value
# of every key/value head) takes to read.
GROUP_COST_CELLS = 256


@dataclasses.dataclass(frozen=True)
class DecodeGroup:
    first_row: int
    end_row: int
    first_column: int  # the group attends over columns [first_column, width)
    padded: bool  # some row of the group is shorter than the group's longest: it needs a mask


@dataclasses.dataclass
class DecodePlan:
    groups: List[DecodeGroup]
    attended: Optional[torch.Tensor]  # [rows, 1, 1, width] booleans (attended_columns); None if no group is padded


def plan_groups(lengths: Sequence[int], width: int, group_cost: Optional[int] = None) -> List[DecodeGroup]:
    """Splits rows sorted by length (longest first) into consecutive groups that minimise
    Σ rows in group × longest length in group + group_cost × groups (`plan_rows`; the cost
    defaults to GROUP_COST_CELLS)."""
    group_cost = GROUP_COST_CELLS if group_cost is None else group_cost
    spans, _ = plan_rows(range(len(lengths)), lengths, group_cost)
    return [DecodeGroup(first, end, width - lengths[first], lengths[end - 1] != lengths[first]) for first, end in spans]


def plan_rows(rows: Sequence[int], lengths: Sequence[int], group_cost: int) -> Tuple[List[Tuple[int, int]], int]:
    """Groups of rows listed in cache order (`rows` ascending, `lengths` theirs, in any order of
    length): each group is a run of entries [first, end) on consecutive rows, attending over its
    longest row's columns. Minimises Σ entries × longest + group_cost per group (dynamic
    programming). Returns (groups, cost)."""
    count = len(rows)
    best = [0] * (count + 1)
    start = [0] * (count + 1)
    for end in range(1, count + 1):
        longest, best_cost, best_first = 0, None, end - 1
        for first in range(end - 1, -1, -1):
            if first < end - 1 and rows[first] + 1 != rows[first + 1]:
                break  # a group is consecutive rows: a gap ends it
            longest = max(longest, lengths[first])
            cost = best[first] + (end - first) * longest + group_cost
            if best_cost is None or cost <= best_cost:
                best_cost, best_first = cost, first
        best[end], start[end] = best_cost, best_first
    groups: List[Tuple[int, int]] = []
    end = count
    while end > 0:
        groups.append((start[end], end))
        end = start[end]
    return groups[::-1], best[count]


def attended_columns(lengths: Sequence[int], width: int, device: torch.device) -> torch.Tensor:
    """[rows, 1, 1, width] booleans: true on each row's cache, false on its leading padding."""
    columns = torch.arange(width, device=device)
    starts = width - torch.tensor(list(lengths), device=device)
    return (columns[None, :] >= starts[:, None])[:, None, None, :]


def decode_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Optional[torch.Tensor],
    dropout: float = 0.0,
    scaling: Optional[float] = None,
    decode_plan: Optional[DecodePlan] = None,
    **kwargs,
):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if decode_plan is None or query.shape[2] != 1:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    rows, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    if scaling is None:
        scaling = dim**-0.5
    grouped = query.reshape(rows, kv_heads, heads // kv_heads, dim)
    if len(decode_plan.groups) == 1:
        output = _attend(grouped, key, value, decode_plan.attended, decode_plan.groups[0], scaling)
    else:
        output = grouped.new_empty(rows, kv_heads, heads // kv_heads, value.shape[-1])
        for group in decode_plan.groups:
            output[group.first_row : group.end_row] = _attend(grouped, key, value, decode_plan.attended, group, scaling)
    # [rows, kv heads, query heads per kv head, dim] is [rows, heads, dim]: head h reads key/value head
    # h // (heads per kv head), as `repeat_kv` lays them out. The caller wants [rows, 1, heads, dim].
    return output.reshape(rows, 1, heads, value.shape[-1]), None


def _attend(query, key, value, attended, group: DecodeGroup, scaling: float) -> torch.Tensor:
    rows, columns = slice(group.first_row, group.end_row), slice(group.first_column, None)
    mask = attended[rows, :, :, columns] if group.padded else None
    # SDPA's CPU kernel accumulates bf16 in fp32; the query's extra dimension (its heads per key/value
    # head) broadcasts against one key/value head.
    return torch.nn.functional.scaled_dot_product_attention(
        query[rows], key[rows, :, columns], value[rows, :, columns], attn_mask=mask, scale=scaling
    )


def register_decode_attention() -> None:
    """Registers `agentmath_decode` with `transformers` (attention, and SDPA's masks under its name)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, decode_attention_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
