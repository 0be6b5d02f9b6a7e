"""The GPU check (`scripts/gpu-check.sh`): on one GPU, with only Python, torch and transformers
(no Node, no network, no weights), what the trainer and the embedded engine do at the paper's
smaller sizes. Models are random-init Qwen3-0.6B- and Qwen3-1.7B-shaped (the published
configurations, built locally).

It measures, and writes as one JSON file:
  train        SFT and GRPO steps over one sequence of 4k, 16k and 32k tokens, for each shape
               (activation checkpointing on, the LM head in chunks of 512 tokens): tokens/s,
               MFU (model FLOPs over the card's dense bf16 peak), peak allocated memory
  head memory  one GRPO step with the chunked LM head against full [T × V] logits, peak memory
               of each (an out-of-memory is recorded as such)
  generation   the embedded engine (agentmath_engine's engine on the Hugging Face backend, fp32
               weights, bf16 autocast) generating 128 tokens for 1 and 16 requests at once:
               output tokens/s
  packed attention  one GRPO step of 8 sequences packed in one 16k-token row (0.6B shape,
               checkpointing, chunked head) with transformers' sdpa (a dense [T × T] mask) and
               our varlen attention's backends (attention.py: loop, flex, and flash where the
               flash_attn package is installed; the dry run has no flex): tokens/s, MFU, peak
               memory; an error of one backend is recorded as such
Each configuration is skipped, and listed as skipped, once the time budget (default 450 s) is
spent. `--dry-run` runs the same code on CPU with tiny shapes in seconds (the test suite runs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import torch
import transformers

from .model import Placement, placement
from .trainer_probe import QWEN3_SHAPES, ModelShape, camel_keys, release_distributed, run_probe, tiny_shape

CORPUS = ["def f(x):\n    return x * 2", "print(f(21))", "The answer is \\boxed{42}.", "Compute 123 * 456 + 789."]


@dataclasses.dataclass(frozen=True)
class CheckPlan:
    shapes: Sequence[ModelShape]
    train_tokens: Sequence[int]
    warmup_steps: int
    steps: int
    head_shape: ModelShape
    head_tokens: Sequence[int]
    generation_shape: ModelShape
    generation_batches: Sequence[int]
    prompt_tokens: int
    new_tokens: int
    packed_shape: ModelShape
    packed_tokens: int
    packed_sequences: int


GPU_PLAN = CheckPlan(
    shapes=(QWEN3_SHAPES["qwen3-0.6b"], QWEN3_SHAPES["qwen3-1.7b"]),
    train_tokens=(4096, 16_384, 32_768),
    warmup_steps=1,
    steps=2,
    head_shape=QWEN3_SHAPES["qwen3-0.6b"],
    head_tokens=(4096, 16_384),
    generation_shape=QWEN3_SHAPES["qwen3-0.6b"],
    generation_batches=(1, 16),
    prompt_tokens=128,
    new_tokens=128,
    packed_shape=QWEN3_SHAPES["qwen3-0.6b"],
    packed_tokens=16_384,
    packed_sequences=8,
)
DRY_RUN_PLAN = CheckPlan(
    shapes=(tiny_shape(1000, 32, 1), tiny_shape(1000, 64, 1)),
    train_tokens=(32,),
    warmup_steps=0,
    steps=1,
    head_shape=tiny_shape(1000, 32, 1),
    head_tokens=(64,),
    generation_shape=tiny_shape(1000, 32, 1),
    generation_batches=(1, 2),
    prompt_tokens=8,
    new_tokens=4,
    packed_shape=tiny_shape(1000, 32, 1),
    packed_tokens=64,
    packed_sequences=4,
)


def generation_tokens_per_second(shape: ModelShape, where: Placement, batch: int, prompt_tokens: int, new_tokens: int) -> Dict[str, Any]:
    """The embedded engine on a random-init model: `batch` requests of `new_tokens` each at once."""
    from agentmath_engine.engine import Engine, SamplingParams
    from agentmath_engine.hf_backend import HuggingFaceBackend

    from agentmath_models.init_model import build_tokenizer

    tokenizer = build_tokenizer(CORPUS, 300)
    torch.manual_seed(0)
    with torch.device(where.device):
        model = transformers.AutoModelForCausalLM.from_config(shape.config(), dtype=torch.float32)
    compute = torch.bfloat16 if where.device.type == "cuda" else None
    backend = HuggingFaceBackend(model, tokenizer, "(random init)", batch, where.device, compute)
    engine = Engine(backend, batch)
    try:
        generator = torch.Generator().manual_seed(1)
        prompts = [torch.randint(0, len(tokenizer), (prompt_tokens,), generator=generator).tolist() for _ in range(batch)]
        params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, ignore_eos=True, seed=3)
        started = time.perf_counter()
        sequences = [engine.submit(prompt, params, False, None) for prompt in prompts]
        for sequence in sequences:
            sequence.done.wait()
        elapsed = time.perf_counter() - started
        produced = sum(len(sequence.output) for sequence in sequences)
    finally:
        engine.shutdown()
        del engine, backend, model
        if where.device.type == "cuda":
            torch.cuda.empty_cache()
    return {
        "shape": shape.name,
        "requests": batch,
        "promptTokens": prompt_tokens,
        "newTokens": new_tokens,
        "outputTokens": produced,
        "seconds": elapsed,
        "tokensPerSecond": produced / elapsed,
        "computeDtype": "bfloat16" if compute is not None else "float32",
    }


def packed_attentions(device: torch.device) -> List[str]:
    """The attention paths the packed-row measurement compares (trainer_probe.ATTENTIONS keys):
    flex on CUDA only (it has no backward on CPU), flash where flash_attn is installed."""
    if device.type != "cuda":
        return ["sdpa", "loop"]
    flash = ["flash"] if importlib.util.find_spec("flash_attn") is not None else []
    return ["sdpa", "loop", "flex", *flash]


def run_check(plan: CheckPlan, where: Placement, budget_seconds: float, log=print) -> Dict[str, Any]:
    started = time.perf_counter()
    report: Dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "device": torch.cuda.get_device_name(where.device) if where.device.type == "cuda" else f"cpu ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "budgetSeconds": budget_seconds,
        "train": [],
        "headMemory": [],
        "generation": [],
        "packedAttention": [],
        "skipped": [],
    }

    def in_budget(what: str) -> bool:
        if time.perf_counter() - started < budget_seconds:
            return True
        report["skipped"].append(what)
        log(f"skipped (time budget): {what}")
        return False

    for shape in plan.shapes:
        for tokens in plan.train_tokens:
            for kind in ("sft", "grpo"):
                if not in_budget(f"train {shape.name} {kind} {tokens}"):
                    continue
                result = run_probe(shape, kind, tokens, where, plan.steps, 512, True, plan.warmup_steps)
                report["train"].append(camel_keys(dataclasses.asdict(result)))
                log(_line("train", result))
    for tokens in plan.head_tokens:
        for chunk in (512, 0):
            if not in_budget(f"head memory {plan.head_shape.name} {tokens} chunk {chunk}"):
                continue
            result = run_probe(plan.head_shape, "grpo", tokens, where, 1, chunk, True, 0)
            report["headMemory"].append(camel_keys(dataclasses.asdict(result)))
            log(_line("head", result))
    for batch in plan.generation_batches:
        if not in_budget(f"generation {plan.generation_shape.name} x{batch}"):
            continue
        figures = generation_tokens_per_second(plan.generation_shape, where, batch, plan.prompt_tokens, plan.new_tokens)
        report["generation"].append(figures)
        log(f"generate {figures['shape']} {batch} request(s) x {figures['newTokens']} tokens: {figures['tokensPerSecond']:.1f} tokens/s ({figures['computeDtype']})")
    for attention in packed_attentions(where.device):
        what = f"packed attention {plan.packed_shape.name} {plan.packed_sequences} x {plan.packed_tokens // plan.packed_sequences} {attention}"
        if not in_budget(what):
            continue
        try:
            result = run_probe(
                plan.packed_shape,
                "grpo",
                plan.packed_tokens,
                where,
                plan.steps,
                512,
                True,
                plan.warmup_steps,
                sequences=plan.packed_sequences,
                attention=attention,
            )
            report["packedAttention"].append(camel_keys(dataclasses.asdict(result)))
            log(_line(f"packed {attention}", result))
        except Exception as error:  # a backend that fails here is a finding, not the end of the check
            message = f"{type(error).__name__}: {error}"[:500]
            report["packedAttention"].append({"attention": attention, "status": "error", "error": message})
            log(f"{what}: error {type(error).__name__}: {error}")
    report["seconds"] = time.perf_counter() - started
    return report


def _line(what: str, result) -> str:
    peak = f"{result.peak_memory_bytes / 2**30:.2f} GiB" if result.peak_memory_bytes is not None else "?"
    speed = f"{result.tokens_per_second:.0f} tokens/s" if result.tokens_per_second else "-"
    mfu = f", MFU {100 * result.mfu:.1f}%" if result.mfu is not None else ""
    head = f"chunk {result.logits_chunk_tokens}" if result.logits_chunk_tokens else "full logits"
    return f"{what} {result.shape} {result.kind} {result.tokens} tokens ({head}): {result.status}, {speed}{mfu}, peak {peak}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes on CPU, in seconds")
    parser.add_argument("--out", default=None, help="the JSON file (default $OUT/gpu-check.json, else ./gpu-check.json)")
    parser.add_argument("--budget-seconds", type=float, default=450.0)
    args = parser.parse_args(argv)
    if args.budget_seconds <= 0:
        print("gpu-check: --budget-seconds must be positive", file=sys.stderr)
        return 2
    if args.dry_run:
        where, plan = Placement(torch.device("cpu"), torch.float32, "gloo"), DRY_RUN_PLAN
    else:
        if not torch.cuda.is_available():
            print("gpu-check: no CUDA device here; --dry-run runs the check on CPU with tiny shapes", file=sys.stderr)
            return 2
        where, plan = placement(), GPU_PLAN
    out = args.out or os.path.join(os.environ.get("OUT") or ".", "gpu-check.json")
    report = run_check(plan, where, args.budget_seconds)
    report["dryRun"] = args.dry_run
    release_distributed()
    temporary = out + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(report, handle, indent=2)
    os.replace(temporary, out)
    print(f"wrote {out} ({report['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
