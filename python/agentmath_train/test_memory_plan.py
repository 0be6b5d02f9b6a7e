"""The trainer refuses, before the step, a sequence estimated not to fit one rank, naming its
length and the options under which it would fit; the estimate's arithmetic on a Qwen3-8B shape."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import unittest

import torch.distributed as dist
import transformers

from agentmath_train.batch_io import decode_batch, encode_batch
from agentmath_train.memory_plan import GIB, MemoryOptions, ModelDims, micro_batch_bytes, rank_bytes, refusal
from agentmath_train.test_distributed import CORPUS, free_port

QWEN3_8B = ModelDims.of(
    transformers.Qwen3Config(
        vocab_size=151_936,
        hidden_size=4096,
        intermediate_size=12_288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=False,
    ),
    8_190_735_360,
)


class MemoryPlanTest(unittest.TestCase):
    def plan(self, lengths, options, capacity_gib=80.0, budget=16_384):
        return refusal(QWEN3_8B, lengths, budget, 8, options, 2, int(capacity_gib * GIB), "cuda:0")

    def test_full_logits_cost_twenty_bytes_per_token_and_vocabulary_entry(self):
        full = micro_batch_bytes(QWEN3_8B, 8192, MemoryOptions(True, 0), 2)
        chunked = micro_batch_bytes(QWEN3_8B, 8192, MemoryOptions(True, 512), 2)
        self.assertEqual(full - chunked, 20 * 151_936 * 8192 - (12 * 512 * 151_936 + 4 * 151_936 * 4096))

    def test_a_sequence_that_fits_is_not_refused(self):
        self.assertIsNone(self.plan([4000, 2000], MemoryOptions(True, 512)))

    def test_a_long_sequence_is_refused_with_its_length_and_the_options_that_fit(self):
        reason = self.plan([1000, 40_960, 300], MemoryOptions(False, 0))
        self.assertIn("sequence 1 has 40,960 tokens", reason)
        self.assertIn("activation checkpointing off, full [T × V] logits", reason)
        self.assertIn("it fits with --activation-checkpointing --logits-chunk-tokens 512", reason)

    def test_sequence_parallelism_gives_each_rank_its_share_of_a_long_sequence(self):
        options = MemoryOptions(True, 512)
        self.assertIsNotNone(self.plan([200_000], options))
        self.assertIsNone(refusal(QWEN3_8B, [200_000], 16_384, 8, options, 2, 80 * GIB, "cuda:0", sequence_parallel=8))
        reason = refusal(QWEN3_8B, [1_000_000], 16_384, 8, options, 2, 80 * GIB, "cuda:0", sequence_parallel=2)
        self.assertIn("sequence 0 has 1,000,000 tokens (500,000 per rank with --sp 2)", reason)
        self.assertIn("a micro-batch of 500,000 tokens per rank needs", reason)

    def test_cpu_offload_takes_the_sharded_state_off_the_device_and_a_reference_adds_its_shard(self):
        options = MemoryOptions(True, 512)
        plain = rank_bytes(QWEN3_8B, 4096, 8, options, 2)
        offloaded = dataclasses.replace(options, cpu_offload=True)
        self.assertEqual(plain - rank_bytes(QWEN3_8B, 4096, 8, offloaded, 2), 16 * QWEN3_8B.parameters // 8)
        with_reference = dataclasses.replace(options, reference=True)
        self.assertEqual(rank_bytes(QWEN3_8B, 4096, 8, with_reference, 2) - plain, 2 * QWEN3_8B.parameters // 8)
        # Offloaded, the reference's shards are in host memory too.
        self.assertEqual(rank_bytes(QWEN3_8B, 4096, 8, dataclasses.replace(offloaded, reference=True), 2), rank_bytes(QWEN3_8B, 4096, 8, offloaded, 2))
        reason = self.plan([200_000], offloaded)
        self.assertIn("offloaded to the CPU", reason)
        self.assertIn("does not fit even with --activation-checkpointing --logits-chunk-tokens 512", reason)

    def test_a_sequence_too_long_for_any_option_says_so(self):
        reason = self.plan([200_000], MemoryOptions(True, 512))
        self.assertIn("sequence 0 has 200,000 tokens", reason)
        self.assertIn("does not fit even with --activation-checkpointing --logits-chunk-tokens 512", reason)


class TrainerRefusalTest(unittest.TestCase):
    def test_the_service_refuses_before_the_step(self):
        from agentmath_models.init_model import init_model
        from agentmath_train.service import TrainerCore, TrainerSettings, validate

        folder = tempfile.mkdtemp(prefix="agentmath-memory-plan-")
        self.addCleanup(shutil.rmtree, folder, True)
        corpus = os.path.join(folder, "corpus.txt")
        with open(corpus, "w") as handle:
            handle.write(CORPUS)
        init_model("qwen3", os.path.join(folder, "m"), corpus, layers=1, hidden=32, vocab_size=300, seed=0)
        os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "RANK": "0", "WORLD_SIZE": "1"})
        if not dist.is_initialized():
            dist.init_process_group("gloo")
        self.addCleanup(dist.destroy_process_group)
        settings = TrainerSettings(model=os.path.join(folder, "m"), micro_batch_tokens=64, logits_chunk_tokens=0, memory_limit_bytes=100 * 2**20)
        core = TrainerCore(settings)
        short = encode_batch([[1, 2, 3, 4]], [[0, 1, 1, 1]], options={"learningRate": 1e-3})
        validate("/sft_step", {}, short, settings.model, core.vocab_size, core.check_fits)
        long = encode_batch([[1, 2, 3] * 10, [5] * 20_000], [[0, 1, 1] * 10, [1] * 20_000], options={"learningRate": 1e-3})
        with self.assertRaisesRegex(ValueError, r"sequence 1 has 20,000 tokens.*--logits-chunk-tokens 512"):
            validate("/sft_step", {}, long, settings.model, core.vocab_size, core.check_fits)
        self.assertEqual(core.runner.optimizer_steps, 0)
        self.assertEqual(len(decode_batch(long)), 2)


if __name__ == "__main__":
    unittest.main()
