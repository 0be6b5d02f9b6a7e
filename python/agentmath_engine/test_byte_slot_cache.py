"""The byte model's slot-cache generation equals the architecture's full forward: prefill,
chunked prefill, batched decode, idle rows, and every option's state across steps."""

import unittest

import torch

from agentmath_engine.byte_slot_cache import SlotKVCache, decode, prefill, sorted_cost
from agentmath_engine.decode_attention import plan_rows
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

    def test_rows_re_sorted_and_reused_mid_generation_decode_as_alone(self):
        # Four sequences of different lengths; one finishes and its slot takes a new prompt (idle
        # in the step that prefills it); the cache re-sorts its rows mid-generation, which moves
        # every sequence to another row. Every sequence's greedy tokens must be those it gets
        # decoded alone.
        model = model_of(7, **DIGITS)
        with torch.no_grad():
            model.model.embed_tokens.weight.mul_(20)
        head, inner = model.lm_head, model.model
        prompts = {0: list(b"7 + 8"), 1: list(b"Find 12 345 * 6\n<code>"), 2: list(b"x"), 3: list(b"print(98 765 + 4 321)\n")}
        late = list(b"gcd(12, 18) = ")
        steps = 14
        cache = SlotKVCache(inner, n_slots=4)
        outputs = {slot: [int(head(prefill(inner, cache, slot, torch.tensor(p))).argmax())] for slot, p in prompts.items()}
        positions = {slot: len(p) for slot, p in prompts.items()}
        finished = {}
        for step in range(steps):
            active = torch.tensor([True] * 4)
            if step == 4:  # slot 1 finishes; a new sequence is admitted into it
                finished[1] = outputs.pop(1)
                cache.release(1)
                outputs[1] = [int(head(prefill(inner, cache, 1, torch.tensor(late))).argmax())]
                positions[1] = len(late)
                active[1] = False
            if step == 9:
                cache.sort_rows()
            tokens = torch.tensor([outputs[slot][-1] for slot in range(4)])
            logits = head(decode(inner, cache, tokens, torch.tensor([positions[slot] for slot in range(4)]), active=active))
            for slot in range(4):
                if active[slot]:
                    outputs[slot].append(int(logits[slot].argmax()))
                    positions[slot] += 1
        self.assertEqual(cache.resorts, 1)
        self.assertNotEqual(cache.row_of.tolist(), [0, 1, 2, 3])
        # The last step's logits are the full forward's (greedy tokens of this sharpened model
        # barely depend on attention; logits do).
        for slot, prompt in ((0, prompts[0]), (1, late), (2, prompts[2]), (3, prompts[3])):
            full = full_logits(model, prompt + outputs[slot][:-1])[-1]
            self.assertTrue(torch.allclose(logits[slot], full, atol=1e-4), slot)
        self.assertEqual(finished[1], greedy_full(model, prompts[1], len(finished[1])))
        for slot in (0, 2, 3):
            self.assertEqual(outputs[slot], greedy_full(model, prompts[slot], len(outputs[slot])), slot)
        self.assertEqual(outputs[1], greedy_full(model, late, len(outputs[1])))

    def test_sort_rows_puts_occupied_rows_first_longest_first(self):
        model = model_of(0)
        cache = SlotKVCache(model.model, n_slots=4)
        for slot, length in ((0, 3), (1, 9), (3, 5)):
            prefill(model.model, cache, slot, torch.arange(length))
        cache.sort_rows()
        self.assertEqual([cache.row(slot) for slot in (1, 3, 0)], [0, 1, 2])
        self.assertEqual(cache.lengths, [9, 5, 3, 0])
        self.assertEqual(sorted(cache.row_of.tolist()), [0, 1, 2, 3])

    def test_rows_re_sort_once_their_order_has_cost_what_a_re_sort_does(self):
        # Long and short sequences alternate in the rows: one group must read all of them up to
        # the longest, where sorted rows make two groups. After a few steps of that excess the
        # cache re-sorts (once: then the order is the sorted one), and decoding goes on unchanged.
        model = model_of(3, **dict(PLAIN, max_position_embeddings=512))
        inner, head = model.model, model.lm_head
        cache = SlotKVCache(inner, n_slots=8)
        lengths = [400, 5, 390, 6, 380, 7, 370, 8]
        generator = torch.Generator().manual_seed(1)
        prompts = [torch.randint(0, 256, (length,), generator=generator) for length in lengths]
        history = [prompt.tolist() for prompt in prompts]
        last = [int(head(prefill(inner, cache, slot, prompt)).argmax()) for slot, prompt in enumerate(prompts)]
        positions = torch.tensor(lengths)
        for _ in range(12):
            for slot, token in enumerate(last):
                history[slot].append(token)
            logits = head(decode(inner, cache, torch.tensor(last), positions))
            last = logits.argmax(-1).tolist()
            positions += 1
        self.assertEqual(cache.resorts, 1)
        self.assertEqual([cache.row(slot) for slot in (0, 2, 4, 6, 7, 5, 3, 1)], list(range(8)))
        # The last step's logits are the full forward's at each sequence's last position.
        for slot in range(8):
            self.assertTrue(torch.allclose(logits[slot], full_logits(model, history[slot])[-1], atol=1e-4), slot)

    def test_attention_groups_read_each_group_up_to_its_longest_row(self):
        lengths = [700, 690, 400, 390, 60, 50, 40, 30]
        groups, cost = plan_rows(list(range(8)), lengths, group_cost=256)
        self.assertEqual(groups, [(0, 2), (2, 4), (4, 8)])
        self.assertEqual(cost, 2 * 700 + 2 * 400 + 4 * 60 + 3 * 256)  # one group would read 8 × 700
        self.assertEqual(cost, sorted_cost(lengths, group_cost=256))
        # A group is consecutive rows: a gap between rows 1 and 5 splits them, whatever it costs.
        groups, _ = plan_rows([0, 1, 5, 6], [100, 100, 100, 100], group_cost=256)
        self.assertEqual(groups, [(0, 2), (2, 4)])
        # Unsorted rows cost more than the sorted order, which is what a re-sort buys.
        _, unsorted = plan_rows(list(range(8)), [700, 30, 690, 40, 400, 50, 390, 60], group_cost=256)
        self.assertGreater(unsorted, sorted_cost(lengths, group_cost=256) + 256)

    def test_rejects_prompts_longer_than_the_context(self):
        model = model_of(0)
        with self.assertRaisesRegex(ValueError, "context length"):
            prefill(model.model, SlotKVCache(model.model, 1), 0, torch.zeros(PLAIN["max_position_embeddings"] + 1, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
