"""Model tests: deterministic initialisation, KV-cache decoding equals full recomputation."""

import unittest

import torch

from agentmath_worker.config import PRESETS, ModelConfig
from agentmath_worker.model import ByteGPT, SlotKVCache

CONFIG = PRESETS["test"]


def greedy_full(model: ByteGPT, prompt, steps):
    ids = list(prompt)
    for _ in range(steps):
        logits = model(torch.tensor([ids]))[0, -1]
        ids.append(int(logits.argmax()))
    return ids[len(prompt):]


class ModelTest(unittest.TestCase):
    def test_initialisation_depends_only_on_seed(self):
        a, b = ByteGPT(CONFIG), ByteGPT(CONFIG)
        torch.manual_seed(1234)  # the global generator must not matter
        c = ByteGPT(CONFIG)
        other = ByteGPT(ModelConfig(**{**CONFIG.__dict__, "seed": 1}))
        for name, tensor in a.state_dict().items():
            self.assertTrue(torch.equal(tensor, b.state_dict()[name]), name)
            self.assertTrue(torch.equal(tensor, c.state_dict()[name]), name)
        self.assertFalse(torch.equal(a.embedding.weight, other.embedding.weight))

    def test_cached_decoding_matches_full_recompute(self):
        self._check_cached_decoding(CONFIG)

    def test_cached_decoding_matches_full_recompute_with_token_shift(self):
        self._check_cached_decoding(ModelConfig(**{**CONFIG.__dict__, "token_shift": True}))

    def test_token_shift_sees_the_previous_token(self):
        model = ByteGPT(ModelConfig(**{**CONFIG.__dict__, "token_shift": True})).eval()
        with torch.no_grad():
            model.previous_embedding.weight.mul_(50)
        # Same last token, different token before it: the last logits must differ.
        a = model(torch.tensor([[5, 6, 7, 9]]))[0, -1]
        b = model(torch.tensor([[5, 6, 8, 9]]))[0, -1]
        self.assertFalse(torch.allclose(a, b, atol=1e-3))
        plain = ByteGPT(CONFIG)
        self.assertIsNone(plain.previous_embedding)
        self.assertNotIn("previous_embedding.weight", plain.state_dict())

    def _check_cached_decoding(self, config):
        torch.manual_seed(0)
        model = ByteGPT(ModelConfig(**{**config.__dict__, "seed": 7})).eval()
        # Sharpen the random model so greedy choices are not near-ties.
        with torch.no_grad():
            model.embedding.weight.mul_(20)
        prompts = [[10, 20, 30], list(range(40, 57)), [200, 3, 3, 3, 9, 100, 101]]
        steps = 12
        expected = [greedy_full(model, prompt, steps) for prompt in prompts]
        cache = SlotKVCache(model.config, n_slots=4)
        last = [int(model.prefill(cache, slot, torch.tensor(p)).argmax()) for slot, p in enumerate(prompts)]
        outputs = [[token] for token in last]
        positions = torch.tensor([len(p) for p in prompts])
        for _ in range(steps - 1):
            logits = model.decode(cache, torch.tensor(last), positions)
            last = logits.argmax(-1).tolist()
            for row, token in enumerate(last):
                outputs[row].append(token)
            positions += 1
        self.assertEqual(outputs, expected)

    def test_cached_logits_close_to_full_logits(self):
        for config in (CONFIG, ModelConfig(**{**CONFIG.__dict__, "token_shift": True})):
            with self.subTest(token_shift=config.token_shift):
                self._check_cached_logits(config)

    def _check_cached_logits(self, config):
        model = ByteGPT(config).eval()
        ids = torch.randint(0, 256, (1, 30), generator=torch.Generator().manual_seed(3))
        full = model(ids)[0]
        cache = SlotKVCache(model.config, n_slots=2)
        prefill_last = model.prefill(cache, 1, ids[0, :20])
        self.assertTrue(torch.allclose(prefill_last, full[19], atol=1e-4))
        # A second prefill chunk continuing from position 20 (prefix reuse).
        chunk_last = model.prefill(cache, 1, ids[0, 20:25], start=20)
        self.assertTrue(torch.allclose(chunk_last, full[24], atol=1e-4))
        for position in range(25, 30):
            tokens = torch.tensor([0, int(ids[0, position])])
            positions = torch.tensor([0, position])
            step = model.decode(cache, tokens, positions)
            self.assertTrue(torch.allclose(step[1], full[position], atol=1e-4), position)

    def test_inactive_rows_leave_their_slot_cache_untouched(self):
        # A slot admitted (prefilled) in the same step as others decode sits idle in that
        # step's batch; its cached position 0 must survive the idle row's pad computation.
        model = ByteGPT(CONFIG)
        cache = SlotKVCache(model.config, n_slots=2)
        model.prefill(cache, 1, torch.tensor([5, 6, 7]))
        model.prefill(cache, 0, torch.tensor([8, 9]))
        before = [keys[1].clone() for keys in cache.keys]
        model.decode(cache, torch.tensor([3, 0]), torch.tensor([2, 0]), active=torch.tensor([True, False]))
        for layer, keys in enumerate(cache.keys):
            self.assertTrue(torch.equal(keys[1], before[layer]), layer)

    def test_rejects_sequences_longer_than_context(self):
        model = ByteGPT(CONFIG)
        with self.assertRaisesRegex(ValueError, "context length"):
            model(torch.zeros(1, CONFIG.context_length + 1, dtype=torch.long))

    def test_config_round_trips_through_json(self):
        self.assertEqual(ModelConfig.from_json(CONFIG.to_json()), CONFIG)
        shifted = ModelConfig(**{**CONFIG.__dict__, "token_shift": True})
        self.assertEqual(ModelConfig.from_json(shifted.to_json()), shifted)
        with self.assertRaisesRegex(ValueError, "hidden_size"):
            body = CONFIG.to_json()
            del body["hidden_size"]
            ModelConfig.from_json(body)


if __name__ == "__main__":
    unittest.main()
