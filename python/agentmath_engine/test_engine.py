"""Engine tests: SGLang finish reasons and stop-string trimming, continuous batching (a request
joins a running batch mid-flight), seeded reproducibility, exclusive weight updates."""

import threading
import time
import unittest

import torch

from agentmath_engine.byte_backend import ByteBackend
from agentmath_engine.engine import Engine, RequestError, SamplingParams
from agentmath_models.byte_tokenizer import decode, encode


class ScriptedBackend:
    """Test double with the backend interface: a prompt `say:<text>` makes the 'model' emit
    <text> byte by byte, then EOS. Records which slots each decode step served."""

    kind = "scripted"
    context_length = 512
    vocab_size = 258
    eos_token_ids = {256}

    def __init__(self, n_slots=8, step_seconds=0.0):
        self.n_slots = n_slots
        self.step_seconds = step_seconds
        self.scripts = {}
        self.decoded_slots = []

    def encode(self, text):
        return encode(text)

    def decode(self, ids, skip_special_tokens=True):
        return decode(ids, skip_special_tokens)

    def _logits(self, slot, index):
        target, _ = self.scripts[slot]
        logits = torch.full((258,), -30.0)
        logits[target[index] if index < len(target) else 256] = 30.0
        return logits

    def prefill(self, slot, ids):
        text = bytes(ids)
        assert text.startswith(b"say:")
        self.scripts[slot] = (list(text[4:]), len(ids))
        return self._logits(slot, 0)

    def decode_step(self, tokens, positions, active):
        time.sleep(self.step_seconds)
        live = [slot for slot in range(tokens.shape[0]) if slot in self.scripts and bool(active[slot])]
        self.decoded_slots.append(set(live))
        rows = []
        for slot in range(tokens.shape[0]):
            if slot in live:
                rows.append(self._logits(slot, int(positions[slot]) - self.scripts[slot][1] + 1))
            else:
                rows.append(torch.zeros(258))
        return torch.stack(rows)

    def release(self, slot):
        self.scripts.pop(slot, None)


def run(engine, prompt_text, **params):
    sequence = engine.submit(encode(prompt_text), SamplingParams(**params), True, None)
    assert sequence.done.wait(30), "request did not finish"
    return sequence.result


class FinishReasonTest(unittest.TestCase):
    def setUp(self):
        self.engine = Engine(ScriptedBackend(), max_running=8)

    def tearDown(self):
        self.engine.shutdown()

    def test_stop_string_trimmed_from_text_but_not_from_output_ids(self):
        result = run(self.engine, "say:print(2)\n</code>\nafter", max_new_tokens=100, stop=["</code>"])
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "stop", "matched": "</code>"})
        self.assertEqual(result["text"], "print(2)\n")
        self.assertEqual(bytes(result["output_ids"]), b"print(2)\n</code>")
        self.assertEqual(result["meta_info"]["completion_tokens"], len(b"print(2)\n</code>"))
        self.assertEqual([tok for _, tok, _ in result["meta_info"]["output_token_logprobs"]], result["output_ids"])

    def test_no_stop_trim_keeps_the_stop_string(self):
        result = run(self.engine, "say:ab```cd", max_new_tokens=100, stop=["```", "zz"], no_stop_trim=True)
        self.assertEqual(result["text"], "ab```")
        self.assertEqual(result["meta_info"]["finish_reason"]["matched"], "```")

    def test_eos_is_a_matched_token_id_kept_in_output_ids(self):
        result = run(self.engine, "say:hi", max_new_tokens=100)
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "stop", "matched": 256})
        self.assertEqual(result["output_ids"], [104, 105, 256])
        self.assertEqual(result["text"], "hi")
        kept = run(self.engine, "say:hi", max_new_tokens=100, no_stop_trim=True, skip_special_tokens=False)
        self.assertEqual(kept["text"], "hi<|endoftext|>")

    def test_stop_token_ids_and_ignore_eos(self):
        result = run(self.engine, "say:abc", max_new_tokens=100, stop_token_ids=[ord("b")])
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "stop", "matched": ord("b")})
        self.assertEqual(result["text"], "a")
        result = run(self.engine, "say:ab", max_new_tokens=5, ignore_eos=True)
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "length", "length": 5})
        self.assertEqual(result["output_ids"][:3], [97, 98, 256])

    def test_length_wins_when_the_last_allowed_token_is_a_stop(self):
        result = run(self.engine, "say:abc", max_new_tokens=3, stop=["c"])
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "length", "length": 3})
        self.assertEqual(result["text"], "abc")

    def test_zero_new_tokens_and_prompt_too_long(self):
        result = run(self.engine, "say:abc", max_new_tokens=0)
        self.assertEqual(result["output_ids"], [])
        self.assertEqual(result["meta_info"]["finish_reason"], {"type": "length", "length": 0})
        with self.assertRaisesRegex(RequestError, "context length"):
            self.engine.submit([65] * 512, SamplingParams(), False, None)

    def test_abort_finishes_with_abort(self):
        engine = Engine(ScriptedBackend(step_seconds=0.01), max_running=8)
        try:
            sequence = engine.submit(encode("say:" + "x" * 300), SamplingParams(max_new_tokens=400), False, "r1")
            time.sleep(0.2)
            self.assertEqual(engine.abort("r1"), 1)
            self.assertTrue(sequence.done.wait(10))
            self.assertEqual(
                sequence.result["meta_info"]["finish_reason"],
                {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None},
            )
            self.assertLess(len(sequence.result["output_ids"]), 300)
        finally:
            engine.shutdown()


class BatchingTest(unittest.TestCase):
    def test_request_joins_the_running_batch_mid_flight(self):
        backend = ScriptedBackend(step_seconds=0.005)
        engine = Engine(backend, max_running=8)
        try:
            long = engine.submit(encode("say:" + "a" * 150), SamplingParams(max_new_tokens=200), False, "long")
            while engine.steps < 10:
                time.sleep(0.005)
            short = engine.submit(encode("say:bbbbb"), SamplingParams(max_new_tokens=200), False, "short")
            self.assertTrue(short.done.wait(10))
            self.assertFalse(long.done.is_set(), "the short request waited for the long one")
            self.assertTrue(long.done.wait(30))
            self.assertEqual(long.result["text"], "a" * 150)
            self.assertEqual(short.result["text"], "bbbbb")
            shared = [slots for slots in backend.decoded_slots if slots == {long.slot, short.slot}]
            self.assertGreaterEqual(len(shared), 4)  # decoded together, one batched step each
        finally:
            engine.shutdown()

    def test_seeded_sampling_is_the_same_alone_and_in_a_changing_batch(self):
        backend = ByteBackend.create("test", n_slots=8)
        engine = Engine(backend, max_running=8)
        try:
            params = dict(max_new_tokens=40, temperature=1.0, top_p=0.9, seed=1234)
            alone = run(engine, "<|user|>\nhello\n", **params)
            others = [engine.submit(encode(f"other {i}"), SamplingParams(max_new_tokens=25 + 5 * i, temperature=1.0), False, None) for i in range(3)]
            time.sleep(0.02)
            together = run(engine, "<|user|>\nhello\n", **params)
            for other in others:
                other.done.wait(30)
            self.assertEqual(alone["output_ids"], together["output_ids"])
            different = run(engine, "<|user|>\nhello\n", **{**params, "seed": 99})
            self.assertNotEqual(alone["output_ids"], different["output_ids"])
            greedy = [run(engine, "abc", max_new_tokens=10, temperature=0.0)["output_ids"] for _ in range(2)]
            self.assertEqual(greedy[0], greedy[1])
        finally:
            engine.shutdown()

    def test_defect_4_continuations_reuse_the_random_draws_of_the_turns_start(self):
        # A continuation with the same seed (a paused turn resumed) must draw what one
        # uninterrupted request would have: draws keyed on the absolute position.
        backend = ByteBackend.create("test", n_slots=4)
        engine = Engine(backend, max_running=4)
        try:
            params = dict(temperature=1.0, top_p=1.0, seed=77, ignore_eos=True)
            prompt = encode("<|user|>\nhello\n")
            whole = engine.submit(prompt, SamplingParams(max_new_tokens=24, **params), True, None)
            self.assertTrue(whole.done.wait(30))
            head = engine.submit(prompt, SamplingParams(max_new_tokens=10, **params), True, None)
            self.assertTrue(head.done.wait(30))
            head_ids = head.result["output_ids"]
            tail = engine.submit(prompt + head_ids, SamplingParams(max_new_tokens=14, **params), True, None)
            self.assertTrue(tail.done.wait(30))
            self.assertEqual(head_ids + tail.result["output_ids"], whole.result["output_ids"])
        finally:
            engine.shutdown()

    def test_exclusive_waits_for_running_sequences_and_holds_new_ones(self):
        backend = ScriptedBackend(step_seconds=0.005)
        engine = Engine(backend, max_running=8)
        events = []
        holder = {}

        def update():
            events.append(("first finished", holder["first"].done.is_set()))
            time.sleep(0.1)
            events.append(("second finished", holder["second"].done.is_set()))

        try:
            holder["first"] = engine.submit(encode("say:" + "a" * 40), SamplingParams(max_new_tokens=100), False, None)
            time.sleep(0.05)
            holder["second"] = None
            worker = threading.Thread(target=lambda: engine.exclusive(update))
            worker.start()
            time.sleep(0.02)
            holder["second"] = engine.submit(encode("say:b"), SamplingParams(max_new_tokens=10), False, None)
            worker.join(10)
            self.assertTrue(holder["second"].done.wait(10))
            # The update ran after `first` finished, and `second` waited until the update was done.
            self.assertEqual(events, [("first finished", True), ("second finished", False)])
        finally:
            engine.shutdown()


class StopWindowTest(unittest.TestCase):
    """Stop strings are matched on the decoding of the output's last tokens, not of the whole
    output: what that gives must be the end of the whole output's text, long enough for the stop."""

    @classmethod
    def setUpClass(cls):
        from agentmath_engine.hf_backend import transformers_available

        if not transformers_available():
            raise unittest.SkipTest("transformers is not installed")
        import shutil
        import tempfile

        import transformers

        from agentmath_engine.hf_fixtures import make_models

        folder = tempfile.mkdtemp(prefix="agentmath-stop-window-")
        cls.addClassCleanup(shutil.rmtree, folder, True)
        cls.tokenizer = transformers.AutoTokenizer.from_pretrained(make_models(folder, architectures=("llama",))["llama-1"])

    def test_the_window_gives_the_end_of_the_whole_text(self):
        from agentmath_engine.engine import Sequence
        from agentmath_engine.stop import StopChecker

        backend = ScriptedBackend()
        backend.decode = lambda ids, skip_special_tokens=True: self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)
        engine = Engine(backend, max_running=8, start=False)
        # Multi-byte characters the tiny tokenizer splits into bytes, so windows cut characters.
        ids = self.tokenizer.encode("Ünïcödé — 😀 x = 3 * 4 ```output\n12\n``` done. " * 4, add_special_tokens=False)
        for stop in ("```output", "é" * 30):
            sequence = Sequence("r", [1], SamplingParams(stop=[stop]), False, 0, StopChecker([stop], set()), 0.0)
            for count in range(1, len(ids) + 1):
                sequence.output = ids[:count]
                whole = self.tokenizer.decode(ids[:count]).encode("utf-8")
                end = engine._text_end(sequence)
                self.assertTrue(whole.endswith(end), f"{count} tokens")
                self.assertGreaterEqual(len(end), min(len(whole), len(stop.encode("utf-8"))))


if __name__ == "__main__":
    unittest.main()
