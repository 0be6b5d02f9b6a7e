"""The trainer as a service: rank 0 answers HTTP, every rank executes each command in lockstep.

Routes (JSON unless noted; a binary batch is `batch_io`'s format):
  GET  /health              no auth; {"ok", "world_size"}
  GET  /state               policy version, optimizer steps, world size, model, device
  POST /sft_step            binary batch → step statistics
  POST /grpo_step           binary batch → step statistics
  POST /score               binary batch → {"token_logprobs": [[…]], "policy_version"}
  POST /save_checkpoint     {"path"} → {"path", "policy_version"}
  POST /load_checkpoint     {"path"} → {"policy_version", "optimizer_restored"}
  POST /export              {"path"} → {"path"}: the current weights in Hugging Face layout
  POST /open_weights_update_group  {group_name, world_size, backend, dtype?, bucket_bytes?} →
                            {master_port, buckets}: rank 0 hosts the group's store (weight_broadcast.py)
  POST /join_weights_update_group  {group_name}: rank 0 joins (blocks until every engine did)
  POST /broadcast_weights   {group_name}: every parameter, bucket by bucket, into the group
  POST /destroy_weights_update_group  {group_name}: rank 0 leaves and destroys its side of the group
  POST /transfer_probe      binary batch → every rank decodes it, nothing else (bench trainer)
  POST /shutdown            stops every rank
HTTP runs in a thread; the main thread owns every collective: it takes one command at a time
from a queue, broadcasts it (header as an object, the body as a byte tensor) and executes it
like every other rank. While idle it broadcasts a no-op each minute, so the other ranks'
waits never reach the process group's timeout. A request is validated on rank 0 before it is
broadcast, so a malformed batch is a 400, not a desynchronised job.
"""

from __future__ import annotations

import dataclasses
import hmac
import http.server
import json
import math
import os
import queue
import resource
import sys
import threading
import time
from concurrent.futures import Future
from datetime import timedelta
from typing import Any, Callable, Dict, Optional, Tuple

import torch
import torch.distributed as dist

from .lm_head_logprobs import default_chunk_tokens

from .batch_io import BatchFormatError, check_ranges, decode_batch
from .checkpoint import export_hugging_face, load_checkpoint, save_checkpoint
from .memory_plan import MemoryOptions, ModelDims, refusal
from .model import Placement, init_distributed, placement, rank_threads
from .options import StepOptionsError, parse_step_options
from .parallelize import freeze, parallelize
from .sequence_parallel import SequenceParallel
from .sharded_load import sharded_model
from .step import StepRunner
from .weight_broadcast import WeightBroadcaster, parse_open

TOKEN_VARIABLE = "AGENTMATH_TRAINER_TOKEN"
# Resident memory before the model exists: what the interpreter and libraries take.
BASELINE_RSS_BYTES = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak_memory_bytes(device: torch.device) -> int:
    """The most this rank has held: the accelerator's allocator peak, or the process's peak RSS."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
IDLE_HEARTBEAT_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class TrainerSettings:
    model: str
    reference: Optional[str] = None
    micro_batch_tokens: int = 8192
    activation_checkpointing: bool = False
    # Tokens per LM-head chunk when scoring (0: the model's full [T × V] logits; None: by the
    # vocabulary, lm_head_logprobs.default_chunk_tokens).
    logits_chunk_tokens: Optional[int] = None
    # What a rank may hold (0: the device's memory); steps estimated above it are refused.
    memory_limit_bytes: int = 0
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.95
    max_grad_norm: float = 1.0
    seed: int = 0
    compute_dtype: Optional[str] = None  # None: bf16 on a GPU, fp32 on CPU
    # Ranks that split one packed row (Ulysses); the world is data-parallel × this.
    sequence_parallel: int = 1
    # Shards of parameters, gradients and optimizer state in host memory (GPU ranks only).
    cpu_offload: bool = False


class TrainerCore:
    """What every rank holds: the sharded model, its optimizer and the step runner."""

    def __init__(self, settings: TrainerSettings, where: Optional[Placement] = None) -> None:
        self.settings = settings
        self.where = where or placement(settings.compute_dtype, settings.cpu_offload)
        init_distributed(self.where)
        torch.manual_seed(settings.seed)
        sequence_parallel = SequenceParallel.create(settings.sequence_parallel)
        # Built on meta, sharded, then each rank reads its own part of the files (sharded_load.py).
        self.model = sharded_model(
            settings.model,
            self.where,
            torch.float32,
            lambda model: parallelize(model, self.where, settings.activation_checkpointing, settings.sequence_parallel),
        )
        self.logits_chunk_tokens = (
            settings.logits_chunk_tokens if settings.logits_chunk_tokens is not None else default_chunk_tokens(self.vocab_size)
        )
        decay = [p for p in self.model.parameters() if p.requires_grad and p.dim() >= 2]
        no_decay = [p for p in self.model.parameters() if p.requires_grad and p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=0.0,
            betas=(settings.beta1, settings.beta2),
        )
        reference_path = settings.reference or settings.model
        self.runner = StepRunner(
            self.model,
            self.optimizer,
            self.where.device,
            settings.micro_batch_tokens,
            settings.max_grad_norm,
            # The KL reference: in the compute dtype, sharded the same way, no gradients.
            reference=lambda: sharded_model(
                reference_path,
                self.where,
                self.where.compute_dtype,
                lambda model: freeze(model, self.where, settings.sequence_parallel),
            ),
            logits_chunk_tokens=self.logits_chunk_tokens,
            sequence_parallel=sequence_parallel if settings.sequence_parallel > 1 else None,
        )
        if settings.reference is not None:
            # Asked for by name (train rl does when its klCoef > 0): loaded now, so a run that
            # cannot hold it fails at the start, not at its first KL step. Without --reference
            # a service (train sft's) never pays for it unless a step asks for KL.
            self.runner.reference_model()
        self.broadcaster = WeightBroadcaster(self.model, self.where.compute_dtype, self.where.device)

    def check_fits(self, lengths) -> None:
        """Refuses (ValueError) a step whose longest micro-batch is estimated not to fit a rank."""
        device = self.where.device
        if device.type == "cuda":
            capacity = torch.cuda.get_device_properties(device).total_memory
            name = f"{device} ({torch.cuda.get_device_name(device)})"
        else:
            capacity = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            name = "this machine's memory"
        reason = refusal(
            ModelDims.of(self.model.config, sum(p.numel() for p in self.model.parameters())),
            [int(length) for length in lengths],
            self.settings.micro_batch_tokens,
            dist.get_world_size(),
            MemoryOptions(
                self.settings.activation_checkpointing,
                self.logits_chunk_tokens,
                cpu_offload=self.where.cpu_offload,
                reference=self.runner.reference_loaded,
            ),
            torch.finfo(self.where.compute_dtype).bits // 8,
            self.settings.memory_limit_bytes or capacity,
            name if not self.settings.memory_limit_bytes else "the --memory-limit-gb",
            self.settings.sequence_parallel,
        )
        if reason is not None:
            raise ValueError(reason)

    @property
    def vocab_size(self) -> int:
        """Rows of the input embedding: a token id must be below it."""
        return int(self.model.get_input_embeddings().num_embeddings)

    def describe(self) -> Dict[str, Any]:
        """What this rank knows without asking the others."""
        return {
            "policy_version": self.runner.policy_version,
            "optimizer_steps": self.runner.optimizer_steps,
            "world_size": dist.get_world_size(),
            "model": self.settings.model,
            "reference": self.settings.reference or self.settings.model,
            "device": str(self.where.device),
            "compute_dtype": str(self.where.compute_dtype).replace("torch.", ""),
            "threads": torch.get_num_threads(),
            "logits_chunk_tokens": self.logits_chunk_tokens,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "sequence_parallel": self.settings.sequence_parallel,
            "cpu_offload": self.where.cpu_offload,
            "reference_loaded": self.runner.reference_loaded,
        }

    def state(self) -> Dict[str, Any]:
        """`describe` plus the peak memory over ranks (a collective: every rank runs it)."""
        memory = torch.tensor(
            [peak_memory_bytes(self.where.device), BASELINE_RSS_BYTES if self.where.device.type != "cuda" else 0],
            dtype=torch.int64,
            device=self.where.device,
        )
        dist.all_reduce(memory, op=dist.ReduceOp.MAX)
        return {
            "peak_memory_bytes": int(memory[0].item()),
            "baseline_memory_bytes": int(memory[1].item()),
            **self.describe(),
        }

    def dispatch(self, route: str, payload: Dict[str, Any], body: bytes) -> Dict[str, Any]:
        if route == "/noop":
            return {}
        if route == "/transfer_probe":
            started = time.perf_counter()
            batch = decode_batch(body)
            return {"sequences": len(batch), "tokens": int(batch.lengths.sum()), "decode_ms": (time.perf_counter() - started) * 1000}
        if route == "/state":
            return self.state()
        if route in ("/sft_step", "/grpo_step", "/score"):
            batch = decode_batch(body)
            if route == "/score":
                temperature = float(batch.options.get("temperature", 1.0))
                rows = self.runner.score_sequences(batch, temperature if temperature > 0 else 1.0)
                return {"token_logprobs": [row.tolist() for row in rows], "policy_version": self.runner.policy_version}
            options = parse_step_options(batch.options)
            step = self.runner.sft_step if route == "/sft_step" else self.runner.grpo_step
            return step(batch, options)
        if route == "/save_checkpoint":
            path = payload["path"]
            state = {
                "policyVersion": self.runner.policy_version,
                "optimizerSteps": self.runner.optimizer_steps,
                "model": self.settings.model,
                "reference": self.settings.reference or self.settings.model,
                "worldSize": dist.get_world_size(),
            }
            save_checkpoint(path, self.model, self.optimizer, state)
            return {"path": path, "policy_version": self.runner.policy_version}
        if route == "/load_checkpoint":
            state = load_checkpoint(payload["path"], self.model, self.optimizer)
            self.runner.policy_version = int(state["policyVersion"])
            self.runner.optimizer_steps = int(state["optimizerSteps"])
            return {"policy_version": self.runner.policy_version, "optimizer_restored": True}
        if route == "/export":
            export_hugging_face(payload["path"], self.model, self.settings.model, self.where.compute_dtype)
            return {"path": payload["path"], "policy_version": self.runner.policy_version}
        if route == "/open_weights_update_group":
            return self.broadcaster.open(payload)
        if route == "/join_weights_update_group":
            return self.broadcaster.join(payload)
        if route == "/broadcast_weights":
            return {**self.broadcaster.broadcast(payload), "policy_version": self.runner.policy_version}
        if route == "/destroy_weights_update_group":
            return self.broadcaster.destroy(payload)
        raise KeyError(route)


WEIGHT_GROUP_ROUTES = {
    "/open_weights_update_group", "/join_weights_update_group", "/broadcast_weights", "/destroy_weights_update_group",
}
ROUTES = {
    "/state", "/sft_step", "/grpo_step", "/score", "/save_checkpoint", "/load_checkpoint", "/export", "/transfer_probe",
    "/shutdown", *WEIGHT_GROUP_ROUTES,
}
BINARY_ROUTES = {"/sft_step", "/grpo_step", "/score", "/transfer_probe"}


def validate(
    route: str,
    payload: Dict[str, Any],
    body: bytes,
    reference: str,
    vocab_size: int,
    check_fits: Optional[Callable[[Any], None]] = None,
) -> None:
    """Rank 0's check before a command reaches the other ranks (raises ValueError): the format,
    every field's range (token ids within the vocabulary), the step's options, and whether the
    step is estimated to fit a rank."""
    if route in BINARY_ROUTES:
        batch = decode_batch(body)
        if len(batch) == 0:
            raise ValueError("the batch has no sequences")
        if route != "/transfer_probe":
            check_ranges(batch, vocab_size)
        if route in ("/sft_step", "/grpo_step"):
            options = parse_step_options(batch.options)
            if not math.isfinite(options.learning_rate) or options.learning_rate < 0:
                raise ValueError("learningRate must be a finite number ≥ 0")
            if options.reference_path is not None and os.path.realpath(options.reference_path) != os.path.realpath(reference):
                raise ValueError(
                    f"referencePath {options.reference_path} is not this trainer's KL reference ({reference}); "
                    "start the trainer with --reference"
                )
            if route == "/grpo_step" and (batch.advantages is None or batch.old_logprobs is None):
                raise ValueError("a GRPO batch needs advantages and oldLogprobs")
            offsets = batch.offsets
            trained = sum(int(batch.loss_mask[offsets[i] + 1 : offsets[i + 1]].sum()) for i in range(len(batch)))
            if trained == 0:
                raise ValueError("the batch has no trained tokens (every loss_mask entry after position 0 is 0)")
            if check_fits is not None:
                check_fits(batch.lengths)
    elif route == "/open_weights_update_group":
        parse_open(payload)
    elif route in WEIGHT_GROUP_ROUTES:
        if not isinstance(payload.get("group_name"), str) or not payload["group_name"]:
            raise ValueError(f"{route} needs a JSON body with a non-empty string `group_name`")
    elif route in ("/save_checkpoint", "/load_checkpoint", "/export"):
        if not isinstance(payload.get("path"), str) or not payload["path"]:
            raise ValueError(f"{route} needs a JSON body with a non-empty string `path`")


def _broadcast_command(command: Optional[Tuple[str, Dict[str, Any], int]], body: bytes) -> Tuple[str, Dict[str, Any], bytes]:
    holder = [command]
    dist.broadcast_object_list(holder, src=0)
    route, payload, size = holder[0]
    if size == 0:
        return route, payload, b""
    tensor = torch.frombuffer(bytearray(body), dtype=torch.uint8) if dist.get_rank() == 0 else torch.empty(size, dtype=torch.uint8)
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    dist.broadcast(tensor, src=0)
    return route, payload, body if dist.get_rank() == 0 else tensor.cpu().numpy().tobytes()


def follow(core: TrainerCore) -> None:
    """Ranks > 0: execute what rank 0 broadcasts until it says /shutdown."""
    while True:
        route, payload, body = _broadcast_command(None, b"")
        if route == "/shutdown":
            return
        core.dispatch(route, payload, body)


def serve(core: TrainerCore, host: str, port: int, token: Optional[str]) -> None:
    """Rank 0: HTTP in a thread, commands executed here in order."""
    commands: "queue.Queue[Tuple[str, Dict[str, Any], bytes, Future]]" = queue.Queue()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _send(self, status: int, body: Dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if token is None:
                return True
            given = self.headers.get("authorization", "")
            if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return True
            self._send(401, {"error": "missing or wrong bearer token"})
            return False

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/health":
                self._send(200, {"ok": True, "world_size": dist.get_world_size()})
                return
            if not self._authorised():
                return
            if self.path != "/state":
                self._send(404, {"error": f"no route {self.path}"})
                return
            self._run("/state", {}, b"")

        def do_POST(self) -> None:  # noqa: N802
            if not self._authorised():
                return
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path not in ROUTES:
                self._send(404, {"error": f"no route {self.path}"})
                return
            payload: Dict[str, Any] = {}
            if self.path not in BINARY_ROUTES and body:
                try:
                    payload = json.loads(body)
                except json.JSONDecodeError as error:
                    self._send(400, {"error": f"{self.path}: body is not JSON: {error}"})
                    return
            try:
                validate(
                    self.path, payload, body, core.settings.reference or core.settings.model, core.vocab_size, core.check_fits
                )
            except (BatchFormatError, StepOptionsError, ValueError, KeyError) as error:
                self._send(400, {"error": f"{self.path}: {error}"})
                return
            self._run(self.path, payload, body if self.path in BINARY_ROUTES else b"")

        def _run(self, route: str, payload: Dict[str, Any], body: bytes) -> None:
            future: Future = Future()
            commands.put((route, payload, body, future))
            try:
                self._send(200, future.result())
            except Exception as error:  # the command failed on rank 0: say so; the job may be unusable
                self._send(500, {"error": f"{route}: {type(error).__name__}: {error}"})

    try:
        server = http.server.ThreadingHTTPServer((host, port), Handler)
    except OSError as error:
        report_start_failure(OSError(f"cannot listen on {host}:{port}: {error.strerror or error}"))
        raise
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"event": "ready", "host": host, "port": server.server_address[1], **core.describe()}), flush=True)
    while True:
        try:
            route, payload, body, future = commands.get(timeout=IDLE_HEARTBEAT_SECONDS)
        except queue.Empty:
            _broadcast_command(("/noop", {}, 0), b"")
            continue
        _broadcast_command((route, payload, len(body)), body)
        if route == "/shutdown":
            future.set_result({"ok": True})
            break
        try:
            future.set_result(core.dispatch(route, payload, body))
        except Exception as error:  # noqa: BLE001 - reported to the client, then fatal below
            future.set_exception(error)
            print(f"agentmath_train: {route} failed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            if route in ("/sft_step", "/grpo_step", "/load_checkpoint"):
                # The ranks may now disagree about the weights: stop rather than train on.
                server.shutdown()
                raise
    server.shutdown()


def report_start_failure(error: Exception) -> None:
    """One JSON line on stdout with this rank's own error, so the launcher shows it first (not
    torchrun's summary, in which the cause is one line of dozens)."""
    rank = int(os.environ.get("RANK", "0"))
    message = f"{type(error).__name__}: {error}".strip()
    print(json.dumps({"event": "start-failed", "rank": rank, "error": message}), flush=True)


def run_service(settings: TrainerSettings, host: str, port: int, token: Optional[str], threads: int = 0) -> None:
    """Every rank: join the process group, load and shard the model, then serve (rank 0) or
    follow. An error before rank 0 listens is reported by `report_start_failure`. `threads`:
    torch threads of a CPU rank (0: its share of the machine's cores)."""
    try:
        where = placement(settings.compute_dtype, settings.cpu_offload)
        if where.device.type == "cpu":
            torch.set_num_threads(threads or rank_threads(int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
            if settings.cpu_offload and int(os.environ.get("RANK", "0")) == 0:
                print("agentmath_train: --cpu-offload changes nothing on CPU ranks (their state is in host memory already)", file=sys.stderr, flush=True)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        if not dist.is_initialized():
            init_distributed_with_timeout(where)
        core = TrainerCore(settings, where)
    except Exception as error:
        report_start_failure(error)
        raise
    if dist.get_rank() == 0:
        serve(core, host, port, token)
    else:
        if int(os.environ.get("LOCAL_RANK", "0")) == 0:
            # Another node's first rank: it serves nothing, but says it joined (for the launcher).
            print(json.dumps({"event": "ready", "role": "follower", "rank": dist.get_rank()}), flush=True)
        follow(core)
    dist.destroy_process_group()


def init_distributed_with_timeout(where: Placement) -> None:
    """Under torchrun, the group torchrun's rendezvous describes; started alone (one rank, no
    launcher: what `--nproc 1` runs), a group of one over an in-memory store, so no port is
    taken and two such trainers on one machine never meet."""
    if "WORLD_SIZE" not in os.environ:
        os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"})
        dist.init_process_group(where.backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timedelta(minutes=30))
        return
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group(where.backend, timeout=timedelta(minutes=30))
