"""Training tests: SFT lowers its loss; a GRPO step moves the policy the way the advantages
say; masked (interpreter) tokens get no gradient; the objective's options (decoupled proximal
policy with a truncated or masked off-policy weight, dual clip, k1/k3, token- or sequence-mean)
give hand-computed values, and no result depends on the micro-batch size."""

import math
import os
import tempfile
import unittest

import torch

from agentmath_engine.byte_backend import ByteBackend
from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.losses import grpo_loss_sum, token_logprobs
from agentmath_engine.server import Worker
from agentmath_engine.tokenizer_files import encode
from agentmath_engine.trainer import GrpoOptions, OptimizerSettings, Trainer, TrainSequence


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

    def test_masked_mode_also_drops_tokens_below_the_floor(self):
        # MIS (verl's rejection between a lower and an upper threshold): w = e^-0.2 ≈ 0.82 < 0.9.
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

    def test_defect_7_k1_offered_as_a_kl_loss(self):
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


def _sampled(backend, prompt_text, temperature, seed=5, tokens=24):
    """A sequence the engine sampled at `temperature`, with its behaviour logprobs."""
    engine = Engine(backend, max_running=2)
    try:
        prompt = encode(prompt_text)
        params = SamplingParams(max_new_tokens=tokens, temperature=temperature, top_p=1.0, seed=seed, ignore_eos=True)
        sequence = engine.submit(prompt, params, True, None)
        assert sequence.done.wait(60)
        output = sequence.result["output_ids"]
        logprobs = [entry[0] for entry in sequence.result["meta_info"]["output_token_logprobs"]]
    finally:
        engine.shutdown()
    return prompt + output, [0] * len(prompt) + [1] * len(output), [0.0] * len(prompt) + logprobs


class IssueTwentyFourTest(unittest.TestCase):
    def test_defect_2_logprobs_ignore_the_sampling_temperature(self):
        backend, trainer = make_trainer(learning_rate=0.0)
        ids, mask, old = _sampled(backend, "<|user|>\n2+3\n<|assistant|>\n", temperature=0.6)
        sequence = TrainSequence(ids, mask, advantage=1.0, old_logprobs=old)
        stats = trainer.grpo_step([sequence], 0.2, 0.28, 0.0, options=GrpoOptions(temperature=0.6))
        # On-policy at T = 0.6: ratio 1 up to numerical noise, nothing clipped.
        self.assertAlmostEqual(stats["mean_ratio"], 1.0, places=4)
        self.assertLess(abs(stats["approx_kl_old"]), 1e-6)
        self.assertEqual(stats["clip_fraction"], 0.0)
        # The same step at T = 1 (today's trainer) is far from on-policy.
        untempered = trainer.grpo_step([sequence], 0.2, 0.28, 0.0, options=GrpoOptions())
        self.assertGreater(untempered["approx_kl_old"], 1e-3)

    def test_defect_3_the_kl_reference_is_not_the_initial_policy_after_a_resume(self):
        with tempfile.TemporaryDirectory() as temp:
            initial, later = os.path.join(temp, "init"), os.path.join(temp, "step-3")
            backend, trainer = make_trainer()
            backend.save(initial)
            ids = list(b"<|user|>\nabc\n<|assistant|>\nxyz")
            mask = [0] * (len(ids) - 3) + [1, 1, 1]
            for _ in range(3):
                old = trainer.score([ids])[0]
                trainer.grpo_step([TrainSequence(ids, mask, 1.0, old)], 0.2, 0.2, 0.0)
            backend.save(later)
            # A resumed worker: a fresh trainer on the step-3 weights, the reference named by path.
            resumed_backend = ByteBackend.create(later, n_slots=2)
            resumed = Trainer(resumed_backend, OptimizerSettings(learning_rate=0.0))
            old = resumed.score([ids])[0]
            options = GrpoOptions(reference_path=initial)
            stats = resumed.grpo_step([TrainSequence(ids, mask, 1.0, old)], 0.2, 0.2, 0.1, options=options)
            initial_logprobs = Trainer(ByteBackend.create(initial, n_slots=2), OptimizerSettings()).score([ids])[0]
            expected = sum(
                math.exp(r - p) - (r - p) - 1.0 for r, p, m in zip(initial_logprobs, old, mask) if m
            ) / sum(mask)
            self.assertGreater(stats["kl_ref"], 1e-4)
            self.assertAlmostEqual(stats["kl_ref"], expected, places=5)

    def test_defect_6_one_optimizer_step_per_rollout_batch(self):
        backend, trainer = make_trainer(learning_rate=3e-3)
        sequences = []
        for index, text in enumerate(("2+3", "4+4", "1+6", "7+1")):
            ids = list(f"<|user|>\n{text}\n<|assistant|>\n".encode()) + list(b"answer")
            old = trainer.score([ids])[0]
            sequences.append(TrainSequence(ids, [0] * (len(ids) - 6) + [1] * 6, 1.0 if index % 2 else -1.0, old))
        before = trainer.optimizer_steps
        stats = trainer.grpo_step(
            sequences, 0.2, 0.28, 0.0, options=GrpoOptions(proximal="recompute", mini_batches=2, epochs=2)
        )
        self.assertEqual(trainer.optimizer_steps - before, 4)
        self.assertEqual(stats["updates"], 4)
        self.assertEqual(stats["tokens"], 24)
        # Updates after the first see moved weights: the ratio to π_prox leaves 1.
        self.assertGreater(stats["approx_kl_old"], 0.0)
        one = make_trainer(learning_rate=3e-3)[1].grpo_step(sequences, 0.2, 0.28, 0.0, options=GrpoOptions(proximal="recompute"))
        self.assertEqual(one["updates"], 1)
        self.assertEqual(one["approx_kl_old"], 0.0)

    def test_defect_8_the_policy_version_increments_when_a_step_is_skipped(self):
        backend, trainer = make_trainer()
        engine = Engine(backend, max_running=2)
        try:
            worker = Worker(backend, trainer, engine, backend.vocab_size)
            ids = list(b"<|user|>\n2+3\n<|assistant|>\n5")
            mask = [0] * (len(ids) - 1) + [1]
            old = trainer.score([ids])[0]
            before = worker.policy_version
            # An advantage beyond float32: the loss and gradient are not finite, the update is skipped.
            body = {"sequences": [{"input_ids": ids, "loss_mask": mask, "advantage": 1e39, "old_logprobs": old}]}
            stats = worker.train("grpo", body)
            self.assertTrue(stats["skipped"])
            self.assertEqual(stats["policy_version"], before)
            body["sequences"][0]["advantage"] = 1.0
            self.assertEqual(worker.train("grpo", body)["policy_version"], before + 1)
        finally:
            engine.shutdown()

    @unittest.skipUnless(transformers_available(), "needs transformers")
    def test_defect_11_bf16_weights_updated_by_adamw_without_fp32_master_weights(self):
        import transformers

        with tempfile.TemporaryDirectory() as temp:
            config = transformers.GPT2Config(
                n_layer=1, n_head=2, n_embd=32, vocab_size=300, n_positions=64, bos_token_id=0, eos_token_id=0
            )
            transformers.GPT2LMHeadModel(config).to(torch.bfloat16).save_pretrained(temp)
            # A bf16 checkpoint, as a GPU run loads it; the forward passes then run under bf16 autocast.
            checkpoint = transformers.AutoModelForCausalLM.from_pretrained(temp, torch_dtype=torch.bfloat16)
            backend = HuggingFaceBackend(checkpoint, None, temp, 2, torch.device("cpu"))
            backend.compute_dtype = torch.bfloat16
            self.assertTrue(all(p.dtype == torch.float32 for p in backend.model.parameters()))
            trainer = Trainer(backend, OptimizerSettings(learning_rate=1e-6, weight_decay=0.0))
            before = {name: p.detach().clone() for name, p in backend.model.named_parameters()}
            ids = list(range(10, 30))
            sequence = TrainSequence(ids, [0] * 10 + [1] * 10)
            for _ in range(3):
                trainer.sft_step([sequence])
            moved = sum(int((p.detach() != before[name]).sum()) for name, p in backend.model.named_parameters())
            total = sum(p.numel() for p in backend.model.parameters())
            self.assertGreater(moved / total, 0.5)


if __name__ == "__main__":
    unittest.main()
