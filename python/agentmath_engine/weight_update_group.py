"""Weights over the wire: the engine's side of SGLang's process-group weight update.

Followed from SGLang 0.5.23 (the PyPI wheel): routes in `srt/entrypoints/http_server.py`, bodies
in `srt/managers/io_struct.py`, the session in `srt/managers/scheduler_components/
weight_updater.py`, the group and the receive in `srt/model_executor/model_runner_components/
weight_updater.py`, the group's formation in `srt/utils/common.py` `init_custom_process_group`.
A trainer joins a process group with the engine and broadcasts each tensor into it; the trainer
is rank 0 (it also hosts the rendezvous store), this worker is rank `rank_offset` (one
tensor-parallel rank). Routes, as this worker serves them (every answer `{success, message}`,
200 on success and 400 otherwise, as SGLang answers):

  POST /init_weights_update_group {master_address, master_port, rank_offset, world_size,
       group_name = "weight_update_group", backend = "nccl"}: joins the group the way SGLang does
       (a rendezvous over tcp://master_address:master_port, `PrefixStore(group_name, store)`,
       torch's `_new_process_group_helper`); blocks until every member joined
  POST /destroy_weights_update_group {group_name}: leaves and destroys it
  POST /begin_weight_update {selector = "all"}: opens the weight-update session (a second begin
       is refused); POST /end_weight_update {}: closes it (refused when none is open)
  POST /update_weights_from_distributed {names, dtypes, shapes, group_name, flush_cache = true,
       abort_all_requests = false, weight_version = null, load_format = null}: refused before
       anything is received outside a session (as SGLang does); else receives one broadcast per
       name from rank 0, in order, copies them into the served model by checkpoint name
       (`checkpoint_layout.py`, cast to its dtype), records `weight_version`, then flushes

Differences from SGLang: gloo is accepted beside nccl (CPU engines, and the tests here); the
worker has no default process group (SGLang's scheduler has its tensor-parallel one; the update
group does not use it); `flattened_bucket` loads are refused; a name the served model does not
have is refused naming it (SGLang's loaders drop it silently and answer success); `flush_cache`
flushes nothing but fails while a request still runs, as SGLang's does. The tensors of an update
are received before anything is checked, so a refused update leaves the group in step with the
trainer.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from . import requests as parse

BACKENDS = ("nccl", "gloo")
DEFAULT_GROUP = "weight_update_group"
# SGLang's own words (scheduler_components/weight_updater.py, model_runner_components/weight_updater.py).
SESSION_REQUIRED = "update_weights_from_distributed must run between begin_weight_update() and end_weight_update()"
SESSION_OPEN = "a weight-update session is already open; call end_weight_update() first"
NO_SESSION = "no weight-update session is open; call begin_weight_update() first"
UPDATED = "Succeeded to update parameter online."

Answer = Tuple[int, Dict[str, Any]]


def init_custom_process_group(backend: str, init_method: str, world_size: int, rank: int, group_name: str):
    """SGLang 0.5.23's `init_custom_process_group` (srt/utils/common.py), store=None path, with
    its default timeout (torch's `default_pg_timeout`)."""
    from torch.distributed.distributed_c10d import (
        Backend,
        PrefixStore,
        _new_process_group_helper,
        _world,
        default_pg_timeout,
        rendezvous,
    )

    store, rank, world_size = next(rendezvous(init_method, rank, world_size, timeout=default_pg_timeout))
    store.set_timeout(default_pg_timeout)
    store = PrefixStore(group_name, store)
    group, _ = _new_process_group_helper(
        world_size, rank, [], Backend(backend), store, group_name=group_name, backend_options=None, timeout=default_pg_timeout
    )
    _world.pg_group_ranks[group] = {i: i for i in range(world_size)}
    return group


def tcp_address(host: str, port: int) -> str:
    """SGLang's `NetworkAddress(host, port).to_tcp()` (srt/utils/network.py): an IPv6 host in brackets."""
    host = host.strip("[]")
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


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
    load_format: Optional[str]


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
    load_format = body.get("load_format")
    return DistributedUpdateRequest(
        names=names,
        dtypes=[torch_dtype(name) for name in dtypes],
        shapes=shapes,
        group_name=_string(body, "group_name", DEFAULT_GROUP),
        flush_cache=bool(body.get("flush_cache", True)),
        abort_all_requests=bool(body.get("abort_all_requests", False)),
        weight_version=parse.optional_weight_version(body),
        load_format=load_format if isinstance(load_format, str) else None,
    )


class WeightUpdateReceiver:
    """The groups this worker joined, its weight-update session, and updates received through
    them. `worker` is read at each call (its `backend` serves, its `engine` pauses and versions)."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self._groups: Dict[str, Any] = {}
        self._backends: Dict[str, str] = {}
        # SGLang keeps one session per scheduler: {"loaded_weights": bool} while open.
        self._session: Optional[Dict[str, bool]] = None
        self._lock = threading.Lock()

    def init_group(self, raw: Any) -> Answer:
        request = parse_init_group(raw)
        backend = self.worker.backend
        if not hasattr(backend, "load_tensors"):
            return 400, {"success": False, "message": f"the {backend.kind} backend cannot load weights by name"}
        try:
            group = init_custom_process_group(
                request.backend,
                tcp_address(request.master_address, request.master_port),
                request.world_size,
                request.rank_offset,  # + tp_rank, always 0 here
                request.group_name,
            )
        except (RuntimeError, ValueError) as error:
            return 400, {"success": False, "message": f"Failed to initialize custom process group: {error}."}
        with self._lock:
            self._groups[request.group_name] = group
            self._backends[request.group_name] = request.backend
        return 200, {"success": True, "message": "Succeeded to initialize custom process group."}

    def destroy_group(self, raw: Any) -> Answer:
        name = _string(parse._object(raw if raw is not None else {}, "request body"), "group_name", DEFAULT_GROUP)
        with self._lock:
            group = self._groups.pop(name, None)
            self._backends.pop(name, None)
        if group is None:
            return 400, {"success": False, "message": "The group to be destroyed does not exist."}
        try:
            dist.destroy_process_group(group)
        except (RuntimeError, ValueError) as error:
            return 400, {"success": False, "message": f"Failed to destroy custom process group: {error}."}
        return 200, {"success": True, "message": "Succeeded to destroy custom process group."}

    def begin(self, raw: Any) -> Answer:
        parse._object(raw if raw is not None else {}, "request body")
        with self._lock:
            if self._session is not None:
                return 400, {"success": False, "message": SESSION_OPEN}
            self._session = {"loaded_weights": False}
        return 200, {"success": True, "message": "Success"}

    def end(self, raw: Any) -> Answer:
        del raw
        with self._lock:
            if self._session is None:
                return 400, {"success": False, "message": NO_SESSION}
            self._session = None
        return 200, {"success": True, "message": "Success"}

    def update(self, raw: Any) -> Answer:
        request = parse_distributed_update(raw)
        with self._lock:
            session = self._session
            group = self._groups.get(request.group_name)
            group_backend = self._backends.get(request.group_name)
        if session is None:
            return 400, {"success": False, "message": SESSION_REQUIRED}
        if group is None:
            return 400, {
                "success": False,
                "message": f"Failed to receive weights: Group {request.group_name} not in {sorted(self._groups)}. "
                "Please call `init_weights_update_group` first.",
            }
        if request.load_format == "flattened_bucket":
            return 400, {"success": False, "message": "Failed to receive weights: this worker does not receive flattened buckets"}
        backend, engine = self.worker.backend, self.worker.engine
        if request.abort_all_requests:
            engine.abort()
        try:
            received = receive(group, group_backend, request.names, request.dtypes, request.shapes, backend.device)
        except RuntimeError as error:
            return 400, {"success": False, "message": f"Failed to receive weights: {error}"}

        def load() -> Answer:
            try:
                backend.load_tensors(received, origin=f"group {request.group_name}")
            except (ValueError, RuntimeError) as error:
                return 400, {"success": False, "message": f"Failed to update parameter online: {error}."}
            session["loaded_weights"] = True
            # The reported version moves only with a whole success (SGLang's tokenizer manager).
            refused = self.worker.flush_after_update(request.flush_cache)
            if refused is not None:
                return 400, {"success": False, "message": refused}
            if request.weight_version is not None:
                engine.policy_version = request.weight_version
            suffix = "" if request.weight_version is None else f" Weight version updated to {request.weight_version}."
            return 200, {"success": True, "message": UPDATED + suffix}

        return engine.exclusive(load)


def receive(
    group: Any,
    backend: Optional[str],
    names: Sequence[str],
    dtypes: Sequence[torch.dtype],
    shapes: Sequence[List[int]],
    device,
) -> Dict[str, torch.Tensor]:
    """One asynchronous broadcast from rank 0 per tensor, in the order the trainer sends them,
    then a wait on each (SGLang's `receive_weights_from_distributed`)."""
    target = device if backend == "nccl" else torch.device("cpu")
    received: Dict[str, torch.Tensor] = {}
    handles = []
    for name, dtype, shape in zip(names, dtypes, shapes):
        tensor = torch.empty(shape, dtype=dtype, device=target)
        handles.append(dist.broadcast(tensor, src=0, group=group, async_op=True))
        received[name] = tensor
    for handle in handles:
        handle.wait()
    return received
