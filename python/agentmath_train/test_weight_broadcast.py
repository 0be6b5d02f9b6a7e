"""The trainer's side of the weight update over a process group, on CPU (gloo):
- the plan names every tensor as the checkpoint does: its names and shapes are the exported
  safetensors' (dense Qwen3 with tied embeddings, and Qwen3-MoE, whose experts transformers 5
  fuses in memory);
- what is pushed is the export: a receiver in another process, which forms its side of the group
  and receives as SGLang 0.5.23 does (test/scripted_sglang.py's `init_custom_process_group`, one
  async broadcast per name; nothing imported from the trainer), gets exactly the tensors of the
  safetensors exported at the same step;
- the group is destroyed on request, and the export is in the training compute dtype.
The trainer is one process (world size 1); the long real-process check is scripts/weight-sync-e2e.ts."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import tempfile
import unittest

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict  # noqa: E402

from agentmath_train.batch_io import decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_models.init_model import init_model  # noqa: E402
from agentmath_train.options import parse_step_options  # noqa: E402
from agentmath_train.test_distributed import CORPUS, start_single_process_group, stop_process_group  # noqa: E402
from agentmath_train.weight_broadcast import plan_buckets  # noqa: E402


SCRIPTED_SGLANG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "scripted_sglang.py")


def receive_as_sglang(port: int, group_name: str, buckets: list, out: str) -> None:
    """SGLang 0.5.23's engine side, in a process of its own: test/scripted_sglang.py's copy of
    `init_custom_process_group` at rank 1, then per bucket one `broadcast(src=0, async_op=True)`
    per name and a wait on each (`receive_weights_from_distributed`); what arrived is saved to `out`."""
    import importlib.util

    import torch.distributed as dist

    spec = importlib.util.spec_from_file_location("scripted_sglang", SCRIPTED_SGLANG)
    scripted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scripted)
    group = scripted.init_custom_process_group("gloo", f"tcp://127.0.0.1:{port}", 2, 1, group_name)
    received = {}
    for bucket in buckets:
        handles = []
        for name, dtype, shape in zip(bucket["names"], bucket["dtypes"], bucket["shapes"]):
            tensor = torch.empty(shape, dtype=getattr(torch, dtype))
            handles.append(dist.broadcast(tensor, src=0, group=group, async_op=True))
            received[name] = tensor
        for handle in handles:
            handle.wait()
    save_file(received, out)
    dist.destroy_process_group(group)


class WeightBroadcastTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-weight-broadcast-")
        corpus = os.path.join(cls.folder, "corpus.txt")
        with open(corpus, "w") as handle:
            handle.write(CORPUS)
        cls.models = {}
        for arch in ("qwen3", "qwen3-moe"):
            cls.models[arch] = os.path.join(cls.folder, arch)
            init_model(arch, cls.models[arch], corpus, layers=2, hidden=32, vocab_size=300, seed=1)
        start_single_process_group()

    @classmethod
    def tearDownClass(cls) -> None:
        stop_process_group()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def trained_core(self, arch: str):
        from agentmath_train.service import TrainerCore, TrainerSettings

        core = TrainerCore(TrainerSettings(model=self.models[arch], micro_batch_tokens=64))
        ids, masks, _, _ = fixed_batch(core.model.config.vocab_size, 3)
        batch = decode_batch(encode_batch(ids, masks, options={"learningRate": 5e-3}))
        core.runner.sft_step(batch, parse_step_options(batch.options))
        return core

    def test_the_plan_names_every_tensor_as_the_checkpoint_does(self):
        for arch, path in self.models.items():
            with self.subTest(arch=arch):
                model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
                with torch.device("meta"):
                    layout = transformers.AutoModelForCausalLM.from_config(model.config)
                buckets = plan_buckets(model, layout, torch.bfloat16, bucket_bytes=20_000)
                planned = {spec.name: spec.shape for bucket in buckets for p in bucket for spec in p.tensors}
                saved = load_file(os.path.join(path, "model.safetensors"))
                self.assertEqual(planned, {name: list(tensor.shape) for name, tensor in saved.items()})
                self.assertGreater(len(buckets), 2)
                for bucket in buckets:
                    nbytes = sum(torch.Size(spec.shape).numel() * 2 for p in bucket for spec in p.tensors)
                    self.assertTrue(len(bucket) == 1 or nbytes <= 20_000, [p.parameter for p in bucket])
                self.assertEqual({spec.dtype for bucket in buckets for p in bucket for spec in p.tensors}, {"bfloat16"})
        names = list(planned)
        self.assertIn("model.layers.0.mlp.experts.3.gate_proj.weight", names)
        self.assertNotIn("model.layers.0.mlp.experts.gate_up_proj", names)

    def test_what_is_pushed_is_the_export_of_the_same_step(self):
        from agentmath_train.checkpoint import export_hugging_face

        core = self.trained_core("qwen3-moe")
        opened = core.broadcaster.open({"group_name": "g-moe", "world_size": 2, "backend": "gloo", "bucket_bytes": 30_000})
        self.assertGreater(len(opened["buckets"]), 1)
        out = os.path.join(self.folder, "received.safetensors")
        receiver = multiprocessing.get_context("spawn").Process(
            target=receive_as_sglang, args=(opened["master_port"], "g-moe", opened["buckets"], out)
        )
        receiver.start()
        try:
            core.broadcaster.join({"group_name": "g-moe"})
            sent = core.broadcaster.broadcast({"group_name": "g-moe"})
            receiver.join(120)
            self.assertEqual(receiver.exitcode, 0)
        finally:
            if receiver.is_alive():
                receiver.kill()
        self.assertEqual(sent["tensors"], sum(len(bucket["names"]) for bucket in opened["buckets"]))
        exported = os.path.join(self.folder, "export-moe")
        export_hugging_face(exported, core.model, self.models["qwen3-moe"], torch.float32)
        pushed = load_file(out)
        written = load_file(os.path.join(exported, "model.safetensors"))
        self.assertEqual(sorted(pushed), sorted(written))
        for name, tensor in written.items():
            torch.testing.assert_close(pushed[name], tensor, atol=0, rtol=0, msg=name)
        initial = load_file(os.path.join(self.models["qwen3-moe"], "model.safetensors"))
        moved = max((written[name] - initial[name]).abs().max().item() for name in written)
        self.assertGreater(moved, 1e-4, "the step must move the weights")
        self.assertEqual(core.broadcaster.destroy({"group_name": "g-moe"}), {"group_name": "g-moe", "destroyed": True})
        with self.assertRaisesRegex(ValueError, "not open"):
            core.broadcaster.broadcast({"group_name": "g-moe"})

    def test_the_export_is_in_the_compute_dtype_and_its_config_says_so(self):
        from agentmath_train.checkpoint import export_hugging_face

        core = self.trained_core("qwen3")
        out = os.path.join(self.folder, "export-bf16")
        export_hugging_face(out, core.model, self.models["qwen3"], torch.bfloat16)
        with open(os.path.join(out, "config.json")) as handle:
            config = json.load(handle)
        self.assertEqual((config["dtype"], config["torch_dtype"]), ("bfloat16", "bfloat16"))
        tensors = load_file(os.path.join(out, "model.safetensors"))
        self.assertEqual({tensor.dtype for tensor in tensors.values()}, {torch.bfloat16})
        loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
        self.assertEqual(loaded.dtype, torch.bfloat16)
        trained = get_model_state_dict(core.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        for name, tensor in tensors.items():
            torch.testing.assert_close(tensor, trained[name].to(torch.bfloat16), atol=0, rtol=0, msg=name)


if __name__ == "__main__":
    unittest.main()
