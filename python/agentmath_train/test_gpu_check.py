"""scripts/gpu-check.sh --dry-run: the GPU check's code on CPU with tiny shapes, so it does not rot
where no GPU runs it; and the time budget skips what it has no time for, and says so."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class GpuCheckDryRunTest(unittest.TestCase):
    def run_check(self, *extra: str) -> dict:
        folder = tempfile.mkdtemp(prefix="agentmath-gpu-check-")
        out = os.path.join(folder, "gpu-check.json")
        # As on the GPU machine: no rendezvous of an earlier test's process group in the environment.
        rendezvous = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
        environment = {key: value for key, value in os.environ.items() if key not in rendezvous}
        environment.update({"OMP_NUM_THREADS": "1", "OUT": folder})
        finished = subprocess.run(
            ["sh", os.path.join(ROOT, "scripts", "gpu-check.sh"), "--dry-run", *extra],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.assertEqual(finished.returncode, 0, finished.stderr[-3000:])
        with open(out) as handle:
            report = json.load(handle)
        os.remove(out)
        os.rmdir(folder)
        return report

    def test_every_part_runs_and_lands_in_one_json(self):
        report = self.run_check()
        self.assertTrue(report["dryRun"])
        self.assertEqual(report["skipped"], [])
        kinds = {(entry["shape"], entry["kind"]) for entry in report["train"]}
        self.assertEqual(len(kinds), 4)  # two shapes × SFT and GRPO
        for entry in report["train"] + report["headMemory"]:
            self.assertEqual(entry["status"], "ok")
            self.assertGreater(entry["tokensPerSecond"], 0)
            self.assertGreater(entry["peakMemoryBytes"], 0)
        self.assertEqual(sorted(entry["logitsChunkTokens"] for entry in report["headMemory"]), [0, 512])
        self.assertEqual([entry["requests"] for entry in report["generation"]], [1, 2])
        for entry in report["generation"]:
            self.assertEqual(entry["outputTokens"], entry["requests"] * entry["newTokens"])
        packed = {entry["attention"]: entry for entry in report["packedAttention"]}
        self.assertEqual(sorted(packed), ["loop", "sdpa"])  # flex has no backward on CPU
        for entry in packed.values():
            self.assertEqual((entry["status"], entry["sequences"], entry["tokens"]), ("ok", 4, 64), entry)

    def test_what_the_budget_leaves_no_time_for_is_listed_as_skipped(self):
        report = self.run_check("--budget-seconds", "0.001")
        self.assertEqual(report["train"], [])
        self.assertEqual(report["generation"], [])
        self.assertIn("generation tiny-h32-l1-v1000 x2", report["skipped"])

    def test_without_a_gpu_the_full_check_is_refused_as_a_usage_error(self):
        finished = subprocess.run(
            ["sh", os.path.join(ROOT, "scripts", "gpu-check.sh")],
            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(finished.returncode, 2)
        self.assertIn("--dry-run", finished.stderr)


if __name__ == "__main__":
    unittest.main()
