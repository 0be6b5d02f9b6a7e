"""`python -m agentmath_train init-model|convert-byte-model|import-gguf …` (model folders, from
`agentmath_models`) and `torchrun … -m agentmath_train serve …` (the trainer service)."""

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

from agentmath_engine.parent_watch import watch_parent


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
    # Model folders are local: never ask the hub (a missing folder is an error at once, not 23 s of retries).
    os.environ["HF_HUB_OFFLINE"] = "1"
    parser = argparse.ArgumentParser(prog="agentmath_train")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init-model", help="a random-init Hugging Face model with a tokenizer")
    init.add_argument("--arch", required=True, choices=("qwen3", "qwen3-moe", "llama", "byte-gpt"))
    init.add_argument("--out", required=True)
    init.add_argument("--corpus", default=None, help="text the tokenizer's BPE merges are learned from (not for byte-gpt: its tokens are bytes)")
    init.add_argument("--shape", default="tiny", help="byte-gpt only: the named shape the other flags change (tiny, test)")
    init.add_argument("--layers", type=int, default=None, help="default 2 (byte-gpt: its shape's)")
    init.add_argument("--hidden", type=int, default=None, help="default 64 (byte-gpt: its shape's)")
    init.add_argument("--vocab-size", type=int, default=1024)
    init.add_argument("--seed", type=int, default=0)
    init.add_argument("--heads", type=int, default=None)
    init.add_argument("--kv-heads", type=int, default=None)
    init.add_argument("--intermediate", type=int, default=None)
    init.add_argument("--embedding-rows", type=int, default=None)
    convert = commands.add_parser("convert-byte-model", help="a byte model folder of the old worker's layout in the Hugging Face layout")
    convert.add_argument("--from", dest="source", required=True)
    convert.add_argument("--out", required=True)
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
    serve.add_argument(
        "--logits-chunk-tokens",
        type=int,
        default=None,
        help="tokens per LM-head chunk when scoring (default 512; 0: full [T x V] logits)",
    )
    serve.add_argument(
        "--memory-limit-gb",
        type=float,
        default=0.0,
        help="what one rank may hold (default: the device's memory); a step estimated above it is refused",
    )
    serve.add_argument("--weight-decay", type=float, default=0.01)
    serve.add_argument("--max-grad-norm", type=float, default=1.0)
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--threads", type=int, default=0, help="torch threads of a CPU rank (default 0: its share of the machine's cores)")
    serve.add_argument("--compute-dtype", choices=("float32", "bfloat16"), default=None,
                       help="the forward and backward's dtype (default: bf16 on a GPU, fp32 on CPU)")
    serve.add_argument(
        "--sp",
        type=int,
        default=1,
        help="sequence parallelism: ranks that split each packed row (Ulysses; must divide the ranks and the attention heads)",
    )
    serve.add_argument(
        "--cpu-offload",
        action="store_true",
        help="keep the sharded parameters, gradients and optimizer state in host memory, moved to the GPU a "
        "layer at a time (FSDP2's CPUOffloadPolicy; the optimizer steps on the CPU). On CPU ranks it changes "
        "nothing: their state is in host memory already",
    )
    probe = commands.add_parser("probe", help="one process: steps of a random-init model over one sequence, timed and measured")
    probe.add_argument("--shape", default="tiny", choices=("tiny", "qwen3-0.6b", "qwen3-1.7b"))
    probe.add_argument("--vocab-size", type=int, default=151_936, help="vocabulary of the tiny shape")
    probe.add_argument("--hidden", type=int, default=64, help="hidden size of the tiny shape")
    probe.add_argument("--layers", type=int, default=2, help="layers of the tiny shape")
    probe.add_argument("--kind", default="grpo", choices=("sft", "grpo"))
    probe.add_argument("--tokens", type=int, default=8192)
    probe.add_argument("--steps", type=int, default=1)
    probe.add_argument("--warmup-steps", type=int, default=0)
    probe.add_argument("--logits-chunk-tokens", type=int, default=512, help="0: full [T x V] logits")
    probe.add_argument("--activation-checkpointing", action="store_true")
    probe.add_argument("--cpu", action="store_true", help="run on CPU even where a GPU is present")
    probe.add_argument("--sequences", type=int, default=1, help="sequences packed end to end in the row of --tokens")
    probe.add_argument(
        "--attention",
        default="varlen",
        choices=("sdpa", "varlen", "flash", "flex", "loop"),
        help="sdpa: transformers' (a dense mask for a packed row); varlen: ours, backend by device; flash|flex|loop: ours, one backend",
    )
    load = commands.add_parser("load-bench", help="peak host memory per rank of loading a model: whole then sharded, against sharded on read")
    load.add_argument("--model", default=None, help="a Hugging Face folder (default: a random-init Qwen3-0.6B shape, written to a temporary folder)")
    load.add_argument("--processes", default="1,2", help="rank counts, comma-separated")
    load.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    if args.command == "probe":
        return _probe(args)

    if args.command == "load-bench":
        from .load_bench import render, run_load_bench

        try:
            counts = [int(part) for part in args.processes.split(",")]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            print(f"agentmath_train load-bench: --processes {args.processes}: expected rank counts like 1,2", file=sys.stderr)
            return 2
        report = run_load_bench(args.model, counts, on_progress=lambda message: print(message, file=sys.stderr, flush=True))
        print(json.dumps(report) if args.json else render(report), end="\n" if args.json else "")
        return 0

    if args.command in ("init-model", "convert-byte-model", "import-gguf"):
        # Started by the CLI: gone with it (kill -9 included); stopped by a signal: its finally
        # blocks remove what it wrote half, before torch and transformers are even imported.
        watch_parent(f"agentmath_train {args.command}")
        _signals_stop_the_work()

    if args.command == "init-model" and args.arch == "byte-gpt":
        from agentmath_models.byte_folder import init_byte_model

        given = {"num_hidden_layers": args.layers, "hidden_size": args.hidden, "num_attention_heads": args.heads,
                 "num_key_value_heads": args.kv_heads, "intermediate_size": args.intermediate}
        try:
            result = init_byte_model(args.out, args.seed, args.shape, **{key: value for key, value in given.items() if value is not None})
        except ValueError as error:
            print(f"agentmath_train init-model: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result))
        return 0

    if args.command == "init-model":
        from agentmath_models.init_model import init_model

        if args.corpus is None:
            print(f"agentmath_train init-model: --arch {args.arch} needs --corpus (the text its tokenizer is learned from)", file=sys.stderr)
            return 2
        try:
            result = init_model(
                args.arch,
                args.out,
                args.corpus,
                args.layers or 2,
                args.hidden or 64,
                args.vocab_size,
                args.seed,
                heads=args.heads,
                kv_heads=args.kv_heads,
                intermediate=args.intermediate,
                embedding_rows=args.embedding_rows,
            )
        except (ValueError, FileNotFoundError) as error:
            print(f"agentmath_train init-model: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result))
        return 0

    if args.command == "convert-byte-model":
        from agentmath_models.byte_folder import convert_legacy_folder

        try:
            result = convert_legacy_folder(args.source, args.out)
        except ValueError as error:
            print(f"agentmath_train convert-byte-model: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result))
        return 0

    if args.command == "import-gguf":
        from agentmath_models.import_gguf import ImportRefused, import_gguf

        try:
            result = import_gguf(args.gguf, args.out, args.dtype, args.source)
        except ImportRefused as error:
            print(f"agentmath_train import-gguf: {error}", file=sys.stderr)
            return 2
        print(json.dumps(result.to_json()))
        return 0

    if args.logits_chunk_tokens is not None and args.logits_chunk_tokens < 0:
        print(f"agentmath_train serve: --logits-chunk-tokens {args.logits_chunk_tokens}: must be 0 (full logits) or more", file=sys.stderr)
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.sp < 1 or world % args.sp != 0:
        print(f"agentmath_train serve: --sp {args.sp}: must be at least 1 and divide the {world} ranks", file=sys.stderr)
        return 2
    if args.memory_limit_gb < 0:
        print(f"agentmath_train serve: --memory-limit-gb {args.memory_limit_gb}: must be 0 (the device's memory) or more", file=sys.stderr)
        return 2
    # Before torch and transformers are imported (seconds, minutes on a loaded machine): a rank
    # whose launcher is killed meanwhile exits instead of importing on under init.
    watch_parent("agentmath_train")
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
        memory_limit_bytes=int(args.memory_limit_gb * 2**30),
        **({} if args.logits_chunk_tokens is None else {"logits_chunk_tokens": args.logits_chunk_tokens}),
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm,
        seed=args.seed,
        compute_dtype=args.compute_dtype,
        sequence_parallel=args.sp,
        cpu_offload=args.cpu_offload,
    )
    run_service(settings, args.host, args.port, token, args.threads)
    return 0


class Stopped(BaseException):
    """A signal asked a one-shot command to stop (raised where the main thread is)."""

    def __init__(self, number: int):
        super().__init__(f"stopped by signal {number}")
        self.number = number


def _signals_stop_the_work() -> None:
    """TERM, INT and HUP raise `Stopped` in the main thread, so `finally` blocks run; `main`
    then ends with 128+N, as death by the signal would."""
    import signal

    def stop(number, _frame):
        raise Stopped(number)

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), stop)


def _probe(args) -> int:
    for name in ("vocab_size", "hidden", "layers", "tokens", "steps", "sequences"):
        if getattr(args, name) < 1:
            print(f"agentmath_train probe: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if args.tokens < 2 * args.sequences or args.logits_chunk_tokens < 0 or args.hidden % 16 != 0:
        print(
            "agentmath_train probe: --tokens ≥ 2 per sequence, --logits-chunk-tokens ≥ 0 and --hidden a multiple of 16",
            file=sys.stderr,
        )
        return 2
    import dataclasses

    import torch

    from .model import Placement, placement
    from .trainer_probe import QWEN3_SHAPES, camel_keys, release_distributed, run_probe, tiny_shape

    where = Placement(torch.device("cpu"), torch.float32, "gloo") if args.cpu else placement()
    shape = QWEN3_SHAPES[args.shape] if args.shape in QWEN3_SHAPES else tiny_shape(args.vocab_size, args.hidden, args.layers)
    result = run_probe(
        shape,
        args.kind,
        args.tokens,
        where,
        steps=args.steps,
        logits_chunk_tokens=args.logits_chunk_tokens,
        activation_checkpointing=args.activation_checkpointing,
        warmup_steps=args.warmup_steps,
        sequences=args.sequences,
        attention=args.attention,
    )
    release_distributed()
    print(json.dumps(camel_keys(dataclasses.asdict(result))))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stopped as stopped:
        sys.exit(128 + stopped.number)
