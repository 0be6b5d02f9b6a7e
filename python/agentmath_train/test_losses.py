"""The GRPO objective's options against hand-computed values (`losses.grpo_loss_sum`), and the
step's gradient unchanged by the micro-batch size for every aggregation and anchor (the
normaliser is taken over the whole batch before micro-batching)."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

from agentmath_models.byte_folder import init_byte_model  # noqa: E402
from agentmath_train.batch_io import decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_train.losses import grpo_loss_sum  # noqa: E402
from agentmath_train.options import parse_step_options  # noqa: E402


class GrpoObjectiveOptionsTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.logprobs = (-torch.rand(2, 5) - 0.1).requires_grad_(True)
        self.mask = torch.tensor([[0, 1, 1, 1, 0], [0, 1, 1, 0, 0]], dtype=torch.float32)
        self.advantages = torch.tensor([1.0, -1.0])
        self.behaviour = self.logprobs.detach() - torch.tensor([[0, 0.1, 1.0, -0.2, 0], [0, 0.5, 0.05, 0, 0]])

    def test_decoupled_weight_is_applied_once_and_truncated_at_the_cap(self):
        proximal = self.logprobs.detach()
        weight = torch.clamp(torch.exp(proximal - self.behaviour), max=1.5) * self.mask
        parts = grpo_loss_sum(
            self.logprobs, self.behaviour, self.advantages, self.mask, 0.2, 0.28, proximal_logprobs=proximal, off_policy_cap=1.5
        )
        # r = π_θ / π_prox = 1: the objective is Σ w·Â, the weight counted once.
        expected = -(weight * self.advantages[:, None]).sum()
        self.assertAlmostEqual(parts["loss"].item(), expected.item(), places=5)
        parts["loss"].backward()
        self.assertTrue(torch.allclose(self.logprobs.grad, -weight * self.advantages[:, None], atol=1e-6))
        self.assertEqual(parts["off_policy_capped_sum"].item(), 2.0)  # e^1.0 and e^0.5 exceed 1.5

    def test_masked_mode_drops_tokens_above_the_cap(self):
        parts = grpo_loss_sum(
            self.logprobs,
            self.behaviour,
            self.advantages,
            self.mask,
            0.2,
            0.28,
            proximal_logprobs=self.logprobs.detach(),
            off_policy_cap=1.5,
            off_policy_mode="mask",
        )
        parts["loss"].backward()
        self.assertEqual(self.logprobs.grad[0, 2].item(), 0.0)
        self.assertEqual(self.logprobs.grad[1, 1].item(), 0.0)
        self.assertAlmostEqual(self.logprobs.grad[0, 1].item(), -torch.exp(torch.tensor(0.1)).item(), places=5)

    def test_masked_mode_also_drops_tokens_below_the_floor(self):
        # Rejection between a lower and an upper threshold: w = e^-0.2 ≈ 0.82 < 0.9 is dropped.
        parts = grpo_loss_sum(
            self.logprobs,
            self.behaviour,
            self.advantages,
            self.mask,
            0.2,
            0.28,
            proximal_logprobs=self.logprobs.detach(),
            off_policy_cap=1.5,
            off_policy_mode="mask",
            off_policy_floor=0.9,
        )
        parts["loss"].backward()
        self.assertEqual(self.logprobs.grad[0, 3].item(), 0.0)
        self.assertAlmostEqual(self.logprobs.grad[0, 1].item(), -torch.exp(torch.tensor(0.1)).item(), places=5)
        self.assertAlmostEqual(self.logprobs.grad[1, 2].item(), torch.exp(torch.tensor(0.05)).item(), places=5)
        self.assertEqual(parts["off_policy_capped_sum"].item(), 3.0)  # e^1.0, e^0.5 above; e^-0.2 below

    def test_dual_clip_bounds_a_negative_advantage_term(self):
        old = self.logprobs.detach() - 2.0  # ratio e² ≈ 7.4 everywhere
        plain = grpo_loss_sum(self.logprobs, old, self.advantages, self.mask, 0.2, 0.28)
        dual = grpo_loss_sum(self.logprobs, old, self.advantages, self.mask, 0.2, 0.28, dual_clip=3.0)
        ratio = torch.exp(torch.tensor(2.0)).item()
        # Positive advantage: clipped at 1.28 either way (3 tokens); negative: −ratio vs −3 (2 tokens).
        self.assertAlmostEqual(plain["loss"].item(), -(3 * 1.28 - 2 * ratio), places=4)
        self.assertAlmostEqual(dual["loss"].item(), -(3 * 1.28 - 2 * 3.0), places=4)
        self.assertEqual(dual["dual_clipped_sum"].item(), 2.0)

    def test_k1_is_refused_as_a_kl_loss_and_k2_k3_follow_their_definitions(self):
        ref = self.logprobs.detach() - 0.3
        old = self.logprobs.detach()
        zero_advantage = torch.zeros(2)
        with self.assertRaisesRegex(ValueError, "not a KL loss"):
            grpo_loss_sum(self.logprobs, old, zero_advantage, self.mask, 0.2, 0.2, 1.0, ref, kl_estimator="k1")
        k2 = grpo_loss_sum(self.logprobs, old, zero_advantage, self.mask, 0.2, 0.2, 1.0, ref, kl_estimator="k2")
        k3 = grpo_loss_sum(self.logprobs, old, zero_advantage, self.mask, 0.2, 0.2, 1.0, ref)
        tokens = self.mask.sum().item()
        self.assertAlmostEqual(k2["kl_sum"].item(), 0.5 * 0.3**2 * tokens, places=5)
        self.assertAlmostEqual(k3["kl_sum"].item(), (torch.exp(torch.tensor(-0.3)).item() + 0.3 - 1) * tokens, places=5)
        # k2's gradient pulls log π_θ towards log π_ref: d/dlogπ ½(logπ − logπ_ref)² = 0.3 per token.
        k2["loss"].backward()
        self.assertTrue(torch.allclose(self.logprobs.grad, 0.3 * self.mask, atol=1e-6))

    def test_sequence_mean_weighs_each_sequence_equally(self):
        old = self.logprobs.detach()
        weight = self.mask / self.mask.sum(dim=1, keepdim=True)
        parts = grpo_loss_sum(self.logprobs, old, torch.tensor([1.0, 1.0]), self.mask, 0.2, 0.2, token_weight=weight)
        parts["loss"].backward()
        # 3 tokens vs 2 tokens: each token's gradient is −1/3 and −1/2; each sequence sums to −1.
        self.assertAlmostEqual(self.logprobs.grad[0].sum().item(), -1.0, places=5)
        self.assertAlmostEqual(self.logprobs.grad[1].sum().item(), -1.0, places=5)


class MicroBatchInvarianceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-losses-test-")
        init_byte_model(cls.folder, seed=1, shape="test", token_shift=True, digit_index=True, number_index=True, digit_match=True)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def gradient(self, micro_batch_tokens: int, options: dict):
        """The step's loss and the gradient it applied (grads stay after the optimizer step)."""
        from agentmath_train.service import TrainerCore, TrainerSettings

        core = TrainerCore(TrainerSettings(model=self.folder, micro_batch_tokens=micro_batch_tokens))
        ids, masks, olds, advantages = fixed_batch(core.model.config.vocab_size, 11)
        # Behaviour logprobs near the model's own, so the ratio and the weight leave 1 in places.
        scored = core.runner.score_sequences(decode_batch(encode_batch(ids, masks)))
        olds = [[value - 0.3 * (position % 2) for position, value in enumerate(row.tolist())] for row in scored]
        batch = decode_batch(encode_batch(ids, masks, advantages, olds, options={"learningRate": 0.0, **options}))
        result = core.runner.grpo_step(batch, parse_step_options(batch.options))
        grads = torch.cat([p.grad.reshape(-1) for p in core.model.parameters() if p.grad is not None])
        return result["loss"], grads

    def test_micro_batch_size_changes_nothing_for_any_aggregation_or_anchor(self):
        for options in (
            {},
            {"aggregation": "sequence-mean"},
            {"proximal": "recompute", "offPolicyCap": 1.2},
            {"proximal": "recompute", "offPolicyMode": "mask", "dualClip": 3.0},
        ):
            with self.subTest(options=options):
                whole_loss, whole = self.gradient(10_000, options)
                split_loss, split = self.gradient(20, options)
                self.assertGreater(float(whole.abs().sum()), 0.0)
                self.assertTrue(torch.allclose(whole, split, atol=1e-6), options)
                self.assertAlmostEqual(whole_loss, split_loss, places=5)


if __name__ == "__main__":
    unittest.main()
