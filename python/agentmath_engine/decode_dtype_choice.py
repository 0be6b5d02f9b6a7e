"""`--decode-dtype auto`: the dtype generation reads the weights in, decided by timing this model's
linear layers on this CPU, fp32 against bf16, never by the CPU's name.

A decode step is every linear layer of the model on a few rows, so that is what is timed: the
model's own layers (its first PROBE_BYTES of them) in the engine's decode form (packed for oneDNN,
or plain), at 1, 8 and 32 rows, each dtype in turn, REPEATS times; the median of each. They run on one thread and are timed in
that thread's CPU time: the ratio of the two dtypes is a property of the core and its memory, and
a CPU-time ratio of one thread holds on a machine other processes load, where a wall-clock time of
several threads (each waiting for the others at every layer) does not. bf16 is chosen when its time per token, summed over those row counts, is at most
BF16_MARGIN of fp32's: it costs logprob fidelity (the engine's tokens are then the bf16 model's), so
it has to pay clearly. A CPU without bf16 dot products (AVX512-BF16, AMX-BF16) emulates bf16 and
measures slower; one with them measures faster; the flags are reported beside the timings.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Callable, Dict, List, Sequence, Tuple

import torch
from torch import nn

from .cpu_features import native_bf16

ROWS = (1, 8, 32)
REPEATS = 3
# The layers timed: the model's first linear layers, up to this many bytes in fp32 (all of a model
# smaller than that). Far more than a CPU's caches, so they stream from memory as in a decode step,
# and a fraction of a larger model, so the choice takes about a second on a quiet machine.
PROBE_BYTES = 128 * 2**20
BF16_MARGIN = 0.9
CANDIDATES = (torch.float32, torch.bfloat16)

@dataclasses.dataclass
class DecodeDtypeChoice:
    dtype: torch.dtype
    # dtype name → Σ over ROWS of (seconds for the probed linear layers on that many rows) / rows
    seconds_per_token: Dict[str, float]
    native_bf16: bool

    def describe(self) -> Dict[str, object]:
        return {
            "chosen": str(self.dtype).replace("torch.", ""),
            "rule": f"bfloat16 when its time per token is at most {BF16_MARGIN} of float32's (rows {', '.join(map(str, ROWS))})",
            "seconds_per_token": {name: round(value, 6) for name, value in self.seconds_per_token.items()},
            "native_bf16_flags": self.native_bf16,
        }


def linear_timer(model: nn.Module, dtype: torch.dtype, packed: bool, batch_hint: int) -> Callable[[int], float]:
    """A function timing the model's first linear layers (PROBE_BYTES of them) once, in order, on
    `rows` rows (seconds), on the model's own weights in the engine's decode form: every layer
    distinct, as a decode step streams them from memory (one layer timed many times would sit in
    the cache)."""
    from .packed_linear import PackedLinear

    linears, fp32_bytes = [], 0
    for module in model.modules():
        if type(module) is nn.Linear and fp32_bytes < PROBE_BYTES:
            linears.append(module)
            fp32_bytes += 4 * module.weight.numel()
    layers = [PackedLinear(module, dtype, batch_hint) if packed else _plain_copy(module, dtype) for module in linears]

    @torch.no_grad()
    def run(rows: int) -> float:
        inputs = {layer.in_features: torch.randn(rows, layer.in_features, dtype=dtype) for layer in layers}
        started = time.thread_time()
        for layer in layers:
            layer(inputs[layer.in_features])
        return time.thread_time() - started

    return run


def _plain_copy(module: nn.Linear, dtype: torch.dtype) -> nn.Linear:
    layer = nn.Linear(module.in_features, module.out_features, bias=module.bias is not None, dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(module.weight)
        if module.bias is not None:
            layer.bias.copy_(module.bias)
    return layer.requires_grad_(False)


def choose_decode_dtype(
    model: nn.Module,
    packed: bool,
    batch_hint: int = 64,
    rows: Sequence[int] = ROWS,
    repeats: int = REPEATS,
    make_timer: Callable[[nn.Module, torch.dtype, bool, int], Callable[[int], float]] = linear_timer,
) -> DecodeDtypeChoice:
    """Times the model's linear layers in fp32 and bf16 (interleaved, so a noisy machine slows
    both alike) and picks the dtype by the rule in the module comment."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        per_token = _seconds_per_token(model, packed, batch_hint, rows, repeats, make_timer)
    finally:
        torch.set_num_threads(threads)
    faster = per_token["bfloat16"] <= BF16_MARGIN * per_token["float32"]
    return DecodeDtypeChoice(torch.bfloat16 if faster else torch.float32, per_token, native_bf16())


def _seconds_per_token(model, packed, batch_hint, rows, repeats, make_timer) -> Dict[str, float]:
    timers = {dtype: make_timer(model, dtype, packed, batch_hint) for dtype in CANDIDATES}
    for dtype in CANDIDATES:
        for count in rows:
            timers[dtype](count)  # warm-up: oneDNN creates its kernels on a first call
    samples: Dict[Tuple[torch.dtype, int], List[float]] = {(dtype, count): [] for dtype in CANDIDATES for count in rows}
    for _ in range(repeats):
        for count in rows:
            for dtype in CANDIDATES:
                samples[(dtype, count)].append(timers[dtype](count))
    return {
        str(dtype).replace("torch.", ""): sum(statistics.median(samples[(dtype, count)]) / count for count in rows)
        for dtype in CANDIDATES
    }
