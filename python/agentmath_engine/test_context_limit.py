"""`/generate` refuses a request whose input plus `max_new_tokens` exceeds the model's context,
as SGLang 0.5.23 does (HTTP 400 with its message, sglang/srt/managers/tokenizer_manager.py
`_validate_one_request`), on the byte model (context 768) and a Hugging Face model alike; a
request that fits, and one that leaves `max_new_tokens` to the default, are served. `GET
/v1/models` says the context as SGLang's ModelCard does (`max_model_len`)."""

from __future__ import annotations

import shutil
import tempfile
import unittest

from agentmath_engine.app import WorkerOptions, build_worker
from agentmath_engine.hf_backend import transformers_available
from agentmath_engine.hf_fixtures import make_models
from agentmath_engine.requests import BadRequest


class ContextLimitChecks:
    """The checks, run against `self.worker` by each backend's test case."""

    worker = None

    def test_a_request_past_the_context_is_refused_with_sglangs_message(self) -> None:
        context = self.worker.backend.context_length
        prompt = [5, 6, 7, 8]
        with self.assertRaises(BadRequest) as caught:
            self.worker.generate({"input_ids": prompt, "sampling_params": {"max_new_tokens": 1_000_000_000}})
        self.assertEqual(
            str(caught.exception),
            f"Requested token count exceeds the model's maximum context length of {context} tokens. "
            f"You requested a total of {1_000_000_004} tokens: 4 tokens from the input messages and "
            "1000000000 tokens for the completion. Please reduce the number of tokens in the input "
            "messages or the completion to fit within the limit.",
        )
        # One token over, in a batch: refused too.
        with self.assertRaises(BadRequest):
            self.worker.generate(
                {"input_ids": [prompt, prompt], "sampling_params": {"max_new_tokens": context - 3}}
            )

    def test_a_request_that_fits_and_one_without_max_new_tokens_are_served(self) -> None:
        context = self.worker.backend.context_length
        prompt = [5, 6, 7, 8]
        result = self.worker.generate(
            {"input_ids": prompt, "sampling_params": {"max_new_tokens": 2, "temperature": 0}}
        )
        self.assertLessEqual(len(result["output_ids"]), 2)
        exact = {"input_ids": prompt, "sampling_params": {"max_new_tokens": 0}}
        self.assertEqual(self.worker.generate(exact)["output_ids"], [])
        fits = {"input_ids": [5] * (context - 1), "sampling_params": {"max_new_tokens": 1, "temperature": 0}}
        self.assertLessEqual(len(self.worker.generate(fits)["output_ids"]), 1)

    def test_v1_models_says_the_context(self) -> None:
        listing = self.worker.models()
        self.assertEqual(listing["object"], "list")
        self.assertEqual(listing["data"][0]["max_model_len"], self.worker.backend.context_length)


class ByteModelContextTest(ContextLimitChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.worker = build_worker(WorkerOptions(model="tiny", device="cpu", max_running_requests=4))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.engine.shutdown()

    def test_context_is_the_embedded_byte_models(self) -> None:
        self.assertEqual(self.worker.backend.context_length, 768)


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class HuggingFaceModelContextTest(ContextLimitChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-context-")
        model = make_models(cls.folder, seeds=(1,), architectures=("qwen3",))["qwen3-1"]
        cls.worker = build_worker(WorkerOptions(model=model, device="cpu", max_running_requests=4))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.engine.shutdown()
        shutil.rmtree(cls.folder, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
