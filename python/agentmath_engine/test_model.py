"""Model tests: deterministic initialisation, KV-cache decoding equals full recomputation."""

import unittest

import torch

from agentmath_engine.config import PRESETS, ModelConfig
from agentmath_engine.model import DIGIT_MATCH_INIT, ByteGPT, SlotKVCache, digit_features, digit_match

CONFIG = PRESETS["test"]
DIGITS = ModelConfig(**{**CONFIG.__dict__, "token_shift": True, "digit_index": True, "number_index": True, "digit_match": True})


def reference_digit_features(text: bytes):
    """The digit positions spelled out byte by byte (the definition in docs/embedded-model.md)."""
    index, number, run, runs = [], [], 0, 0
    for byte in text:
        if 48 <= byte <= 57:
            run += 1
            runs += run == 1
            index.append(run)
            number.append(runs)
        else:
            run = 0
            runs = 0 if byte == 10 else runs
            index.append(0)
            number.append(runs + 1)
    return index, number


def features_of(text: bytes):
    ids = torch.tensor([list(text)])
    zero = torch.zeros(1, dtype=torch.long)
    index, number, _, _ = digit_features(ids, zero, zero)
    return index[0].tolist(), number[0].tolist()


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

    def test_digit_features_follow_their_definition(self):
        text = b"Add 2166 + 8821 + 3597\n<code>\nprint(2166 + 88)\n14584\nx = 7.\n\n12a3"
        self.assertEqual(features_of(text), reference_digit_features(text))
        index, number = features_of(b"ab 123 4\n56")
        self.assertEqual(index, [0, 0, 0, 1, 2, 3, 0, 1, 0, 1, 2])
        self.assertEqual(number, [1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1])

    def test_digit_features_continue_across_chunks(self):
        # Any split into a prefix and a continuation (prefill chunks, decode steps) gives the
        # features of the whole text.
        text = b"9 + 12\nprint(345 + 6789)\n0012 x 3\n"
        whole = features_of(text)
        for split in range(1, len(text)):
            zero = torch.zeros(1, dtype=torch.long)
            head = digit_features(torch.tensor([list(text[:split])]), zero, zero)
            tail = digit_features(torch.tensor([list(text[split:])]), head[2], head[3])
            self.assertEqual(head[0][0].tolist() + tail[0][0].tolist(), whole[0], split)
            self.assertEqual(head[1][0].tolist() + tail[1][0].tolist(), whole[1], split)

    def test_cached_decoding_matches_full_recompute_with_digit_positions(self):
        self._check_cached_decoding(DIGITS)

    def test_digit_positions_change_the_logits(self):
        model = ByteGPT(DIGITS).eval()
        with torch.no_grad():
            model.digit_index_embedding.weight.mul_(50)
            model.number_index_embedding.weight.mul_(50)
        # Same last two tokens: the digit "5" is the 2nd digit of the 1st number vs the 1st
        # digit of the 2nd.
        a = model(torch.tensor([list(b"x 45")]))[0, -1]
        b = model(torch.tensor([list(b"4 45")]))[0, -1]
        self.assertFalse(torch.allclose(a, b, atol=1e-3))
        self.assertIsNone(ByteGPT(CONFIG).digit_index_embedding)
        self.assertNotIn("number_index_embedding.weight", ByteGPT(CONFIG).state_dict())

    def test_cached_digit_positions_with_mid_batch_admission(self):
        # Slot 1 is prefilled while slot 0 decodes (slot 1 idle in that step), then both decode
        # over numbers and newlines; every step's logits must equal the full recomputation.
        model = ByteGPT(DIGITS).eval()
        with torch.no_grad():
            model.digit_index_embedding.weight.mul_(20)
            model.number_index_embedding.weight.mul_(20)
        texts = [list(b"Add 12 + 345\n<code>\nprint(12 + 345)\n357\nok"), list(b"x 98765\n54 3\n21")]
        cache = SlotKVCache(model.config, n_slots=3)
        model.prefill(cache, 0, torch.tensor(texts[0][:5]))
        positions = [5, 0]
        model.prefill(cache, 1, torch.tensor(texts[1][:6]))
        step = model.decode(cache, torch.tensor([texts[0][5], 0]), torch.tensor([5, 0]), active=torch.tensor([True, False]))
        full0 = model(torch.tensor([texts[0]]))[0]
        full1 = model(torch.tensor([texts[1]]))[0]
        self.assertTrue(torch.allclose(step[0], full0[5], atol=1e-4))
        positions = [6, 6]
        while positions[1] < len(texts[1]):
            tokens = torch.tensor([texts[0][positions[0]], texts[1][positions[1]]])
            step = model.decode(cache, tokens, torch.tensor(positions))
            self.assertTrue(torch.allclose(step[0], full0[positions[0]], atol=1e-4), positions)
            self.assertTrue(torch.allclose(step[1], full1[positions[1]], atol=1e-4), positions)
            positions = [positions[0] + 1, positions[1] + 1]

    def test_digit_match_marks_the_next_digit_of_the_same_number(self):
        ids = torch.tensor([list(b"7 123\n45 1")])
        zero = torch.zeros(1, dtype=torch.long)
        index, number, _, _ = digit_features(ids, zero, zero)
        match = digit_match(index, number, index, number)[0]
        # "4" (number 1, digit 1) matches only "5" (number 1, digit 2), a later position (the
        # causal mask hides it); "2" of "123" is digit 2 of number 2.
        self.assertEqual(match[6].nonzero().flatten().tolist(), [7])
        # The space after "45" (next number 2) matches first digits of number-2 runs: "1" at 2
        # and the "1" at 9 itself (causality is the attention mask's job).
        self.assertEqual(match[8].nonzero().flatten().tolist(), [2, 9])
        # "1" at 9 (number 2, digit 1) matches "2" at 3 (number 2, digit 2).
        self.assertEqual(match[9].nonzero().flatten().tolist(), [3])
        model = ByteGPT(DIGITS)
        self.assertEqual(model.blocks[0].digit_match.tolist(), [DIGIT_MATCH_INIT, 0.0, DIGIT_MATCH_INIT, 0.0])
        with self.assertRaisesRegex(ValueError, "digit_match needs"):
            ModelConfig(**{**CONFIG.__dict__, "digit_match": True})

    def test_rejects_sequences_longer_than_context(self):
        model = ByteGPT(CONFIG)
        with self.assertRaisesRegex(ValueError, "context length"):
            model(torch.zeros(1, CONFIG.context_length + 1, dtype=torch.long))

    def test_config_round_trips_through_json(self):
        self.assertEqual(ModelConfig.from_json(CONFIG.to_json()), CONFIG)
        shifted = ModelConfig(**{**CONFIG.__dict__, "token_shift": True})
        self.assertEqual(ModelConfig.from_json(shifted.to_json()), shifted)
        self.assertEqual(ModelConfig.from_json(DIGITS.to_json()), DIGITS)
        with self.assertRaisesRegex(ValueError, "hidden_size"):
            body = CONFIG.to_json()
            del body["hidden_size"]
            ModelConfig.from_json(body)


if __name__ == "__main__":
    unittest.main()
