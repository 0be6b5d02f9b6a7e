"""The Hugging Face backend's packed decode batch: the KV caches of the decoding sequences
stacked into one left-padded `DynamicCache`, with the attention mask that hides the padding.

Row r holds slot `slots[r]`. Its cache occupies the LAST `lengths[r]` columns; the columns
before are padding (zeros, masked out). Each decode step the model appends one column to
every row, and `extend_mask` adds the matching column of ones. When the set of decoding
slots changes (a sequence finished, one was admitted), `repack` takes rows out (back to a
per-slot cache, padding stripped) and merges newcomers in (left-padded to the batch width),
then drops the leading columns that are padding in every row. Greedy decoding of a row is the
same computation as decoding that sequence alone: masked columns get exactly zero attention
weight, and each row keeps its own position ids.

The batch's cache layers keep spare columns (`SpareColumnsLayer`): a decode step writes its
column into them instead of concatenating a new [rows × heads × length × dim] tensor per layer
for keys and values, which copied the whole cache every step.
"""

from __future__ import annotations

import functools
from typing import Callable, Dict, List, Optional, Tuple

import torch

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
        self.cache = None
        self._mask: Optional[torch.Tensor] = None

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

    def remove(self, slot: int) -> None:
        """Drops a slot's row (its cache is discarded)."""
        if slot in self.slots:
            self._take(slot)

    def extend_mask(self) -> torch.Tensor:
        """The attention mask for the next step (the existing columns and one for the new token)."""
        assert self._mask is not None
        self._mask = torch.cat([self._mask, torch.ones_like(self._mask[:, :1])], dim=1)
        self.lengths = [length + 1 for length in self.lengths]
        return self._mask

    # Internals -------------------------------------------------------------------------------
    def _width(self) -> int:
        return 0 if self._mask is None else int(self._mask.shape[1])

    def _take(self, slot: int) -> LayerTensors:
        """Removes the slot's row and returns its cache without padding."""
        row = self.slots.index(slot)
        length, width = self.lengths[row], self._width()
        taken = [(layer.keys[row : row + 1, :, width - length :], layer.values[row : row + 1, :, width - length :])
                 for layer in self.cache.layers]
        keep = [r for r in range(len(self.slots)) if r != row]
        del self.slots[row], self.lengths[row]
        if not keep:
            self.cache, self._mask = None, None
            return taken
        index = torch.tensor(keep, device=self._mask.device)
        trim = width - max(self.lengths)  # columns now padding in every row
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(0, index)[:, :, trim:]
            layer.values = layer.values.index_select(0, index)[:, :, trim:]
        self._mask = self._mask.index_select(0, index)[:, trim:]
        return taken

    def _merge(self, joining: List[Tuple[int, LayerTensors]], new_cache: Callable[[], object]) -> None:
        width = max([self._width()] + [tensors[0][0].shape[2] for _, tensors in joining])
        layer_count = len(joining[0][1])
        keys: List[List[torch.Tensor]] = [[] for _ in range(layer_count)]
        values: List[List[torch.Tensor]] = [[] for _ in range(layer_count)]
        masks: List[torch.Tensor] = []
        if self.cache is not None:
            for index, layer in enumerate(self.cache.layers):
                keys[index].append(_left_pad(layer.keys, width))
                values[index].append(_left_pad(layer.values, width))
            masks.append(_left_pad_mask(self._mask, width))
        for slot, tensors in joining:
            length = tensors[0][0].shape[2]
            for index, (layer_keys, layer_values) in enumerate(tensors):
                keys[index].append(_left_pad(layer_keys, width))
                values[index].append(_left_pad(layer_values, width))
            device = tensors[0][0].device
            masks.append(_left_pad_mask(torch.ones(1, length, dtype=torch.long, device=device), width))
            self.slots.append(slot)
            self.lengths.append(length)
        cache = new_cache()
        for index in range(layer_count):
            cache.update(torch.cat(keys[index]), torch.cat(values[index]), index)
        spare = _spare_layer_class()
        plain = spare.__mro__[1]  # DynamicLayer: the batch holds packable caches only
        for layer in cache.layers:
            if type(layer) is plain:
                layer.__class__ = spare
        self.cache = cache
        self._mask = torch.cat(masks)


def _left_pad(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """Zero columns before dimension 2 up to `width`."""
    missing = width - tensor.shape[2]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[2] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=2)


def _left_pad_mask(mask: torch.Tensor, width: int) -> torch.Tensor:
    missing = width - mask.shape[1]
    if missing == 0:
        return mask
    return torch.cat([mask.new_zeros(mask.shape[0], missing), mask], dim=1)
