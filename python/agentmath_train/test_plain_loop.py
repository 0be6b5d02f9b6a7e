"""The baseline of `bench trainer --model` computes what our trainer computes (same SFT loss on
the same packed batch), our trainer runs in bf16 on CPU when asked, and a CPU rank takes its
share of the cores as threads."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

import torch
import torch.distributed as dist

from agentmath_train.batch_io import decode_batch, encode_batch
from agentmath_train.model import placement, rank_threads
from agentmath_train.options import parse_step_options
from agentmath_train.plain_loop import PlainLoop
from agentmath_train.test_distributed import free_port
from agentmath_engine.hf_fixtures import make_models

IDS = [[5, 9, 13, 17, 21, 25, 29, 33, 37, 41], [7, 8, 9, 10, 11, 12], [40, 30, 20, 10, 50, 60, 70, 80]]
MASKS = [[0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 1]]
# bf16 carries 8 bits of mantissa: a loss near 6 moves by about 1% of itself.
BF16_RELATIVE_TOLERANCE = 0.02


class PlainLoopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-plain-loop-")
        cls.addClassCleanup(shutil.rmtree, cls.folder, True)
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]
        if not dist.is_initialized():  # one process: the trainer's collectives over gloo
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
            dist.init_process_group("gloo")
            cls.addClassCleanup(dist.destroy_process_group)

    def ours(self, compute_dtype=None) -> float:
        from agentmath_train.service import TrainerCore, TrainerSettings

        core = TrainerCore(TrainerSettings(model=self.model, micro_batch_tokens=16, compute_dtype=compute_dtype))
        batch = decode_batch(encode_batch(IDS, MASKS, options={"learningRate": 0.0}))
        return core.runner.sft_step(batch, parse_step_options(batch.options))["loss"]

    def test_the_plain_loop_takes_the_same_sft_loss_as_our_trainer(self) -> None:
        loop = PlainLoop(self.model, micro_batch_tokens=16)
        sequences = [{"inputIds": ids, "lossMask": mask} for ids, mask in zip(IDS, MASKS)]
        plain = loop.step("sft", sequences, 0.0, bf16=False)["loss"]
        self.assertAlmostEqual(plain, self.ours(), places=4)

    def test_our_trainer_in_bf16_on_cpu_keeps_the_loss_near_fp32(self) -> None:
        self.assertEqual(placement("bfloat16").compute_dtype, torch.bfloat16)
        self.assertEqual(placement().compute_dtype, torch.bfloat16 if torch.cuda.is_available() else torch.float32)
        fp32, bf16 = self.ours(), self.ours("bfloat16")
        self.assertNotEqual(fp32, bf16)  # it did run in bf16
        self.assertLess(abs(bf16 - fp32) / fp32, BF16_RELATIVE_TOLERANCE)
        with self.assertRaisesRegex(ValueError, "compute dtype 'half'"):
            placement("half")

    def test_a_cpu_rank_takes_its_share_of_the_cores(self) -> None:
        self.assertEqual(rank_threads(1, cores=2), 2)
        self.assertEqual(rank_threads(2, cores=2), 1)
        self.assertEqual(rank_threads(2, cores=16), 8)
        self.assertEqual(rank_threads(4, cores=2), 1)


if __name__ == "__main__":
    unittest.main()
