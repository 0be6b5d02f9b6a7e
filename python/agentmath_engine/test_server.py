"""Cross-process tests of the worker's HTTP routes: starts `python3 -m agentmath_engine` with the
small `test` model on a free port and speaks SGLang's wire format to it."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_worker(*extra, env=None):
    environ = {key: value for key, value in os.environ.items() if key != "AGENTMATH_ENGINE_API_KEY"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentmath_engine", "--model", "test", "--port", "0", "--decode-threads", "1", "--train-threads", "1", *extra],
        cwd=PYTHON_DIR, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**environ, **(env or {})},
    )
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise RuntimeError("worker exited before listening")
    return process, f"http://127.0.0.1:{json.loads(line)['port']}"


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.process, cls.url = start_worker()
        cls.temp = tempfile.mkdtemp(prefix="agentmath-worker-test-")

    @classmethod
    def tearDownClass(cls):
        cls.process.send_signal(signal.SIGTERM)
        try:
            cls.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cls.process.kill()
            cls.process.wait()
        cls.process.stdout.close()
        shutil.rmtree(cls.temp, ignore_errors=True)

    def call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def test_health_and_model_info(self):
        self.assertEqual(self.call("/health")[0], 200)
        status, info = self.call("/get_model_info")
        self.assertEqual(status, 200)
        self.assertTrue(info["is_generation"])
        self.assertEqual(info["model"]["vocab_size"], 258)
        self.assertIsInstance(info["weight_version"], str)

    def test_generate_single_and_batched(self):
        body = {
            "input_ids": list(b"<|user|>\n1+1\n<|assistant|>\n"),
            "sampling_params": {"max_new_tokens": 12, "temperature": 0.7, "top_p": 0.95, "seed": 5},
            "return_logprob": True,
        }
        status, single = self.call("/generate", body)
        self.assertEqual(status, 200)
        self.assertEqual(set(single), {"text", "output_ids", "meta_info"})
        meta = single["meta_info"]
        self.assertEqual(meta["prompt_tokens"], len(body["input_ids"]))
        self.assertEqual(meta["completion_tokens"], len(single["output_ids"]))
        for logprob, token, text in meta["output_token_logprobs"]:
            self.assertLessEqual(logprob, 0.0)
            self.assertIsNone(text)
        self.assertEqual([t for _, t, _ in meta["output_token_logprobs"]], single["output_ids"])
        status, batch = self.call("/generate", {**body, "input_ids": [body["input_ids"], [65, 66]]})
        self.assertEqual(status, 200)
        self.assertEqual(len(batch), 2)
        self.assertEqual(batch[0]["output_ids"], single["output_ids"])  # same seed, same tokens

    def test_bad_requests_name_the_field(self):
        status, body = self.call("/generate", {"input_ids": [1, 2, 999]})
        self.assertEqual(status, 400)
        self.assertIn("input_ids[2]", body["error"]["message"])
        status, body = self.call("/generate", {"input_ids": [1], "sampling_params": {"temprature": 1}})
        self.assertEqual(status, 400)
        self.assertIn("temprature", body["error"]["message"])
        status, body = self.call("/train/sft_step", {"sequences": [{"input_ids": [1, 2, 3], "loss_mask": [0, 1]}]})
        self.assertEqual(status, 400)
        self.assertIn("sequences[0].loss_mask", body["error"]["message"])
        self.assertEqual(self.call("/nope", {})[0], 404)

    def test_training_checkpoint_and_weight_update_round_trip(self):
        ids = list(b"<|user|>\n2*3\n<|assistant|>\n6") + [256]
        mask = [0] * 27 + [1, 1]
        greedy = {"input_ids": ids[:27], "sampling_params": {"max_new_tokens": 8, "temperature": 0}}
        status, stats = self.call("/train/sft_step", {"sequences": [{"input_ids": ids, "loss_mask": mask}], "learning_rate": 0.01})
        self.assertEqual(status, 200)
        version = stats["policy_version"]
        self.assertEqual(stats["tokens"], 2)
        folder = os.path.join(self.temp, "checkpoint")
        self.assertEqual(self.call("/train/save_checkpoint", {"path": folder})[0], 200)
        for name in ("config.json", "pytorch_model.bin", "tokenizer.json", "tokenizer_config.json", "trainer_state.json"):
            self.assertTrue(os.path.isfile(os.path.join(folder, name)), name)
        with open(os.path.join(folder, "tokenizer_config.json")) as handle:
            self.assertEqual(json.load(handle)["eos_token"], "<|endoftext|>")
        _, saved_output = self.call("/generate", greedy)
        self.assertEqual(saved_output["meta_info"]["weight_version"], str(version))
        _, logprobs = self.call("/train/score", {"input_ids": [ids]})
        old = logprobs["token_logprobs"][0]
        status, grpo = self.call("/train/grpo_step", {
            "sequences": [{"input_ids": ids, "loss_mask": mask, "advantage": 1.0, "old_logprobs": old}],
            "learning_rate": 0.05, "kl_coef": 0.01,
        })
        self.assertEqual(status, 200)
        self.assertEqual(grpo["policy_version"], version + 1)
        _, moved = self.call("/train/score", {"input_ids": [ids]})
        self.assertGreater(sum(moved["token_logprobs"][0][27:]), sum(old[27:]))
        sequence = {"input_ids": ids, "loss_mask": mask, "advantage": -1.0, "old_logprobs": [v - 0.5 for v in old]}
        status, decoupled = self.call("/train/grpo_step", {
            "sequences": [sequence], "learning_rate": 0.0, "proximal": "recompute", "off_policy_cap": 1.2,
            "aggregation": "sequence-mean", "dual_clip": 3.0, "kl_estimator": "k2",
            "temperature": 0.7, "mini_batches": 1, "epochs": 2,
        })
        self.assertEqual(status, 200)
        self.assertGreater(decoupled["off_policy_weight"], 1.0)
        self.assertEqual(decoupled["off_policy_capped"], 1.0)  # e^0.5 > 1.2 on every trained token
        status, refused = self.call("/train/grpo_step", {"sequences": [sequence], "aggregation": "per-token"})
        self.assertEqual(status, 400)
        self.assertIn("aggregation must be one of", refused["error"]["message"])
        self.assertEqual(decoupled["updates"], 2)
        status, refused = self.call("/train/grpo_step", {"sequences": [sequence], "kl_estimator": "k1"})
        self.assertEqual(status, 400)
        self.assertIn("kl_estimator must be one of 'k3', 'k2'", refused["error"]["message"])
        status, refused = self.call("/train/grpo_step", {"sequences": [sequence], "dual_clip": 1.0})
        self.assertEqual(status, 400)
        self.assertIn("dual_clip must be above 1", refused["error"]["message"])
        status, update = self.call("/update_weights_from_disk", {"model_path": folder})
        self.assertEqual((status, update["success"]), (200, True))
        _, restored = self.call("/generate", greedy)
        self.assertEqual(restored["output_ids"], saved_output["output_ids"])
        self.assertEqual(restored["meta_info"]["weight_version"], str(version))
        # SGLang's answer to a refused load: 400, success false, the message; never a hub lookup.
        for path in (os.path.join(self.temp, "missing"), "Qwen/Qwen3-0.6B", os.path.join(folder, "config.json")):
            status, failed = self.call("/update_weights_from_disk", {"model_path": path})
            self.assertEqual((status, failed["success"]), (400, False))
            self.assertTrue(failed["message"].startswith("Failed to get weights iterator: "), failed)
            found = "a file, not a folder" if path.endswith("config.json") else "no such folder"
            self.assertIn(f"{found}: {path}", failed["message"])

    def test_served_folder_loads_in_a_fresh_worker(self):
        folder = os.path.join(self.temp, "fresh")
        self.call("/train/save_checkpoint", {"path": folder})
        greedy = {"input_ids": [72, 105], "sampling_params": {"max_new_tokens": 6, "temperature": 0}}
        _, expected = self.call("/generate", greedy)
        process, url = start_worker("--model", folder)
        try:
            request = urllib.request.Request(url + "/generate", data=json.dumps(greedy).encode())
            with urllib.request.urlopen(request, timeout=60) as response:
                self.assertEqual(json.loads(response.read())["output_ids"], expected["output_ids"])
        finally:
            process.send_signal(signal.SIGTERM)
            self.assertEqual(process.wait(timeout=20), 0)
            process.stdout.close()


class AuthTest(unittest.TestCase):
    """The API key rule: every route but /health needs the key; public binds need a key or --no-auth."""

    def test_routes_need_the_key_except_health(self):
        process, url = start_worker(env={"AGENTMATH_ENGINE_API_KEY": "worker-key"})
        try:
            def status(path, authorization=None, body=None):
                headers = {"Content-Type": "application/json"}
                if authorization is not None:
                    headers["Authorization"] = authorization
                data = None if body is None else json.dumps(body).encode()
                request = urllib.request.Request(url + path, data=data, headers=headers)
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        response.read()
                        return response.status
                except urllib.error.HTTPError as error:
                    error.read()
                    return error.code

            generate = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2, "temperature": 0}}
            self.assertEqual(status("/health"), 200)
            self.assertEqual(status("/get_model_info"), 401)
            self.assertEqual(status("/generate", body=generate), 401)
            self.assertEqual(status("/train/sft_step", "Bearer wrong-key", {"input_ids": [[1, 2]]}), 401)
            self.assertEqual(status("/generate", "worker-key", generate), 401)
            self.assertEqual(status("/get_model_info", "Bearer worker-key"), 200)
            self.assertEqual(status("/generate", "Bearer worker-key", generate), 200)
        finally:
            process.kill()
            process.wait()
            process.stdout.close()

    def run_refused(self, *args, env=None):
        environ = {key: value for key, value in os.environ.items() if key != "AGENTMATH_ENGINE_API_KEY"}
        return subprocess.run(
            [sys.executable, "-m", "agentmath_engine", "--model", "test", "--port", "0", *args],
            cwd=PYTHON_DIR, capture_output=True, text=True, timeout=120, env={**environ, **(env or {})},
        )

    def test_public_bind_without_a_key_and_an_empty_key_are_refused_before_binding(self):
        public = self.run_refused("--host", "0.0.0.0")
        self.assertEqual(public.returncode, 2)
        self.assertIn("not a loopback address", public.stderr)
        self.assertEqual(public.stdout, "")
        empty = self.run_refused(env={"AGENTMATH_ENGINE_API_KEY": ""})
        self.assertEqual(empty.returncode, 2)
        self.assertIn("set but empty", empty.stderr)

    def test_bind_rule(self):
        from agentmath_engine.server import api_key_for, is_loopback

        for host in ("127.0.0.1", "127.9.9.9", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"):
            self.assertTrue(is_loopback(host), host)
        for host in ("0.0.0.0", "::", "10.1.2.3", "example.com"):
            self.assertFalse(is_loopback(host), host)
        self.assertIsNone(api_key_for("127.0.0.1", {}, False))
        self.assertEqual(api_key_for("0.0.0.0", {"AGENTMATH_ENGINE_API_KEY": "k"}, False), "k")
        self.assertIsNone(api_key_for("0.0.0.0", {}, True))
        with self.assertRaises(ValueError):
            api_key_for("0.0.0.0", {"AGENTMATH_ENGINE_API_KEY": "k"}, True)


if __name__ == "__main__":
    unittest.main()


class ClientGoneTest(unittest.TestCase):
    """A client that hangs up before its answer (a paused rollout request) is not an error."""

    def test_broken_pipe_is_quiet(self):
        from types import SimpleNamespace

        from agentmath_engine.server import make_handler

        worker = SimpleNamespace(
            generate=None, update_weights_from_disk=None, engine=None, train=None, score=None,
            save_checkpoint=None, load_checkpoint=None, model_info=None, train_state=None, flush_cache=None,
            models=None,
        )
        handler_class = make_handler(worker)
        handler = handler_class.__new__(handler_class)

        class Gone:
            def write(self, _data):
                raise BrokenPipeError(32, "Broken pipe")

            def flush(self):
                pass

        handler.wfile = Gone()
        handler.request_version = "HTTP/1.1"
        handler.requestline = "POST /generate HTTP/1.1"
        handler.command = "POST"
        handler.path = "/generate"
        handler.client_address = ("127.0.0.1", 0)
        handler.close_connection = False
        handler._send(200, {"text": "late"})
        self.assertTrue(handler.close_connection)
