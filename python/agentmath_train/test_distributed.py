"""Tests of the distributed trainer on CPU: the batch format, packing, 2-process FSDP2 against
1 process (which is not wrapped in FSDP2), sharded checkpoints (one process's resumed on 2) and
the Hugging Face export. Models are random-init Qwen3, Qwen3-MoE, Llama and the byte model built
from config (2 layers, hidden 64; the byte model with every option on), never downloaded."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict  # noqa: E402

from agentmath_train.batch_io import BatchFormatError, check_ranges, decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_models.byte_folder import init_byte_model  # noqa: E402
from agentmath_models.init_model import init_model  # noqa: E402
from agentmath_train.options import StepOptionsError, parse_step_options  # noqa: E402
from agentmath_train.packing import micro_batches, pack, packed_logprobs, split_across_ranks  # noqa: E402
from agentmath_train.losses import token_logprobs  # noqa: E402

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = "def f(x):\n    return x * 2\n\nprint(f(21))\n\nThe answer is \\boxed{42}.\n\nCompute 123 * 456 + 789.\n"
ARCHITECTURES = ("qwen3", "qwen3-moe", "llama", "byte-gpt")
# 1 vs 2 processes: the same sums in another order. Losses agree to ~1e-7 relative. After an
# SFT and a GRPO step at lr 1e-2 a weight can move by up to 2e-2; the two runs differ by up to
# ~6e-5 (Adam divides by √v, which turns rounding in near-zero gradients into visible update
# differences), so the bound is 2e-4: 1% of the largest possible move.
WEIGHT_TOLERANCE = 2e-4
LOSS_RELATIVE_TOLERANCE = 1e-5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TrainerTestCase(unittest.TestCase):
    folder: str
    models: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-train-test-")
        corpus = os.path.join(cls.folder, "corpus.txt")
        with open(corpus, "w") as handle:
            handle.write(CORPUS)
        cls.models = {}
        for arch in ARCHITECTURES:
            out = os.path.join(cls.folder, arch)
            if arch == "byte-gpt":
                os.makedirs(out)
                init_byte_model(out, seed=1, shape="test", token_shift=True, digit_index=True, number_index=True, digit_match=True)
            else:
                init_model(arch, out, corpus, layers=2, hidden=64, vocab_size=400, seed=1)
            cls.models[arch] = out

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)


class BatchFormatTest(unittest.TestCase):
    def test_round_trip_keeps_every_array_and_the_options(self):
        data = encode_batch([[1, 2, 3], [4, 5]], [[0, 1, 1], [0, 1]], [0.5, -1.0], [[0, -0.1, -0.2], [0, -0.3]], {"learningRate": 1e-3})
        batch = decode_batch(data)
        self.assertEqual(batch.lengths.tolist(), [3, 2])
        self.assertEqual(batch.input_ids.tolist(), [1, 2, 3, 4, 5])
        self.assertEqual(batch.loss_mask.tolist(), [0, 1, 1, 0, 1])
        np.testing.assert_allclose(batch.advantages, [0.5, -1.0])
        np.testing.assert_allclose(batch.old_logprobs, [0, -0.1, -0.2, 0, -0.3], rtol=1e-6)
        self.assertEqual(batch.options, {"learningRate": 1e-3})

    def test_truncated_or_foreign_bytes_are_refused(self):
        data = encode_batch([[1, 2, 3]], [[0, 1, 1]])
        with self.assertRaisesRegex(BatchFormatError, "truncated"):
            decode_batch(data[:-2])
        with self.assertRaisesRegex(BatchFormatError, "AMB1"):
            decode_batch(b"JUNK" + data[4:])
        with self.assertRaisesRegex(BatchFormatError, "past its end"):
            decode_batch(data + b"\0")

    def test_values_out_of_range_are_named_with_their_sequence_and_position(self):
        good = decode_batch(encode_batch([[1, 2, 3], [4, 399]], [[0, 1, 1], [0, 1]], [0.5, -1.0], [[0, -0.1, -0.2], [0, -0.3]]))
        check_ranges(good, vocab_size=400)
        cases = [
            (encode_batch([[1, 2, 3], [4, 400]], [[0, 1, 1], [0, 1]]), "input_ids: sequence 1 position 1 holds 400; expected a token id in 0..399"),
            (encode_batch([[1, -5, 3]], [[0, 1, 1]]), "input_ids: sequence 0 position 1 holds -5"),
            (encode_batch([[1, 2, 3]], [[0, 2, 1]]), "loss_mask: sequence 0 position 1 holds 2; expected 0 or 1"),
            (encode_batch([[1, 2]], [[0, 1]], [float("nan")], [[0, -0.1]]), "advantages: sequence 0 holds nan"),
            (encode_batch([[1, 2]], [[0, 1]], [1.0], [[0, float("-inf")]]), "oldLogprobs: sequence 0 position 1 holds -inf"),
        ]
        for data, message in cases:
            with self.assertRaisesRegex(BatchFormatError, message.replace("(", r"\(")):
                check_ranges(decode_batch(data), vocab_size=400)

    def test_header_counts_must_be_whole_numbers_at_least_zero(self):
        data = encode_batch([[1, 2, 3]], [[0, 1, 1]])
        header_length = int.from_bytes(data[4:8], "little")
        header = json.loads(data[8 : 8 + header_length])
        for field, value in (("sequences", -1), ("tokens", "3"), ("options", [])):
            text = json.dumps({**header, field: value}).encode()
            text += b" " * (-len(text) % 8)
            forged = data[:4] + len(text).to_bytes(4, "little") + text + data[8 + header_length :]
            with self.assertRaisesRegex(BatchFormatError, field):
                decode_batch(forged)

    def test_unknown_or_invalid_options_are_named(self):
        for options, name in (
            ({"learningRate": "0.1"}, "learningRate"),
            ({"learningRate": 1.0, "klCoef": -1}, "klCoef"),
            ({"learningRate": 1.0, "clipEpsilonHigh": float("nan")}, "clipEpsilonHigh"),
            ({"learningRate": 1.0, "dualClip": 0.5}, "dualClip"),
            ({"learningRate": 1.0, "referencePath": 3}, "referencePath"),
        ):
            with self.assertRaisesRegex(StepOptionsError, name):
                parse_step_options(options)
        self.assertIsNone(parse_step_options({"learningRate": 1.0, "dualClip": None}).dual_clip)
        with self.assertRaisesRegex(StepOptionsError, "clipLow"):
            parse_step_options({"learningRate": 1.0, "clipLow": 0.2})
        with self.assertRaisesRegex(StepOptionsError, "k1"):
            parse_step_options({"learningRate": 1.0, "klEstimator": "k1"})
        with self.assertRaisesRegex(StepOptionsError, "learningRate"):
            parse_step_options({})


class PackingTest(TrainerTestCase):
    def test_ranks_and_micro_batches_cover_every_sequence_once_within_the_budget(self):
        lengths = [23, 9, 31, 14, 5, 18, 40]
        shares = split_across_ranks(lengths, 2)
        self.assertEqual(sorted(shares[0] + shares[1]), list(range(len(lengths))))
        for share in shares:
            plan = micro_batches(share, lengths, 40)
            self.assertEqual(sorted(i for members in plan for i in members), sorted(share))
            for members in plan:
                self.assertTrue(sum(lengths[i] for i in members) <= 40 or len(members) == 1)

    def test_a_packed_micro_batch_gives_each_sequence_the_logprobs_it_gets_alone(self):
        for arch, folder in self.models.items():
            with self.subTest(arch=arch):
                model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
                ids, _, _, _ = fixed_batch(model.config.vocab_size)
                sequences = [torch.tensor(row) for row in ids]
                row = pack(sequences, torch.device("cpu"))
                with torch.no_grad():
                    packed = packed_logprobs(model(input_ids=row.input_ids, position_ids=row.position_ids, use_cache=False).logits, row, 0.7)[0]
                    for sequence, (start, end) in zip(sequences, row.spans):
                        alone = token_logprobs(model(input_ids=sequence[None]).logits, sequence[None], 0.7)[0]
                        torch.testing.assert_close(packed[start:end], alone, atol=2e-5, rtol=1e-5)


def run_equivalence_probe(test: unittest.TestCase, folder: str, models: list, processes: int, settings: dict) -> dict:
    """`equivalence_probe` under torchrun with `processes` gloo ranks and these trainer settings."""
    handle, out = tempfile.mkstemp(prefix=f"probe-{processes}-", suffix=".pt", dir=folder)
    os.close(handle)
    environment = {**os.environ, "PYTHONPATH": PYTHON_DIR, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(processes),
        "--master-port",
        str(free_port()),
        "-m",
        "agentmath_train.equivalence_probe",
        out,
        json.dumps(models),
        json.dumps(settings),
    ]
    finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    test.assertEqual(finished.returncode, 0, finished.stderr[-3000:])
    return torch.load(out)


class DistributedTest(TrainerTestCase):
    def run_probe(self, processes: int, settings: dict) -> dict:
        return run_equivalence_probe(self, self.folder, list(self.models.values()), processes, settings)

    def test_two_gloo_processes_give_the_loss_and_weights_of_one(self):
        # A budget of 20 tokens gives one rank 2 micro-batches and the other 3: the idle round
        # must join the KL reference's collectives too.
        one, two = self.run_probe(1, {}), self.run_probe(2, {"micro_batch_tokens": 20})
        for folder in self.models.values():
            with self.subTest(model=os.path.basename(folder)):
                for step in ("sft", "grpo"):
                    self.assertAlmostEqual(
                        one[folder][step]["loss"],
                        two[folder][step]["loss"],
                        delta=LOSS_RELATIVE_TOLERANCE * abs(one[folder][step]["loss"]),
                    )
                self.assertGreater(one[folder]["grpo"]["kl_ref"], 0.0)
                initial = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
                moved = 0.0
                for name, weight in one[folder]["state"].items():
                    difference = (weight - two[folder]["state"][name]).abs().max().item()
                    self.assertLess(difference, WEIGHT_TOLERANCE, name)
                    if name in initial:
                        moved = max(moved, (weight - initial[name]).abs().max().item())
                self.assertGreater(moved, 100 * WEIGHT_TOLERANCE, "the steps must move the weights")


def start_single_process_group() -> None:
    """A world of one gloo process, for tests that drive a TrainerCore in this process."""
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "RANK": "0", "WORLD_SIZE": "1"})
    if not dist.is_initialized():
        dist.init_process_group("gloo")


def stop_process_group() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


class OneProcessGroupTestCase(TrainerTestCase):
    """The models, and a one-process gloo group in this process for the trainer's code."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        start_single_process_group()

    @classmethod
    def tearDownClass(cls) -> None:
        stop_process_group()
        super().tearDownClass()


class CheckpointTest(OneProcessGroupTestCase):
    def core(self, folder):
        from agentmath_train.service import TrainerCore, TrainerSettings

        return TrainerCore(TrainerSettings(model=folder, micro_batch_tokens=64))

    def step(self, core, seed):
        ids, masks, _, _ = fixed_batch(core.model.config.vocab_size, seed)
        batch = decode_batch(encode_batch(ids, masks, options={"learningRate": 5e-3}))
        return core.runner.sft_step(batch, parse_step_options(batch.options))

    def full_state(self, core):
        return get_model_state_dict(core.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def test_resume_from_a_sharded_checkpoint_equals_an_uninterrupted_run(self):
        from agentmath_train.checkpoint import load_checkpoint, read_checkpoint_state, save_checkpoint

        folder = self.models["qwen3"]
        straight = self.core(folder)
        for seed in (1, 2, 3):
            self.step(straight, seed)
        interrupted = self.core(folder)
        self.step(interrupted, 1)
        checkpoint = os.path.join(self.folder, "checkpoint-1")
        save_checkpoint(checkpoint, interrupted.model, interrupted.optimizer, {"policyVersion": 1, "optimizerSteps": 1})
        self.assertEqual(read_checkpoint_state(checkpoint)["policyVersion"], 1)
        del interrupted
        resumed = self.core(folder)
        state = load_checkpoint(checkpoint, resumed.model, resumed.optimizer)
        self.assertEqual(state["optimizerSteps"], 1)
        for seed in (2, 3):
            self.step(resumed, seed)
        expected, actual = self.full_state(straight), self.full_state(resumed)
        for name in expected:
            torch.testing.assert_close(actual[name], expected[name], atol=1e-6, rtol=1e-6, msg=name)

    def test_a_checkpoint_of_one_unwrapped_rank_resumes_on_two_fsdp2_ranks(self):
        from torch.distributed.fsdp import FSDPModule

        from agentmath_train.checkpoint import save_checkpoint
        from agentmath_train.equivalence_probe import probe_steps

        folder = self.models["qwen3"]
        one = self.core(folder)
        self.assertNotIsInstance(one.model, FSDPModule)  # one fp32 rank: `parallelize.needs_fsdp`
        self.step(one, 1)
        checkpoint = os.path.join(self.folder, "checkpoint-one-rank")
        save_checkpoint(checkpoint, one.model, one.optimizer, {"policyVersion": 1, "optimizerSteps": 1})
        expected = probe_steps(one)["state"]
        resumed = run_equivalence_probe(self, self.folder, [folder], 2, {"resume": checkpoint})[folder]["state"]
        for name, weight in expected.items():
            self.assertLess((resumed[name] - weight).abs().max().item(), WEIGHT_TOLERANCE, name)

    def test_ppo_mini_batches_and_epochs_take_one_update_each_with_the_proximal_policy_scored_once(self):
        core = self.core(self.models["qwen3-moe"])
        ids, masks, _, advantages = fixed_batch(core.model.config.vocab_size, 5)
        scored = core.runner.score_sequences(decode_batch(encode_batch(ids, masks)))
        olds = [row.tolist() for row in scored]
        options = {"learningRate": 1e-2, "miniBatches": 2, "epochs": 2, "proximal": "recompute", "temperature": 0.8}
        batch = decode_batch(encode_batch(ids, masks, advantages, olds, options=options))
        result = core.runner.grpo_step(batch, parse_step_options(batch.options))
        self.assertEqual(result["updates"], 4)
        self.assertEqual(result["policy_version"], 1)
        self.assertEqual(core.runner.optimizer_steps, 4)
        # Later updates see moved weights: the ratio leaves 1 and clipping can act.
        self.assertGreater(abs(result["mean_ratio"] - 1.0), 1e-4)
        self.assertIn("off_policy_weight", result)

    def test_the_engine_trainer_logprob_gap_is_reported_per_step(self):
        core = self.core(self.models["qwen3"])
        ids, masks, _, advantages = fixed_batch(core.model.config.vocab_size, 6)
        scored = core.runner.score_sequences(decode_batch(encode_batch(ids, masks)))
        # An "engine" whose logprobs sit 0.05 below the trainer's, one token 0.3 below.
        olds = [(row - 0.05).tolist() for row in scored]
        first_trained = next(t for t in range(1, len(masks[0])) if masks[0][t])
        olds[0][first_trained] = float(scored[0][first_trained]) - 0.3
        for proximal in ("behaviour", "recompute"):
            with self.subTest(proximal=proximal):
                options = {"learningRate": 0.0, "proximal": proximal}
                batch = decode_batch(encode_batch(ids, masks, advantages, olds, options=options))
                result = core.runner.grpo_step(batch, parse_step_options(batch.options))
                trained = sum(sum(mask[1:]) for mask in masks)
                self.assertAlmostEqual(result["logprob_gap_max"], 0.3, places=4)
                self.assertAlmostEqual(result["logprob_gap_mean"], (0.05 * (trained - 1) + 0.3) / trained, places=4)
                self.assertNotIn("stale_logprob_gap_mean", result)

    def test_tokens_sampled_by_older_weights_are_reported_apart_from_the_numeric_gap(self):
        core = self.core(self.models["qwen3"])
        ids, masks, _, advantages = fixed_batch(core.model.config.vocab_size, 6)
        scored = core.runner.score_sequences(decode_batch(encode_batch(ids, masks)))
        # Fresh tokens sit 0.05 below the trainer; sequence 0 continues a partial rollout: its
        # first half was sampled one version back, by weights 0.3 away.
        olds = [(row - 0.05).tolist() for row in scored]
        lags = [[0] * len(mask) for mask in masks]
        half = len(masks[0]) // 2
        for t in range(half):
            olds[0][t] = float(scored[0][t]) - 0.3
            lags[0][t] = 1
        fresh = sum(sum(mask[1:]) for mask in masks) - sum(masks[0][1:half])
        stale = sum(masks[0][1:half])
        self.assertGreater(stale, 0)
        for proximal in ("behaviour", "recompute"):
            with self.subTest(proximal=proximal):
                options = {"learningRate": 0.0, "proximal": proximal}
                batch = decode_batch(encode_batch(ids, masks, advantages, olds, options=options, policy_lag=lags))
                result = core.runner.grpo_step(batch, parse_step_options(batch.options))
                self.assertGreater(fresh, 0)
                self.assertAlmostEqual(result["logprob_gap_mean"], 0.05, places=4)
                self.assertAlmostEqual(result["logprob_gap_max"], 0.05, places=4)
                self.assertAlmostEqual(result["stale_logprob_gap_mean"], 0.3, places=4)
                self.assertAlmostEqual(result["stale_logprob_gap_max"], 0.3, places=4)

    def test_an_uncommitted_checkpoint_is_not_loaded(self):
        from agentmath_train.checkpoint import load_checkpoint

        empty = os.path.join(self.folder, "not-committed")
        os.makedirs(empty, exist_ok=True)
        core = self.core(self.models["llama"])
        with self.assertRaisesRegex(FileNotFoundError, "not a committed checkpoint"):
            load_checkpoint(empty, core.model, core.optimizer)

    def test_the_export_loads_in_transformers_and_gives_the_trainers_logits(self):
        from agentmath_train.checkpoint import export_hugging_face

        for arch in ARCHITECTURES:
            with self.subTest(arch=arch):
                core = self.core(self.models[arch])
                self.step(core, 4)
                out = os.path.join(self.folder, f"export-{arch}")
                export_hugging_face(out, core.model, self.models[arch])
                self.assertTrue(os.path.isfile(os.path.join(out, "tokenizer.json")))
                loaded = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
                ids = torch.tensor([[5, 17, 42, 7, 99, 3]])
                core.model.eval()
                with torch.no_grad():
                    expected = core.model(input_ids=ids).logits
                    actual = loaded(input_ids=ids).logits
                torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
                initial = transformers.AutoModelForCausalLM.from_pretrained(self.models[arch], dtype=torch.float32).eval()
                with torch.no_grad():
                    self.assertGreater((initial(input_ids=ids).logits - actual).abs().max().item(), 1e-4)


if __name__ == "__main__":
    unittest.main()
