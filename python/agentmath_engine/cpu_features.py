"""What this machine's CPU computes natively, read from /proc/cpuinfo (Linux; elsewhere: nothing),
and what oneDNN does with it.

`native_bf16()` is true where the CPU has bf16 dot-product instructions (AVX512-BF16 or AMX-BF16):
there oneDNN runs bf16 matmuls at full speed; without them bf16 is emulated and slower than fp32.
`describe_machine()` is what a benchmark prints about where it ran: the CPU model, the ISA flags
that decide which kernels run, torch's CPU capability, oneDNN's ISA and the kernel it picks for a
packed linear layer in each decode dtype (AMX shows up there, as `avx512_core_amx`), and threads.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from typing import Dict, FrozenSet, List, Optional

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# The flags that decide which matmul kernels a CPU gets (oneDNN, ATen, MKL), in print order.
KERNEL_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")


def _cpuinfo_field(name: str, cpuinfo: str) -> Optional[str]:
    try:
        with open(cpuinfo, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> FrozenSet[str]:
    flags = _cpuinfo_field("flags", cpuinfo)
    return frozenset(flags.split()) if flags else frozenset()


def native_bf16(flags: FrozenSet[str] | None = None) -> bool:
    return bool(BF16_FLAGS & (cpu_flags() if flags is None else flags))


@dataclasses.dataclass
class MachineDescription:
    cpu_model: str
    cores: int
    kernel_flags: List[str]  # the KERNEL_FLAGS this CPU has
    torch_cpu_capability: str
    onednn_isa: Optional[str]  # oneDNN's own line, e.g. "Intel AVX-512 with Intel DL Boost and bfloat16 support"
    onednn_linear: Dict[str, str]  # decode dtype → the kernel oneDNN runs a packed linear layer with
    amx_in_use: bool  # a oneDNN kernel above is an AMX one
    threads: int
    omp_wait_policy: Optional[str]

    def to_json(self) -> Dict[str, object]:
        return {
            "cpuModel": self.cpu_model, "cores": self.cores, "kernelFlags": self.kernel_flags,
            "torchCpuCapability": self.torch_cpu_capability, "onednnIsa": self.onednn_isa,
            "onednnLinear": self.onednn_linear, "amxInUse": self.amx_in_use, "threads": self.threads,
            "ompWaitPolicy": self.omp_wait_policy,
        }


def _onednn_verbose(action) -> List[str]:
    """oneDNN's verbose lines while `action` runs (oneDNN writes them to file descriptor 1)."""
    import torch

    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as handle:
        os.dup2(handle.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                action()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        handle.seek(0)
        return handle.read().decode("utf-8", errors="replace").splitlines()


def onednn_linear_kernels(dtypes=("float32", "bfloat16")) -> tuple[Optional[str], Dict[str, str]]:
    """(oneDNN's ISA line, {dtype: kernel name}) for one packed linear layer of 8 rows, run the
    way the engine runs its decode layers (`packed_linear.py`)."""
    import torch

    from .packed_linear import packed_linear_available

    if packed_linear_available() is not None:
        return None, {}
    isa: Optional[str] = None
    kernels: Dict[str, str] = {}
    for name in dtypes:
        dtype = getattr(torch, name)
        weight = torch.randn(256, 128, dtype=dtype)
        rows = torch.randn(8, 128, dtype=dtype)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 8)
        for line in _onednn_verbose(lambda: torch.ops.mkldnn._linear_pointwise(rows, packed, None, "none", [], "")):
            fields = line.split(",")
            if len(fields) > 4 and fields[2:4] == ["info", "cpu"] and fields[4].startswith("isa:"):
                isa = ",".join(fields[4:])[len("isa:"):]
            elif len(fields) > 6 and fields[2:4] == ["primitive", "exec"]:
                kernels[name] = fields[6]
    return isa, kernels


def describe_machine() -> MachineDescription:
    import torch

    flags = cpu_flags()
    isa, kernels = onednn_linear_kernels()
    return MachineDescription(
        cpu_model=_cpuinfo_field("model name", "/proc/cpuinfo") or "unknown",
        cores=os.cpu_count() or 1,
        kernel_flags=[flag for flag in KERNEL_FLAGS if flag in flags],
        torch_cpu_capability=torch.backends.cpu.get_cpu_capability(),
        onednn_isa=isa,
        onednn_linear=kernels,
        amx_in_use=any("amx" in kernel for kernel in kernels.values()),
        threads=torch.get_num_threads(),
        omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"),
    )
