"""`--decode-dtype int8`: linear layers on int8 weights with one scale per output feature and bf16
activations compute x · (q · s)ᵀ; a width the kernel cannot take keeps bf16 weights; the engine's
cached, batched greedy decode equals the int8 model recomputed from scratch; its logprobs stay
near the fp32 master's; the copy follows a weight change."""

from __future__ import annotations

import shutil
import tempfile
import unittest

import torch

from agentmath_engine.engine import Engine, SamplingParams
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import greedy_without_cache, make_models
from agentmath_engine.int8_linear import Int8Linear, int8_decode_copy, int8_linear_available

PROMPTS = [[5, 7, 9, 11], [11, 12, 13, 14, 15, 16, 17, 18], [20, 3]]
# int8 weights (a step of 1/127 of each row's largest weight) and bf16 activations.
LOGPROB_TOLERANCE = 0.15


def dequantized(layer: torch.nn.Linear) -> torch.Tensor:
    weight = layer.weight.detach().float()
    scales = weight.abs().amax(dim=1) / 127.0
    return torch.round(weight / scales[:, None]).clamp(-127, 127) * scales.to(torch.bfloat16).float()[:, None]


@unittest.skipUnless(int8_linear_available() is None, f"no int8 kernel here: {int8_linear_available()}")
class Int8LinearTest(unittest.TestCase):
    def test_computes_the_product_with_the_rounded_weights(self) -> None:
        torch.manual_seed(0)
        for rows in (1, 3, 33):
            layer = torch.nn.Linear(64, 40, bias=True)
            int8 = Int8Linear(layer)
            self.assertTrue(int8.quantized)
            self.assertEqual(int8.weight.dtype, torch.int8)
            x = torch.randn(2, rows, 64)
            expected = x.bfloat16().float() @ dequantized(layer).T + layer.bias.detach().bfloat16().float()
            output = int8(x)
            self.assertEqual(output.shape, (2, rows, 40))
            self.assertEqual(output.dtype, torch.bfloat16)
            torch.testing.assert_close(output.float(), expected, atol=2e-2, rtol=2e-2)

    def test_a_width_the_kernel_cannot_take_keeps_bf16_weights(self) -> None:
        layer = torch.nn.Linear(24, 8)  # the kernel needs in_features % 16 == 0 (it crashed on 24)
        int8 = Int8Linear(layer)
        self.assertFalse(int8.quantized)
        x = torch.randn(5, 24)
        torch.testing.assert_close(int8(x).float(), layer(x).detach(), atol=5e-2, rtol=5e-2)

    def test_the_copy_follows_a_weight_change(self) -> None:
        layer = torch.nn.Linear(32, 16, bias=False)
        int8 = Int8Linear(layer)
        before = int8.weight.clone()
        with torch.no_grad():
            layer.weight.mul_(-1)
        int8.refresh()
        self.assertTrue(torch.equal(int8.weight, -before))


@unittest.skipUnless(transformers_available() and int8_linear_available() is None, "transformers or the int8 kernel missing")
class Int8DecodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-int8-")
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def generate(self, engine, prompts, count):
        sequences = [engine.submit(prompt, SamplingParams(max_new_tokens=count, temperature=0.0, ignore_eos=True), True, None)
                     for prompt in prompts]
        for sequence in sequences:
            self.assertTrue(sequence.done.wait(120))
        return [(s.result["output_ids"], [entry[0] for entry in s.result["meta_info"]["output_token_logprobs"]]) for s in sequences]

    def test_batched_greedy_equals_the_int8_model_recomputed_and_logprobs_stay_near_fp32(self) -> None:
        backend = HuggingFaceBackend.create(self.model, 8, "cpu", decode_dtype=torch.int8)
        self.assertEqual(backend.describe()["decode_dtype"], "int8")
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        reference = int8_decode_copy(backend.model)
        self.assertTrue(any(isinstance(module, Int8Linear) and module.quantized for module in reference.modules()))
        for prompt, (tokens, logprobs) in zip(PROMPTS, self.generate(engine, PROMPTS, 10)):
            self.assertEqual(tokens, greedy_without_cache(reference, prompt, 10))
            with torch.no_grad():
                ids = torch.tensor([prompt + tokens])
                fp32 = torch.log_softmax(backend.model(input_ids=ids).logits[0].float(), -1)
                fp32 = fp32[len(prompt) - 1 : -1].gather(-1, ids[0, len(prompt):, None])[:, 0]
            for mine, theirs in zip(logprobs, fp32.tolist()):
                self.assertAlmostEqual(mine, theirs, delta=LOGPROB_TOLERANCE)

    def test_the_int8_copy_follows_a_weight_change(self) -> None:
        backend = HuggingFaceBackend.create(self.model, 8, "cpu", decode_dtype=torch.int8)
        engine = Engine(backend, 8)
        self.addCleanup(engine.shutdown)
        [(before, _)] = self.generate(engine, PROMPTS[1:2], 8)

        # What a weight update does: new tensors copied into the master weights.
        changed = {name: tensor + torch.randn_like(tensor) * 0.5 for name, tensor in backend.model.state_dict().items()}
        engine.exclusive(lambda: backend.load_tensors(changed, origin="test"))
        [(after, _)] = self.generate(engine, PROMPTS[1:2], 8)
        self.assertEqual(after, greedy_without_cache(int8_decode_copy(backend.model), PROMPTS[1], 8))
        self.assertNotEqual(before, after)


if __name__ == "__main__":
    unittest.main()
