"""`python -m agentmath_train init-model …` and `torchrun … -m agentmath_train serve …`."""

from __future__ import annotations

import os

# Threads that sleep when idle instead of spinning (as the worker's): on a machine whose cores
# other processes share, a spinning OpenMP thread holds the core its partner needs to finish
# the same parallel region; steps measured 10-100x slower without it at load 28 on 2 cores
# (docs/training.md). Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import ipaddress  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv=None) -> int:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    parser = argparse.ArgumentParser(prog="agentmath_train")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init-model", help="a random-init Hugging Face model with a tokenizer")
    init.add_argument("--arch", required=True, choices=("qwen3", "qwen3-moe", "llama"))
    init.add_argument("--out", required=True)
    init.add_argument("--corpus", required=True, help="text the tokenizer's BPE merges are learned from")
    init.add_argument("--layers", type=int, default=2)
    init.add_argument("--hidden", type=int, default=64)
    init.add_argument("--vocab-size", type=int, default=1024)
    init.add_argument("--seed", type=int, default=0)
    serve = commands.add_parser("serve", help="the trainer service (rank 0 listens)")
    serve.add_argument("--model", required=True)
    serve.add_argument("--reference", default=None, help="the KL reference's folder (default: --model)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0)
    serve.add_argument("--no-auth", action="store_true")
    serve.add_argument("--micro-batch-tokens", type=int, default=8192)
    serve.add_argument("--activation-checkpointing", action="store_true")
    serve.add_argument("--weight-decay", type=float, default=0.01)
    serve.add_argument("--max-grad-norm", type=float, default=1.0)
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--compute-dtype", choices=("float32", "bfloat16"), default=None,
                       help="the forward and backward's dtype (default: bf16 on a GPU, fp32 on CPU)")
    args = parser.parse_args(argv)

    if args.command == "init-model":
        from .init_model import init_model

        try:
            result = init_model(args.arch, args.out, args.corpus, args.layers, args.hidden, args.vocab_size, args.seed)
        except (ValueError, FileNotFoundError) as error:
            print(f"agentmath_train init-model: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result))
        return 0

    token = os.environ.get("AGENTMATH_TRAINER_TOKEN") or None
    if not _loopback(args.host) and token is None and not args.no_auth:
        print(
            f"agentmath_train serve: --host {args.host} is not loopback; set AGENTMATH_TRAINER_TOKEN "
            "(clients send it as a bearer token) or pass --no-auth",
            file=sys.stderr,
        )
        return 2
    from .service import TrainerSettings, run_service

    settings = TrainerSettings(
        model=args.model,
        reference=args.reference,
        micro_batch_tokens=args.micro_batch_tokens,
        activation_checkpointing=args.activation_checkpointing,
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm,
        seed=args.seed,
        compute_dtype=args.compute_dtype,
    )
    run_service(settings, args.host, args.port, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
