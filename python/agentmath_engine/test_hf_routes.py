"""SGLang's pause / continue / abort / update-weights routes on a worker serving a Hugging Face
model: paused requests keep their tokens, aborted ones answer their partial output, weights
loaded while paused take effect for the tokens generated after continue."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import unittest

from agentmath_engine.app import WorkerOptions, build_worker
from agentmath_engine.engine import SamplingParams
from agentmath_engine.hf_backend import transformers_available
from agentmath_engine.hf_fixtures import StepGate, greedy_without_cache, make_models
from agentmath_engine.requests import BadRequest

# SGLang 0.5.23's own answers, each with the file and lines that build it.
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "test", "fixtures", "sglang-0.5.23-control-bodies.json")
with open(FIXTURES, encoding="utf-8") as _handle:
    SGLANG = json.load(_handle)["bodies"]

PROMPTS = [[5, 7, 9], [11, 12, 13, 14, 15, 16], [20, 21]]
NEW_TOKENS = 24
GATE_STEP = 4  # requests paused after the admission token and 4 decode steps: 5 tokens each


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class PauseRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-hf-routes-")
        cls.models = make_models(cls.folder, seeds=(1, 2), architectures=("qwen3",))
        cls.other_shape = make_models(cls.folder, seeds=(3,), architectures=("qwen3",), hidden=32)["qwen3-3"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def setUp(self) -> None:
        self.worker = build_worker(WorkerOptions(model=self.models["qwen3-1"], device="cpu", max_running_requests=8))
        self.addCleanup(self.worker.engine.shutdown)

    def start_gated(self, rids=None):
        """Submits PROMPTS so they are admitted together; returns (sequences, gate)."""
        engine = self.worker.engine
        gate = StepGate(self.worker.backend, GATE_STEP)
        engine.pause("in_place")
        params = SamplingParams(max_new_tokens=NEW_TOKENS, temperature=0.0, ignore_eos=True)
        sequences = [engine.submit(p, params, True, rids[i] if rids else None) for i, p in enumerate(PROMPTS)]
        engine.resume()
        self.assertTrue(gate.reached.wait(60))
        return sequences, gate

    def pause_at_gate(self, gate: StepGate, mode: str) -> None:
        """Pauses while the gated step is in flight, then lets that step finish."""
        pausing = threading.Thread(target=self.worker.pause_generation, args=({"mode": mode},))
        pausing.start()
        while not self.worker.engine.paused:
            time.sleep(0.001)
        gate.release.set()
        pausing.join(60)
        self.assertFalse(pausing.is_alive())

    def test_in_place_pause_keeps_tokens_and_cache_and_continues_to_the_same_answer(self) -> None:
        sequences, gate = self.start_gated()
        self.pause_at_gate(gate, "in_place")
        self.assertEqual([len(s.output) for s in sequences], [1 + GATE_STEP] * len(PROMPTS))
        self.assertFalse(any(s.done.is_set() for s in sequences))
        answer = self.worker.continue_generation({})
        self.assertEqual(answer, {"message": "Generation continued successfully.", "status": "ok"})
        model = self.worker.backend.model
        for prompt, sequence in zip(PROMPTS, sequences):
            self.assertTrue(sequence.done.wait(60))
            self.assertEqual(sequence.result["output_ids"], greedy_without_cache(model, prompt, NEW_TOKENS))
            self.assertEqual(sequence.result["meta_info"]["finish_reason"]["type"], "length")

    def test_weights_loaded_while_retracted_produce_the_tokens_after_continue(self) -> None:
        sequences, gate = self.start_gated()
        self.pause_at_gate(gate, "retract")
        kept = [list(s.output) for s in sequences]
        # Not waiting for the paused requests (SGLang skips its update lock while paused).
        answer = self.worker.update_weights_from_disk({"model_path": self.models["qwen3-2"], "weight_version": "7"})
        # Retracted requests hold no cache, so the flush after the load succeeds: SGLang's answer.
        self.assertEqual((answer.status, answer.payload), (SGLANG["update_ok"]["status"], SGLANG["update_ok"]["json"]))
        self.worker.continue_generation({})
        new_model = self.worker.backend.model
        for prompt, sequence, before in zip(PROMPTS, sequences, kept):
            self.assertTrue(sequence.done.wait(60))
            after = greedy_without_cache(new_model, prompt + before, NEW_TOKENS - len(before))
            self.assertEqual(sequence.result["output_ids"], before + after)
            self.assertEqual(sequence.result["meta_info"]["weight_version"], "7")

    def test_an_update_while_paused_in_place_fails_its_flush_as_sglang_does(self) -> None:
        sequences, gate = self.start_gated()
        self.pause_at_gate(gate, "in_place")
        flush = self.worker.flush_cache()
        self.assertEqual((flush.status, flush.text), (SGLANG["flush_cache_refused"]["status"], SGLANG["flush_cache_refused"]["text"]))
        version = self.worker.policy_version
        answer = self.worker.update_weights_from_disk({"model_path": self.models["qwen3-2"], "weight_version": "7"})
        expected = SGLANG["update_flush_failed"]
        self.assertEqual((answer.status, answer.payload), (expected["status"], expected["json"]))
        # As in SGLang: the weights were loaded, the reported version did not move.
        self.assertEqual(self.worker.backend.model_path, self.models["qwen3-2"])
        self.assertEqual(self.worker.policy_version, version)
        # Pausing with abort ends the requests (their tokens answered), so the flush and the update succeed.
        self.worker.pause_generation({"mode": "abort"})
        self.assertTrue(all(s.result["meta_info"]["finish_reason"]["type"] == "abort" for s in sequences))
        flush = self.worker.flush_cache()
        self.assertEqual((flush.status, flush.text), (SGLANG["flush_cache_ok"]["status"], SGLANG["flush_cache_ok"]["text"]))
        answer = self.worker.update_weights_from_disk({"model_path": self.models["qwen3-2"], "weight_version": "7"})
        self.assertEqual((answer.status, answer.payload), (SGLANG["update_ok"]["status"], SGLANG["update_ok"]["json"]))
        self.assertEqual(self.worker.model_info()["weight_version"], "7")
        self.assertEqual(self.worker.pause_generation({"mode": "abort"}), SGLANG["pause"]["json"])
        self.assertEqual(self.worker.continue_generation({}), SGLANG["continue"]["json"])

    def test_abort_mode_answers_every_request_with_its_partial_output(self) -> None:
        sequences, gate = self.start_gated()
        self.pause_at_gate(gate, "abort")
        for sequence in sequences:
            self.assertTrue(sequence.done.is_set())
            self.assertEqual(sequence.result["meta_info"]["finish_reason"]["type"], "abort")
            self.assertEqual(len(sequence.result["output_ids"]), 1 + GATE_STEP)
            self.assertEqual(len(sequence.result["meta_info"]["output_token_logprobs"]), 1 + GATE_STEP)
        # A request sent while paused waits, and runs after continue.
        waiting = self.worker.engine.submit([5, 6], SamplingParams(max_new_tokens=3, temperature=0.0), False, None)
        self.assertEqual(self.worker.engine.stats()["waiting"], 1)
        self.worker.continue_generation({})
        self.assertTrue(waiting.done.wait(60))
        self.assertEqual(waiting.result["meta_info"]["finish_reason"]["type"], "length")

    def test_abort_request_by_rid_and_all_as_sglang_does(self) -> None:
        sequences, gate = self.start_gated(rids=["a", "b", "c"])
        self.pause_at_gate(gate, "in_place")
        self.assertEqual(self.worker.abort_request({}), {"aborted": 0})  # SGLang ignores an empty rid
        self.assertEqual(self.worker.abort_request({"rid": "b"}), {"aborted": 1})
        self.assertEqual(sequences[1].result["meta_info"]["finish_reason"]["type"], "abort")
        self.assertEqual(sequences[1].result["meta_info"]["id"], "b")
        self.assertEqual(len(sequences[1].result["output_ids"]), 1 + GATE_STEP)
        self.assertEqual(self.worker.abort_request({"abort_all": True}), {"aborted": 2})
        self.assertTrue(all(s.done.is_set() for s in sequences))
        with self.assertRaises(BadRequest):
            self.worker.pause_generation({"mode": "sideways"})

    def test_update_refuses_a_folder_of_another_shape_and_keeps_the_weights(self) -> None:
        before = {k: v.clone() for k, v in self.worker.backend.model.state_dict().items()}
        answer = self.worker.update_weights_from_disk({"model_path": self.other_shape})
        self.assertEqual(answer.status, 400)
        self.assertEqual(set(answer.payload), set(SGLANG["update_load_failed"]["json"]))
        self.assertFalse(answer.payload["success"])
        self.assertIn("another shape", answer.payload["message"])
        self.assertTrue(answer.payload["message"].startswith("Failed to update weights: "))
        self.assertTrue(answer.payload["message"].endswith(".\nRolling back to original weights."))
        missing = self.worker.update_weights_from_disk({"model_path": os.path.join(self.folder, "missing")})
        self.assertEqual(missing.status, 400)
        self.assertTrue(missing.payload["message"].startswith("Failed to get weights iterator: "), missing.payload)
        for name, tensor in self.worker.backend.model.state_dict().items():
            self.assertTrue(tensor.equal(before[name]), name)


class BytePauseTest(unittest.TestCase):
    """The pause modes live in the engine: the embedded byte model keeps its requests too."""

    def test_paused_requests_continue_to_the_answer_they_would_have_given(self) -> None:
        for mode in ("in_place", "retract"):
            with self.subTest(mode=mode):
                worker = build_worker(WorkerOptions(model="test", seed=3, max_running_requests=4))
                self.addCleanup(worker.engine.shutdown)
                params = SamplingParams(max_new_tokens=NEW_TOKENS, temperature=0.0, ignore_eos=True)
                unpaused = [worker.engine.submit(p, params, False, None) for p in PROMPTS]
                for sequence in unpaused:
                    self.assertTrue(sequence.done.wait(60))
                gate = StepGate(worker.backend, GATE_STEP)
                worker.engine.pause("in_place")
                sequences = [worker.engine.submit(p, params, False, None) for p in PROMPTS]
                worker.engine.resume()
                self.assertTrue(gate.reached.wait(60))
                pausing = threading.Thread(target=worker.engine.pause, args=(mode,))
                pausing.start()
                while not worker.engine.paused:
                    time.sleep(0.001)
                gate.release.set()
                pausing.join(60)
                self.assertEqual([len(s.output) for s in sequences], [1 + GATE_STEP] * len(PROMPTS))
                worker.engine.resume()
                for before, sequence in zip(unpaused, sequences):
                    self.assertTrue(sequence.done.wait(60))
                    self.assertEqual(sequence.result["output_ids"], before.result["output_ids"])


if __name__ == "__main__":
    unittest.main()
