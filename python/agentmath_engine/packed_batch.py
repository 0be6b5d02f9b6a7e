"""The Hugging Face backend's packed decode batch: the KV caches of the decoding sequences
stacked into one left-padded `DynamicCache`, rows sorted by length (longest first).

Row r holds slot `slots[r]`. Its cache occupies the LAST `lengths[r]` columns; the columns
before are padding (zeros, never attended to). Each decode step the model appends one column to
every row (`advance` counts it). When the set of decoding slots changes (a sequence finished, one
was admitted), `repack` takes rows out (back to a per-slot cache, padding stripped) and merges
newcomers in (left-padded to the batch width, in length order), then drops the leading columns
that are padding in every row. Greedy decoding of a row is the same computation as decoding that
sequence alone: padding columns get exactly zero attention weight, and each row keeps its own
position ids.

The attention a step needs comes from `plan()` (see `decode_attention.py`): rows are grouped so
that a group attends over its longest row's columns only, and a padding mask is built only when a
group holds rows of different lengths; `mask()` is the 2D mask for models that attend through
`transformers`' own attention instead.

The batch's cache layers keep spare columns (`SpareColumnsLayer`): a decode step writes its
column into them instead of concatenating a new [rows × heads × length × dim] tensor per layer
for keys and values, which copied the whole cache every step.
"""

from __future__ import annotations

import functools
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .decode_attention import DecodeGroup, DecodePlan, attended_columns, plan_groups

LayerTensors = List[Tuple[torch.Tensor, torch.Tensor]]

# Columns added at once when a layer's buffer is full: a step appends one, so a reallocation
# (a copy of the cache) comes once per this many steps instead of every step.
SPARE_COLUMNS = 64


@functools.lru_cache(maxsize=None)
def _spare_layer_class():
    import transformers

    class SpareColumnsLayer(transformers.cache_utils.DynamicLayer):
        """A `DynamicLayer` whose keys and values are views of buffers with spare columns: `update`
        writes the new columns in place while they fit, and otherwise copies into a buffer
        SPARE_COLUMNS wider. Whoever assigns `keys`/`values` (the batch's trim and row removal)
        gets a fresh buffer at the next update."""

        _key_buffer: Optional[torch.Tensor] = None
        _value_buffer: Optional[torch.Tensor] = None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized or self.keys.numel() == 0:
                return super().update(key_states, value_states, *args, **kwargs)
            self.keys, self._key_buffer = _append(self.keys, self._key_buffer, key_states)
            self.values, self._value_buffer = _append(self.values, self._value_buffer, value_states)
            return self.keys, self.values

    return SpareColumnsLayer


def _append(held: torch.Tensor, buffer: Optional[torch.Tensor], new: torch.Tensor):
    """`held` with `new`'s columns after it (dimension 2), written into `buffer` when `held` is its
    leading view and they fit; else into a new buffer with spare columns. Returns (view, buffer)."""
    length, added = held.shape[2], new.shape[2]
    fits = (
        buffer is not None
        and held.data_ptr() == buffer.data_ptr()
        and held.shape[:2] == buffer.shape[:2]
        and held.shape[3] == buffer.shape[3]
        and held.stride() == buffer.stride()
        and length + added <= buffer.shape[2]
    )
    if not fits:
        shape = list(held.shape)
        shape[2] = length + added + SPARE_COLUMNS
        buffer = held.new_empty(shape)
        buffer[:, :, :length] = held
    buffer[:, :, length : length + added] = new
    return buffer[:, :, : length + added], buffer


class PackedBatch:
    def __init__(self) -> None:
        self.slots: List[int] = []
        self.lengths: List[int] = []
        self.width = 0
        self.cache = None
        self._groups: List[DecodeGroup] = []

    def repack(self, slots: List[int], alone: Dict[int, LayerTensors], new_cache: Callable[[], object]) -> "PackedBatch":
        """Makes the batch hold exactly `slots` (rows of other slots go back to `alone`, and
        slots found in `alone` join). Returns self."""
        wanted = set(slots)
        for slot in [s for s in self.slots if s not in wanted]:
            alone[slot] = self._take(slot)
        joining = [slot for slot in slots if slot not in self.slots]
        if joining:
            self._merge([(slot, alone.pop(slot)) for slot in joining], new_cache)
        return self

    def row(self, slot: int) -> Optional[LayerTensors]:
        """The slot's row without its padding (views of the batch), or None if it has none."""
        if slot not in self.slots:
            return None
        row = self.slots.index(slot)
        start = self.width - self.lengths[row]
        return [(layer.keys[row : row + 1, :, start:], layer.values[row : row + 1, :, start:]) for layer in self.cache.layers]

    def remove(self, slot: int) -> None:
        """Drops a slot's row (its cache is discarded)."""
        if slot in self.slots:
            self._take(slot)

    def advance(self) -> None:
        """Counts the column the next step appends to every row."""
        self.lengths = [length + 1 for length in self.lengths]
        self.width += 1

    def plan(self, device: torch.device) -> DecodePlan:
        """The attention plan of the next step (after `advance`): the row groups, and which
        columns each row attends to if some group has rows of different lengths."""
        # Every row grows by one column a step, so the groups (and each group's first column) stay
        # right between repacks.
        padded = any(group.padded for group in self._groups)
        return DecodePlan(self._groups, attended_columns(self.lengths, self.width, device) if padded else None)

    def mask(self, device: torch.device) -> torch.Tensor:
        """The 2D attention mask of the next step (after `advance`): 1 on each row's cache."""
        return attended_columns(self.lengths, self.width, device)[:, 0, 0].long()

    # Internals -------------------------------------------------------------------------------
    def _take(self, slot: int) -> LayerTensors:
        """Removes the slot's row and returns its cache without padding."""
        row = self.slots.index(slot)
        length, width = self.lengths[row], self.width
        taken = [(layer.keys[row : row + 1, :, width - length :], layer.values[row : row + 1, :, width - length :])
                 for layer in self.cache.layers]
        keep = [r for r in range(len(self.slots)) if r != row]
        del self.slots[row], self.lengths[row]
        if not keep:
            self.cache, self.width, self._groups = None, 0, []
            return taken
        index = torch.tensor(keep, device=taken[0][0].device)
        trim = width - max(self.lengths)  # columns now padding in every row
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(0, index)[:, :, trim:]
            layer.values = layer.values.index_select(0, index)[:, :, trim:]
        self.width = width - trim
        self._groups = plan_groups(self.lengths, self.width)
        return taken

    def _merge(self, joining: List[Tuple[int, LayerTensors]], new_cache: Callable[[], object]) -> None:
        # Every row as (slot, length, per-layer (keys, values) without padding), longest first.
        rows: List[Tuple[int, int, LayerTensors]] = []
        for row, (slot, length) in enumerate(zip(self.slots, self.lengths)):
            start = self.width - length
            rows.append((slot, length, [(layer.keys[row : row + 1, :, start:], layer.values[row : row + 1, :, start:])
                                        for layer in self.cache.layers]))
        rows.extend((slot, tensors[0][0].shape[2], tensors) for slot, tensors in joining)
        rows.sort(key=lambda entry: -entry[1])  # stable: rows of one length keep their order
        width = rows[0][1]
        cache = new_cache()
        spare = _spare_layer_class()
        for index, layer in enumerate(cache.layers):
            # Straight into buffers with spare columns: one copy of each row, none at the next step.
            keys = _stacked([tensors[index][0] for _, _, tensors in rows], width)
            values = _stacked([tensors[index][1] for _, _, tensors in rows], width)
            layer.lazy_initialization(keys, values)
            layer.__class__ = spare  # the batch holds packable caches only: plain DynamicLayers
            layer.keys, layer._key_buffer = keys[:, :, :width], keys
            layer.values, layer._value_buffer = values[:, :, :width], values
        self.cache = cache
        self.slots = [slot for slot, _, _ in rows]
        self.lengths = [length for _, length, _ in rows]
        self.width = width
        self._groups = plan_groups(self.lengths, width)


def _stacked(rows: List[torch.Tensor], width: int) -> torch.Tensor:
    """Rows [1, heads, length, dim] right-aligned in a zeroed [rows, heads, width + spare, dim]
    buffer (zero padding before each row's columns, SPARE_COLUMNS free after them)."""
    first = rows[0]
    buffer = first.new_zeros(len(rows), first.shape[1], width + SPARE_COLUMNS, first.shape[3])
    for index, row in enumerate(rows):
        buffer[index, :, width - row.shape[2] : width] = row[0]
    return buffer
