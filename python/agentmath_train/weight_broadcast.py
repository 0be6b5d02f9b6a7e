"""The trainer's side of the weight update over a process group (`--weight-sync distributed`).

Rank 0 of the trainer is rank 0 of a second process group whose other members are the engines
(engine e at `rank_offset` = 1 + the ranks before it), as verl, AReaL and slime lay it out. The
group is formed the way SGLang 0.5.23 forms the engines' side (`init_custom_process_group` in
`srt/utils/common.py`, which verl's and slime's trainers copy for theirs): a rendezvous over
tcp://address:port, the store wrapped in `PrefixStore(group_name, …)`, then torch's
`_new_process_group_helper`, which prefixes the keys again. Built any other way the keys differ
and the members never meet.

Four commands, each run by every trainer rank (only rank 0 talks to the engines):
1. `open`: rank 0 holds a free port for the rendezvous (a multi-tenant TCPStore server that the
   rendezvous then reuses, so nothing else can take the port in between) and returns it with the
   broadcast plan: every tensor under its checkpoint name, what `save_pretrained` writes (the
   model's layout converted back by transformers' `revert_weight_conversion`: Qwen3-MoE's fused
   `mlp.experts.gate_up_proj` becomes `mlp.experts.{i}.gate_proj.weight` and `…up_proj.weight`),
   with its shape and the dtype it is sent in (the training compute dtype unless told), cut into
   buckets of at most `bucket_bytes` (a parameter is never split between buckets): one
   `/update_weights_from_distributed` call per bucket.
2. `join`: rank 0 joins as rank 0 (blocks until every engine joined through its
   `/init_weights_update_group`).
3. `broadcast`: for each bucket every rank gathers the full parameters from its FSDP2 shards
   (`full_tensor`, a collective); rank 0 converts them to the checkpoint names and broadcasts each
   tensor in plan order, the order the engines receive in.
4. `destroy`: rank 0 destroys its side of the group (each engine destroys its own through
   `/destroy_weights_update_group`).
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist
import transformers
from transformers.core_model_loading import revert_weight_conversion

BACKENDS = ("nccl", "gloo")
DEFAULT_BUCKET_BYTES = 512 * 1024 * 1024
# How long a member waits for the others, in the rendezvous and in each broadcast: SGLang's
# default (torch's `default_pg_timeout`), which is what the engines' side waits.
GROUP_TIMEOUT = timedelta(minutes=30)
# Wrappers that put a prefix in a parameter's name (not Hugging Face names).
WRAPPER_PREFIXES = ("_checkpoint_wrapped_module.", "_orig_mod.", "_fsdp_wrapped_module.")


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One tensor on the wire: its checkpoint name, the dtype it is sent in, its shape."""

    name: str
    dtype: str
    shape: List[int]


@dataclasses.dataclass(frozen=True)
class PlannedParameter:
    """A model parameter (Hugging Face name) and the checkpoint tensors it is sent as."""

    parameter: str
    tensors: List[TensorSpec]


@dataclasses.dataclass(frozen=True)
class OpenRequest:
    group_name: str
    world_size: int
    backend: str
    dtype: Optional[str]
    bucket_bytes: int


def torch_dtype(name: str) -> torch.dtype:
    """"bfloat16", "torch.bfloat16" → torch.bfloat16 (SGLang reads dtypes with `getattr(torch, …)`)."""
    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"dtype {name!r} is not a torch dtype")
    return value


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


def checkpoint_tensors(layout: torch.nn.Module, name: str, tensor: torch.Tensor) -> Dict[str, torch.Tensor]:
    """One parameter as the checkpoint holds it (`save_pretrained`'s conversion, on `layout`: a
    plain model of the same config, so wrappers and sharding change nothing)."""
    return revert_weight_conversion(layout, {name: tensor})


def plan_buckets(
    model: torch.nn.Module, layout: torch.nn.Module, dtype: torch.dtype, bucket_bytes: int
) -> List[List[PlannedParameter]]:
    """Parameters in `named_parameters` order (a tied one once, as `save_pretrained` keeps it),
    each as its checkpoint tensors, by bytes in `dtype`; a parameter larger than a bucket is a
    bucket alone."""
    buckets: List[List[PlannedParameter]] = []
    bucket: List[PlannedParameter] = []
    size = 0
    dtype_name = str(dtype).removeprefix("torch.")
    for raw_name, parameter in model.named_parameters():
        name = hugging_face_name(raw_name)
        nbytes = parameter.numel() * dtype.itemsize
        if bucket and size + nbytes > bucket_bytes:
            buckets.append(bucket)
            bucket, size = [], 0
        shaped = torch.empty(parameter.shape, dtype=dtype, device="meta")
        tensors = [
            TensorSpec(checkpoint_name, dtype_name, list(converted.shape))
            for checkpoint_name, converted in checkpoint_tensors(layout, name, shaped).items()
        ]
        bucket.append(PlannedParameter(name, tensors))
        size += nbytes
    if bucket:
        buckets.append(bucket)
    return buckets


def init_custom_process_group(backend: str, init_method: str, world_size: int, rank: int, group_name: str):
    """Joins a group as SGLang's `init_custom_process_group` does (store=None): its rank 0 starts
    the store on `init_method`'s port (or reuses this process's server there)."""
    from torch.distributed.distributed_c10d import Backend, PrefixStore, _new_process_group_helper, _world, rendezvous

    store, rank, world_size = next(rendezvous(init_method, rank, world_size, timeout=GROUP_TIMEOUT))
    store.set_timeout(GROUP_TIMEOUT)
    store = PrefixStore(group_name, store)
    group, _ = _new_process_group_helper(
        world_size, rank, [], Backend(backend), store, group_name=group_name, backend_options=None, timeout=GROUP_TIMEOUT
    )
    _world.pg_group_ranks[group] = {i: i for i in range(world_size)}
    return group


class WeightBroadcaster:
    """Holds the group (rank 0) and the plan (every rank) between commands."""

    def __init__(self, model: torch.nn.Module, compute_dtype: torch.dtype, device: torch.device) -> None:
        self.model = model
        self.compute_dtype = compute_dtype
        self.device = device
        with torch.device("meta"):
            self._layout = transformers.AutoModelForCausalLM.from_config(model.config)
        self._request: Optional[OpenRequest] = None
        self._held_store: Any = None
        self._group: Any = None
        self._buckets: List[List[PlannedParameter]] = []

    def open(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        request = parse_open(payload)
        dtype = torch_dtype(request.dtype) if request.dtype is not None else self.compute_dtype
        if self._group is not None:
            self._destroy()
        self._buckets = plan_buckets(self.model, self._layout, dtype, request.bucket_bytes)
        self._request = request
        port = 0
        if dist.get_rank() == 0:
            self._held_store = dist.TCPStore(
                "0.0.0.0", 0, request.world_size, True, GROUP_TIMEOUT, wait_for_workers=False, multi_tenant=True
            )
            port = self._held_store.port
        return {
            "group_name": request.group_name,
            "master_port": port,
            "buckets": [
                {
                    "names": [spec.name for planned in bucket for spec in planned.tensors],
                    "dtypes": [spec.dtype for planned in bucket for spec in planned.tensors],
                    "shapes": [spec.shape for planned in bucket for spec in planned.tensors],
                }
                for bucket in self._buckets
            ],
        }

    def join(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        request = self._opened(payload)
        if dist.get_rank() == 0:
            # Rank 0 reaches its own store on loopback: the engines' master address may be one
            # this host cannot connect back to (a NAT's), and the keys do not depend on it.
            self._group = init_custom_process_group(
                request.backend, f"tcp://127.0.0.1:{self._held_store.port}", request.world_size, 0, request.group_name
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
            full = [(planned, _full_tensor(parameters[planned.parameter])) for planned in bucket]
            if self._group is None or failure is not None:
                continue
            try:
                for planned, tensor in full:
                    sent += self._send(planned, tensor)
            except RuntimeError as error:
                failure = error
        if failure is not None:
            self._destroy()  # a broken group is not used again; open and join a new one
            raise RuntimeError(f"broadcast into {request.group_name!r} failed: {failure}") from failure
        return {
            "buckets": len(self._buckets),
            "tensors": sum(len(planned.tensors) for bucket in self._buckets for planned in bucket),
            "bytes": sent,
            "broadcast_ms": (time.perf_counter() - started) * 1000.0,
        }

    def destroy(self, payload: Dict[str, Any]) -> Dict[str, Any]:
        name = payload.get("group_name")
        destroyed = self._request is not None and self._request.group_name == name and self._group is not None
        if self._request is not None and self._request.group_name == name:
            self._destroy()
            self._request = None
        return {"group_name": name, "destroyed": destroyed}

    def _send(self, planned: PlannedParameter, tensor: torch.Tensor) -> int:
        converted = checkpoint_tensors(self._layout, planned.parameter, tensor)
        if list(converted) != [spec.name for spec in planned.tensors]:
            raise RuntimeError(f"{planned.parameter}: converted to {list(converted)}, planned {[s.name for s in planned.tensors]}")
        sent = 0
        for spec in planned.tensors:
            out = converted[spec.name].to(torch_dtype(spec.dtype)).contiguous()
            out = out.to(self.device) if self._request.backend == "nccl" else out.cpu()
            dist.broadcast(out, src=0, group=self._group)
            sent += out.numel() * out.element_size()
        return sent

    def _destroy(self) -> None:
        if self._group is not None:
            try:
                dist.destroy_process_group(self._group)
            except (RuntimeError, ValueError):
                pass  # already unusable: nothing left to release on this side
        self._group = None
        self._held_store = None

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

