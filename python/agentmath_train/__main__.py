"""`python -m agentmath_train init-model|import-gguf …` and `torchrun … -m agentmath_train serve …`."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys


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
    imported = commands.add_parser("import-gguf", help="a GGUF file as a Hugging Face model folder")
    imported.add_argument("--gguf", required=True)
    imported.add_argument("--out", required=True)
    imported.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    imported.add_argument("--source", default=None, help="where the file came from, recorded in the folder")
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

    if args.command == "import-gguf":
        from .import_gguf import ImportRefused, import_gguf

        try:
            result = import_gguf(args.gguf, args.out, args.dtype, args.source)
        except ImportRefused as error:
            print(f"agentmath_train import-gguf: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result.to_json()))
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
    )
    run_service(settings, args.host, args.port, token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
