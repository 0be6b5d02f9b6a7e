"""A scripted SGLang 0.5.23 for tests: the weight-update routes as SGLang really takes them.

Written from the PyPI wheel sglang==0.5.23 (file and function named at each route below); it
imports nothing from AgentMath, so a test that passes against it passes against SGLang's protocol,
not against our own reading of it twice.

- The group: `init_custom_process_group` as in `srt/utils/common.py` (rendezvous over
  tcp://master_address:master_port, `PrefixStore(group_name, store)`, torch's
  `_new_process_group_helper`), called with rank = rank_offset + tp_rank (tp_rank 0) from a
  process whose default group is initialised (SGLang's scheduler asserts it), as
  `model_runner_components/weight_updater.py` `init_weights_update_group` does.
- The session: `scheduler_components/weight_updater.py`: `/update_weights_from_distributed`
  outside `/begin_weight_update` … `/end_weight_update` is refused with 400 before anything is
  received; a second begin, or an end without a begin, is refused too.
- The receive: one `torch.distributed.broadcast(src=0, async_op=True)` per name, in `names`
  order, then a wait on each (`receive_weights_from_distributed`).
- The load: by the checkpoint's tensor names, as SGLang's model loaders map them: a name the
  checkpoint has, of its shape, is loaded (into a transformers model rebuilt from the checkpoint
  by `from_pretrained`, transformers' own conversion); a name it does not have is dropped and the
  update still answers success, as `models/qwen3_moe.py` `load_weights` does. Unlike SGLang, this
  server logs each dropped name on stderr and reports them (GET /scripted/report), so a test sees
  what SGLang would silently lose.
- After a load: `weight_version` recorded, then the cache flush (`flush_cache`, default true),
  which fails the update while a request still runs (`flush_cache_after_weight_update`).
- Routes and bodies: `entrypoints/http_server.py`, `managers/io_struct.py`; `/generate`'s
  `meta_info` and `FINISH_ABORT("Aborted")` from `managers/schedule_batch.py`; the initial
  `weight_version` "default" from `arg_groups/fields/serving.py`.

Generation is plain transformers, one request at a time (SGLang's scheduler is one thread):
temperature 0 is greedy decoding of the served weights; at a temperature above 0 the tokens are
the script's (with --script sums: a problem's first sample answers "Add A and B." right, its
second wrong after a ramble, so RL groups have rewards that differ) and each token's logprob is
the served model's, temperature-scaled as SGLang's are. A request resubmitted after an abort
(its prompt = the old prompt + the tokens it got) continues its script.

    python test/scripted_sglang.py --model DIR [--port 0] [--script sums] [--token-delay-ms 20]
prints {"event": "listening", "port": N} on stdout once it serves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

SESSION_REQUIRED = (
    "update_weights_from_distributed must run between begin_weight_update() and end_weight_update()"
)
SESSION_OPEN = "a weight-update session is already open; call end_weight_update() first"
NO_SESSION = "no weight-update session is open; call begin_weight_update() first"
FLUSH_FAILED = (
    "Weights were updated, but the cache was not flushed because requests are still running or "
    "queued. Retract or finish them, then call /flush_cache."
)
CACHE_FLUSHED = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)


def log(message: str) -> None:
    print(f"scripted-sglang: {message}", file=sys.stderr, flush=True)


def init_custom_process_group(backend: str, init_method: str, world_size: int, rank: int, group_name: str):
    """SGLang 0.5.23 `srt/utils/common.py` `init_custom_process_group` (store=None path)."""
    from torch.distributed.distributed_c10d import (
        Backend,
        PrefixStore,
        _new_process_group_helper,
        _world,
        default_pg_timeout,
        rendezvous,
    )

    timeout = default_pg_timeout
    store, rank, world_size = next(rendezvous(init_method, rank, world_size, timeout=timeout))
    store.set_timeout(timeout)
    store = PrefixStore(group_name, store)
    pg, _ = _new_process_group_helper(
        world_size, rank, [], Backend(backend), store, group_name=group_name, backend_options=None, timeout=timeout
    )
    _world.pg_group_ranks[pg] = {i: i for i in range(world_size)}
    return pg


def tcp_address(host: str, port: int) -> str:
    """`NetworkAddress(host, port).to_tcp()` (srt/utils/network.py): IPv6 hosts in brackets."""
    host = host.strip("[]")
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


class Request:
    def __init__(self, rid: str, prompt: List[int], params: Dict[str, Any]) -> None:
        self.rid = rid
        self.prompt = prompt
        self.max_new_tokens = int(params.get("max_new_tokens", 128))
        self.temperature = float(params.get("temperature", 1.0))
        stop = params.get("stop") or []
        self.stop = [stop] if isinstance(stop, str) else list(stop)
        self.made: List[int] = []
        self.logprobs: List[float] = []
        self.aborted = False


class ScriptedSglang:
    def __init__(self, model: str, script: str, token_delay_ms: float) -> None:
        self.model_path = model
        self.script = script
        self.token_delay = token_delay_ms / 1000.0
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model)
        self.config = transformers.AutoConfig.from_pretrained(model)
        self.checkpoint: Dict[str, torch.Tensor] = {}
        for name in sorted(os.listdir(model)):
            if name.endswith(".safetensors"):
                self.checkpoint.update(load_file(os.path.join(model, name)))
        self.model = self._build()
        self.weight_version = "default"
        # SGLang's scheduler: one thread; every forward pass and every weight operation in turn.
        self.scheduler = threading.RLock()
        self.pause = threading.Condition()
        self.paused: Optional[str] = None
        self.running: Dict[str, Request] = {}
        self.groups: Dict[str, Any] = {}
        self.session: Optional[Dict[str, Any]] = None
        self.attempts: Dict[str, int] = {}
        self.continuations: Dict[Tuple[int, ...], List[int]] = {}
        self.unknown_names: List[str] = []
        self.events: List[str] = []
        eos = self.tokenizer.eos_token_id
        self.eos = eos if isinstance(eos, int) else int(self.config.eos_token_id)

    # ---- weights

    def _build(self):
        """A transformers model from the checkpoint-named tensors, through `from_pretrained`."""
        folder = tempfile.mkdtemp(prefix="scripted-sglang-")
        try:
            shutil.copy(os.path.join(self.model_path, "config.json"), folder)
            save_file({name: tensor.contiguous() for name, tensor in self.checkpoint.items()}, os.path.join(folder, "model.safetensors"))
            model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return model.eval()

    def init_group(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        group_name = body.get("group_name", "weight_update_group")
        rank = int(body["rank_offset"]) + 0  # + tp_rank
        self.events.append(f"init_weights_update_group rank {rank}/{body['world_size']} {group_name}")
        with self.scheduler:
            try:
                self.groups[group_name] = init_custom_process_group(
                    body.get("backend", "nccl"),
                    tcp_address(body["master_address"], int(body["master_port"])),
                    int(body["world_size"]),
                    rank,
                    group_name,
                )
            except Exception as error:  # noqa: BLE001 - SGLang answers every failure
                return 400, {"success": False, "message": f"Failed to initialize custom process group: {error}."}
        return 200, {"success": True, "message": "Succeeded to initialize custom process group."}

    def destroy_group(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        group_name = body.get("group_name", "weight_update_group")
        self.events.append(f"destroy_weights_update_group {group_name}")
        with self.scheduler:
            if group_name not in self.groups:
                return 400, {"success": False, "message": "The group to be destroyed does not exist."}
            dist.destroy_process_group(self.groups.pop(group_name))
        return 200, {"success": True, "message": "Succeeded to destroy custom process group."}

    def begin(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        with self.scheduler:
            self.events.append("begin_weight_update")
            if self.session is not None:
                return 400, {"success": False, "message": SESSION_OPEN}
            self.session = {"selector": body.get("selector", "all"), "loaded_weights": False}
        return 200, {"success": True, "message": "Success"}

    def end(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        del body
        with self.scheduler:
            self.events.append("end_weight_update")
            if self.session is None:
                return 400, {"success": False, "message": NO_SESSION}
            self.session = None
        return 200, {"success": True, "message": "Success"}

    def update_distributed(self, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        names: List[str] = body["names"]
        group_name = body.get("group_name", "weight_update_group")
        version = body.get("weight_version")
        with self.scheduler:
            if self.session is None:
                self.events.append("update_weights_from_distributed refused: no session")
                return 400, {"success": False, "message": SESSION_REQUIRED}
            self.events.append(f"update_weights_from_distributed {len(names)} tensors")
            try:
                if group_name not in self.groups:
                    raise AssertionError(
                        f"Group {group_name} not in {list(self.groups)}. Please call `init_weights_update_group` first."
                    )
                weights, handles = [], []
                for name, dtype, shape in zip(names, body["dtypes"], body["shapes"]):
                    weight = torch.empty(shape, dtype=getattr(torch, dtype))
                    handles.append(dist.broadcast(weight, src=0, group=self.groups[group_name], async_op=True))
                    weights.append((name, weight))
                for handle in handles:
                    handle.wait()
            except Exception as error:  # noqa: BLE001
                return 400, {"success": False, "message": f"Failed to receive weights: {error}"}
            for name, weight in weights:
                known = self.checkpoint.get(name)
                if known is None:
                    log(f"dropped a weight the checkpoint does not have: {name}")
                    self.unknown_names.append(name)
                    continue
                if tuple(known.shape) != tuple(weight.shape):
                    return 400, {
                        "success": False,
                        "message": f"Failed to update parameter online: {name}: shape {list(weight.shape)} is not the "
                        f"model's {list(known.shape)}. The full weights of the ModelRunner are partially updated. "
                        "Please discard the whole weights.",
                    }
                self.checkpoint[name] = weight.to(known.dtype)
            self.model = self._build()
            self.session["loaded_weights"] = True
            if version is not None:
                self.weight_version = str(version)
            if body.get("flush_cache", True) and any(not request.aborted for request in self.running.values()):
                return 400, {"success": False, "message": FLUSH_FAILED}
        message = "Succeeded to update parameter online."
        if version is not None:
            message += f" Weight version updated to {version}."
        return 200, {"success": True, "message": message}

    # ---- generation

    def pause_generation(self, body: Dict[str, Any]) -> Dict[str, Any]:
        mode = (body or {}).get("mode", "abort")
        self.events.append(f"pause_generation {mode}")
        with self.pause:
            self.paused = mode
            if mode == "abort":
                for request in self.running.values():
                    request.aborted = True
            self.pause.notify_all()
        return {"message": "Generation paused successfully.", "status": "ok"}

    def continue_generation(self) -> Dict[str, Any]:
        self.events.append("continue_generation")
        with self.pause:
            self.paused = None
            self.pause.notify_all()
        return {"message": "Generation continued successfully.", "status": "ok"}

    def abort_request(self, body: Dict[str, Any]) -> Dict[str, Any]:
        for request in list(self.running.values()):
            if body.get("abort_all") or request.rid == body.get("rid"):
                request.aborted = True
        return {}

    def flush_cache(self) -> Tuple[int, str]:
        if any(not request.aborted for request in self.running.values()):
            return 400, "Flush cache failed.\n"
        return 200, CACHE_FLUSHED

    def scripted_tokens(self, prompt: List[int]) -> List[int]:
        continued = self.continuations.pop(tuple(prompt), None)
        if continued is not None:
            return continued
        text = self.tokenizer.decode(prompt)
        attempt = self.attempts.get(text, 0)
        self.attempts[text] = attempt + 1
        sums = re.findall(r"Add (\d+) and (\d+)\.", text)
        total = int(sums[-1][0]) + int(sums[-1][1]) if sums else 0
        if attempt % 2 == 0:
            answer = f"The sum is \\boxed{{{total}}}."
        else:
            answer = "Let me add the digits one by one. " * 6 + f"The sum is \\boxed{{{total + 1}}}."
        return self.tokenizer.encode(answer, add_special_tokens=False) + [self.eos]

    def generate(self, body: Dict[str, Any]) -> Dict[str, Any]:
        request = Request(str(body.get("rid") or uuid.uuid4().hex), list(body["input_ids"]), body.get("sampling_params") or {})
        with self.pause:
            while self.paused is not None:  # new requests wait for /continue_generation
                self.pause.wait()
            self.running[request.rid] = request
        script = None if request.temperature <= 0 or self.script == "none" else self.scripted_tokens(request.prompt)
        finish: Dict[str, Any] = {"type": "length", "length": request.max_new_tokens}
        cache = None
        fed = list(request.prompt)
        try:
            while len(request.made) < request.max_new_tokens:
                with self.pause:
                    while self.paused in ("in_place", "retract") and not request.aborted:
                        self.pause.wait()
                if request.aborted:
                    finish = {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None}
                    if script is not None and len(request.made) < len(script):
                        self.continuations[tuple(request.prompt + request.made)] = script[len(request.made):]
                    break
                with self.scheduler, torch.no_grad():
                    output = self.model(input_ids=torch.tensor([fed]), cache=cache, use_cache=True)
                    cache = output.cache
                    logits = output.logits[0, -1].float()
                    token = int(logits.argmax()) if script is None else script[len(request.made)]
                    scaled = logits / request.temperature if request.temperature > 0 else logits
                    request.logprobs.append(float(torch.log_softmax(scaled, dim=-1)[token]))
                request.made.append(token)
                fed = [token]
                if token == self.eos:
                    finish = {"type": "stop", "matched": token}
                    break
                text = self.tokenizer.decode(request.made)
                matched = next((stop for stop in request.stop if stop and stop in text), None)
                if matched is not None:
                    finish = {"type": "stop", "matched": matched}
                    break
                if self.token_delay > 0:
                    time.sleep(self.token_delay)
        finally:
            with self.pause:
                self.running.pop(request.rid, None)
        return {
            "text": self.tokenizer.decode(request.made),
            "output_ids": request.made,
            "meta_info": {
                "id": request.rid,
                "finish_reason": finish,
                "prompt_tokens": len(request.prompt),
                "completion_tokens": len(request.made),
                "cached_tokens": 0,
                "weight_version": self.weight_version,
                "output_token_logprobs": [[lp, token, None] for lp, token in zip(request.logprobs, request.made)],
            },
        }

    def model_info(self) -> Dict[str, Any]:
        return {
            "model_path": self.model_path,
            "tokenizer_path": self.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": self.weight_version,
            "model_type": self.config.model_type,
            "architectures": self.config.architectures,
        }


def handler(server: ScriptedSglang):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, payload: Any, text: Optional[str] = None) -> None:
            data = text.encode() if text is not None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain" if text is not None else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path == "/health":
                return self._send(200, None, "")
            if path in ("/model_info", "/get_model_info"):
                return self._send(200, server.model_info())
            if path in ("/server_info", "/get_server_info"):
                return self._send(200, {"tp_size": 1, "dp_size": 1, "model_path": server.model_path, "version": "0.5.23"})
            if path == "/flush_cache":
                status, text = server.flush_cache()
                return self._send(status, None, text)
            if path == "/scripted/report":
                return self._send(200, {"unknown_weight_names": server.unknown_names, "events": server.events})
            self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            path = self.path.split("?")[0]
            routes = {
                "/init_weights_update_group": server.init_group,
                "/destroy_weights_update_group": server.destroy_group,
                "/begin_weight_update": server.begin,
                "/end_weight_update": server.end,
                "/update_weights_from_distributed": server.update_distributed,
            }
            if path in routes:
                return self._send(*routes[path](body))
            if path == "/generate":
                return self._send(200, server.generate(body))
            if path == "/pause_generation":
                return self._send(200, server.pause_generation(body))
            if path == "/continue_generation":
                return self._send(200, server.continue_generation())
            if path == "/abort_request":
                return self._send(200, server.abort_request(body))
            if path == "/flush_cache":
                status, text = server.flush_cache()
                return self._send(status, None, text)
            self._send(404, {"detail": "Not Found"})

    return Handler


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", choices=("sums", "none"), default="sums")
    parser.add_argument("--token-delay-ms", type=float, default=0.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    # SGLang's scheduler joins its tensor-parallel group (here of one rank) before it serves.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, timeout=timedelta(minutes=30))
    server = ScriptedSglang(args.model, args.script, args.token_delay_ms)
    http = ThreadingHTTPServer((args.host, args.port), handler(server))
    http.daemon_threads = True
    print(json.dumps({"event": "listening", "port": http.server_address[1]}), flush=True)
    http.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
