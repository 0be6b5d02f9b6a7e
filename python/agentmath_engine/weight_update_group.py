"""Weights over the wire: SGLang's process-group weight update, on both of its sides.

SGLang (0.5.x: `http_server.py`, `io_struct.py`'s `InitWeightsUpdateGroupReqInput` and
`UpdateWeightsFromDistributedReqInput`, the model runner's `init_weights_update_group` /
`update_weights_from_distributed`) lets a trainer join a process group with an engine and
broadcast each parameter into it. The trainer is rank 0 (it also hosts the rendezvous store);
engine e's tensor-parallel ranks are `rank_offset + tp_rank`. Routes, as this worker serves them:

  POST /init_weights_update_group {master_address, master_port, rank_offset, world_size,
       group_name = "weight_update_group", backend = "nccl"} → {success, message}
       blocks until every member joined (the trainer joins at the same time)
  POST /update_weights_from_distributed {names, dtypes, shapes, group_name = "weight_update_group",
       flush_cache = true, abort_all_requests = false, weight_version = null, load_format = null}
       → {success, message}: receives one broadcast per name from rank 0, in order, then copies
       them into the served model by Hugging Face name (cast to its dtype), as a disk load would

Differences from SGLang: gloo is accepted beside nccl (CPU engines, and the tests here); the
worker has one tensor-parallel rank, so `rank_offset` is its rank; `flush_cache` is accepted and
has nothing to flush (the worker keeps no prefix cache between requests); a refusal answers 200
with `success: false`, like this worker's disk load. The tensors of an update are always received
before anything is checked, so a refused update leaves the group in step with the trainer.
`join_weight_update_group` is the one place a member joins, the trainer's rank 0 included.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist

from . import requests as parse

BACKENDS = ("nccl", "gloo")
DEFAULT_GROUP = "weight_update_group"
JOIN_TIMEOUT = timedelta(minutes=10)


@dataclasses.dataclass(frozen=True)
class WeightUpdateGroup:
    """A joined group: the process group and the rendezvous store it lives on."""

    name: str
    rank: int
    world_size: int
    backend: str
    process_group: Any
    store: Any

    def broadcast(self, tensor: torch.Tensor) -> None:
        """One broadcast from rank 0 (the trainer) to every member, in place."""
        options = dist.BroadcastOptions()
        options.rootRank = 0
        options.rootTensor = 0
        self.process_group.broadcast([tensor], options).wait()


def join_weight_update_group(
    master_address: str,
    master_port: int,
    rank: int,
    world_size: int,
    group_name: str,
    backend: str,
    *,
    store: Optional[Any] = None,
    timeout: timedelta = JOIN_TIMEOUT,
) -> WeightUpdateGroup:
    """Joins (rank 0: hosts) the group's rendezvous and builds the process group beside any
    default group the process has. Blocks until all `world_size` members joined."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if store is None:
        store = dist.TCPStore(master_address, master_port, world_size, rank == 0, timeout, wait_for_workers=False)
    prefixed = dist.PrefixStore(f"agentmath-weights/{group_name}", store)
    if backend == "gloo":
        process_group = dist.ProcessGroupGloo(prefixed, rank, world_size, timeout)
    else:
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        process_group = dist.ProcessGroupNCCL(prefixed, rank, world_size, options)
    return WeightUpdateGroup(group_name, rank, world_size, backend, process_group, store)


def torch_dtype(name: str) -> torch.dtype:
    """"bfloat16", "torch.bfloat16" → torch.bfloat16 (SGLang's `getattr(torch, dtype)`)."""
    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise parse.BadRequest(f"dtype {name!r} is not a torch dtype")
    return value


@dataclasses.dataclass(frozen=True)
class InitGroupRequest:
    master_address: str
    master_port: int
    rank_offset: int
    world_size: int
    group_name: str
    backend: str


@dataclasses.dataclass(frozen=True)
class DistributedUpdateRequest:
    names: List[str]
    dtypes: List[torch.dtype]
    shapes: List[List[int]]
    group_name: str
    flush_cache: bool
    abort_all_requests: bool
    weight_version: Optional[int]


def _string(body: Dict[str, Any], key: str, default: Optional[str] = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str) or not value:
        raise parse.BadRequest(f"{key} must be a non-empty string")
    return value


def _integer(body: Dict[str, Any], key: str, minimum: int) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise parse.BadRequest(f"{key} must be an integer ≥ {minimum}")
    return value


def parse_init_group(raw: Any) -> InitGroupRequest:
    body = parse._object(raw, "request body")
    request = InitGroupRequest(
        master_address=_string(body, "master_address"),
        master_port=_integer(body, "master_port", 1),
        rank_offset=_integer(body, "rank_offset", 1),
        world_size=_integer(body, "world_size", 2),
        group_name=_string(body, "group_name", DEFAULT_GROUP),
        backend=_string(body, "backend", "nccl"),
    )
    if request.rank_offset >= request.world_size:
        raise parse.BadRequest(f"rank_offset {request.rank_offset} is not below world_size {request.world_size}")
    if request.backend not in BACKENDS:
        raise parse.BadRequest(f"backend must be one of {', '.join(BACKENDS)}")
    return request


def parse_distributed_update(raw: Any) -> DistributedUpdateRequest:
    body = parse._object(raw, "request body")
    names, dtypes, shapes = body.get("names"), body.get("dtypes"), body.get("shapes")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise parse.BadRequest("names must be a non-empty list of strings")
    if not isinstance(dtypes, list) or len(dtypes) != len(names) or not all(isinstance(d, str) for d in dtypes):
        raise parse.BadRequest("dtypes must be a list of strings, one per name")
    if (
        not isinstance(shapes, list)
        or len(shapes) != len(names)
        or not all(isinstance(s, list) and all(isinstance(n, int) and n >= 0 for n in s) for s in shapes)
    ):
        raise parse.BadRequest("shapes must be a list of integer lists, one per name")
    return DistributedUpdateRequest(
        names=names,
        dtypes=[torch_dtype(name) for name in dtypes],
        shapes=shapes,
        group_name=_string(body, "group_name", DEFAULT_GROUP),
        flush_cache=bool(body.get("flush_cache", True)),
        abort_all_requests=bool(body.get("abort_all_requests", False)),
        weight_version=parse.optional_weight_version(body),
    )


class WeightUpdateReceiver:
    """The engine side: the groups this worker joined, and updates received through them.
    `worker` is read at each call (its `backend` serves, its `engine` pauses and versions)."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self._groups: Dict[str, WeightUpdateGroup] = {}
        self._lock = threading.Lock()

    def init_group(self, raw: Any) -> Dict[str, Any]:
        request = parse_init_group(raw)
        backend = self.worker.backend
        if not hasattr(backend, "load_tensors"):
            return {"success": False, "message": f"the {backend.kind} backend cannot load weights by name"}
        try:
            group = join_weight_update_group(
                request.master_address,
                request.master_port,
                request.rank_offset,
                request.world_size,
                request.group_name,
                request.backend,
            )
        except (RuntimeError, ValueError) as error:
            return {"success": False, "message": f"failed to join {request.group_name}: {error}"}
        with self._lock:
            self._groups[request.group_name] = group
        return {"success": True, "message": "Succeeded to initialize custom process group."}

    def update(self, raw: Any) -> Dict[str, Any]:
        request = parse_distributed_update(raw)
        with self._lock:
            group = self._groups.get(request.group_name)
        if group is None:
            return {"success": False, "message": f"no weight update group {request.group_name!r}: call /init_weights_update_group first"}
        backend, engine = self.worker.backend, self.worker.engine
        if request.abort_all_requests:
            engine.abort()
        received = receive(group, request.names, request.dtypes, request.shapes, backend.device)

        def load() -> Dict[str, Any]:
            backend.load_tensors(received, origin=f"group {request.group_name}")
            if request.weight_version is not None:
                engine.policy_version = request.weight_version
            return {"success": True, "message": f"Succeeded to update {len(received)} parameter(s)."}

        try:
            return engine.exclusive(load)
        except (ValueError, RuntimeError) as error:
            return {"success": False, "message": f"failed to update weights: {error}"}


def receive(
    group: WeightUpdateGroup, names: Sequence[str], dtypes: Sequence[torch.dtype], shapes: Sequence[List[int]], device
) -> Dict[str, torch.Tensor]:
    """One broadcast per tensor, in the order the trainer sends them."""
    received: Dict[str, torch.Tensor] = {}
    target = device if group.backend == "nccl" else torch.device("cpu")
    for name, dtype, shape in zip(names, dtypes, shapes):
        tensor = torch.empty(shape, dtype=dtype, device=target)
        group.broadcast(tensor)
        received[name] = tensor
    return received
