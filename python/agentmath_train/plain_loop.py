"""The training loop a user would write instead of our trainer, for `bench trainer --model DIR`:
one process, no FSDP, the model from `transformers`, `F.cross_entropy` for SFT and the clipped
policy-gradient objective inline for GRPO, gradient clipping, AdamW. It takes the same batches
packed the same way (`packing.micro_batches` and `pack`: one row per micro-batch, position ids
restarting per sequence), so the two sides do the same arithmetic on the same tokens.

Commands, one JSON object a line on stdin, one answer a line on stdout:
  {"command": "sft"|"grpo", "sequences": [{"inputIds", "lossMask", "advantage"?, "oldLogprobs"?}],
   "learningRate", "bf16": bool}  → {"stepMs", "loss"}
  {"command": "stop"}
`bf16` runs the forward under CPU bf16 autocast (fp32 weights, gradients and optimizer state).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any, Dict, List

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from agentmath_engine.cpu_features import native_bf16  # noqa: E402

from .model import rank_threads  # noqa: E402
from .packing import micro_batches, pack  # noqa: E402


class PlainLoop:
    def __init__(self, model_path: str, micro_batch_tokens: int) -> None:
        import transformers

        from agentmath_models import register_architectures

        register_architectures()

        # transformers' SDPA where the model lets transformers dispatch its attention; the byte
        # model computes its own.
        config = transformers.AutoConfig.from_pretrained(model_path)
        model_class = transformers.AutoModelForCausalLM._model_mapping[type(config)]
        attention = {"attn_implementation": "sdpa"} if getattr(model_class, "_supports_sdpa", False) else {}
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, **attention)
        self.model.train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=0.0, betas=(0.9, 0.95), weight_decay=0.01)
        self.micro_batch_tokens = micro_batch_tokens

    def step(self, kind: str, sequences: List[Dict[str, Any]], learning_rate: float, bf16: bool) -> Dict[str, float]:
        started = time.perf_counter()
        lengths = [len(sequence["inputIds"]) for sequence in sequences]
        plan = micro_batches(list(range(len(sequences))), lengths, self.micro_batch_tokens)
        trained = sum(sum(sequence["lossMask"][1:]) for sequence in sequences)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for members in plan:
            row = pack([torch.tensor(sequences[i]["inputIds"]) for i in members], torch.device("cpu"))
            # Targets: the next token where it is trained, else ignored (a sequence's first
            # token has no prediction; the packed row's last token predicts nothing).
            mask = torch.tensor([m for i in members for m in sequences[i]["lossMask"]], dtype=torch.bool)
            for start, _ in row.spans:
                mask[start] = False
            targets = torch.where(mask, row.input_ids[0], -100)[1:]
            autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
            with autocast:
                logits = self.model(input_ids=row.input_ids, position_ids=row.position_ids, use_cache=False).logits
            logits = logits[0, :-1].float()
            if kind == "sft":
                loss = F.cross_entropy(logits, targets, ignore_index=-100, reduction="sum") / trained
            else:
                keep = targets != -100
                logprobs = -F.cross_entropy(logits[keep], targets[keep], reduction="none")
                old = torch.tensor([v for i in members for v in sequences[i]["oldLogprobs"]])[1:][keep]
                advantage = torch.tensor([sequences[i]["advantage"] for i in members for _ in sequences[i]["inputIds"]])[1:][keep]
                ratio = torch.exp(logprobs - old)
                objective = torch.minimum(ratio * advantage, ratio.clamp(0.8, 1.2) * advantage)
                loss = -objective.sum() / trained
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return {"stepMs": (time.perf_counter() - started) * 1000.0, "loss": total}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agentmath_train.plain_loop")
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: what one trainer rank uses)")
    parser.add_argument("--micro-batch-tokens", type=int, default=8192)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads or rank_threads(1))
    loop = PlainLoop(args.model, args.micro_batch_tokens)
    print(json.dumps({"event": "ready", "threads": torch.get_num_threads(), "nativeBf16": native_bf16()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        command = request.get("command")
        if command == "stop":
            break
        if command in ("sft", "grpo"):
            answer = loop.step(command, request["sequences"], float(request["learningRate"]), bool(request.get("bf16")))
        else:
            answer = {"error": f"unknown command {command!r}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
