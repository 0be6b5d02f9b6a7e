"""Sequence parallelism (`--sp`) on CPU with gloo.

- The collectives, with 2 processes (this file run under torchrun with `collectives`): the
  all-to-all and the gather against the same arithmetic in one process, forward and backward
  (exact: they move numbers, they add none); Ulysses attention over a packed row (3 sequences,
  grouped-query heads, and one key/value head that 2 ranks cannot split) against the
  one-process attention and against SDPA with a dense block-causal mask, outputs and the
  gradients of q, k and v within 1e-6.
- The trainer: 2 processes with `--sp 2` and a budget of 16 tokens per rank (so the
  31-token sequence is split, and rows of odd length are padded), with activation
  checkpointing (its recomputation repeats the all-to-alls), against 1 process on the same
  batch, an SFT then a GRPO step (T = 0.7, KL to the reference on), for Qwen3 (tied head) and
  Llama (untied; Qwen3-MoE, whose attention is Qwen3's, was checked by hand: 1.7e-4); then 4 processes as 2 data-parallel groups × `--sp 2` (one group has a micro-batch
  fewer: it joins the others' collectives idle) for Qwen3. Tolerances (fp32): losses within
  1e-5 relative (seen: ≤ 3e-7); the GRPO step's statistics (KL to the reference, mean ratio,
  entropy) and gradient norms within 1e-4 relative (seen: ≤ 5e-6: they are taken after the
  SFT step's update, see the weights); the batch's logprobs scored before the steps within
  1e-5 (seen: 1e-6); the updated weights within 5e-4 (2.5% of the 2e-2 that two Adam steps at
  lr 1e-2 can move a weight) with fewer than 1 in 1,000 weights more than 1e-5 apart (seen: at
  most 1.7e-4, on 13 of ~130k weights: Adam divides by √v, so rounding in a near-zero
  gradient moves a weight visibly; test_distributed.py sees the same between 2 and 1 ranks).
- The refusals: heads that --sp does not divide, a world that --sp does not divide.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import unittest
from unittest import mock

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402

from agentmath_train.sequence_parallel import (  # noqa: E402
    RowSplit,
    SequenceParallel,
    all_to_all,
    causal_attention_per_sequence,
    check_heads,
    gather_slices,
    ulysses_attention,
)
from agentmath_train.test_distributed import (  # noqa: E402
    PYTHON_DIR,
    TrainerTestCase,
    free_port,
    run_equivalence_probe,
    start_single_process_group,
    stop_process_group,
)

LOSS_RELATIVE_TOLERANCE = 1e-5
STATISTICS_RELATIVE_TOLERANCE = 1e-4
SCORE_TOLERANCE = 1e-5
WEIGHT_TOLERANCE = 5e-4
WEIGHT_CLOSE = 1e-5
WEIGHTS_APART_SHARE = 1e-3
ATTENTION_TOLERANCE = 1e-6


def check_collectives() -> None:
    """Every rank builds every rank's inputs from one seed, so it can compute alone what the
    collectives must give it; any difference raises (a non-zero exit)."""
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    group = dist.new_group(list(range(size)))
    generator = torch.Generator().manual_seed(0)

    # all_to_all: [1, 4 heads, 3 tokens, 2] per rank → [1, 2 heads, 6 tokens, 2].
    inputs = [torch.randn(1, 4, 3, 2, generator=generator) for _ in range(size)]
    weights = [torch.randn(1, 4 // size, 3 * size, 2, generator=generator) for _ in range(size)]
    heads, tokens = 4 // size, 3
    mine = inputs[rank].clone().requires_grad_()
    out = all_to_all(mine, 1, 2, group)
    torch.testing.assert_close(out, torch.cat([x[:, rank * heads : (rank + 1) * heads] for x in inputs], 2), rtol=0, atol=0)
    (out * weights[rank]).sum().backward()
    # Σ over ranks j of ⟨y_j, w_j⟩: this rank's heads of rank j's part sit at its tokens in y_j.
    expected = torch.cat([w[:, :, rank * tokens : (rank + 1) * tokens] for w in weights], 1)
    torch.testing.assert_close(mine.grad, expected, rtol=0, atol=0)

    # gather_slices: every rank computes the same loss of the joined slices.
    slices = [torch.randn(3, 2, generator=generator) for _ in range(size)]
    upstream = torch.randn(3 * size, 2, generator=generator)
    piece = slices[rank].clone().requires_grad_()
    joined = gather_slices(piece, group)
    torch.testing.assert_close(joined, torch.cat(slices), rtol=0, atol=0)
    (joined * upstream).sum().backward()
    torch.testing.assert_close(piece.grad, upstream[rank * 3 : (rank + 1) * 3], rtol=0, atol=0)

    # Ulysses attention over a packed row of 3 sequences (10 tokens, 5 per rank).
    bounds = (0, 4, 7, 10)
    width = 10 // size
    for kv_heads in (2, 1):
        query = torch.randn(1, 4, 10, 8, generator=generator)
        key = torch.randn(1, kv_heads, 10, 8, generator=generator)
        value = torch.randn(1, kv_heads, 10, 8, generator=generator)
        upstream = torch.randn(1, 10, 4, 8, generator=generator)
        full = [tensor.clone().requires_grad_() for tensor in (query, key, value)]
        reference = causal_attention_per_sequence(*full, bounds, 0.3)
        (reference.transpose(1, 2) * upstream).sum().backward()
        dense = dense_block_causal_attention(query, key, value, bounds, 0.3)
        torch.testing.assert_close(reference, dense, rtol=0, atol=ATTENTION_TOLERANCE)
        local = [tensor[:, :, rank * width : (rank + 1) * width].clone().requires_grad_() for tensor in (query, key, value)]
        out, _ = ulysses_attention(torch.nn.Module(), *local, None, scaling=0.3, sequence_parallel_row=RowSplit(group, bounds))
        mine = slice(rank * width, (rank + 1) * width)
        torch.testing.assert_close(out, reference.transpose(1, 2)[:, mine], rtol=0, atol=ATTENTION_TOLERANCE)
        (out * upstream[:, mine]).sum().backward()
        for name, part, whole in zip("qkv", local, full):
            torch.testing.assert_close(part.grad, whole.grad[:, :, mine], rtol=0, atol=ATTENTION_TOLERANCE, msg=f"{name} ({kv_heads} kv heads)")
    print(f"rank {rank}: collectives agree", flush=True)
    dist.destroy_process_group()


def dense_block_causal_attention(query, key, value, bounds, scaling) -> torch.Tensor:
    """SDPA with a [T × T] mask: token i sees token j ≤ i of its own sequence."""
    sequence = torch.zeros(query.shape[2], dtype=torch.int64)
    for index, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        sequence[start:end] = index
    positions = torch.arange(query.shape[2])
    mask = (sequence[:, None] == sequence[None, :]) & (positions[None, :] <= positions[:, None])
    groups = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling)


class CollectivesTest(unittest.TestCase):
    def test_all_to_all_gather_and_attention_over_two_processes(self):
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(free_port()),
            os.path.abspath(__file__),
            "collectives",
        ]
        environment = {**os.environ, "PYTHONPATH": PYTHON_DIR, "OMP_NUM_THREADS": "1"}
        finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)
        self.assertEqual(finished.returncode, 0, finished.stderr[-3000:])
        self.assertEqual(finished.stdout.count("collectives agree"), 2, finished.stdout)


class SequenceParallelStepTest(TrainerTestCase):
    one_process: dict = {}

    def folders(self) -> list:
        # Tied (Qwen3) and untied (Llama) heads; Qwen3-MoE's attention is Qwen3's.
        return [self.models["qwen3"], self.models["llama"]]

    def single(self) -> dict:
        """The 1-process run, shared by the tests."""
        if not SequenceParallelStepTest.one_process:
            SequenceParallelStepTest.one_process = run_equivalence_probe(self, self.folder, self.folders(), 1, {})
        return SequenceParallelStepTest.one_process

    def assert_same_steps(self, one: dict, other: dict, folders) -> None:
        for folder in folders:
            with self.subTest(model=os.path.basename(folder)):
                for step in ("sft", "grpo"):
                    expected, actual = one[folder][step], other[folder][step]
                    self.assertEqual(actual["tokens"], expected["tokens"])
                    self.assertAlmostEqual(actual["loss"], expected["loss"], delta=LOSS_RELATIVE_TOLERANCE * abs(expected["loss"]))
                    keys = ("grad_norm", "kl_ref", "mean_ratio", "entropy") if step == "grpo" else ("grad_norm",)
                    for key in keys:
                        self.assertAlmostEqual(
                            actual[key], expected[key], delta=STATISTICS_RELATIVE_TOLERANCE * abs(expected[key]), msg=f"{step} {key}"
                        )
                self.assertGreater(one[folder]["grpo"]["kl_ref"], 0.0)
                for index, (expected, actual) in enumerate(zip(one[folder]["scores"], other[folder]["scores"])):
                    torch.testing.assert_close(actual, expected, rtol=0, atol=SCORE_TOLERANCE, msg=f"sequence {index}")
                initial = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
                moved, apart, count = 0.0, 0, 0
                for name, weight in one[folder]["state"].items():
                    difference = (weight - other[folder]["state"][name]).abs()
                    self.assertLess(difference.max().item(), WEIGHT_TOLERANCE, name)
                    apart += int((difference > WEIGHT_CLOSE).sum())
                    count += difference.numel()
                    if name in initial:
                        moved = max(moved, (weight - initial[name]).abs().max().item())
                self.assertLess(apart, WEIGHTS_APART_SHARE * count, f"{apart} of {count} weights more than {WEIGHT_CLOSE} apart")
                self.assertGreater(moved, 10 * WEIGHT_TOLERANCE, "the steps must move the weights")

    def test_two_processes_with_sp_2_give_the_losses_scores_and_weights_of_one(self):
        one = self.single()
        settings = {"sequence_parallel": 2, "micro_batch_tokens": 16, "activation_checkpointing": True}
        two = run_equivalence_probe(self, self.folder, self.folders(), 2, settings)
        self.assert_same_steps(one, two, self.folders())

    def test_two_data_parallel_groups_of_sp_2_give_the_losses_scores_and_weights_of_one(self):
        one = self.single()
        folder = self.models["qwen3"]
        four = run_equivalence_probe(self, self.folder, [folder], 4, {"sequence_parallel": 2, "micro_batch_tokens": 12})
        self.assert_same_steps(one, four, [folder])


class RefusalTest(unittest.TestCase):
    def test_heads_that_sp_does_not_divide_are_refused_naming_both(self):
        config = transformers.Qwen3Config(num_attention_heads=4, num_key_value_heads=2, hidden_size=64, head_dim=16)
        with self.assertRaisesRegex(ValueError, r"--sp 3: the model's 4 attention heads \(2 key/value heads\)"):
            check_heads(config, 3)
        check_heads(config, 4)  # 2 key/value heads are repeated to 4
        check_heads(config, 2)

    def test_a_world_that_sp_does_not_divide_is_refused(self):
        start_single_process_group()
        try:
            with self.assertRaisesRegex(ValueError, "--sp 2: must divide the world of 1 ranks"):
                SequenceParallel.create(2)
        finally:
            stop_process_group()
        from agentmath_train.__main__ import main

        stderr = io.StringIO()
        with mock.patch.dict(os.environ, {"WORLD_SIZE": "2"}), contextlib.redirect_stderr(stderr):
            status = main(["serve", "--model", "unused", "--sp", "3"])
        self.assertEqual(status, 2)
        self.assertIn("--sp 3: must be at least 1 and divide the 2 ranks", stderr.getvalue())


if __name__ == "__main__":
    if sys.argv[1:] == ["collectives"]:
        check_collectives()
    else:
        unittest.main()
