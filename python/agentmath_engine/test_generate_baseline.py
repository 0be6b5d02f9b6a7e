"""`generate_baseline`, the process `bench engine --model` measures beside the engine: its matmul
floor times every linear layer of the model once, packed as the engine decodes or plain, and its
bound counts the weights one decode step reads."""

from __future__ import annotations

import shutil
import tempfile
import unittest

import torch

from agentmath_engine.generate_baseline import Baseline, decode_weight_bytes
from agentmath_engine.hf_backend import transformers_available
from agentmath_engine.hf_fixtures import make_models
from agentmath_engine.packed_linear import packed_linear_available


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class GenerateBaselineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-baseline-")
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_the_matmul_floor_runs_every_linear_layer_once(self) -> None:
        baseline = Baseline(self.model, torch.float32)
        linears = [module for module in baseline.model.modules() if type(module) is torch.nn.Linear]
        calls = []
        for module in linears:
            module.register_forward_hook(lambda module, inputs, output: calls.append((module, tuple(inputs[0].shape))))
        plain = baseline.matmuls(8, "plain", repeats=3)
        self.assertEqual(plain["layers"], len(linears))
        self.assertGreater(plain["seconds"], 0)
        # warm-up + 3 timed runs, every layer on 8 rows each time
        self.assertEqual(len(calls), 4 * len(linears))
        self.assertTrue(all(shape[0] == 8 for _, shape in calls))
        if packed_linear_available() is None:
            self.assertGreater(baseline.matmuls(8, "packed", repeats=3)["seconds"], 0)
        self.assertGreater(baseline.matmuls(8, "int8", repeats=3)["seconds"], 0)

    def test_score_gives_each_output_tokens_logprob_after_what_precedes_it(self) -> None:
        baseline = Baseline(self.model, torch.float32)
        prompt, output = [5, 7, 9], [11, 3, 4]
        scored = baseline.score(prompt, output)["logprobs"]
        self.assertEqual(len(scored), 3)
        with torch.no_grad():
            for index, token in enumerate(output):
                context = torch.tensor([prompt + output[:index]])
                alone = torch.log_softmax(baseline.model(input_ids=context).logits[0, -1], -1)[token].item()
                self.assertAlmostEqual(scored[index], alone, delta=1e-5)
        with self.assertRaisesRegex(ValueError, "non-empty"):
            baseline.score(prompt, [])

    def test_a_decode_step_reads_every_weight_but_an_untied_input_embedding(self) -> None:
        model = Baseline(self.model, torch.float32).model
        embedding = model.get_input_embeddings().weight
        self.assertIsNot(model.get_output_embeddings().weight, embedding)  # this fixture is untied
        every = 4 * sum(parameter.numel() for parameter in model.parameters())
        self.assertEqual(decode_weight_bytes(model), every - 4 * embedding.numel())
        # int8 decode: linear weights a byte each plus a bf16 scale per output row; the rest as they are.
        linears = [module for module in model.modules() if type(module) is torch.nn.Linear]
        int8 = sum(module.weight.numel() + 2 * module.out_features for module in linears)
        rest = sum(4 * p.numel() for p in model.parameters() if p is not embedding and all(p is not m.weight for m in linears))
        self.assertEqual(decode_weight_bytes(model, int8_linears=True), int8 + rest)
        # Tied: the one matrix is the head, read whole, and counted once.
        model.get_output_embeddings().weight = embedding
        self.assertEqual(decode_weight_bytes(model), 4 * sum(parameter.numel() for parameter in model.parameters()))


if __name__ == "__main__":
    unittest.main()
