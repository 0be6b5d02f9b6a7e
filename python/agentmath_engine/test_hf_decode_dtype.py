"""The Hugging Face backend decoding in bf16 from a copy of its fp32 master weights: greedy tokens
equal `transformers`' own greedy `generate` in the same dtype, logprobs stay near fp32's, the
copy follows every weight change, and a Hugging Face model decodes on every core by default."""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import unittest

import torch

from agentmath_engine.app import WorkerOptions, build_worker
from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import make_models, transformers_greedy

PROMPTS = [[5, 7, 9, 11], [11, 12, 13, 14, 15, 16, 17, 18], [20, 3]]
# bf16 keeps 8 bits of mantissa: a logprob near -5 moves by a few hundredths.
LOGPROB_TOLERANCE = 0.1


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class DecodeDtypeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-hf-dtype-")
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def generate(self, engine, prompt, count):
        sequence = engine.submit(prompt, SamplingParams(max_new_tokens=count, temperature=0.0, ignore_eos=True), True, None)
        self.assertTrue(sequence.done.wait(120))
        return sequence.result["output_ids"], [entry[0] for entry in sequence.result["meta_info"]["output_token_logprobs"]]

    def test_bf16_greedy_equals_transformers_generate_in_bf16_and_logprobs_stay_near_fp32(self) -> None:
        backend = HuggingFaceBackend.create(self.model, 8, "cpu", decode_dtype=torch.bfloat16)
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        reference = copy.deepcopy(backend.model).to(torch.bfloat16).eval()
        exact = HuggingFaceBackend.create(self.model, 8, "cpu")
        exact_engine = Engine(exact, 8)
        self.addCleanup(exact_engine.shutdown)
        for prompt in PROMPTS:
            tokens, logprobs = self.generate(engine, prompt, 12)
            self.assertEqual(tokens, transformers_greedy(reference, prompt, 12))
            # fp32 logprobs of the same tokens, from the master weights.
            with torch.no_grad():
                ids = torch.tensor([prompt + tokens])
                logits = exact.model(input_ids=ids).logits[0].float()
                fp32 = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1].gather(-1, ids[0, len(prompt):, None])[:, 0]
            for mine, theirs in zip(logprobs, fp32.tolist()):
                self.assertAlmostEqual(mine, theirs, delta=LOGPROB_TOLERANCE)

    def test_the_bf16_copy_follows_a_weight_change(self) -> None:
        backend = HuggingFaceBackend.create(self.model, 8, "cpu", decode_dtype=torch.bfloat16)
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        before, _ = self.generate(engine, PROMPTS[1], 10)
        # What a weight update does: new tensors copied into the master weights.
        changed = {name: tensor + torch.randn_like(tensor) * 0.5 for name, tensor in backend.model.state_dict().items()}
        engine.exclusive(lambda: backend.load_tensors(changed, origin="test"))
        after, _ = self.generate(engine, PROMPTS[1], 10)
        expected = transformers_greedy(copy.deepcopy(backend.model).to(torch.bfloat16).eval(), PROMPTS[1], 10)
        self.assertEqual(after, expected)
        self.assertNotEqual(before, after)

    def test_a_hugging_face_model_decodes_on_every_core_and_the_byte_model_on_one(self) -> None:
        hf = build_worker(WorkerOptions(model=self.model, device="cpu"))
        self.assertEqual(hf.backend.decode_dtype, torch.float32)  # the trainer's logprobs unless asked
        self.addCleanup(hf.engine.shutdown)
        self.assertEqual(hf.engine.threads, os.cpu_count())
        byte = build_worker(WorkerOptions(model="tiny"))
        self.addCleanup(byte.engine.shutdown)
        self.assertEqual(byte.engine.threads, 1)

    def test_auto_decodes_in_bf16_only_on_a_cpu_with_native_bf16(self) -> None:
        from agentmath_engine import app

        for native, expected in ((True, torch.bfloat16), (False, torch.float32)):
            with self.subTest(native=native):
                original = app.native_bf16
                app.native_bf16 = lambda native=native: native
                try:
                    self.assertEqual(
                        app.resolve_decode_dtype(WorkerOptions(model=self.model, device="cpu", decode_dtype="auto")), expected
                    )
                finally:
                    app.native_bf16 = original
        with self.assertRaisesRegex(ValueError, "--decode-dtype 'half'"):
            app.resolve_decode_dtype(WorkerOptions(model=self.model, decode_dtype="half"))


if __name__ == "__main__":
    unittest.main()
