"""Training tests: SFT lowers its loss; a GRPO step moves the policy the way the advantages
say; masked (interpreter) tokens get no gradient; the objective's options (decoupled proximal
policy with a truncated or masked off-policy weight, dual clip, k1/k3, token- or sequence-mean)
give hand-computed values, and no result depends on the micro-batch size."""

import unittest

import torch

from agentmath_worker.byte_backend import ByteBackend
from agentmath_worker.losses import grpo_loss_sum, token_logprobs
from agentmath_worker.trainer import GrpoOptions, OptimizerSettings, Trainer, TrainSequence


def make_trainer(learning_rate=3e-3):
    backend = ByteBackend.create("test", n_slots=2)
    return backend, Trainer(backend, OptimizerSettings(learning_rate=learning_rate), micro_batch_tokens=64)


class SftTest(unittest.TestCase):
    def test_loss_decreases_on_a_tiny_batch(self):
        _, trainer = make_trainer()
        texts = [b"<|user|>\n2+3\n<|assistant|>\n5", b"<|user|>\n4+4\n<|assistant|>\n8", b"<|user|>\n1+6\n<|assistant|>\n7"]
        sequences = []
        for text in texts:
            ids = list(text) + [256]
            prompt = text.index(b"<|assistant|>\n") + len(b"<|assistant|>\n")
            sequences.append(TrainSequence(ids, [0] * prompt + [1] * (len(ids) - prompt)))
        losses = [trainer.sft_step(sequences)["loss"] for _ in range(30)]
        self.assertLess(losses[-1], 0.5 * losses[0])
        self.assertEqual(trainer.optimizer_steps, 30)

    def test_micro_batches_give_the_same_gradient_as_one_batch(self):
        sequences = [TrainSequence(list(range(5, 5 + n)), [0, 0] + [1] * (n - 2)) for n in (6, 9, 13, 20)]
        grads = []
        for budget in (10_000, 20):
            backend, trainer = make_trainer()
            trainer.micro_batch_tokens = budget
            trainer.settings.learning_rate = 0.0
            captured = {}
            original = backend.model.embedding.weight.register_hook(lambda g: captured.setdefault("g", []).append(g.clone()))
            trainer.sft_step(sequences)
            original.remove()
            grads.append(sum(captured["g"]))
        self.assertTrue(torch.allclose(grads[0], grads[1], atol=1e-6))


class GrpoTest(unittest.TestCase):
    def test_step_raises_positive_and_lowers_negative_advantage_tokens(self):
        for seed in (0, 1, 2):
            backend = ByteBackend.create("test", n_slots=2, seed=seed)
            trainer = Trainer(backend, OptimizerSettings(learning_rate=3e-3))
            prompt = list(b"Q: 6*7=")
            # Disjoint responses: the step's effect on each is then first-order in its own advantage.
            good, bad = prompt + list(b"42"), prompt + list(b"ok")
            mask = [0] * len(prompt) + [1, 1]
            old = trainer.score([good, bad])
            batch = [
                TrainSequence(good, mask, advantage=1.0, old_logprobs=old[0]),
                TrainSequence(bad, mask, advantage=-1.0, old_logprobs=old[1]),
            ]
            stats = trainer.grpo_step(batch, clip_low=0.2, clip_high=0.2, kl_coef=0.0)
            self.assertAlmostEqual(stats["mean_ratio"], 1.0, places=5)  # on-policy: π_θ = π_old
            new = trainer.score([good, bad])
            for position in range(len(prompt), len(good)):
                self.assertGreater(new[0][position], old[0][position], (seed, position))
                self.assertLess(new[1][position], old[1][position], (seed, position))

    def test_kl_to_reference_is_reported_and_zero_at_start(self):
        _, trainer = make_trainer()
        ids = list(b"abcdefgh")
        old = trainer.score([ids])[0]
        stats = trainer.grpo_step([TrainSequence(ids, [0, 0] + [1] * 6, 1.0, old)], 0.2, 0.2, kl_coef=0.1)
        self.assertAlmostEqual(stats["kl_ref"], 0.0, places=6)
        stats = trainer.grpo_step([TrainSequence(ids, [0, 0] + [1] * 6, 1.0, old)], 0.2, 0.2, kl_coef=0.1)
        self.assertGreater(stats["kl_ref"], 0.0)

    def test_masked_tokens_get_no_gradient(self):
        torch.manual_seed(0)
        logprobs = (-torch.rand(2, 6)).requires_grad_(True)
        old = logprobs.detach() + 0.05 * torch.randn(2, 6)
        mask = torch.tensor([[0, 1, 1, 0, 0, 1], [0, 0, 1, 1, 1, 0]], dtype=torch.float32)
        advantages = torch.tensor([1.0, -0.5])
        ref = logprobs.detach() - 0.1
        grpo_loss_sum(logprobs, old, advantages, mask, 0.2, 0.28, kl_coef=0.05, ref_logprobs=ref)["loss"].backward()
        self.assertTrue(torch.all(logprobs.grad[mask == 0] == 0))
        self.assertTrue(torch.all(logprobs.grad[mask == 1] != 0))
        # Garbage in masked positions (e.g. tool tokens' logprob 0, or huge values) changes nothing.
        garbage_old = torch.where(mask > 0, old, torch.full_like(old, 500.0))
        garbage_ref = torch.where(mask > 0, ref, torch.full_like(ref, -500.0))
        second = logprobs.detach().clone().requires_grad_(True)
        grpo_loss_sum(second, garbage_old, advantages, mask, 0.2, 0.28, 0.05, garbage_ref)["loss"].backward()
        self.assertTrue(torch.equal(second.grad, logprobs.grad))

    def test_masked_targets_give_zero_gradient_to_the_logits_predicting_them(self):
        ids = list(b"x<interpreter>\n56088\n</interpreter>\ny")
        first_tool = ids.index(ord("5"))
        tool = range(first_tool, first_tool + 6)  # "56088\n": interpreter output, loss mask 0
        mask = torch.ones(1, len(ids))
        mask[0, 0] = 0
        mask[0, list(tool)] = 0
        logits = torch.randn(1, len(ids), 258, generator=torch.Generator().manual_seed(1)).requires_grad_(True)
        logprobs = token_logprobs(logits, torch.tensor([ids]))
        old = logprobs.detach() - 0.01
        grpo_loss_sum(logprobs, old, torch.tensor([1.0]), mask, 0.2, 0.2)["loss"].backward()
        for position in tool:  # logits at t-1 predict token t
            self.assertTrue(torch.all(logits.grad[0, position - 1] == 0), position)
        self.assertTrue(torch.any(logits.grad[0, first_tool - 2] != 0))


def _grpo_gradient(options, budget, sequences):
    backend, trainer = make_trainer()
    trainer.micro_batch_tokens = budget
    trainer.settings.learning_rate = 0.0
    captured = []
    hook = backend.model.embedding.weight.register_hook(lambda g: captured.append(g.clone()))
    stats = trainer.grpo_step(sequences, 0.2, 0.28, 0.0, options=options)
    hook.remove()
    return sum(captured), stats


class GrpoObjectiveOptionsTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.logprobs = (-torch.rand(2, 5) - 0.1).requires_grad_(True)
        self.mask = torch.tensor([[0, 1, 1, 1, 0], [0, 1, 1, 0, 0]], dtype=torch.float32)
        self.advantages = torch.tensor([1.0, -1.0])

    def test_micro_batch_size_changes_nothing_for_any_aggregation_or_anchor(self):
        backend, trainer = make_trainer()
        lengths = (6, 9, 13, 20)
        raw = [list(range(5, 5 + n)) for n in lengths]
        scored = trainer.score(raw)
        sequences = [
            TrainSequence(ids, [0, 0] + [1] * (len(ids) - 2), advantage, [v - 0.3 * (i % 2) for i, v in enumerate(old)])
            for ids, old, advantage in zip(raw, scored, (1.0, -0.5, 0.7, -1.2))
        ]
        for options in (
            GrpoOptions(),
            GrpoOptions(aggregation="sequence-mean"),
            GrpoOptions(proximal="recompute", off_policy_cap=1.2),
            GrpoOptions(proximal="recompute", off_policy_mode="mask", dual_clip=3.0),
        ):
            whole, stats_whole = _grpo_gradient(options, 10_000, sequences)
            split, stats_split = _grpo_gradient(options, 20, sequences)
            self.assertTrue(torch.allclose(whole, split, atol=1e-6), options)
            self.assertAlmostEqual(stats_whole["loss"], stats_split["loss"], places=5)

    def test_decoupled_weight_is_applied_once_and_truncated_at_the_cap(self):
        behaviour = self.logprobs.detach() - torch.tensor([[0, 0.1, 1.0, -0.2, 0], [0, 0.5, 0.05, 0, 0]])
        proximal = self.logprobs.detach()
        weight = torch.clamp(torch.exp(proximal - behaviour), max=1.5) * self.mask
        parts = grpo_loss_sum(
            self.logprobs, behaviour, self.advantages, self.mask, 0.2, 0.28, proximal_logprobs=proximal, off_policy_cap=1.5
        )
        # r = π_θ / π_prox = 1: the objective is Σ w·Â, the weight counted once.
        expected = -(weight * self.advantages[:, None]).sum()
        self.assertAlmostEqual(parts["loss"].item(), expected.item(), places=5)
        parts["loss"].backward()
        self.assertTrue(torch.allclose(self.logprobs.grad, -weight * self.advantages[:, None], atol=1e-6))
        self.assertEqual(parts["off_policy_capped_sum"].item(), 2.0)  # e^1.0 and e^0.5 exceed 1.5

    def test_masked_mode_drops_tokens_above_the_cap(self):
        behaviour = self.logprobs.detach() - torch.tensor([[0, 0.1, 1.0, -0.2, 0], [0, 0.5, 0.05, 0, 0]])
        parts = grpo_loss_sum(
            self.logprobs,
            behaviour,
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

    def test_dual_clip_bounds_a_negative_advantage_term(self):
        old = self.logprobs.detach() - 2.0  # ratio e² ≈ 7.4 everywhere
        plain = grpo_loss_sum(self.logprobs, old, self.advantages, self.mask, 0.2, 0.28)
        dual = grpo_loss_sum(self.logprobs, old, self.advantages, self.mask, 0.2, 0.28, dual_clip=3.0)
        ratio = torch.exp(torch.tensor(2.0)).item()
        # Positive advantage: clipped at 1.28 either way (3 tokens); negative: −ratio vs −3 (2 tokens).
        self.assertAlmostEqual(plain["loss"].item(), -(3 * 1.28 - 2 * ratio), places=4)
        self.assertAlmostEqual(dual["loss"].item(), -(3 * 1.28 - 2 * 3.0), places=4)
        self.assertEqual(dual["dual_clipped_sum"].item(), 2.0)

    def test_k1_and_k3_estimators(self):
        ref = self.logprobs.detach() - 0.3
        old = self.logprobs.detach()
        zero_advantage = torch.zeros(2)
        k1 = grpo_loss_sum(self.logprobs, old, zero_advantage, self.mask, 0.2, 0.2, 1.0, ref, kl_estimator="k1")
        k3 = grpo_loss_sum(self.logprobs, old, zero_advantage, self.mask, 0.2, 0.2, 1.0, ref)
        tokens = self.mask.sum().item()
        self.assertAlmostEqual(k1["kl_sum"].item(), 0.3 * tokens, places=5)
        self.assertAlmostEqual(k3["kl_sum"].item(), (torch.exp(torch.tensor(-0.3)).item() + 0.3 - 1) * tokens, places=5)

    def test_sequence_mean_weighs_each_sequence_equally(self):
        old = self.logprobs.detach()
        weight = self.mask / self.mask.sum(dim=1, keepdim=True)
        parts = grpo_loss_sum(self.logprobs, old, torch.tensor([1.0, 1.0]), self.mask, 0.2, 0.2, token_weight=weight)
        parts["loss"].backward()
        # 3 tokens vs 2 tokens: each token's gradient is −1/3 and −1/2; each sequence sums to −1.
        self.assertAlmostEqual(self.logprobs.grad[0].sum().item(), -1.0, places=5)
        self.assertAlmostEqual(self.logprobs.grad[1].sum().item(), -1.0, places=5)


if __name__ == "__main__":
    unittest.main()
