"""The Hugging Face backend's batched decode: one forward pass per step for every running
sequence over a packed KV cache, with the same greedy tokens as each sequence decoded alone."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

import torch

from agentmath_engine import decode_attention
from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import ARCHITECTURES, greedy_without_cache, make_models

PROMPTS = [[5, 7, 9], [11, 12, 13, 14, 15, 16, 17, 18], [20], [30, 31, 32, 33, 34]]


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class BatchedDecodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-hf-batch-")
        cls.models = make_models(cls.folder)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def backend(self, arch: str) -> HuggingFaceBackend:
        return HuggingFaceBackend.create(self.models[f"{arch}-1"], 8, "cpu")

    def run_schedule(self, backend: HuggingFaceBackend, schedule):
        """Greedy decoding driven by hand. `schedule`: (slot, prompt, join step, token count);
        sequences join, decode together and leave at different steps. Returns {slot: tokens}."""
        outputs = {slot: [] for slot, _, _, _ in schedule}
        tokens = torch.zeros(8, dtype=torch.long)
        positions = torch.zeros(8, dtype=torch.long)
        running = set()
        for step in range(40):
            for slot, prompt, join, count in schedule:
                if join == step:
                    first = int(backend.prefill(slot, prompt).argmax())
                    outputs[slot].append(first)
                    tokens[slot], positions[slot] = first, len(prompt)
                    running.add(slot)
            active = torch.zeros(8, dtype=torch.bool)
            decoding = [slot for slot in running if step > [s for s in schedule if s[0] == slot][0][2]]
            if decoding:
                active[decoding] = True
                logits = backend.decode_step(tokens, positions, active)
                for slot in decoding:
                    token = int(logits[slot].argmax())
                    outputs[slot].append(token)
                    tokens[slot], positions[slot] = token, positions[slot] + 1
            for slot, _, _, count in schedule:
                if slot in running and len(outputs[slot]) >= count:
                    running.discard(slot)
                    backend.release(slot)
        return outputs

    def test_sequences_joining_and_leaving_decode_as_each_would_alone(self) -> None:
        # Lengths differ, so rows are padded; leaving rows make the batch trim its padding.
        schedule = [(0, PROMPTS[0], 0, 12), (3, PROMPTS[1], 2, 6), (5, PROMPTS[2], 4, 14), (1, PROMPTS[3], 9, 8)]
        for arch in ARCHITECTURES:
            with self.subTest(arch=arch):
                backend = self.backend(arch)
                outputs = self.run_schedule(backend, schedule)
                for slot, prompt, _, count in schedule:
                    self.assertEqual(outputs[slot], greedy_without_cache(backend.model, prompt, count), f"slot {slot}")

    def test_prompts_prefilled_together_decode_as_each_would_alone(self) -> None:
        # Prompts of different lengths in one forward pass: left-padded, masked, own positions.
        for arch in ARCHITECTURES:
            with self.subTest(arch=arch):
                backend = self.backend(arch)
                forwards = []
                original = backend.model.forward
                backend.model.forward = lambda *a, **k: forwards.append(k["input_ids"].shape) or original(*a, **k)
                logits = backend.prefill_batch(list(enumerate(PROMPTS)))
                self.assertEqual(forwards, [(len(PROMPTS), max(len(prompt) for prompt in PROMPTS))])
                alone = self.backend(arch)
                for slot, prompt in enumerate(PROMPTS):
                    torch.testing.assert_close(logits[slot], alone.prefill(slot, prompt), atol=1e-4, rtol=1e-4)
                tokens = torch.tensor([int(row.argmax()) for row in logits])
                positions = torch.tensor([len(prompt) for prompt in PROMPTS])
                outputs = [[int(token)] for token in tokens]
                for _ in range(7):
                    step = backend.decode_step(tokens, positions, torch.ones(len(PROMPTS), dtype=torch.bool))
                    tokens, positions = step.argmax(-1), positions + 1
                    for slot, token in enumerate(tokens.tolist()):
                        outputs[slot].append(token)
                for slot, prompt in enumerate(PROMPTS):
                    self.assertEqual(outputs[slot], greedy_without_cache(backend.model, prompt, 8), f"slot {slot}")

    def test_rows_in_length_groups_attend_to_their_own_columns_and_decode_as_alone(self) -> None:
        # Every group costs nothing, so every length is its own group: the groups read column
        # slices of the cache, the padded ones with a mask.
        schedule = [(0, PROMPTS[0], 0, 12), (3, PROMPTS[1], 2, 6), (5, PROMPTS[2], 4, 14), (1, PROMPTS[3], 9, 8)]
        backend = self.backend("llama")
        groups = []
        original = backend._batch.plan

        def recording(device):
            plan = original(device)
            groups.append(len(plan.groups))
            return plan

        backend._batch.plan = recording
        with mock.patch.object(decode_attention, "GROUP_COST_CELLS", 0):
            outputs = self.run_schedule(backend, schedule)
        self.assertGreaterEqual(max(groups), 3)
        for slot, prompt, _, count in schedule:
            self.assertEqual(outputs[slot], greedy_without_cache(backend.model, prompt, count), f"slot {slot}")

    def test_a_sliding_window_model_decodes_its_sequences_one_by_one_correctly(self) -> None:
        folder = os.path.join(self.folder, "qwen3-sliding")
        shutil.copytree(self.models["qwen3-1"], folder)
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        config.update(use_sliding_window=True, sliding_window=4, max_window_layers=0,
                      layer_types=["sliding_attention", "full_attention"])
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        backend = HuggingFaceBackend.create(folder, 8, "cpu")
        backend.prefill(7, PROMPTS[0])
        self.assertEqual(set(backend._unpackable), {7})  # a sliding cache is not packed
        backend.release(7)
        schedule = [(0, PROMPTS[1], 0, 10), (2, PROMPTS[3], 1, 8)]
        outputs = self.run_schedule(backend, schedule)
        for slot, prompt, _, count in schedule:
            self.assertEqual(outputs[slot], greedy_without_cache(backend.model, prompt, count), f"slot {slot}")

    def test_one_forward_pass_per_step_whatever_the_batch(self) -> None:
        backend = self.backend("qwen3")
        calls = []
        original = backend.model.forward

        def counting(*arguments, **keywords):
            calls.append(keywords["input_ids"].shape[0])
            return original(*arguments, **keywords)

        backend.model.forward = counting
        schedule = [(slot, PROMPTS[slot], 0, 6) for slot in range(4)]
        self.run_schedule(backend, schedule)
        # 4 prefills, then 5 decode steps of 4 rows each (one pass per sequence per step before).
        self.assertEqual(calls, [1, 1, 1, 1, 4, 4, 4, 4, 4])

    def test_the_engine_answers_a_batch_as_it_answers_each_request_alone(self) -> None:
        backend = self.backend("qwen3")
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)

        def generate(prompts, count):
            params = [SamplingParams(max_new_tokens=count + i, temperature=0.0, ignore_eos=True) for i in range(len(prompts))]
            sequences = [engine.submit(p, params[i], True, None) for i, p in enumerate(prompts)]
            for sequence in sequences:
                sequence.done.wait(60)
            return [sequence.result for sequence in sequences]

        together = generate(PROMPTS, 10)
        for index, prompt in enumerate(PROMPTS):
            alone = generate([prompt], 10 + index)[0]
            self.assertEqual(together[index]["output_ids"], alone["output_ids"])
            self.assertEqual(alone["output_ids"], greedy_without_cache(backend.model, prompt, 10 + index))
            logprobs_together = [entry[0] for entry in together[index]["meta_info"]["output_token_logprobs"]]
            logprobs_alone = [entry[0] for entry in alone["meta_info"]["output_token_logprobs"]]
            for a, b in zip(logprobs_together, logprobs_alone):
                self.assertAlmostEqual(a, b, places=4)


if __name__ == "__main__":
    unittest.main()
