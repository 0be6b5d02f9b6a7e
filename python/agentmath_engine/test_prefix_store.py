"""The prefix cache: a prompt that begins like an earlier prompt or sequence prefills only the rest,
with the logits and greedy tokens of a full prefill; weights that change empty it."""

from __future__ import annotations

import shutil
import tempfile
import time
import unittest

import torch

from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import ARCHITECTURES, greedy_without_cache, make_models
from agentmath_engine.prefix_store import MIN_REUSED_TOKENS, PrefixStore

PROMPT = [(7 * index + 3) % 390 + 5 for index in range(40)]


def layers_of(length: int, value: float = 0.0):
    return [(torch.full((1, 2, length, 4), value), torch.full((1, 2, length, 4), -value)) for _ in range(3)]


class PrefixStoreTest(unittest.TestCase):
    def test_the_longest_shared_prefix_answers_and_leaves_the_last_prompt_token_to_run(self) -> None:
        store = PrefixStore(2**20)
        store.put(list(range(30)), layers_of(30, 1.0))
        store.put(list(range(20)) + [999] * 20, layers_of(40, 2.0))
        length, layers = store.longest(list(range(30)) + [5, 6])
        self.assertEqual(length, 30)
        self.assertEqual(layers[0][0].shape[2], 30)
        self.assertEqual(float(layers[0][0][0, 0, 0, 0]), 1.0)
        # The prompt itself, cached whole: all but its last token come from the cache.
        self.assertEqual(store.longest(list(range(30)))[0], 29)
        self.assertEqual(store.longest(list(range(20)) + [999] * 5)[0], 24)
        self.assertIsNone(store.longest([1000] + list(range(40))))
        self.assertIsNone(store.longest(list(range(MIN_REUSED_TOKENS - 1)) + [7, 7]))

    def test_a_sequence_that_extends_a_kept_one_replaces_it_and_the_budget_evicts_the_oldest(self) -> None:
        one = sum(t.numel() * t.element_size() for pair in layers_of(20) for t in pair)
        store = PrefixStore(5 * one // 2)
        store.put(list(range(20)), layers_of(20))
        store.put(list(range(20)) + [1] * 20, layers_of(40))
        self.assertEqual(len(store), 1)  # the shorter one is a prefix of the longer
        store.put(list(range(20)), layers_of(20))  # a prefix of a kept entry adds nothing
        self.assertEqual((len(store), store.bytes), (1, 2 * one))
        store.put([500 + t for t in range(20)], layers_of(20))
        self.assertEqual(len(store), 1)  # over budget: the oldest went
        self.assertEqual(store.longest([500 + t for t in range(20)] + [3])[0], 20)
        self.assertLessEqual(store.bytes, store.budget_bytes)

    def test_the_store_keeps_copies(self) -> None:
        store = PrefixStore(2**20)
        layers = layers_of(20, 1.0)
        store.put(list(range(20)), layers)
        layers[0][0].fill_(9.0)
        self.assertEqual(float(store.longest(list(range(21)))[1][0][0].max()), 1.0)


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class PrefixCacheBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-prefix-")
        cls.models = make_models(cls.folder)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def backend(self, arch: str, prefix_cache_mb: float = 64) -> HuggingFaceBackend:
        return HuggingFaceBackend.create(self.models[f"{arch}-1"], 8, "cpu", prefix_cache_mb=prefix_cache_mb)

    def test_a_prompt_that_extends_a_cached_one_prefills_the_rest_with_the_full_prefills_logits(self) -> None:
        longer = PROMPT + [11, 12, 13, 14, 15, 16]
        for arch in ARCHITECTURES:
            with self.subTest(arch=arch):
                backend, plain = self.backend(arch), self.backend(arch, 0)
                backend.prefill(0, PROMPT)
                backend.release(0)
                lengths = []
                decoder = backend._decoder()
                original = decoder.forward
                decoder.forward = lambda *a, **k: lengths.append(k["input_ids"].shape[1]) or original(*a, **k)
                logits = backend.prefill(1, longer)
                self.assertEqual(lengths, [len(longer) - len(PROMPT)])
                self.assertEqual(backend.cached_tokens[1], len(PROMPT))
                torch.testing.assert_close(logits, plain.prefill(1, longer), atol=1e-4, rtol=1e-4)
                # Decoding on from the reused cache gives the tokens of no cache at all.
                tokens = [int(logits.argmax())]
                positions = torch.zeros(2, dtype=torch.long)
                for step in range(6):
                    ids = torch.zeros(2, dtype=torch.long)
                    ids[1], positions[1] = tokens[-1], len(longer) + step
                    step_logits = backend.decode_step(ids, positions, torch.tensor([False, True]))
                    tokens.append(int(step_logits[1].argmax()))
                self.assertEqual(tokens, greedy_without_cache(backend.model, longer, 7))

    def test_equal_prompts_admitted_together_run_once_and_reuse_it(self) -> None:
        backend, plain = self.backend("llama"), self.backend("llama", 0)
        rows = []
        decoder = backend._decoder()
        original = decoder.forward
        decoder.forward = lambda *a, **k: rows.append(tuple(k["input_ids"].shape)) or original(*a, **k)
        other = [300 - token for token in PROMPT]
        logits = backend.prefill_batch([(0, PROMPT), (1, other), (2, PROMPT), (3, PROMPT)])
        # One pass for the two distinct prompts, then the repeats run their last token only.
        self.assertEqual(rows, [(2, len(PROMPT)), (1, 1), (1, 1)])
        self.assertEqual([backend.cached_tokens[slot] for slot in range(4)], [0, 0, len(PROMPT) - 1, len(PROMPT) - 1])
        expected = plain.prefill(0, PROMPT)
        for slot in (0, 2, 3):
            torch.testing.assert_close(logits[slot], expected, atol=1e-4, rtol=1e-4)

    def test_new_weights_empty_the_cache(self) -> None:
        backend = self.backend("qwen3")
        backend.prefill(0, PROMPT)
        self.assertEqual(len(backend.prefixes), 1)
        backend.load_weights(self.models["qwen3-1"])
        self.assertEqual(len(backend.prefixes), 0)
        backend.prefill(1, PROMPT + [9])
        self.assertEqual(backend.cached_tokens[1], 0)

    def test_a_flush_that_succeeds_empties_the_cache(self) -> None:
        backend = self.backend("llama")
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        sequence = engine.submit(PROMPT, SamplingParams(max_new_tokens=4, temperature=0.0, ignore_eos=True), False, None)
        self.assertTrue(sequence.done.wait(60))
        self.assertGreater(len(backend.prefixes), 0)
        # The step that finished the request may still be running: a flush is refused until it
        # ends (as SGLang's, which the weight sync retries), and a refused one clears nothing.
        while not engine.flush_cache():
            self.assertGreater(len(backend.prefixes), 0)
            time.sleep(0.01)
        self.assertEqual(len(backend.prefixes), 0)

    def test_the_next_turn_of_a_conversation_reuses_the_first_and_answers_as_without_a_cache(self) -> None:
        answers = {}
        for prefix_cache_mb in (64, 0):
            backend = self.backend("qwen3", prefix_cache_mb)
            engine = Engine(backend, 8)
            self.addCleanup(engine.shutdown)

            def generate(prompt, count):
                params = SamplingParams(max_new_tokens=count, temperature=0.0, ignore_eos=True)
                sequence = engine.submit(prompt, params, True, None)
                self.assertTrue(sequence.done.wait(60))
                return sequence.result

            first = generate(PROMPT, 12)
            # The next turn: the first turn's prompt and output, then an interpreter's output.
            second = generate(PROMPT + first["output_ids"] + [21, 22, 23, 24], 8)
            answers[prefix_cache_mb] = (first, second)
        (first, second), (plain_first, plain_second) = answers[64], answers[0]
        self.assertEqual(second["meta_info"]["cached_tokens"], len(PROMPT) + 12 - 1)
        self.assertEqual(plain_second["meta_info"]["cached_tokens"], 0)
        self.assertEqual(first["output_ids"], plain_first["output_ids"])
        self.assertEqual(second["output_ids"], plain_second["output_ids"])
        for cached, plain in zip(second["meta_info"]["output_token_logprobs"], plain_second["meta_info"]["output_token_logprobs"]):
            self.assertAlmostEqual(cached[0], plain[0], places=4)


if __name__ == "__main__":
    unittest.main()
