"""The worker's HTTP server: SGLang's native routes plus the training routes.

Inference (SGLang's names, fields, status codes and answers, followed from SGLang 0.5.23's
http_server.py, io_struct.py, tokenizer_manager.py and the scheduler's weight_updater.py;
docs/engines.md lists every route with the line it follows):
  GET  /health                  200 when the engine thread is alive
  GET  /model_info, /get_model_info  model_path, tokenizer_path, is_generation, weight_version, …
  POST /generate                input_ids (or text), sampling_params, return_logprob, rid
  GET|POST /flush_cache         200 text when flushed; 400 text while a request holds its cache
  POST /update_weights_from_disk {model_path, load_format?, abort_all_requests?, weight_version?,
                                flush_cache? (default true)}: waits for running requests unless
                                paused, as SGLang does; then flushes. 400 {success: false,
                                message} when the load fails (weights kept) or the flush after it
                                fails (weights loaded, weight_version not moved), as SGLang does
  POST /pause_generation        {mode: abort | in_place | retract} (default abort)
  POST /continue_generation     {}
  POST /init_weights_update_group, /update_weights_from_distributed   weight_update_group.py
  POST /abort_request           {rid} or {abort_all: true}; an aborted request answers its
                                partial output with finish_reason {type: abort}
Training (this worker's own; bodies in docs/embedded-model.md):
  POST /train/sft_step  /train/grpo_step  /train/score
  POST /train/save_checkpoint {path}  /train/load_checkpoint {path}
  GET  /train/state

Authentication (SGLang's --api-key rule): when the worker has an API key (from the
AGENTMATH_ENGINE_API_KEY environment variable, never the command line), every route but
/health needs `Authorization: Bearer <key>`, compared in constant time; a refused request
gets 401 and its connection is closed without reading the body.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from . import requests as parse
from .engine import PAUSE_MODES, Engine, RequestError
from .trainer import Trainer
from .weight_update_group import WeightUpdateReceiver

logger = logging.getLogger("agentmath_engine.server")

# SGLang 0.5.23's own words (scheduler_components/weight_updater.py, http_server.py).
UPDATE_SUCCEEDED = "Succeeded to update model weights."
FLUSH_FAILED_AFTER_UPDATE = (
    "Weights were updated, but the cache was not flushed because requests are still running or queued. "
    "Retract or finish them, then call /flush_cache."
)
CACHE_FLUSHED = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)
CACHE_NOT_FLUSHED = "Flush cache failed.\n"


@dataclass
class Reply:
    """An answer with its own status (SGLang answers some failures with 400) and, for routes
    that answer text (`/flush_cache`), a text body."""

    status: int
    payload: Any = None
    text: Optional[str] = None


class Worker:
    """The engine and trainer over one backend, with the route logic (no HTTP here)."""

    def __init__(self, backend, trainer: Trainer, engine: Engine, vocab_size: int) -> None:
        self.backend = backend
        self.trainer = trainer
        self.engine = engine
        self.vocab_size = vocab_size
        self._train_lock = threading.Lock()

    @property
    def policy_version(self) -> int:
        return self.engine.policy_version

    def generate(self, body: Any) -> Any:
        prompts, batched, sampling, return_logprob, request_ids = parse.parse_generate(
            body, self.vocab_size, self.backend.encode, self.backend.context_length
        )
        sequences = [
            self.engine.submit(prompt, sampling, return_logprob, request_ids[i] if request_ids else None)
            for i, prompt in enumerate(prompts)
        ]
        for sequence in sequences:
            sequence.done.wait()
        results = [sequence.result for sequence in sequences]
        return results if batched else results[0]

    def model_info(self) -> Dict[str, Any]:
        return {
            "model_path": self.backend.model_path,
            "tokenizer_path": self.backend.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": str(self.policy_version),
            "policy_version": self.policy_version,
            "context_length": self.backend.context_length,
            "max_running_requests": self.engine.max_running,
            "decode_threads": self.engine.threads,
            "backend": self.backend.kind,
            "model": self.backend.describe(),
        }

    def models(self) -> Dict[str, Any]:
        """SGLang's OpenAI-compatible `GET /v1/models` (a ModelList of one ModelCard), whose
        `max_model_len` tells a client the context a request must fit in."""
        card = {"id": self.backend.model_path, "object": "model", "created": int(time.time()), "owned_by": "agentmath",
                "root": self.backend.model_path, "parent": None, "max_model_len": self.backend.context_length}
        return {"object": "list", "data": [card]}

    def update_weights_from_disk(self, body: Any) -> Reply:
        """SGLang's update: load, then flush (unless `flush_cache: false`). The answer is SGLang's
        {success, message, num_paused_requests} (always 0 there too), 200 or 400."""
        path = parse.required_path(body, "model_path")
        given_version = parse.optional_weight_version(body)
        flush = parse.optional_flag(body, "flush_cache", True)
        if not os.path.isdir(path):  # a hub-style name or a file: refused at once, never looked up on the hub
            found = "a file, not a folder" if os.path.exists(path) else "no such folder"
            return Reply(
                HTTPStatus.BAD_REQUEST,
                {"success": False, "message": f"Failed to get weights iterator: {found}: {path}.", "num_paused_requests": 0},
            )
        if body.get("abort_all_requests"):
            self.engine.abort()

        def load() -> Tuple[bool, str]:
            try:
                self.backend.load_weights(path)
            except OSError as error:  # nothing read: SGLang's weights-iterator failure
                return False, f"Failed to get weights iterator: {error}."
            except (ValueError, RuntimeError) as error:  # refused before any tensor was copied
                return False, f"Failed to update weights: {error}.\nRolling back to original weights."
            # The new weights are served from here on; the reported version moves only when the
            # whole update succeeds (SGLang's tokenizer manager sets it after a successful answer).
            if flush and not self.engine.flush_cache(ignore_waiting=True):
                return False, FLUSH_FAILED_AFTER_UPDATE
            version = given_version if given_version is not None else _read_version(path)
            self.engine.policy_version = version if version is not None else self.engine.policy_version + 1
            suffix = "" if given_version is None else f" Weight version updated to {given_version}."
            return True, UPDATE_SUCCEEDED + suffix

        success, message = self.engine.exclusive(load)
        return Reply(HTTPStatus.OK if success else HTTPStatus.BAD_REQUEST,
                     {"success": success, "message": message, "num_paused_requests": 0})

    def flush_cache(self, body: Any = None) -> Reply:
        """SGLang's /flush_cache: a text answer, 200 or 400."""
        del body
        if self.engine.flush_cache():
            return Reply(HTTPStatus.OK, text=CACHE_FLUSHED)
        return Reply(HTTPStatus.BAD_REQUEST, text=CACHE_NOT_FLUSHED)

    def pause_generation(self, body: Any) -> Dict[str, Any]:
        mode = parse.optional_choice(parse._object(body if body is not None else {}, "request body"), "mode", PAUSE_MODES)
        self.engine.pause(mode)
        return {"message": "Generation paused successfully.", "status": "ok"}

    def continue_generation(self, body: Any) -> Dict[str, Any]:
        del body  # SGLang's ContinueGenerationReqInput has no field this worker uses
        self.engine.resume()
        return {"message": "Generation continued successfully.", "status": "ok"}

    def abort_request(self, body: Any) -> Dict[str, Any]:
        """SGLang's AbortReq: `rid` aborts that request, `abort_all` every one; neither: nothing."""
        body = parse._object(body if body is not None else {}, "request body")
        rid = body.get("rid")
        if rid is not None and not isinstance(rid, str):
            raise parse.BadRequest("rid must be a string")
        if body.get("abort_all"):
            return {"aborted": self.engine.abort()}
        return {"aborted": self.engine.abort(rid) if rid else 0}

    def train(self, kind: str, body: Any) -> Dict[str, Any]:
        body = parse._object(body, "request body")
        sequences = parse.parse_train_sequences(body, self.vocab_size, self.backend.context_length, grpo=kind == "grpo")
        learning_rate = parse.optional_number(body, "learning_rate", None, 0.0)

        def step() -> Dict[str, Any]:
            if kind == "sft":
                stats = self.trainer.sft_step(sequences, learning_rate)
            else:
                stats = self.trainer.grpo_step(
                    sequences,
                    clip_low=parse.optional_number(body, "clip_epsilon_low", 0.2, 0.0),
                    clip_high=parse.optional_number(body, "clip_epsilon_high", 0.2, 0.0),
                    kl_coef=parse.optional_number(body, "kl_coef", 0.0, 0.0),
                    learning_rate=learning_rate,
                    options=parse.parse_grpo_options(body),
                )
            # A step whose update was skipped (non-finite gradient) left the weights as they were.
            if not stats["skipped"]:
                self.engine.policy_version += 1
            return {**stats, "policy_version": self.engine.policy_version}

        with self._train_lock:
            return self.engine.exclusive(step)

    def score(self, body: Any) -> Dict[str, Any]:
        body = parse._object(body, "request body")
        raw = body.get("input_ids")
        if not isinstance(raw, list) or not raw:
            raise parse.BadRequest("input_ids must be a non-empty list of token id lists")
        sequences = [parse._token_ids(ids, f"input_ids[{i}]", self.vocab_size) for i, ids in enumerate(raw)]
        for index, ids in enumerate(sequences):
            if not 1 <= len(ids) <= self.backend.context_length:
                raise parse.BadRequest(f"input_ids[{index}] must hold 1..{self.backend.context_length} tokens")
        temperature = parse.optional_number(body, "temperature", 1.0, 0.0)
        logprobs = self.engine.exclusive(lambda: self.trainer.score(sequences, temperature))
        return {"token_logprobs": logprobs, "policy_version": self.policy_version}

    def save_checkpoint(self, body: Any) -> Dict[str, Any]:
        path = parse.required_path(body, "path")

        def save() -> Dict[str, Any]:
            os.makedirs(path, exist_ok=True)
            self.backend.save(path)
            self.trainer.save_optimizer(path)
            with open(os.path.join(path, "trainer_state.json"), "w", encoding="utf-8") as handle:
                json.dump({"policy_version": self.policy_version, "optimizer_steps": self.trainer.optimizer_steps}, handle)
            return {"success": True, "path": path, "policy_version": self.policy_version}

        with self._train_lock:
            return self.engine.exclusive(save)

    def load_checkpoint(self, body: Any) -> Dict[str, Any]:
        path = parse.required_path(body, "path")

        def load() -> Dict[str, Any]:
            self.backend.load_weights(path)
            optimizer = self.trainer.load_optimizer(path)
            version = _read_version(path)
            self.engine.policy_version = version if version is not None else 0
            return {"success": True, "path": path, "policy_version": self.policy_version, "optimizer_restored": optimizer}

        with self._train_lock:
            return self.engine.exclusive(load)

    def train_state(self) -> Dict[str, Any]:
        return {
            "policy_version": self.policy_version,
            "optimizer_steps": self.trainer.optimizer_steps,
            "settings": self.trainer.settings.__dict__,
            "engine": self.engine.stats(),
        }


def _read_version(folder: str) -> Optional[int]:
    path = os.path.join(folder, "trainer_state.json")
    if not os.path.isfile(path):
        return None
    with open(path, "r", encoding="utf-8") as handle:
        return int(json.load(handle)["policy_version"])


API_KEY_VARIABLE = "AGENTMATH_ENGINE_API_KEY"


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    bare = host.strip("[]").lower()
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def api_key_for(host: str, environ, no_auth: bool) -> Optional[str]:
    """The key to require, by the project's bind rule: an empty key is refused; a non-loopback
    host needs a key unless `no_auth`. Raises ValueError with the reason."""
    key = environ.get(API_KEY_VARIABLE)
    if key is not None and key.strip() == "":
        raise ValueError(f"{API_KEY_VARIABLE} is set but empty; an empty key does not turn authentication off")
    if key is not None and no_auth:
        raise ValueError(f"{API_KEY_VARIABLE} is set and --no-auth was given; choose one")
    if key is None and not no_auth and not is_loopback(host):
        raise ValueError(f"{host} is not a loopback address: set {API_KEY_VARIABLE}, or pass --no-auth to serve without a key")
    return key


def make_handler(worker: Worker, api_key: Optional[str] = None):
    expected = None if api_key is None else f"Bearer {api_key}".encode("utf-8")
    receiver = WeightUpdateReceiver(worker)
    post_routes: Dict[str, Callable[[Any], Any]] = {
        "/generate": worker.generate,
        "/update_weights_from_disk": worker.update_weights_from_disk,
        "/flush_cache": worker.flush_cache,
        "/init_weights_update_group": receiver.init_group,
        "/update_weights_from_distributed": receiver.update,
        "/abort_request": lambda body: worker.abort_request(body),
        "/pause_generation": lambda body: worker.pause_generation(body),
        "/continue_generation": lambda body: worker.continue_generation(body),
        "/train/sft_step": lambda body: worker.train("sft", body),
        "/train/grpo_step": lambda body: worker.train("grpo", body),
        "/train/score": worker.score,
        "/train/save_checkpoint": worker.save_checkpoint,
        "/train/load_checkpoint": worker.load_checkpoint,
    }
    get_routes: Dict[str, Callable[[], Any]] = {
        "/health": lambda: None,
        "/model_info": worker.model_info,
        "/get_model_info": worker.model_info,
        "/v1/models": worker.models,
        "/flush_cache": worker.flush_cache,
        "/train/state": worker.train_state,
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentmath-worker"

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s " + format, self.address_string(), *args)

        def _send(self, status: int, payload: Any, text: Optional[str] = None) -> None:
            if text is not None:
                body = text.encode("utf-8")
            else:
                body = b"" if payload is None else json.dumps(payload).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8" if text is not None else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                # The client went away (a rollout paused or aborted the request): nobody to answer.
                self.close_connection = True
                logger.debug("client left before the answer to %s", self.path)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "code": status}})

        def _authorized(self) -> bool:
            """True when no key is set, for /health, or when the bearer key matches; else answers 401."""
            if expected is None or self.path.split("?")[0] == "/health":
                return True
            given = (self.headers.get("Authorization") or "").encode("utf-8")
            if hmac.compare_digest(given, expected):
                return True
            self.close_connection = True
            body = json.dumps({"error": {"message": "missing or wrong API key", "code": 401}}).encode("utf-8")
            self.send_response(HTTPStatus.UNAUTHORIZED)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            return False

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            if not self._authorized():
                return
            route = get_routes.get(self.path.split("?")[0])
            if route is None:
                return self._error(HTTPStatus.NOT_FOUND, f"no route GET {self.path}")
            self._run(route)

        def do_POST(self) -> None:  # noqa: N802
            if not self._authorized():
                return
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            route = post_routes.get(self.path.split("?")[0])
            if route is None:
                return self._error(HTTPStatus.NOT_FOUND, f"no route POST {self.path}")
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError as error:
                return self._error(HTTPStatus.BAD_REQUEST, f"request body is not JSON: {error}")
            self._run(lambda: route(body))

        def _run(self, action: Callable[[], Any]) -> None:
            started = time.perf_counter()
            try:
                payload = action()
            except (parse.BadRequest, RequestError) as error:
                return self._error(HTTPStatus.BAD_REQUEST, str(error))
            except Exception as error:  # a bug: report it, keep serving
                logger.exception("request %s failed", self.path)
                return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")
            if isinstance(payload, Reply):
                self._send(payload.status, payload.payload, payload.text)
            else:
                self._send(HTTPStatus.OK, payload)
            logger.debug("%s %s %.1f ms", self.command, self.path, (time.perf_counter() - started) * 1000)

    return Handler


def serve(worker: Worker, host: str, port: int, api_key: Optional[str] = None) -> Tuple[ThreadingHTTPServer, int]:
    """Binds (port 0 picks a free one) and returns the server and its port; call serve_forever().
    With `api_key`, every route but /health needs it as a bearer token."""
    server = ThreadingHTTPServer((host, port), make_handler(worker, api_key))
    server.daemon_threads = True
    return server, server.server_address[1]
