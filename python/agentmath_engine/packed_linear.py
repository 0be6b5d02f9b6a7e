"""The decode model's linear layers with their weights pre-packed for oneDNN (CPU only).

A decode step at a few concurrent requests multiplies a handful of rows by every weight matrix
once. ATen's `linear` hands the weight to the BLAS in its plain row-major layout every call;
oneDNN can instead take a weight reordered once into its own blocked layout and reuse it, which
is what PyTorch's CPU inference path does under `torch.compile` with frozen weights
(`torch.ops.mkldnn._reorder_linear_weight` + `torch.ops.mkldnn._linear_pointwise`). Measured on
SmolLM2-135M, 8 rows, 2 cores (docs/embedded-model.md): the matmuls of a step take 28 ms packed
against 44 ms plain in fp32.

`packed_decode_copy` builds the model generation runs from the master weights: every
`nn.Linear` becomes a `PackedLinear` that holds only the packed weight (and bias), the rest is a
copy in the decode dtype. `refresh_packed_copy` follows a weight change. The master model is
never modified: training and scoring keep running on it.
"""

from __future__ import annotations

import copy
from typing import Dict, Optional

import torch
from torch import nn


def packed_linear_available() -> Optional[str]:
    """None when oneDNN's packed linear can run here, else why not."""
    if not torch.backends.mkldnn.is_available():
        return "this PyTorch has no oneDNN (mkldnn)"
    missing = [name for name in ("_reorder_linear_weight", "_linear_pointwise") if not hasattr(torch.ops.mkldnn, name)]
    if missing:
        return f"this PyTorch has no torch.ops.mkldnn.{missing[0]}"
    return None


class PackedLinear(nn.Module):
    """`source`'s linear map with its weight reordered once into oneDNN's layout, in `dtype`."""

    def __init__(self, source: nn.Linear, dtype: torch.dtype, batch_hint: int) -> None:
        super().__init__()
        # A list, so the master's layer is not registered as a submodule of the decode copy.
        self._source = [source]
        self.dtype = dtype
        self.batch_hint = batch_hint
        self.in_features = source.in_features
        self.out_features = source.out_features
        self.packed: torch.Tensor = torch.empty(0)
        self.bias: Optional[torch.Tensor] = None
        self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        source = self._source[0]
        weight = source.weight.detach().to(self.dtype).contiguous()
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, self.batch_hint)
        self.bias = None if source.bias is None else source.bias.detach().to(self.dtype).contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.dtype:
            x = x.to(self.dtype)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype}, packed"


def _linears(model: nn.Module) -> Dict[str, nn.Linear]:
    return {name: module for name, module in model.named_modules() if type(module) is nn.Linear}


def _replace(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, module)


def packed_decode_copy(master: nn.Module, dtype: torch.dtype, batch_hint: int) -> nn.Module:
    """A frozen copy of `master` in `dtype` whose linear layers are `PackedLinear`s reading
    `master`'s weights. The linear weights are not deep-copied first (their packed form is the
    only copy); a parameter tied to a linear weight (tied input embeddings) gets its own copy."""
    linears = _linears(master)
    shared = {id(module.weight): module.weight for module in linears.values()}
    decoder = copy.deepcopy(master, memo=dict(shared))
    for name, module in linears.items():
        _replace(decoder, name, PackedLinear(module, dtype, batch_hint))
    masters = {id(parameter) for parameter in master.parameters()}
    for module in decoder.modules():
        for key, parameter in list(module._parameters.items()):
            if parameter is not None and id(parameter) in masters:
                module._parameters[key] = nn.Parameter(parameter.detach().clone(), requires_grad=False)
    return decoder.to(dtype).requires_grad_(False).eval()


@torch.no_grad()
def refresh_packed_copy(decoder: nn.Module, master: nn.Module) -> None:
    """Copies `master`'s current weights into `decoder` (from `packed_decode_copy`)."""
    own = dict(master.named_parameters(remove_duplicate=False))
    for name, parameter in decoder.named_parameters():
        parameter.copy_(own[name])
    for module in decoder.modules():
        if isinstance(module, PackedLinear):
            module.refresh()
