"""The byte model's slot-cache generation equals the architecture's full forward: prefill,
chunked prefill, batched decode, idle rows, and every option's state across steps."""

import unittest

import torch

from agentmath_engine.byte_slot_cache import SlotKVCache, decode, prefill
from agentmath_models.byte_gpt import ByteGptConfig, ByteGptForCausalLM, seeded_init

PLAIN = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, max_position_embeddings=256, intermediate_size=256)
DIGITS = dict(PLAIN, token_shift=True, digit_index=True, number_index=True, digit_match=True)


def model_of(seed=0, **shape) -> ByteGptForCausalLM:
    model = ByteGptForCausalLM(ByteGptConfig(**(shape or PLAIN)))
    seeded_init(model, seed)
    return model.eval()


def full_logits(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


def greedy_full(model, prompt, steps):
    ids = list(prompt)
    for _ in range(steps):
        ids.append(int(full_logits(model, ids)[-1].argmax()))
    return ids[len(prompt):]


class SlotCacheTest(unittest.TestCase):
    def check_cached_decoding(self, shape):
        model = model_of(7, **shape)
        # Sharpen the random model so greedy choices are not near-ties.
        with torch.no_grad():
            model.model.embed_tokens.weight.mul_(20)
        prompts = [[10, 20, 30], list(range(40, 57)), [200, 3, 3, 3, 9, 100, 101]]
        steps = 12
        expected = [greedy_full(model, prompt, steps) for prompt in prompts]
        cache = SlotKVCache(model.model, n_slots=4)
        head = model.lm_head
        last = [int(head(prefill(model.model, cache, slot, torch.tensor(p))).argmax()) for slot, p in enumerate(prompts)]
        outputs = [[token] for token in last]
        positions = torch.tensor([len(p) for p in prompts])
        for _ in range(steps - 1):
            last = head(decode(model.model, cache, torch.tensor(last), positions)).argmax(-1).tolist()
            for row, token in enumerate(last):
                outputs[row].append(token)
            positions += 1
        self.assertEqual(outputs, expected)

    def test_cached_decoding_matches_full_recompute(self):
        for name, shape in (("plain", PLAIN), ("token shift", dict(PLAIN, token_shift=True)), ("digits", DIGITS)):
            with self.subTest(name):
                self.check_cached_decoding(shape)

    def test_cached_logits_close_to_full_logits(self):
        for shape in (PLAIN, dict(PLAIN, token_shift=True)):
            model = model_of(0, **shape)
            ids = torch.randint(0, 256, (30,), generator=torch.Generator().manual_seed(3))
            full = full_logits(model, ids.tolist())
            cache = SlotKVCache(model.model, n_slots=2)
            head = model.lm_head
            self.assertTrue(torch.allclose(head(prefill(model.model, cache, 1, ids[:20])), full[19], atol=1e-4))
            # A second prefill chunk continuing from position 20 (prefix reuse).
            self.assertTrue(torch.allclose(head(prefill(model.model, cache, 1, ids[20:25], start=20)), full[24], atol=1e-4))
            for position in range(25, 30):
                step = head(decode(model.model, cache, torch.tensor([0, int(ids[position])]), torch.tensor([0, position])))
                self.assertTrue(torch.allclose(step[1], full[position], atol=1e-4), position)

    def test_inactive_rows_leave_their_slot_cache_untouched(self):
        # A slot admitted (prefilled) in the same step as others decode sits idle in that step's
        # batch; its cached position 0 must survive the idle row's pad computation.
        model = model_of(0)
        cache = SlotKVCache(model.model, n_slots=2)
        prefill(model.model, cache, 1, torch.tensor([5, 6, 7]))
        prefill(model.model, cache, 0, torch.tensor([8, 9]))
        before = [keys[1].clone() for keys in cache.keys]
        decode(model.model, cache, torch.tensor([3, 0]), torch.tensor([2, 0]), active=torch.tensor([True, False]))
        for layer, keys in enumerate(cache.keys):
            self.assertTrue(torch.equal(keys[1], before[layer]), layer)

    def test_cached_digit_positions_with_mid_batch_admission(self):
        # Slot 1 is prefilled while slot 0 decodes (slot 1 idle in that step), then both decode
        # over numbers and newlines; every step's logits must equal the full recomputation.
        model = model_of(0, **DIGITS)
        with torch.no_grad():
            model.model.digit_index_embedding.weight.mul_(20)
            model.model.number_index_embedding.weight.mul_(20)
        texts = [list(b"Add 12 + 345\n<code>\nprint(12 + 345)\n357\nok"), list(b"x 98765\n54 3\n21")]
        head, inner = model.lm_head, model.model
        cache = SlotKVCache(inner, n_slots=3)
        prefill(inner, cache, 0, torch.tensor(texts[0][:5]))
        prefill(inner, cache, 1, torch.tensor(texts[1][:6]))
        step = head(decode(inner, cache, torch.tensor([texts[0][5], 0]), torch.tensor([5, 0]), active=torch.tensor([True, False])))
        full0, full1 = full_logits(model, texts[0]), full_logits(model, texts[1])
        self.assertTrue(torch.allclose(step[0], full0[5], atol=1e-4))
        positions = [6, 6]
        while positions[1] < len(texts[1]):
            tokens = torch.tensor([texts[0][positions[0]], texts[1][positions[1]]])
            step = head(decode(inner, cache, tokens, torch.tensor(positions)))
            self.assertTrue(torch.allclose(step[0], full0[positions[0]], atol=1e-4), positions)
            self.assertTrue(torch.allclose(step[1], full1[positions[1]], atol=1e-4), positions)
            positions = [positions[0] + 1, positions[1] + 1]

    def test_rejects_prompts_longer_than_the_context(self):
        model = model_of(0)
        with self.assertRaisesRegex(ValueError, "context length"):
            prefill(model.model, SlotKVCache(model.model, 1), 0, torch.zeros(PLAIN["max_position_embeddings"] + 1, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
