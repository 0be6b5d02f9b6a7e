"""Where each checkpoint tensor lives in a served transformers model, for loads by name.

transformers 5 keeps some weights in another layout than its checkpoints: Qwen3-MoE's experts
are fused in memory (`mlp.experts.gate_up_proj` [E, 2I, H], `mlp.experts.down_proj`) where the
checkpoint has one tensor per expert (`mlp.experts.{i}.gate_proj.weight` [I, H], …), and
`save_pretrained` converts back with `revert_weight_conversion`. Applied to a parameter filled
with its own element indices, that same conversion says where each checkpoint tensor's elements
sit: a strided view of one parameter, through which the tensor is copied in place. So a load
needs neither the whole checkpoint nor every expert of a layer at once (SGLang's loaders also
copy expert by expert). A conversion that is not such a view (one that computes values, or mixes
parameters) is refused, naming the parameter. Names are the checkpoint's, tied twins included
(`lm_head.weight` of a model whose head is its embedding).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple

import torch
from transformers.core_model_loading import revert_weight_conversion


@dataclasses.dataclass(frozen=True)
class Slot:
    """A checkpoint tensor's place: a strided view of `parameter` (flat element offsets)."""

    parameter: str
    size: Tuple[int, ...]
    stride: Tuple[int, ...]
    offset: int


def _contiguous_strides(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _slot(parameter: str, where: torch.Tensor, numel: int) -> Slot:
    """The strided view whose flat indices are `where`; ValueError when they are not one."""
    flat = where.reshape(-1)
    offset = int(flat[0]) if flat.numel() else 0
    stride = []
    for dim, size in enumerate(where.shape):
        if size < 2:
            stride.append(1)
            continue
        step = [0] * where.dim()
        step[dim] = 1
        stride.append(int(where[tuple(step)]) - offset)
    try:
        expected = torch.arange(numel, dtype=torch.int64).as_strided(tuple(where.shape), tuple(stride), offset)
    except RuntimeError as error:
        raise ValueError(f"{parameter}: a checkpoint tensor is not a view of it ({error})") from error
    if not torch.equal(expected, where):
        raise ValueError(f"{parameter}: a checkpoint tensor is not a strided view of it")
    return Slot(parameter, tuple(where.shape), tuple(stride), offset)


def checkpoint_slots(model: torch.nn.Module) -> Dict[str, Slot]:
    """Every checkpoint name the model loads, and where it goes."""
    slots: Dict[str, Slot] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        shape = tuple(parameter.shape)
        if not parameter.is_contiguous():
            raise ValueError(f"{name}: not contiguous; cannot load checkpoint tensors into it by position")
        renamed = revert_weight_conversion(model, {name: torch.empty(shape, device="meta")})
        only = next(iter(renamed.values())) if len(renamed) == 1 else None
        if only is not None and tuple(only.shape) == shape:  # a rename at most: the whole parameter
            slots[next(iter(renamed))] = Slot(name, shape, _contiguous_strides(shape), 0)
            continue
        indices = torch.arange(parameter.numel(), dtype=torch.int64).view(shape)
        for checkpoint_name, where in revert_weight_conversion(model, {name: indices}).items():
            slots[checkpoint_name] = _slot(name, where, parameter.numel())
    return slots


class CheckpointLayout:
    """Loads checkpoint-named tensors into `model` in place (slots found at the first load)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self._slots: Optional[Dict[str, Slot]] = None

    def slots(self) -> Dict[str, Slot]:
        if self._slots is None:
            self._slots = checkpoint_slots(self.model)
        return self._slots

    def load(self, state: Dict[str, torch.Tensor], origin: str, complete: bool = False) -> None:
        """Copies each tensor into its slot, cast to the parameter's dtype. A name the model does
        not have, or another shape, is refused before any is copied; `complete`: every slot must
        be given (a tied twin through the other name)."""
        slots = self.slots()
        unknown = sorted(set(state) - set(slots))
        if unknown:
            raise ValueError(f"{origin}: tensors the served model does not have: {', '.join(unknown[:5])}")
        wrong = [name for name, tensor in state.items() if tuple(tensor.shape) != slots[name].size]
        if wrong:
            raise ValueError(f"{origin}: tensors of another shape than the served model's: {', '.join(wrong[:5])}")
        parameters = dict(self.model.named_parameters(remove_duplicate=False))

        def place(name: str) -> Tuple[int, int, Tuple[int, ...], Tuple[int, ...]]:
            slot = slots[name]
            return parameters[slot.parameter].data_ptr(), slot.offset, slot.size, slot.stride

        if complete:
            given = {place(name) for name in state}
            missing = [name for name in slots if place(name) not in given]
            if missing:
                raise ValueError(f"{origin}: tensors missing from the folder: {', '.join(missing[:5])}")
        with torch.no_grad():
            for name, tensor in state.items():
                slot = slots[name]
                data = parameters[slot.parameter].data
                view = data.as_strided(slot.size, slot.stride, data.storage_offset() + slot.offset)
                view.copy_(tensor.to(data.device, data.dtype))
