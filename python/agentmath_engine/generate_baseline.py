"""What a user would run instead of the embedded engine, for `bench engine --model DIR`: plain
`transformers` `generate` (greedy, a batch of equal-length prompts, exactly `max_new_tokens`
each, EOS ignored) and a memory-bandwidth bound for decoding, in one process the bench drives.

Commands, one JSON object a line on stdin, one answer a line on stdout:
  {"command": "generate", "prompts": [[ids…]…], "maxNewTokens": n}
      → {"seconds", "outputIds": [[…]…]}: the prompts as one batch (equal lengths: no padding)
  {"command": "bound", "kind"?: "packed" | "plain" | "int8"}
      → {"copyBytesPerSecond", "weightBytes", "dtype"}: a tensor copy's bandwidth (bytes read +
        written per second, the best of several copies of 256 MiB) and the bytes of weights one
        decode step reads (every parameter once; an input embedding that is not also the output
        head reads a few rows only, so it is left out; int8: linear weights a byte an element)
  {"command": "score", "prompt": [ids…], "output": [ids…], "dtype"?: "float32"}
      → {"logprobs": […]}: each output token's log-probability after the prompt and the output
        before it, from one forward pass (what a trainer scores an engine's tokens with), in the
        baseline's dtype or the one given (fp32: the trainer's)
  {"command": "machine"}
      → where this runs: the CPU, its kernel flags, oneDNN's kernel per dtype, threads
        (`cpu_features.describe_machine`)
  {"command": "matmuls", "rows": B, "kind": "packed" | "plain" | "int8"}
      → {"seconds", "layers"}: the median time of running every `nn.Linear` of the model once
        on B rows, as the engine's decode layers of that kind (packed: weights reordered for
        oneDNN, as the engine decodes on a CPU; int8: int8 weights, bf16 activations) —
        the part of a decode step no engine that computes these matmuls with this library
        avoids; what an engine takes beyond it is attention, the KV cache and the rest
  {"command": "stop"}
Decoding one token for B sequences reads every weight once, so B × bandwidth ÷ weight bytes
tokens/s is the most any engine holding the weights in that dtype can reach (KV cache and
activations left out: they make the true bound lower, never higher).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, Optional

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from .cpu_features import describe_machine  # noqa: E402
from .int8_linear import IN_FEATURES_MULTIPLE as INT8_IN_FEATURES_MULTIPLE  # noqa: E402
from .threads import use_threads  # noqa: E402

# The engine's int8 decode computes in bf16 (int8 weights, bf16 activations): `generate` in bf16
# is what it is compared with.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int8": torch.bfloat16}
LINEAR_KINDS = ("packed", "plain", "int8")


def copy_bandwidth(bytes_per_copy: int = 256 * 2**20, repeats: int = 5) -> float:
    """Bytes moved (read + written) per second by the fastest of `repeats` tensor copies."""
    source = torch.ones(bytes_per_copy // 4, dtype=torch.float32)
    target = torch.empty_like(source)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        target.copy_(source)
        best = min(best, time.perf_counter() - started)
    return 2 * bytes_per_copy / best


def decode_weight_bytes(model: torch.nn.Module, int8_linears: bool = False) -> int:
    """Bytes of the weights one decode step reads (shared tensors once; an untied input
    embedding is only indexed, so it is left out). `int8_linears`: as the engine's int8 decode
    holds them, every linear weight one byte an element plus one scale per output row."""
    embedding = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    tied = head is not None and head.weight.data_ptr() == embedding.data_ptr()
    linear_weights = {module.weight.data_ptr(): module for module in model.modules() if type(module) is torch.nn.Linear}
    seen, total = set(), 0
    for parameter in model.parameters():
        if parameter.data_ptr() in seen or (not tied and parameter is embedding):
            continue
        seen.add(parameter.data_ptr())
        linear = linear_weights.get(parameter.data_ptr()) if int8_linears else None
        if linear is not None and linear.in_features % INT8_IN_FEATURES_MULTIPLE == 0:
            total += parameter.numel() + 2 * linear.out_features
        else:
            total += parameter.numel() * parameter.element_size()
    return total


class Baseline:
    def __init__(self, model_path: str, dtype: torch.dtype) -> None:
        import transformers

        from agentmath_models import register_architectures

        register_architectures()
        self.dtype = dtype
        self.model_path = model_path
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).eval()
        self._float32: Optional[torch.nn.Module] = None

    def _scorer(self, dtype: torch.dtype) -> torch.nn.Module:
        """The model in `dtype` for scoring: the baseline's own, or an fp32 one loaded once (the
        trainer's dtype, for the gap a low-precision decode leaves)."""
        if dtype == self.dtype:
            return self.model
        if self._float32 is None:
            import transformers

            self._float32 = transformers.AutoModelForCausalLM.from_pretrained(self.model_path, dtype=torch.float32).eval()
        return self._float32

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens: int) -> Dict[str, Any]:
        if len({len(prompt) for prompt in prompts}) != 1:
            raise ValueError("the prompts of one generate command must have equal lengths")
        ids = torch.tensor(prompts, dtype=torch.long)
        started = time.perf_counter()
        output = self.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            pad_token_id=self.model.config.eos_token_id if self.model.config.pad_token_id is None else self.model.config.pad_token_id,
        )
        seconds = time.perf_counter() - started
        return {"seconds": seconds, "outputIds": output[:, ids.shape[1] :].tolist()}

    @torch.no_grad()
    def score(self, prompt, output, dtype: Optional[torch.dtype] = None) -> Dict[str, Any]:
        if not prompt or not output:
            raise ValueError("score needs a prompt and an output, both non-empty")
        ids = torch.tensor([list(prompt) + list(output)], dtype=torch.long)
        logits = self._scorer(dtype or self.dtype)(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
        logprobs = torch.log_softmax(logits, -1).gather(-1, ids[0, len(prompt) :, None])[:, 0]
        return {"logprobs": logprobs.tolist()}

    @torch.no_grad()
    def matmuls(self, rows: int, kind: str, repeats: int = 7) -> Dict[str, Any]:
        from .int8_linear import Int8Linear, int8_linear_available
        from .packed_linear import PackedLinear, packed_linear_available

        linears = [module for module in self.model.modules() if type(module) is torch.nn.Linear]
        if not linears:
            raise ValueError("the model has no nn.Linear layers to time")
        if kind not in LINEAR_KINDS:
            raise ValueError(f"matmuls: kind {kind!r}, expected one of {', '.join(LINEAR_KINDS)}")
        unavailable = {"packed": packed_linear_available, "int8": int8_linear_available}.get(kind, lambda: None)()
        if unavailable is not None:
            raise ValueError(f"{kind} matmuls: {unavailable}")
        inputs = {module.in_features: torch.randn(rows, module.in_features, dtype=self.dtype) for module in linears}
        # The engine's own layers (packed_linear.py, int8_linear.py), built the way the engine builds them.
        layers = {
            "packed": lambda: [PackedLinear(module, self.dtype, rows) for module in linears],
            "int8": lambda: [Int8Linear(module) for module in linears],
            "plain": lambda: linears,
        }[kind]()

        def run() -> None:
            for layer in layers:
                layer(inputs[layer.in_features])

        run()  # warm-up
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        times.sort()
        return {"seconds": times[len(times) // 2], "layers": len(linears)}

    def bound(self, kind: str = "plain") -> Dict[str, Any]:
        return {
            "copyBytesPerSecond": copy_bandwidth(),
            "weightBytes": decode_weight_bytes(self.model, int8_linears=kind == "int8"),
            "dtype": str(self.dtype).replace("torch.", ""),
        }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agentmath_engine.generate_baseline")
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: the machine's cores)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help="the engine's decode dtype (int8: generate in bf16)")
    args = parser.parse_args(argv)
    use_threads(args.threads or os.cpu_count() or 1)
    baseline = Baseline(args.model, DTYPES[args.dtype])
    print(json.dumps({"event": "ready", "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        command = request.get("command")
        if command == "stop":
            break
        try:
            if command == "generate":
                answer = baseline.generate(request["prompts"], int(request["maxNewTokens"]))
            elif command == "bound":
                answer = baseline.bound(str(request.get("kind", "plain")))
            elif command == "machine":
                answer = describe_machine().to_json()
            elif command == "score":
                dtype = DTYPES[request["dtype"]] if "dtype" in request else None
                answer = baseline.score(request["prompt"], request["output"], dtype)
            elif command == "matmuls":
                answer = baseline.matmuls(int(request["rows"]), str(request.get("kind", "plain")))
            else:
                answer = {"error": f"unknown command {command!r}"}
        except (ValueError, KeyError) as error:
            answer = {"error": str(error)}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
