"""The trainer's side of SGLang's weight update over a process group (`--weight-sync distributed`).

Rank 0 of the trainer is rank 0 of a second process group whose other members are the engines
(engine e at `rank_offset` = 1 + the ranks before it), as verl, AReaL and slime lay it out. Three
steps, each one trainer command (every trainer rank runs it; only rank 0 talks to the engines):

1. `open`: rank 0 starts the group's rendezvous store on a free port and returns it with the
   broadcast plan: every parameter by Hugging Face name, its full shape and the dtype it is sent
   in (the engine's: the training compute dtype unless told otherwise), cut into buckets of at
   most `bucket_bytes` — one `/update_weights_from_distributed` call per bucket.
2. `join`: rank 0 joins the group (blocks until every engine joined through its
   `/init_weights_update_group`).
3. `broadcast`: for each bucket, every rank gathers the full tensors from its FSDP2 shards
   (`full_tensor`, a collective), and rank 0 casts each to the plan's dtype and broadcasts it,
   in plan order — the order the engines receive in.
The group stays for the run; `broadcast` runs after each step with the engines paused.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from agentmath_engine.weight_update_group import (
    BACKENDS,
    JOIN_TIMEOUT,
    WeightUpdateGroup,
    join_weight_update_group,
    torch_dtype,
)

DEFAULT_BUCKET_BYTES = 512 * 1024 * 1024
# Wrappers that put a prefix in a parameter's name (not Hugging Face names).
WRAPPER_PREFIXES = ("_checkpoint_wrapped_module.", "_orig_mod.", "_fsdp_wrapped_module.")


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    shape: List[int]


@dataclasses.dataclass(frozen=True)
class OpenRequest:
    group_name: str
    world_size: int
    backend: str
    dtype: Optional[str]
    bucket_bytes: int


def parse_open(payload: Dict[str, Any]) -> OpenRequest:
    """Raises ValueError naming the field (rank 0 validates before the command is broadcast)."""
    group_name = payload.get("group_name")
    if not isinstance(group_name, str) or not group_name:
        raise ValueError("group_name must be a non-empty string")
    world_size = payload.get("world_size")
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 2:
        raise ValueError("world_size must be an integer ≥ 2 (the trainer and at least one engine)")
    backend = payload.get("backend", "nccl")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}")
    dtype = payload.get("dtype")
    if dtype is not None:
        torch_dtype(str(dtype))
    bucket_bytes = payload.get("bucket_bytes", DEFAULT_BUCKET_BYTES)
    if not isinstance(bucket_bytes, int) or isinstance(bucket_bytes, bool) or bucket_bytes < 1:
        raise ValueError("bucket_bytes must be an integer ≥ 1")
    return OpenRequest(group_name, world_size, backend, None if dtype is None else str(dtype), bucket_bytes)


def hugging_face_name(name: str) -> str:
    for prefix in WRAPPER_PREFIXES:
        name = name.replace(prefix, "")
    return name


def plan_buckets(model: torch.nn.Module, dtype: torch.dtype, bucket_bytes: int) -> List[List[TensorSpec]]:
    """Parameters in `named_parameters` order (a tied one once), by bytes in `dtype`; a tensor
    larger than a bucket is a bucket alone."""
    buckets: List[List[TensorSpec]] = []
    bucket: List[TensorSpec] = []
    size = 0
    dtype_name = str(dtype).removeprefix("torch.")
    for name, parameter in model.named_parameters():
        nbytes = parameter.numel() * dtype.itemsize
        if bucket and size + nbytes > bucket_bytes:
            buckets.append(bucket)
            bucket, size = [], 0
        bucket.append(TensorSpec(hugging_face_name(name), dtype_name, list(parameter.shape)))
        size += nbytes
    if bucket:
        buckets.append(bucket)
    return buckets


class WeightBroadcaster:
    """Holds the group (rank 0) and the plan (every rank) between commands."""

    def __init__(self, model: torch.nn.Module, compute_dtype: torch.dtype, device: torch.device) -> None:
        self.model = model
        self.compute_dtype = compute_dtype
        self.device = device
        self._request: Optional[OpenRequest] = None
        self._store: Any = None
        self._group: Optional[WeightUpdateGroup] = None
        self._buckets: List[List[TensorSpec]] = []

    def open(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        request = parse_open(payload)
        dtype = torch_dtype(request.dtype) if request.dtype is not None else self.compute_dtype
        self._buckets = plan_buckets(self.model, dtype, request.bucket_bytes)
        self._request = request
        self._group = None
        port = 0
        if dist.get_rank() == 0:
            self._store = dist.TCPStore(
                "0.0.0.0", 0, request.world_size, True, JOIN_TIMEOUT, wait_for_workers=False
            )
            port = self._store.port
        return {
            "group_name": request.group_name,
            "master_port": port,
            "buckets": [
                {"names": [s.name for s in bucket], "dtypes": [s.dtype for s in bucket], "shapes": [s.shape for s in bucket]}
                for bucket in self._buckets
            ],
        }

    def join(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        request = self._opened(payload)
        if dist.get_rank() == 0:
            self._group = join_weight_update_group(
                "127.0.0.1", self._store.port, 0, request.world_size, request.group_name, request.backend, store=self._store
            )
        return {"group_name": request.group_name, "world_size": request.world_size}

    @torch.no_grad()
    def broadcast(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        request = self._opened(payload)
        if dist.get_rank() == 0 and self._group is None:
            raise RuntimeError(f"weight update group {request.group_name!r} was opened but never joined")
        started = time.perf_counter()
        parameters = {hugging_face_name(name): parameter for name, parameter in self.model.named_parameters()}
        sent = 0
        failure: Optional[Exception] = None
        for bucket in self._buckets:
            # Every rank gathers the bucket (FSDP2's all-gather); rank 0 then sends it in order.
            # After a failed send rank 0 still gathers, so the trainer's own ranks stay in step.
            full = [_full_tensor(parameters[spec.name]) for spec in bucket]
            if self._group is None or failure is not None:
                continue
            for spec, tensor in zip(bucket, full):
                out = tensor.to(torch_dtype(spec.dtype)).contiguous()
                out = out.to(self.device) if self._group.backend == "nccl" else out.cpu()
                try:
                    self._group.broadcast(out)
                except RuntimeError as error:
                    failure = error
                    break
                sent += out.numel() * out.element_size()
        if failure is not None:
            self._group = None  # a broken group is not used again; open and join a new one
            raise RuntimeError(f"broadcast into {request.group_name!r} failed: {failure}") from failure
        return {
            "buckets": len(self._buckets),
            "tensors": sum(len(bucket) for bucket in self._buckets),
            "bytes": sent,
            "broadcast_ms": (time.perf_counter() - started) * 1000.0,
        }

    def _opened(self, payload: Dict[str, Any]) -> OpenRequest:
        name = payload.get("group_name")
        if self._request is None or self._request.group_name != name:
            raise ValueError(f"weight update group {name!r} is not open on this trainer (open it first)")
        return self._request


def _full_tensor(parameter: torch.Tensor) -> torch.Tensor:
    data = parameter.detach()
    if not hasattr(data, "full_tensor"):
        return data
    if data.device.type != data.device_mesh.device_type:  # CPU-offloaded shards gather on the device
        data = data.to(data.device_mesh.device_type)
    return data.full_tensor()
