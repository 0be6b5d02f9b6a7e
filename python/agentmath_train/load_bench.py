"""Peak host memory per rank of loading a model: the whole model on every rank, then sharded
(`load_model` + `parallelize`, the trainer's path before the sharded load) against built on
meta and read shard by shard (`sharded_load.sharded_model`), with P ranks under torchrun.

A rank's peak is its VmHWM (/proc/self/status: the resident set's high-water mark, pages of the
memory-mapped safetensors files included), taken before the load (interpreter, torch,
transformers) and after it. Each configuration runs in torchrun processes of its own, since a
process's high-water mark cannot be reset. On CPU only (gloo): GPU memory is the allocator's to
report, and `scripts/gpu-check.sh` does that.

`python -m agentmath_train load-bench [--model DIR] [--processes 1,2]` writes a random-init
Qwen3-0.6B-shaped model (the published configuration, bf16 on disk as published models are)
into a temporary folder when no --model is given, runs each path with each rank count, and
prints them side by side; docs/training.md holds the figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

PATHS = ("full", "sharded")
GIB = 2**30


@dataclasses.dataclass(frozen=True)
class LoadMeasurement:
    path: str  # "full" or "sharded"
    processes: int
    peak_bytes: List[int]  # per rank: VmHWM after the load
    baseline_bytes: List[int]  # per rank: VmHWM before it
    weights_bytes: List[int]  # per rank: the bytes of its parameter shards
    seconds: float  # the slowest rank's load


def status_bytes(field: str) -> int:
    """A `kB` line of /proc/self/status (VmHWM, VmRSS, RssFile, …) in bytes."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def rank_probe(folder: str, path: str, out: str) -> None:
    """One rank under torchrun: load `folder` by `path`, then rank 0 writes every rank's figures."""
    import torch
    import torch.distributed as dist

    from .model import Placement, init_distributed, load_model, rank_threads
    from .parallelize import parallelize
    from .sharded_load import sharded_model

    where = Placement(torch.device("cpu"), torch.float32, "gloo")
    torch.set_num_threads(rank_threads(int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    init_distributed(where)
    baseline = status_bytes("VmHWM")
    started = time.perf_counter()
    if path == "full":
        model = parallelize(load_model(folder, where), where)
    else:
        model = sharded_model(folder, where, torch.float32, lambda plain: parallelize(plain, where))
    seconds = time.perf_counter() - started
    local = [parameter.to_local() if hasattr(parameter, "to_local") else parameter for parameter in model.parameters()]
    figures = (status_bytes("VmHWM"), baseline, sum(t.numel() * t.element_size() for t in local), seconds)
    gathered: List[Optional[tuple]] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, figures)
    if dist.get_rank() == 0:
        measurement = LoadMeasurement(
            path,
            dist.get_world_size(),
            [int(rank[0]) for rank in gathered],
            [int(rank[1]) for rank in gathered],
            [int(rank[2]) for rank in gathered],
            max(float(rank[3]) for rank in gathered),
        )
        with open(out, "w") as handle:
            json.dump(dataclasses.asdict(measurement), handle)
    dist.barrier()
    dist.destroy_process_group()


def write_random_model(out: str, shape_name: str = "qwen3-0.6b", seed: int = 0) -> int:
    """A random-init model of a published Qwen3 shape, saved in bf16; returns its parameter count."""
    import torch
    import transformers

    from .trainer_probe import QWEN3_SHAPES

    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(QWEN3_SHAPES[shape_name].config(), dtype=torch.bfloat16)
    model.save_pretrained(out)
    return sum(parameter.numel() for parameter in model.parameters())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure(folder: str, path: str, processes: int, scratch: str) -> LoadMeasurement:
    out = os.path.join(scratch, f"load-{path}-{processes}.json")
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    environment = {
        **os.environ,
        "PYTHONPATH": python_dir + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OMP_WAIT_POLICY": "PASSIVE",  # as every trainer rank (python -m agentmath_train)
        "HF_HUB_OFFLINE": "1",
    }
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(processes),
        "--master-port",
        str(_free_port()),
        "-m",
        "agentmath_train.load_bench",
        folder,
        path,
        out,
    ]
    finished = subprocess.run(command, env=environment, capture_output=True, text=True)
    if finished.returncode != 0:
        raise RuntimeError(f"the {path} load with {processes} process(es) failed:\n{finished.stderr[-3000:]}")
    with open(out) as handle:
        return LoadMeasurement(**json.load(handle))


def run_load_bench(
    folder: Optional[str],
    processes: Sequence[int],
    paths: Sequence[str] = PATHS,
    on_progress: Callable[[str], None] = lambda message: None,
) -> Dict[str, object]:
    scratch = tempfile.mkdtemp(prefix="agentmath-load-bench-")
    try:
        parameters = None
        if folder is None:
            folder = os.path.join(scratch, "qwen3-0.6b-random")
            on_progress(f"writing a random-init Qwen3-0.6B-shaped model (bf16) to {folder} …")
            parameters = write_random_model(folder)
        on_disk = sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder) if name.endswith(".safetensors"))
        rows = []
        for count in processes:
            for path in paths:
                on_progress(f"loading by the {path} path with {count} process(es) …")
                rows.append(dataclasses.asdict(measure(folder, path, count, scratch)))
        return {"model": folder, "parameters": parameters, "safetensorsBytes": on_disk, "loadAverage": os.getloadavg(), "rows": rows}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def render(report: Dict[str, object]) -> str:
    lines = [
        f"model: {report['model']} ({report['safetensorsBytes'] / GIB:.2f} GiB of safetensors"
        + (f", {report['parameters']:,} parameters" if report["parameters"] else "")
        + ")",
        "",
        "| path | ranks | peak per rank (GiB) | before the load (GiB) | load's peak above it (GiB) | rank's fp32 shards (GiB) | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["rows"]:  # type: ignore[union-attr]
        peak, baseline = max(row["peak_bytes"]), max(row["baseline_bytes"])
        above = max(p - b for p, b in zip(row["peak_bytes"], row["baseline_bytes"]))
        lines.append(
            f"| {row['path']} | {row['processes']} | {peak / GIB:.2f} | {baseline / GIB:.2f} | {above / GIB:.2f} "
            f"| {max(row['weights_bytes']) / GIB:.2f} | {row['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    rank_probe(*sys.argv[1:4])
