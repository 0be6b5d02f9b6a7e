"""Weights over the wire on CPU (gloo): the trainer's broadcaster against a real worker serving a
Hugging Face model over HTTP (SGLang's `/init_weights_update_group` and
`/update_weights_from_distributed`), and the export in the training compute dtype. The trainer
is one process (world size 1) and the worker serves from threads of the same test process; the
long real-process check is scripts/weight-sync-e2e.sh."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import unittest
import urllib.request
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict  # noqa: E402

from agentmath_train.batch_io import decode_batch, encode_batch  # noqa: E402
from agentmath_train.equivalence_probe import fixed_batch  # noqa: E402
from agentmath_models.init_model import init_model  # noqa: E402
from agentmath_train.options import parse_step_options  # noqa: E402
from agentmath_train.test_distributed import CORPUS, start_single_process_group, stop_process_group  # noqa: E402
from agentmath_train.weight_broadcast import plan_buckets  # noqa: E402
from agentmath_engine.app import WorkerOptions, build_worker  # noqa: E402
from agentmath_engine.server import serve  # noqa: E402


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


class WeightBroadcastTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-weight-broadcast-")
        corpus = os.path.join(cls.folder, "corpus.txt")
        with open(corpus, "w") as handle:
            handle.write(CORPUS)
        cls.model = os.path.join(cls.folder, "qwen3")
        init_model("qwen3", cls.model, corpus, layers=2, hidden=64, vocab_size=400, seed=1)
        start_single_process_group()

    @classmethod
    def tearDownClass(cls) -> None:
        stop_process_group()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def trained_core(self):
        from agentmath_train.service import TrainerCore, TrainerSettings

        core = TrainerCore(TrainerSettings(model=self.model, micro_batch_tokens=64))
        ids, masks, _, _ = fixed_batch(core.model.config.vocab_size, 3)
        batch = decode_batch(encode_batch(ids, masks, options={"learningRate": 5e-3}))
        core.runner.sft_step(batch, parse_step_options(batch.options))
        return core

    def served_worker(self):
        worker = build_worker(WorkerOptions(model=self.model, device="cpu", max_running_requests=4))
        self.addCleanup(worker.engine.shutdown)
        server, port = serve(worker, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return worker, f"http://127.0.0.1:{port}"

    def test_the_bucket_plan_names_every_parameter_once_in_hugging_face_names(self):
        model = transformers.AutoModelForCausalLM.from_pretrained(self.model, dtype=torch.float32)
        buckets = plan_buckets(model, torch.bfloat16, bucket_bytes=40_000)
        names = [spec.name for bucket in buckets for spec in bucket]
        self.assertEqual(names, [name for name, _ in model.named_parameters()])
        self.assertGreater(len(buckets), 2)
        for bucket in buckets:
            nbytes = sum(torch.Size(spec.shape).numel() * 2 for spec in bucket)
            self.assertTrue(len(bucket) == 1 or nbytes <= 40_000, [spec.name for spec in bucket])
        self.assertEqual({spec.dtype for bucket in buckets for spec in bucket}, {"bfloat16"})

    def test_an_engine_receives_the_trained_weights_bucket_by_bucket_and_a_refusal_keeps_the_group_in_step(self):
        core = self.trained_core()
        worker, url = self.served_worker()
        opened = core.broadcaster.open({"group_name": "g1", "world_size": 2, "backend": "gloo", "bucket_bytes": 60_000})
        self.assertGreater(len(opened["buckets"]), 1)
        with ThreadPoolExecutor(2) as pool:
            joined = pool.submit(
                post,
                f"{url}/init_weights_update_group",
                {"master_address": "127.0.0.1", "master_port": opened["master_port"], "rank_offset": 1,
                 "world_size": 2, "group_name": "g1", "backend": "gloo"},
            )
            core.broadcaster.join({"group_name": "g1"})
            self.assertEqual(joined.result(60), {"success": True, "message": "Succeeded to initialize custom process group."})

            def receive_all(buckets, version, rename_first=False):
                answers = []
                for index, bucket in enumerate(buckets):
                    body = {**bucket, "group_name": "g1", "flush_cache": False}
                    if rename_first and index == 0:
                        body["names"] = ["model.no_such_weight", *bucket["names"][1:]]
                    if index == len(buckets) - 1:
                        body["weight_version"] = str(version)
                    answers.append(post(f"{url}/update_weights_from_distributed", body))
                return answers

            # A refused bucket (an unknown name) is still received: the next sync stays in step.
            refused = pool.submit(receive_all, opened["buckets"], 6, True)
            core.broadcaster.broadcast({"group_name": "g1"})
            answers = refused.result(60)
            self.assertFalse(answers[0]["success"])
            self.assertIn("model.no_such_weight", answers[0]["message"])
            received = pool.submit(receive_all, opened["buckets"], 7)
            sent = core.broadcaster.broadcast({"group_name": "g1"})
            self.assertTrue(all(answer["success"] for answer in received.result(60)))
        self.assertEqual(sent["tensors"], sum(len(bucket["names"]) for bucket in opened["buckets"]))
        self.assertEqual(worker.engine.policy_version, 7)
        trained = get_model_state_dict(core.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        served = worker.backend.model.state_dict()
        initial = transformers.AutoModelForCausalLM.from_pretrained(self.model, dtype=torch.float32).state_dict()
        moved = max((trained[name] - initial[name]).abs().max().item() for name in trained)
        self.assertGreater(moved, 1e-4, "the step must move the weights")
        for name, tensor in trained.items():
            torch.testing.assert_close(served[name], tensor, atol=0, rtol=0, msg=name)

    def test_an_update_through_a_group_never_joined_is_refused(self):
        _worker, url = self.served_worker()
        answer = post(
            f"{url}/update_weights_from_distributed",
            {"names": ["lm_head.weight"], "dtypes": ["float32"], "shapes": [[2, 2]], "group_name": "nope"},
        )
        self.assertFalse(answer["success"])
        self.assertIn("init_weights_update_group", answer["message"])

    def test_the_export_is_in_the_compute_dtype_and_its_config_says_so(self):
        from agentmath_train.checkpoint import export_hugging_face

        core = self.trained_core()
        out = os.path.join(self.folder, "export-bf16")
        export_hugging_face(out, core.model, self.model, torch.bfloat16)
        with open(os.path.join(out, "config.json")) as handle:
            config = json.load(handle)
        self.assertEqual((config["dtype"], config["torch_dtype"]), ("bfloat16", "bfloat16"))
        from safetensors.torch import load_file

        tensors = load_file(os.path.join(out, "model.safetensors"))
        self.assertEqual({tensor.dtype for tensor in tensors.values()}, {torch.bfloat16})
        loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
        self.assertEqual(loaded.dtype, torch.bfloat16)
        trained = get_model_state_dict(core.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        for name, tensor in tensors.items():
            torch.testing.assert_close(tensor, trained[name].to(torch.bfloat16), atol=0, rtol=0, msg=name)


if __name__ == "__main__":
    unittest.main()
