"""What this machine's CPU computes natively, read from /proc/cpuinfo (Linux; elsewhere: nothing).

`native_bf16()` is true where the CPU has bf16 dot-product instructions (AVX512-BF16 or AMX-BF16):
there oneDNN runs bf16 matmuls at full speed; without them bf16 is emulated and slower than fp32.
"""

from __future__ import annotations

from typing import FrozenSet

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> FrozenSet[str]:
    try:
        with open(cpuinfo, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def native_bf16(flags: FrozenSet[str] | None = None) -> bool:
    return bool(BF16_FLAGS & (cpu_flags() if flags is None else flags))
