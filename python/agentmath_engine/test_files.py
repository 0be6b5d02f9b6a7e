"""Model folder files: tokenizer.json describes the byte vocabulary exactly; a Hugging Face
folder without `transformers` installed fails with a clear message."""

import json
import os
import shutil
import tempfile
import unittest

from agentmath_engine import hf_backend
from agentmath_engine.app import WorkerOptions, build_backend
from agentmath_engine.sampling import sample_tokens, uniform_draws

import torch

from agentmath_models import byte_tokenizer as tokenizer_files


class TokenizerFilesTest(unittest.TestCase):
    def test_vocab_maps_every_byte_to_its_value_and_declares_the_special_tokens(self):
        body = tokenizer_files.tokenizer_json()
        vocab = body["model"]["vocab"]
        self.assertEqual(sorted(vocab.values()), list(range(256)))
        self.assertEqual(len(set(vocab)), 256)
        self.assertEqual(vocab["a"], ord("a"))
        self.assertEqual(vocab["Ġ"], ord(" "))  # GPT-2's byte alphabet
        added = {token["content"]: token["id"] for token in body["added_tokens"]}
        self.assertEqual(added, {"<|endoftext|>": 256, "<|pad|>": 257})

    def test_encode_decode_round_trip_and_special_tokens_skipped(self):
        text = "π ≈ 3.14 <think>"
        ids = tokenizer_files.encode(text)
        self.assertTrue(all(0 <= i < 256 for i in ids))
        self.assertEqual(tokenizer_files.decode(ids + [256, 257]), text)

    def test_written_config_has_chat_template_and_eos(self):
        folder = tempfile.mkdtemp()
        try:
            tokenizer_files.write_tokenizer_files(folder, 768)
            with open(os.path.join(folder, "tokenizer_config.json")) as handle:
                config = json.load(handle)
            self.assertEqual(config["eos_token"], "<|endoftext|>")
            self.assertIn("<|{{ message.role }}|>", config["chat_template"])
            self.assertEqual(config["model_max_length"], 768)
        finally:
            shutil.rmtree(folder)


class HuggingFaceGuardTest(unittest.TestCase):
    @unittest.skipIf(hf_backend.transformers_available(), "transformers is installed here")
    def test_hugging_face_folder_without_transformers_is_a_clear_error(self):
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "config.json"), "w") as handle:
                json.dump({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}, handle)
            tokenizer_files.write_tokenizer_files(folder, 768)
            with self.assertRaisesRegex(ImportError, "transformers"):
                build_backend(WorkerOptions(model=folder))
        finally:
            shutil.rmtree(folder)

    def test_hugging_face_folder_without_tokenizer_json_names_the_file(self):
        folder = tempfile.mkdtemp()
        try:
            with open(os.path.join(folder, "config.json"), "w") as handle:
                json.dump({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}, handle)
            with self.assertRaisesRegex(ValueError, "without tokenizer.json"):
                build_backend(WorkerOptions(model=folder))
        finally:
            shutil.rmtree(folder)

    def test_unknown_model_name_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, "not a byte-model shape"):
            build_backend(WorkerOptions(model="/no/such/folder"))


class SamplingTest(unittest.TestCase):
    def test_draws_depend_only_on_seed_and_counter(self):
        seeds = torch.tensor([1, 2, 1, 2**40 + 7])
        counters = torch.tensor([0, 0, 0, 5])
        draws = uniform_draws(seeds, counters)
        self.assertEqual(draws[0].item(), draws[2].item())
        self.assertNotEqual(draws[0].item(), draws[1].item())
        many = uniform_draws(torch.full((20000,), 42), torch.arange(20000))
        self.assertTrue(0.0 <= many.min().item() and many.max().item() < 1.0)
        self.assertAlmostEqual(many.mean().item(), 0.5, delta=0.02)

    def test_top_p_and_greedy(self):
        logits = torch.log(torch.tensor([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3]]))
        tokens, logprobs = sample_tokens(
            logits.repeat(200, 1), torch.tensor([1.0, 1.0, 0.0]).repeat(200), torch.tensor([0.5, 0.85, 1.0]).repeat(200),
            torch.arange(600), torch.zeros(600, dtype=torch.long),
        )
        tokens = tokens.view(200, 3)
        self.assertTrue(torch.all(tokens[:, 0] == 0))  # top_p 0.5 keeps only the 0.6 token
        self.assertEqual(set(tokens[:, 1].tolist()), {0, 1})  # 0.85 keeps two
        self.assertTrue(torch.all(tokens[:, 2] == 1))  # greedy
        self.assertTrue(torch.allclose(logprobs.view(200, 3)[:, 2], torch.log(torch.tensor(0.5))))

    def test_a_row_draws_the_same_token_whatever_else_is_in_the_batch(self):
        logits = torch.randn(1, 258, generator=torch.Generator().manual_seed(0))
        seed, counter = torch.tensor([77]), torch.tensor([3])
        alone, _ = sample_tokens(logits, torch.ones(1), torch.ones(1), seed, counter)
        batch_logits = torch.cat((logits, torch.randn(2, 258)))
        mixed, _ = sample_tokens(
            batch_logits, torch.tensor([1.0, 0.7, 0.0]), torch.tensor([1.0, 0.5, 1.0]),
            torch.tensor([77, 1, 2]), torch.tensor([3, 0, 0]),
        )
        self.assertEqual(int(mixed[0]), int(alone[0]))


if __name__ == "__main__":
    unittest.main()
