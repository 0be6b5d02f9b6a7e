"""The model generation runs, as a copy of the master weights in another form: every `nn.Linear`
replaced by a layer that reads its master layer's weight in a decode form (packed for oneDNN,
`packed_linear.py`; int8, `int8_linear.py`), every other parameter copied in the decode dtype.

The master model is never modified (training and scoring keep running on it); a tied input
embedding gets its own copy. `refresh_decode_copy` follows a change of the master weights.
"""

from __future__ import annotations

import copy
from typing import Callable, Dict

import torch
from torch import nn


class DecodeLinear(nn.Module):
    """A linear layer computed from `source`'s weight held in a decode form. Subclasses build that
    form in `refresh()` (called at construction and after every weight change)."""

    def __init__(self, source: nn.Linear) -> None:
        super().__init__()
        # A list, so the master's layer is not registered as a submodule of the decode copy.
        self._source = [source]
        self.in_features = source.in_features
        self.out_features = source.out_features

    @property
    def source(self) -> nn.Linear:
        return self._source[0]

    def refresh(self) -> None:
        raise NotImplementedError


def _linears(model: nn.Module) -> Dict[str, nn.Linear]:
    return {name: module for name, module in model.named_modules() if type(module) is nn.Linear}


def _replace(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, module)


def decode_copy(master: nn.Module, dtype: torch.dtype, make_linear: Callable[[nn.Linear], DecodeLinear]) -> nn.Module:
    """A frozen copy of `master` in `dtype` whose linear layers are `make_linear(master's layer)`.
    The linear weights are not deep-copied first (their decode form is the only copy); a parameter
    tied to a linear weight (tied input embeddings) gets its own copy."""
    linears = _linears(master)
    shared = {id(module.weight): module.weight for module in linears.values()}
    decoder = copy.deepcopy(master, memo=dict(shared))
    for name, module in linears.items():
        _replace(decoder, name, make_linear(module))
    masters = {id(parameter) for parameter in master.parameters()}
    for module in decoder.modules():
        for key, parameter in list(module._parameters.items()):
            if parameter is not None and id(parameter) in masters:
                module._parameters[key] = nn.Parameter(parameter.detach().clone(), requires_grad=False)
    return decoder.to(dtype).requires_grad_(False).eval()


@torch.no_grad()
def refresh_decode_copy(decoder: nn.Module, master: nn.Module) -> None:
    """Copies `master`'s current weights into `decoder` (from `decode_copy`)."""
    own = dict(master.named_parameters(remove_duplicate=False))
    for name, parameter in decoder.named_parameters():
        parameter.copy_(own[name])
    for module in decoder.modules():
        if isinstance(module, DecodeLinear):
            module.refresh()
