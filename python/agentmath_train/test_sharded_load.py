"""The sharded load (meta → fully_shard → each rank reads its rows) gives the model that
`from_pretrained` gives: the same parameters and logits, with 1 process and with 2 gloo
processes; tied and untied heads, a MoE's fused experts, an uneven split, a bf16 file of several
shards into fp32 master weights; a missing or an extra tensor is an error naming it; the KL
reference is loaded at the start in the compute dtype when named; the CPU-offload wiring trains
like the plain placement. Models are random-init (2 layers, hidden 64), never downloaded."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import unittest
from unittest import mock

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict  # noqa: E402
from torch.distributed.tensor import DTensor  # noqa: E402

from agentmath_train.batch_io import decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_models.init_model import init_model  # noqa: E402
from agentmath_train.model import Placement  # noqa: E402
from agentmath_train.options import parse_step_options  # noqa: E402
from agentmath_train.parallelize import parallelize  # noqa: E402
from agentmath_train.sharded_load import CheckpointMismatchError, sharded_model  # noqa: E402
from agentmath_train.test_distributed import PYTHON_DIR, OneProcessGroupTestCase, TrainerTestCase, free_port  # noqa: E402

CPU = Placement(torch.device("cpu"), torch.float32, "gloo")
IDS = torch.tensor([[5, 17, 42, 7, 99, 3, 250, 11]])


def full_state(model: torch.nn.Module) -> dict:
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_sharded(folder: str, where: Placement = CPU) -> torch.nn.Module:
    return sharded_model(folder, where, torch.float32, lambda model: parallelize(model, where))


class ShardedLoadTest(OneProcessGroupTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        corpus = os.path.join(cls.folder, "corpus.txt")
        # An odd number of embedding rows: 2 ranks split them unevenly (FSDP2 pads the last).
        uneven = os.path.join(cls.folder, "llama-uneven")
        init_model("llama", uneven, corpus, layers=2, hidden=64, vocab_size=400, seed=2, embedding_rows=401)
        cls.models["llama-uneven"] = uneven
        # The same Qwen3 saved in bf16, in several files with an index.
        plain = transformers.AutoModelForCausalLM.from_pretrained(cls.models["qwen3"], dtype=torch.bfloat16)
        split = os.path.join(cls.folder, "qwen3-bf16-split")
        plain.save_pretrained(split, max_shard_size="40KB")
        cls.models["qwen3-bf16-split"] = split

    def assert_same_model(self, folder: str, model: torch.nn.Module) -> None:
        plain = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        expected, actual = plain.state_dict(), full_state(model)
        self.assertEqual(sorted(actual), sorted(expected))
        for name, tensor in expected.items():
            self.assertEqual(actual[name].dtype, torch.float32, name)
            torch.testing.assert_close(actual[name], tensor, atol=0, rtol=0, msg=name)
        model.eval()
        with torch.no_grad():
            torch.testing.assert_close(model(input_ids=IDS).logits, plain(input_ids=IDS).logits, atol=1e-6, rtol=1e-6)

    def test_one_process_loads_what_from_pretrained_loads(self):
        # One fp32 process leaves the model unwrapped (`parallelize.needs_fsdp`); wrapped, it is
        # the FSDP2 path every run of several ranks (or in bf16) takes.
        names = ("qwen3", "qwen3-moe", "llama", "llama-uneven", "qwen3-bf16-split")
        for name, wrapped in itertools.product(names, (False, True)):
            forced = mock.patch("agentmath_train.parallelize.needs_fsdp", return_value=True)
            with self.subTest(model=name, wrapped=wrapped), forced if wrapped else contextlib.nullcontext():
                folder = self.models[name]
                model = load_sharded(folder)
                self.assertEqual(isinstance(model.model.embed_tokens.weight, DTensor), wrapped)
                self.assertTrue(model.model.rotary_emb.inv_freq.isfinite().all())
                tied = model.lm_head.weight is model.model.embed_tokens.weight
                self.assertEqual(tied, name.startswith("qwen3") and name != "qwen3-moe")
                self.assertEqual(len(os.listdir(folder)) > 6, name == "qwen3-bf16-split")
                self.assert_same_model(folder, model)

    def test_files_closed_and_opened_again_between_reads_give_the_same_model(self):
        # The load lets a file's touched pages go every RELEASE_BYTES; here after every tensor.
        for name in ("qwen3-moe", "qwen3-bf16-split"):
            with self.subTest(model=name), mock.patch("agentmath_train.sharded_load.RELEASE_BYTES", 1):
                self.assert_same_model(self.models[name], load_sharded(self.models[name]))

    def broken_copy(self, name: str, edit) -> str:
        folder = os.path.join(self.folder, f"broken-{name}-{edit.__name__}")
        shutil.copytree(self.models[name], folder, dirs_exist_ok=True)
        path = os.path.join(folder, "model.safetensors")
        tensors = load_file(path)
        edit(tensors)
        save_file(tensors, path, metadata={"format": "pt"})
        return folder

    def test_a_missing_or_foreign_tensor_is_an_error_naming_it(self):
        def drop_a_norm(tensors):
            del tensors["model.layers.1.post_attention_layernorm.weight"]

        def drop_the_head(tensors):
            del tensors["lm_head.weight"]

        def add_a_stranger(tensors):
            tensors["model.layers.0.mlp.extra_proj.weight"] = torch.zeros(2, 2)

        def widen_the_norm(tensors):
            tensors["model.norm.weight"] = torch.ones(65)

        cases = (
            ("qwen3", drop_a_norm, "has no tensor for the model's model.layers.1.post_attention_layernorm.weight"),
            ("llama", drop_the_head, "has no tensor for the model's lm_head.weight"),
            ("qwen3", add_a_stranger, "has no parameter for: model.layers.0.mlp.extra_proj.weight"),
            ("llama", widen_the_norm, r"model.norm.weight has shape \[65\]; the model's model.norm.weight has \[64\]"),
        )
        for name, edit, message in cases:
            with self.subTest(edit=edit.__name__):
                with self.assertRaisesRegex(CheckpointMismatchError, message):
                    load_sharded(self.broken_copy(name, edit))

    def test_a_folder_without_safetensors_is_refused_naming_the_fix(self):
        folder = os.path.join(self.folder, "bin-only")
        os.makedirs(folder, exist_ok=True)
        shutil.copy(os.path.join(self.models["llama"], "config.json"), folder)
        torch.save(transformers.AutoModelForCausalLM.from_pretrained(self.models["llama"]).state_dict(), os.path.join(folder, "pytorch_model.bin"))
        with self.assertRaisesRegex(FileNotFoundError, "pytorch_model.bin: re-save it"):
            load_sharded(folder)

    def test_the_named_reference_is_loaded_at_the_start_in_the_compute_dtype(self):
        from agentmath_train.service import TrainerCore, TrainerSettings

        folder = self.models["llama"]
        named = TrainerCore(TrainerSettings(model=folder, reference=folder, compute_dtype="bfloat16"))
        self.assertTrue(named.runner.reference_loaded)
        reference = named.runner.reference_model()
        self.assertEqual({parameter.dtype for parameter in reference.parameters()}, {torch.bfloat16})
        self.assertTrue(all(isinstance(p, DTensor) and not p.requires_grad for p in reference.parameters()))
        self.assertFalse(reference.training)
        plain = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).state_dict()
        for name, tensor in full_state(reference).items():
            torch.testing.assert_close(tensor, plain[name], atol=0, rtol=0, msg=name)
        # Not named: a service (train sft's) holds no reference until a step asks for KL.
        self.assertFalse(TrainerCore(TrainerSettings(model=folder)).runner.reference_loaded)

    def test_cpu_offload_wiring_trains_like_the_plain_placement(self):
        # placement() never offloads on CPU; a CPU placement with offload runs the same path a GPU's does.
        from agentmath_train.service import TrainerCore, TrainerSettings

        folder = self.models["qwen3"]
        results = []
        for offload in (False, True):
            where = Placement(torch.device("cpu"), torch.float32, "gloo", cpu_offload=offload)
            core = TrainerCore(TrainerSettings(model=folder, micro_batch_tokens=64, reference=folder), where)
            ids, masks, _, _ = fixed_batch(core.model.config.vocab_size, 3)
            batch = decode_batch(encode_batch(ids, masks, options={"learningRate": 5e-3}))
            result = core.runner.sft_step(batch, parse_step_options(batch.options))
            results.append((result["loss"], full_state(core.model)))
        self.assertAlmostEqual(results[0][0], results[1][0], places=6)
        for name, tensor in results[0][1].items():
            torch.testing.assert_close(results[1][1][name], tensor, atol=1e-6, rtol=1e-6, msg=name)


class TwoProcessShardedLoadTest(TrainerTestCase):
    def test_two_gloo_processes_each_hold_half_and_give_the_full_model(self):
        folders = [self.models[name] for name in ("qwen3", "qwen3-moe", "llama")]
        corpus = os.path.join(self.folder, "corpus.txt")
        uneven = os.path.join(self.folder, "llama-uneven")
        init_model("llama", uneven, corpus, layers=2, hidden=64, vocab_size=400, seed=2, embedding_rows=401)
        folders.append(uneven)
        out = os.path.join(self.folder, "sharded-2.pt")
        environment = {**os.environ, "PYTHONPATH": PYTHON_DIR, "OMP_NUM_THREADS": "1"}
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(free_port()),
            "-m",
            "agentmath_train.test_sharded_load",
            "--probe",
            out,
            json.dumps(folders),
        ]
        finished = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
        self.assertEqual(finished.returncode, 0, finished.stderr[-3000:])
        results = torch.load(out)
        for folder in folders:
            with self.subTest(model=os.path.basename(folder)):
                result = results[folder]
                plain = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
                rows = plain.model.embed_tokens.weight.shape[0]
                # Each rank holds its rows only: ceil(V/2) on rank 0, the rest on rank 1.
                self.assertEqual([local[0] for local in result["embedding_rows"]], [(rows + 1) // 2, rows // 2])
                expected = plain.state_dict()
                self.assertEqual(sorted(result["state"]), sorted(expected))
                for name, tensor in expected.items():
                    torch.testing.assert_close(result["state"][name], tensor, atol=0, rtol=0, msg=name)
                with torch.no_grad():
                    torch.testing.assert_close(result["logits"], plain(input_ids=IDS).logits, atol=1e-5, rtol=1e-5)


def probe(out: str, folders: list) -> None:
    """Under torchrun: each folder through the sharded load; rank 0 writes the gathered state,
    the logits and every rank's embedding shard shape."""
    dist.init_process_group("gloo")
    results = {}
    for folder in folders:
        model = load_sharded(folder)
        shapes = [None] * dist.get_world_size()
        dist.all_gather_object(shapes, tuple(model.model.embed_tokens.weight.to_local().shape))
        state = full_state(model)
        model.eval()
        with torch.no_grad():
            logits = model(input_ids=IDS).logits
        results[folder] = {"state": state, "logits": logits, "embedding_rows": shapes}
    if dist.get_rank() == 0:
        torch.save(results, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--probe":
        probe(sys.argv[2], json.loads(sys.argv[3]))
    else:
        unittest.main()
