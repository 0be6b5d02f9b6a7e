"""The decode model's linear layers with their weights pre-packed for oneDNN (CPU only).

A decode step at a few concurrent requests multiplies a handful of rows by every weight matrix
once. ATen's `linear` hands the weight to the BLAS in its plain row-major layout every call;
oneDNN can instead take a weight reordered once into its own blocked layout and reuse it, which
is what PyTorch's CPU inference path does under `torch.compile` with frozen weights
(`torch.ops.mkldnn._reorder_linear_weight` + `torch.ops.mkldnn._linear_pointwise`). Measured on
SmolLM2-135M, 8 rows, 2 cores (docs/embedded-model.md): the matmuls of a step take 28 ms packed
against 44 ms plain in fp32.

`packed_decode_copy` builds the model generation runs from the master weights (`decode_copy.py`):
every `nn.Linear` becomes a `PackedLinear` that holds only the packed weight (and bias), the rest is
a copy in the decode dtype.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .decode_copy import DecodeLinear, decode_copy


def packed_linear_available() -> Optional[str]:
    """None when oneDNN's packed linear can run here, else why not."""
    if not torch.backends.mkldnn.is_available():
        return "this PyTorch has no oneDNN (mkldnn)"
    missing = [name for name in ("_reorder_linear_weight", "_linear_pointwise") if not hasattr(torch.ops.mkldnn, name)]
    if missing:
        return f"this PyTorch has no torch.ops.mkldnn.{missing[0]}"
    return None


class PackedLinear(DecodeLinear):
    """`source`'s linear map with its weight reordered once into oneDNN's layout, in `dtype`."""

    def __init__(self, source: nn.Linear, dtype: torch.dtype, batch_hint: int) -> None:
        super().__init__(source)
        self.dtype = dtype
        self.batch_hint = batch_hint
        self.packed: torch.Tensor = torch.empty(0)
        self.bias: Optional[torch.Tensor] = None
        self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        source = self.source
        weight = source.weight.detach().to(self.dtype).contiguous()
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, self.batch_hint)
        self.bias = None if source.bias is None else source.bias.detach().to(self.dtype).contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != self.dtype:
            x = x.to(self.dtype)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype}, packed"


def packed_decode_copy(master: nn.Module, dtype: torch.dtype, batch_hint: int) -> nn.Module:
    """A frozen copy of `master` in `dtype` whose linear layers are `PackedLinear`s reading
    `master`'s weights (see `decode_copy`)."""
    return decode_copy(master, dtype, lambda module: PackedLinear(module, dtype, batch_hint))
