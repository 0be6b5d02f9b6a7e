"""Generation on linear weights packed for oneDNN (`packed_linear.py`): the packed copy computes
what the master model computes (fp32 logits within float noise, greedy tokens equal to
`transformers`' own `generate`), leaves the master's parameters as they were (tied embeddings
included), follows a weight change, and the backend reports which kind it decodes with."""

from __future__ import annotations

import shutil
import tempfile
import unittest

import torch

from agentmath_engine.decode_copy import refresh_decode_copy
from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import make_models, transformers_greedy
from agentmath_engine.packed_linear import PackedLinear, packed_decode_copy, packed_linear_available

PROMPTS = [[5, 7, 9, 11], [11, 12, 13, 14, 15, 16, 17, 18], [20, 3]]


@unittest.skipUnless(transformers_available(), "transformers is not installed")
@unittest.skipUnless(packed_linear_available() is None, f"no packed linear here: {packed_linear_available()}")
class PackedLinearTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-packed-")
        # Llama with tied embeddings (the init's default) and Qwen3-MoE (experts' linears, router).
        cls.models = make_models(cls.folder, architectures=("llama", "qwen3-moe"))

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def load(self, name):
        import transformers

        return transformers.AutoModelForCausalLM.from_pretrained(self.models[name], dtype=torch.float32).eval()

    def test_the_packed_copy_computes_the_masters_logits_and_leaves_the_master_alone(self) -> None:
        for name in self.models:
            with self.subTest(model=name):
                master = self.load(name)
                before = {key: (value.data_ptr(), value.dtype, value.clone()) for key, value in master.named_parameters()}
                decoder = packed_decode_copy(master, torch.float32, 8)
                packed = [module for module in decoder.modules() if isinstance(module, PackedLinear)]
                self.assertGreater(len(packed), 0)
                self.assertFalse(any(type(module) is torch.nn.Linear for module in decoder.modules()))
                ids = torch.randint(0, master.config.vocab_size, (3, 11))
                with torch.no_grad():
                    self.assertLess((decoder(input_ids=ids).logits - master(input_ids=ids).logits).abs().max().item(), 1e-4)
                for key, value in master.named_parameters():
                    pointer, dtype, data = before[key]
                    self.assertEqual((value.data_ptr(), value.dtype), (pointer, dtype), key)
                    self.assertTrue(torch.equal(value, data), key)
                # bf16: the master stays fp32, tied embedding included.
                packed_decode_copy(master, torch.bfloat16, 8)
                self.assertTrue(all(value.dtype == torch.float32 for value in master.parameters()))

    def test_a_refresh_follows_the_master_weights(self) -> None:
        master = self.load("llama-1")
        decoder = packed_decode_copy(master, torch.float32, 8)
        ids = torch.randint(0, master.config.vocab_size, (2, 9))
        with torch.no_grad():
            old = decoder(input_ids=ids).logits
            for parameter in master.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.5)
            stale = decoder(input_ids=ids).logits
            refresh_decode_copy(decoder, master)
            fresh = decoder(input_ids=ids).logits
            expected = master(input_ids=ids).logits
        self.assertTrue(torch.equal(old, stale))  # packed weights are their own copy
        self.assertLess((fresh - expected).abs().max().item(), 1e-4)
        self.assertGreater((old - expected).abs().max().item(), 1e-2)

    def test_the_engine_decodes_packed_by_default_with_transformers_greedy_tokens(self) -> None:
        backend = HuggingFaceBackend.create(self.models["llama-1"], 8, "cpu")
        self.assertEqual(backend.describe()["decode_linear"], "packed")
        self.assertEqual(HuggingFaceBackend.create(self.models["llama-1"], 8, "cpu", decode_linear="plain").describe()["decode_linear"], "plain")
        with self.assertRaisesRegex(ValueError, "--decode-linear 'fast'"):
            HuggingFaceBackend.create(self.models["llama-1"], 8, "cpu", decode_linear="fast")
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        sequences = [engine.submit(prompt, SamplingParams(max_new_tokens=12, temperature=0.0, ignore_eos=True), False, None)
                     for prompt in PROMPTS]
        for prompt, sequence in zip(PROMPTS, sequences):
            self.assertTrue(sequence.done.wait(120))
            self.assertEqual(sequence.result["output_ids"], transformers_greedy(backend.model, prompt, 12))
        # A weight update changes the master weights; the next generation reads the new ones.
        changed = {name: tensor + torch.randn_like(tensor) * 0.5 for name, tensor in backend.model.state_dict().items()}
        engine.exclusive(lambda: backend.load_tensors(changed, origin="test"))
        sequence = engine.submit(PROMPTS[1], SamplingParams(max_new_tokens=10, temperature=0.0, ignore_eos=True), False, None)
        self.assertTrue(sequence.done.wait(120))
        self.assertEqual(sequence.result["output_ids"], transformers_greedy(backend.model, PROMPTS[1], 10))


if __name__ == "__main__":
    unittest.main()
