"""`decode_profile`, what `bench engine --model --profile` prints: the engine driven in this thread,
its decode steps under torch's profiler, each op's share of them, the engine's phases, and the
engine left with nothing running."""

from __future__ import annotations

import shutil
import tempfile
import unittest

from agentmath_engine.app import WorkerOptions, build_backend
from agentmath_engine.decode_profile import profile_decode
from agentmath_engine.engine import Engine
from agentmath_engine.hf_backend import transformers_available
from agentmath_engine.hf_fixtures import make_models


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class DecodeProfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-decode-profile-")
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_shares_of_the_profiled_steps_and_the_engine_left_idle(self) -> None:
        backend = build_backend(WorkerOptions(model=self.model, max_running_requests=4, device="cpu"))
        engine = Engine(backend, 4, 1, start=False)
        profile = profile_decode(engine, [[5, 7, 9], [11, 12, 13, 14, 15], [20]], steps=3)
        self.assertEqual(profile["concurrency"], 3)
        self.assertGreater(profile["stepMs"], 0)
        phases = {phase["name"]: phase["share"] for phase in profile["phases"]}
        self.assertEqual(set(phases), {"forward", "sampling", "bookkeeping", "rest of the loop"})
        self.assertGreater(phases["forward"], 0)
        self.assertLessEqual(sum(phases.values()), 1.0 + 1e-6)
        names = [op["name"] for op in profile["ops"]]
        self.assertTrue(any("linear" in name for name in names), names)
        self.assertFalse(any(name.startswith("engine.") for name in names))
        # One call of every linear layer a step: the profile counts per step.
        linear = next(op for op in profile["ops"] if "linear" in op["name"])
        layers = sum(1 for module in backend.model.modules() if type(module).__name__ == "Linear")
        self.assertEqual(linear["callsPerStep"], layers)
        self.assertLessEqual(sum(op["share"] for op in profile["ops"]) + profile["outsideOpsShare"], 1.0 + 1e-6)
        self.assertEqual(engine.stats()["running"], 0)
        self.assertEqual(engine.stats()["waiting"], 0)
        with self.assertRaisesRegex(ValueError, "1 to 4 at once"):
            profile_decode(engine, [[1]] * 5, steps=1)


if __name__ == "__main__":
    unittest.main()
