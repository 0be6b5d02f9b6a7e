"""The Hugging Face backend decoding in bf16 from a copy of its fp32 master weights: greedy tokens
equal `transformers`' own greedy `generate` in the same dtype, logprobs stay near fp32's, the
copy follows every weight change, a Hugging Face model decodes on every core by default, and
`auto` picks the dtype the timing of the model's layers says is faster."""

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

    def test_auto_is_timed_by_the_backend_on_a_cpu_and_fp32_on_a_gpu(self) -> None:
        from agentmath_engine import app

        self.assertIsNone(app.resolve_decode_dtype(WorkerOptions(model=self.model, device="cpu", decode_dtype="auto")))
        self.assertEqual(app.resolve_decode_dtype(WorkerOptions(model=self.model, device="cuda", decode_dtype="auto")), torch.float32)
        self.assertEqual(app.resolve_decode_dtype(WorkerOptions(model=self.model, decode_dtype="int8")), torch.int8)
        with self.assertRaisesRegex(ValueError, "--decode-dtype 'half'"):
            app.resolve_decode_dtype(WorkerOptions(model=self.model, decode_dtype="half"))
        backend = HuggingFaceBackend.create(self.model, 4, "cpu", decode_dtype=None)
        self.assertIn(backend.decode_dtype, (torch.float32, torch.bfloat16))
        choice = backend.describe()["decode_dtype_choice"]
        self.assertEqual(choice["chosen"], str(backend.decode_dtype).replace("torch.", ""))
        self.assertEqual(set(choice["seconds_per_token"]), {"float32", "bfloat16"})


class DecodeDtypeChoiceTest(unittest.TestCase):
    """`auto` follows what the timing says, whatever the CPU is called."""

    def choose(self, bf16_over_fp32: float) -> torch.dtype:
        from agentmath_engine.decode_dtype_choice import choose_decode_dtype

        def make_timer(model, dtype, packed, batch_hint):
            factor = bf16_over_fp32 if dtype == torch.bfloat16 else 1.0
            return lambda rows: factor * (0.01 + 0.001 * rows)

        return choose_decode_dtype(torch.nn.Linear(16, 16), packed=False, make_timer=make_timer).dtype

    def test_bf16_only_when_it_is_clearly_faster(self) -> None:
        self.assertEqual(self.choose(0.5), torch.bfloat16)
        self.assertEqual(self.choose(0.95), torch.float32)  # within the margin: fp32's logprobs win
        self.assertEqual(self.choose(2.0), torch.float32)  # emulated bf16

    def test_the_timing_runs_on_one_thread_and_restores_the_threads(self) -> None:
        from agentmath_engine.decode_dtype_choice import choose_decode_dtype

        seen = []

        def make_timer(model, dtype, packed, batch_hint):
            return lambda rows: seen.append(torch.get_num_threads()) or 1.0

        before = torch.get_num_threads()
        choose_decode_dtype(torch.nn.Linear(16, 16), packed=False, make_timer=make_timer)
        self.assertEqual(set(seen), {1})
        self.assertEqual(torch.get_num_threads(), before)

if __name__ == "__main__":
    unittest.main()
