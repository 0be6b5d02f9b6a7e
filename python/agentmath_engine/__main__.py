"""Command line: `python3 -m agentmath_engine --model tiny --port 30000`.

Prints one JSON line `{"event": "listening", "port": N, ...}` on stdout once it serves, so a
supervisor started with --port 0 learns the port; logs go to stderr.
"""

from __future__ import annotations

import os

# Threads that sleep when idle instead of spinning: on a shared machine a spinning OpenMP
# thread steals the core another process (or our own HTTP threads) needs. Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Model folders are local: the Hugging Face hub is never asked (a missing folder fails at once).
os.environ["HF_HUB_OFFLINE"] = "1"

import argparse
import json
import logging
import signal
import sys
import threading

from .app import WorkerOptions, build_worker
from .parent_watch import watch_parent
from .prefix_store import PREFIX_CACHE_MB
from .server import api_key_for, is_loopback, serve


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agentmath_engine", description="AgentMath PyTorch engine (SGLang's routes)")
    parser.add_argument("--model", default="tiny", help="a model folder (byte model or any Hugging Face causal LM), or a byte-model shape (tiny, test) for a random-init model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=None, help="initialisation seed of a byte-model shape")
    parser.add_argument("--max-running-requests", type=int, default=64)
    parser.add_argument("--decode-threads", type=int, default=None,
                        help="torch threads while generating (0: all cores; default: 1 for the byte model, all cores for a Hugging Face model)")
    parser.add_argument("--decode-dtype", choices=("auto", "float32", "bfloat16", "int8"), default="float32",
                        help="Hugging Face models: the dtype generation reads the weights in (auto: bf16 where this CPU runs the model's layers faster in it, timed at start, else fp32; int8: int8 weights, bf16 activations)")
    parser.add_argument("--decode-linear", choices=("packed", "plain"), default="packed",
                        help="Hugging Face models on a CPU: generation's linear layers on weights packed once for oneDNN (default) or plain")
    parser.add_argument("--device", default="auto", help="Hugging Face models: auto, cpu or cuda")
    parser.add_argument("--prefix-cache-mb", type=float, default=PREFIX_CACHE_MB,
                        help=f"Hugging Face models: MiB of keys and values kept for prompts that begin like earlier ones (0: none; default {PREFIX_CACHE_MB})")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--no-auth", action="store_true",
                        help="serve a non-loopback --host without AGENTMATH_ENGINE_API_KEY (anyone who reaches it can generate and change the weights)")
    args = parser.parse_args(argv)
    # Started by a program (train rl, rollout, eval, engine serve): gone with it, kill -9 included.
    watch_parent("agentmath_engine")
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        api_key = api_key_for(args.host, os.environ, args.no_auth)
    except ValueError as error:
        print(f"agentmath_engine: {error}", file=sys.stderr)
        return 2
    if api_key is None and not is_loopback(args.host):
        logging.getLogger("agentmath_engine").warning(
            "serving %s without authentication (--no-auth): anyone who can reach it can generate and change the weights", args.host)
    options = WorkerOptions(
        model=args.model, seed=args.seed, max_running_requests=args.max_running_requests, decode_threads=args.decode_threads, decode_dtype=args.decode_dtype, decode_linear=args.decode_linear,
        device=args.device, prefix_cache_mb=args.prefix_cache_mb,
    )
    try:
        worker = build_worker(options)
    except (ValueError, OSError, ImportError) as error:
        print(f"agentmath_engine: {error}", file=sys.stderr)
        return 2
    server, port = serve(worker, args.host, args.port, api_key)

    def stop(signum, frame) -> None:
        del frame
        logging.getLogger("agentmath_engine").info("signal %d: stopping", signum)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(json.dumps({"event": "listening", "host": args.host, "port": port, "model": args.model}), flush=True)
    logging.getLogger("agentmath_engine").info("serving %s on http://%s:%d", args.model, args.host, port)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        worker.engine.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
