"""The engine's HTTP server: SGLang's native routes.

Inference (SGLang's names, fields, status codes and answers, followed from SGLang 0.5.23's
http_server.py, io_struct.py, tokenizer_manager.py and the scheduler's weight_updater.py;
docs/engines.md lists every route with the line it follows):
  GET  /health                  200 when the engine thread is alive
  GET  /model_info, /get_model_info  model_path, tokenizer_path, is_generation, weight_version, …
  GET  /server_info, /get_server_info  configuration and internal_states[0]: the queue (num_running_reqs, …)
  POST /generate                input_ids (or text), sampling_params, return_logprob, rid
  GET|POST /flush_cache         200 text when flushed; 400 text while a request holds its cache
  POST /update_weights_from_disk {model_path, load_format?, abort_all_requests?, weight_version?,
                                flush_cache? (default true)}: waits for running requests unless
                                paused, as SGLang does; then flushes. 400 {success: false,
                                message} when the load fails (weights kept) or the flush after it
                                fails (weights loaded, weight_version not moved), as SGLang does
  POST /pause_generation        {mode: abort | in_place | retract} (default abort)
  POST /continue_generation     {}
  POST /init_weights_update_group, /destroy_weights_update_group, /begin_weight_update,
       /end_weight_update, /update_weights_from_distributed   weight_update_group.py
  POST /abort_request           {rid} or {abort_all: true}; an aborted request answers its
                                partial output with finish_reason {type: abort}
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
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from . import requests as parse
from .engine import PAUSE_MODES, Engine, RequestError
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
    """The engine over one backend, with the route logic (no HTTP here)."""

    def __init__(self, backend, engine: Engine, vocab_size: int) -> None:
        self.backend = backend
        self.engine = engine
        self.vocab_size = vocab_size

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

    def server_info(self) -> Dict[str, Any]:
        """SGLang's /server_info: the configuration and, per data-parallel rank (one here), the
        scheduler's live state; ours holds the queue (running and waiting requests, decode steps)."""
        stats = self.engine.stats()
        return {
            "model_path": self.backend.model_path,
            "max_running_requests": self.engine.max_running,
            "internal_states": [
                {
                    "effective_max_running_requests_per_dp": self.engine.max_running,
                    "num_running_reqs": stats["running"],
                    "num_waiting_reqs": stats["waiting"],
                    "decode_steps": stats["decode_steps"],
                }
            ],
            "version": "agentmath",
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
            refused = self.flush_after_update(flush)
            if refused is not None:
                return False, refused
            self.engine.policy_version = given_version if given_version is not None else self.engine.policy_version + 1
            suffix = "" if given_version is None else f" Weight version updated to {given_version}."
            return True, UPDATE_SUCCEEDED + suffix

        success, message = self.engine.exclusive(load)
        return Reply(HTTPStatus.OK if success else HTTPStatus.BAD_REQUEST,
                     {"success": success, "message": message, "num_paused_requests": 0})

    def flush_after_update(self, flush: bool) -> Optional[str]:
        """SGLang's flush after a load (the engine runs nothing else meanwhile): None when done or
        not asked for, else SGLang's message (it fails while requests still run)."""
        if flush and not self.engine.flush_cache(ignore_waiting=True):
            return FLUSH_FAILED_AFTER_UPDATE
        return None

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
        "/init_weights_update_group": lambda body: Reply(*receiver.init_group(body)),
        "/destroy_weights_update_group": lambda body: Reply(*receiver.destroy_group(body)),
        "/begin_weight_update": lambda body: Reply(*receiver.begin(body)),
        "/end_weight_update": lambda body: Reply(*receiver.end(body)),
        "/update_weights_from_distributed": lambda body: Reply(*receiver.update(body)),
        "/abort_request": lambda body: worker.abort_request(body),
        "/pause_generation": lambda body: worker.pause_generation(body),
        "/continue_generation": lambda body: worker.continue_generation(body),
    }
    get_routes: Dict[str, Callable[[], Any]] = {
        "/health": lambda: None,
        "/model_info": worker.model_info,
        "/get_model_info": worker.model_info,
        "/server_info": worker.server_info,
        "/get_server_info": worker.server_info,
        "/v1/models": worker.models,
        "/flush_cache": worker.flush_cache,
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
