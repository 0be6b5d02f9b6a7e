"""The decode model's linear layers with int8 weights, for `--decode-dtype int8` (weight-only).

Each output row of a weight W [out, in] gets its own scale s = max|W_row| / 127 and is stored as
round(W_row / s) in int8, a quarter of the fp32 bytes; activations stay bf16, and every other
parameter of the decode copy is bf16 too. A layer computes y = (x · Qᵀ) · s with PyTorch's CPU
weight-only kernel `torch.ops.aten._weight_int8pack_mm` (bf16 activations, bf16 scales; the fp32
path of that kernel is not vectorised and was 10-100× slower here). That kernel reads int8 in
[out, in] layout and needs `in` to be a multiple of 16 (torch 2.15 crashed on other sizes, so a
layer of another width keeps a bf16 weight and `F.linear`).

What it costs: logprobs move by the weights' rounding (at most half a step of 1/127 of each row's
largest weight), which the bench reports against `transformers` in fp32 as the logprob gap, and RL
reports as `rolloutLogprobGap`. Where it pays: the kernel reuses nothing across rows, so it is
fastest at one or a few rows; docs/embedded-model.md has the figures per machine.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .decode_copy import DecodeLinear, decode_copy

ACTIVATION_DTYPE = torch.bfloat16
IN_FEATURES_MULTIPLE = 16


def int8_linear_available() -> Optional[str]:
    """None when the int8 weight-only kernel can run here, else why not."""
    if not hasattr(torch.ops.aten, "_weight_int8pack_mm"):
        return "this PyTorch has no torch.ops.aten._weight_int8pack_mm"
    return None


class Int8Linear(DecodeLinear):
    """`source`'s linear map with int8 weights and one bf16 scale per output feature."""

    def __init__(self, source: nn.Linear) -> None:
        super().__init__(source)
        self.quantized = source.in_features % IN_FEATURES_MULTIPLE == 0
        self.weight: torch.Tensor = torch.empty(0)
        self.scales: Optional[torch.Tensor] = None
        self.bias: Optional[torch.Tensor] = None
        self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        source = self.source.weight.detach().float()
        if self.quantized:
            scales = source.abs().amax(dim=1).clamp_(min=torch.finfo(torch.float32).tiny) / 127.0
            self.weight = torch.round(source / scales[:, None]).clamp_(-127, 127).to(torch.int8).contiguous()
            self.scales = scales.to(ACTIVATION_DTYPE)
        else:
            self.weight = source.to(ACTIVATION_DTYPE).contiguous()
        bias = self.source.bias
        self.bias = None if bias is None else bias.detach().to(ACTIVATION_DTYPE).contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(ACTIVATION_DTYPE)
        if not self.quantized:
            return nn.functional.linear(x, self.weight, self.bias)
        rows = x.reshape(-1, self.in_features).contiguous()
        output = torch.ops.aten._weight_int8pack_mm(rows, self.weight, self.scales)
        if self.bias is not None:
            output = output + self.bias
        return output.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        kind = "int8 weights, bf16 scales" if self.quantized else "bf16 weights (in_features not a multiple of 16)"
        return f"in_features={self.in_features}, out_features={self.out_features}, {kind}"


def int8_decode_copy(master: nn.Module) -> nn.Module:
    """A frozen bf16 copy of `master` whose linear layers are `Int8Linear`s (see `decode_copy`)."""
    return decode_copy(master, ACTIVATION_DTYPE, Int8Linear)
