"""The trainer's step with the chunked LM head against the full-logits path: the same losses,
statistics and gradients for SFT and GRPO (temperature, KL to the reference), tied (Qwen3) and
untied (Llama) heads, fp32 and bf16 compute, under FSDP2 in one gloo process.

Gradients are read by an optimizer that records them and changes nothing. Tolerances: fp32 — losses 1e-5 relative, every gradient within 1e-5 of the
largest in its tensor (the two paths differ only in summation order); bf16 — losses 2e-3
relative, gradients within 3e-2 of the largest in the tensor (the logits are the same bf16
numbers; the gradient of the logits is rounded to bf16 at other places, and the chunked path
sums the head's gradient in fp32 where the full path sums it in bf16)."""

from __future__ import annotations

import os
import unittest

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

from agentmath_train.batch_io import decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_train.model import Placement, load_model  # noqa: E402
from agentmath_train.options import parse_step_options  # noqa: E402
from agentmath_train.parallelize import freeze, parallelize  # noqa: E402
from agentmath_train.step import StepRunner  # noqa: E402
from agentmath_train.test_distributed import OneProcessGroupTestCase  # noqa: E402

TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-3, 3e-2)}  # (loss relative, gradient share of max)


class GradientRecorder(torch.optim.Optimizer):
    """Keeps each parameter's full gradient at `step()`; the weights stay as they are."""

    def __init__(self, named):
        self.names = {id(parameter): name for name, parameter in named}
        super().__init__([parameter for _, parameter in named], {"lr": 0.0})
        self.gradients = {}

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for parameter in group["params"]:
                gradient = parameter.grad
                gradient = gradient.full_tensor() if hasattr(gradient, "full_tensor") else gradient
                self.gradients[self.names[id(parameter)]] = gradient.float().clone()


class ChunkedHeadStepTest(OneProcessGroupTestCase):
    """On the distributed tests' models: Qwen3 ties its head, Llama does not."""

    def runner(self, folder: str, where: Placement, chunk_tokens: int) -> StepRunner:
        torch.manual_seed(0)
        model = parallelize(load_model(folder, where), where)
        optimizer = GradientRecorder(list(model.named_parameters()))
        return StepRunner(
            model,
            optimizer,
            where.device,
            micro_batch_tokens=40,
            max_grad_norm=1e9,
            reference=lambda: freeze(load_model(folder, where), where),
            logits_chunk_tokens=chunk_tokens,
        )

    def steps(self, runner: StepRunner, vocab: int):
        """SFT then GRPO; each step's statistics and gradients."""
        ids, masks, olds, advantages = fixed_batch(vocab)
        results = []
        sft = decode_batch(encode_batch(ids, masks, options={"learningRate": 1.0}))
        grpo = decode_batch(
            encode_batch(ids, masks, advantages, olds, options={"learningRate": 1.0, "temperature": 0.7, "klCoef": 0.1})
        )
        for kind, batch in (("sft", sft), ("grpo", grpo)):
            options = parse_step_options(batch.options)
            stats = runner.sft_step(batch, options) if kind == "sft" else runner.grpo_step(batch, options)
            results.append((kind, stats, dict(runner.optimizer.gradients)))
        return results

    def test_chunked_and_full_logits_give_the_same_losses_and_gradients(self):
        for arch in ("qwen3", "llama"):
            folder = self.models[arch]
            for dtype in (torch.float32, torch.bfloat16):
                with self.subTest(arch=arch, dtype=str(dtype)):
                    where = Placement(torch.device("cpu"), dtype, "gloo")
                    full = self.runner(folder, where, chunk_tokens=0)
                    chunked = self.runner(folder, where, chunk_tokens=7)
                    vocab = full.model.config.vocab_size
                    loss_tolerance, gradient_tolerance = TOLERANCES[dtype]
                    for (kind, expected, expected_grads), (_, actual, actual_grads) in zip(
                        self.steps(full, vocab), self.steps(chunked, vocab)
                    ):
                        keys = ("loss", "entropy", "kl_ref", "mean_ratio") if kind == "grpo" else ("loss",)
                        for key in keys:
                            self.assertAlmostEqual(
                                actual[key], expected[key], delta=loss_tolerance * abs(expected[key]), msg=f"{kind} {key}"
                            )
                        for name, gradient in expected_grads.items():
                            largest = gradient.abs().max().item()
                            self.assertGreater(largest, 0.0, f"{kind} {name} got no gradient")
                            difference = (actual_grads[name] - gradient).abs().max().item()
                            self.assertLessEqual(difference, gradient_tolerance * largest, f"{kind} {name}")


if __name__ == "__main__":
    unittest.main()
