"""The engine's side of SGLang's process-group weight update, on CPU (gloo), against a sender in
another process that forms its side and broadcasts as a trainer does (verl's and slime's copy of
SGLang's `init_custom_process_group`, rank 0 hosting the store: test/scripted_sglang.py's copy,
nothing imported from the trainer):
- the weight-update session as SGLang 0.5.23 keeps it: an update outside one is refused before
  anything is received, a second begin and an end without a begin are refused;
- a Qwen3-MoE (experts fused in memory) takes the checkpoint's per-expert names, a bucket holding
  only some experts of a layer included, and then serves exactly the sent checkpoint;
- a name the model does not have is refused naming it, after its tensor was received (the group
  stays in step); the group is destroyed on request."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import socket
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from agentmath_engine.app import WorkerOptions, build_worker  # noqa: E402
from agentmath_engine.hf_fixtures import make_models  # noqa: E402
from agentmath_engine.weight_update_group import NO_SESSION, SESSION_OPEN, SESSION_REQUIRED, WeightUpdateReceiver  # noqa: E402


SCRIPTED_SGLANG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "scripted_sglang.py")


def send_as_trainer(port: int, group_name: str, tensors_path: str, rounds: list) -> None:
    """Rank 0 of a 2-member group, as verl's and slime's trainers join (their copy of SGLang's
    `init_custom_process_group`; here test/scripted_sglang.py's): hosts the store on `port`, then
    broadcasts each round's tensors in order, one synchronous broadcast per tensor."""
    import importlib.util

    import torch.distributed as dist

    spec = importlib.util.spec_from_file_location("scripted_sglang", SCRIPTED_SGLANG)
    scripted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scripted)
    group = scripted.init_custom_process_group("gloo", f"tcp://127.0.0.1:{port}", 2, 0, group_name)
    tensors = load_file(tensors_path)
    for names in rounds:
        for name in names:
            dist.broadcast(tensors[name].contiguous(), src=0, group=group)
    dist.destroy_process_group(group)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bucket(tensors: dict, names: list, **extra) -> dict:
    return {
        "names": names,
        "dtypes": [str(tensors[name].dtype).removeprefix("torch.") for name in names],
        "shapes": [list(tensors[name].shape) for name in names],
        "group_name": "g",
        **extra,
    }


class WeightUpdateGroupTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-weight-update-group-")
        cls.model = make_models(cls.folder, architectures=("qwen3-moe",), hidden=32)["qwen3-moe-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_a_session_per_update_and_per_expert_names_into_fused_experts(self):
        worker = build_worker(WorkerOptions(model=self.model, device="cpu", max_running_requests=2))
        self.addCleanup(worker.engine.shutdown)
        receiver = WeightUpdateReceiver(worker)
        checkpoint = load_file(os.path.join(self.model, "model.safetensors"))
        generator = torch.Generator().manual_seed(3)
        sent = {name: tensor + 0.05 * torch.randn(tensor.shape, generator=generator) for name, tensor in checkpoint.items()}
        sent["model.no_such.weight"] = torch.ones(2, 2)
        tensors_path = os.path.join(self.folder, "sent.safetensors")
        save_file(sent, tensors_path)
        some_experts = [f"model.layers.0.mlp.experts.{e}.{p}.weight" for e in (0, 1) for p in ("gate_proj", "up_proj", "down_proj")]
        rounds = [
            some_experts + ["model.layers.0.self_attn.q_proj.weight"],
            ["model.norm.weight", "model.no_such.weight"],
            [name for name in checkpoint if name not in some_experts],
        ]
        port = free_port()
        sender = multiprocessing.get_context("spawn").Process(target=send_as_trainer, args=(port, "g", tensors_path, rounds))
        sender.start()
        self.addCleanup(lambda: sender.kill() if sender.is_alive() else None)
        pool = ThreadPoolExecutor(1)
        self.addCleanup(pool.shutdown, wait=False)

        def call(method, body):
            return pool.submit(method, body).result(timeout=120)

        joined = call(
            receiver.init_group,
            {"master_address": "127.0.0.1", "master_port": port, "rank_offset": 1, "world_size": 2,
             "group_name": "g", "backend": "gloo"},
        )
        self.assertEqual(joined, (200, {"success": True, "message": "Succeeded to initialize custom process group."}))
        # Outside a session: refused at once, nothing received (a receive would wait for round 1).
        self.assertEqual(call(receiver.update, bucket(sent, rounds[0])), (400, {"success": False, "message": SESSION_REQUIRED}))
        self.assertEqual(call(receiver.end, {}), (400, {"success": False, "message": NO_SESSION}))
        self.assertEqual(call(receiver.begin, {}), (200, {"success": True, "message": "Success"}))
        self.assertEqual(call(receiver.begin, {}), (400, {"success": False, "message": SESSION_OPEN}))

        status, answer = call(receiver.update, bucket(sent, rounds[0]))
        self.assertEqual((status, answer["success"]), (200, True), answer)
        experts = worker.backend.model.model.layers[0].mlp.experts
        intermediate = experts.down_proj.shape[-1]
        for expert in (0, 1):
            torch.testing.assert_close(experts.gate_up_proj[expert, :intermediate], sent[f"model.layers.0.mlp.experts.{expert}.gate_proj.weight"])
            torch.testing.assert_close(experts.gate_up_proj[expert, intermediate:], sent[f"model.layers.0.mlp.experts.{expert}.up_proj.weight"])
            torch.testing.assert_close(experts.down_proj[expert], sent[f"model.layers.0.mlp.experts.{expert}.down_proj.weight"])
        # Experts 2 and 3 of the layer were not in the bucket: untouched.
        torch.testing.assert_close(experts.down_proj[2], checkpoint["model.layers.0.mlp.experts.2.down_proj.weight"])

        status, answer = call(receiver.update, bucket(sent, rounds[1]))
        self.assertEqual((status, answer["success"]), (400, False))
        self.assertIn("model.no_such.weight", answer["message"])
        status, answer = call(receiver.update, bucket(sent, rounds[2], weight_version="7"))
        self.assertEqual((status, answer), (200, {"success": True, "message": "Succeeded to update parameter online. Weight version updated to 7."}))
        self.assertEqual(worker.engine.policy_version, 7)
        self.assertEqual(call(receiver.end, {}), (200, {"success": True, "message": "Success"}))
        sender.join(60)
        self.assertEqual(sender.exitcode, 0, "the sender's broadcasts all completed: the group stayed in step")

        # The served model is the sent checkpoint, loaded by transformers' own conversion.
        reference_folder = os.path.join(self.folder, "sent-model")
        os.makedirs(reference_folder)
        shutil.copy(os.path.join(self.model, "config.json"), reference_folder)
        save_file({name: sent[name] for name in checkpoint}, os.path.join(reference_folder, "model.safetensors"))
        reference = transformers.AutoModelForCausalLM.from_pretrained(reference_folder, dtype=torch.float32).state_dict()
        served = worker.backend.model.state_dict()
        self.assertEqual(sorted(served), sorted(reference))
        for name, tensor in reference.items():
            torch.testing.assert_close(served[name], tensor, atol=0, rtol=0, msg=name)

        destroyed = {"success": True, "message": "Succeeded to destroy custom process group."}
        self.assertEqual(call(receiver.destroy_group, {"group_name": "g"}), (200, destroyed))
        missing = {"success": False, "message": "The group to be destroyed does not exist."}
        self.assertEqual(call(receiver.destroy_group, {"group_name": "g"}), (400, missing))

    def test_a_disk_load_of_a_moe_export_takes_the_per_expert_names(self):
        worker = build_worker(WorkerOptions(model=self.model, device="cpu", max_running_requests=2))
        self.addCleanup(worker.engine.shutdown)
        saved = os.path.join(self.folder, "saved-moe")
        model = transformers.AutoModelForCausalLM.from_pretrained(self.model, dtype=torch.float32)
        with torch.no_grad():
            model.model.layers[1].mlp.experts.down_proj.add_(1.0)
        model.save_pretrained(saved)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(self.model, name), saved)
        self.assertIn("model.layers.1.mlp.experts.3.down_proj.weight", load_file(os.path.join(saved, "model.safetensors")))
        reply = worker.update_weights_from_disk({"model_path": saved, "weight_version": "4"})
        self.assertEqual(reply.status, 200, json.dumps(reply.payload))
        torch.testing.assert_close(worker.backend.model.model.layers[1].mlp.experts.down_proj, model.model.layers[1].mlp.experts.down_proj)


if __name__ == "__main__":
    unittest.main()
