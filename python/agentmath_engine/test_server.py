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

from agentmath_models.byte_folder import init_byte_model

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_worker(*extra, env=None):
    environ = {key: value for key, value in os.environ.items() if key != "AGENTMATH_ENGINE_API_KEY"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentmath_engine", "--model", "test", "--port", "0", "--decode-threads", "1", *extra],
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
        self.assertEqual(self.call("/nope", {})[0], 404)

    def test_weight_update_from_disk_round_trip(self):
        # Two folders of the served shape: the update serves the second's weights, a version
        # given is reported, and loading the first again gives its greedy tokens back.
        first, second = os.path.join(self.temp, "first"), os.path.join(self.temp, "second")
        for folder, seed in ((first, 0), (second, 11)):
            os.makedirs(folder)
            init_byte_model(folder, seed=seed, shape="test")
        greedy = {"input_ids": list(b"2*3="), "sampling_params": {"max_new_tokens": 8, "temperature": 0}, "return_logprob": True}
        status, update = self.call("/update_weights_from_disk", {"model_path": first, "weight_version": "7"})
        self.assertEqual((status, update["success"]), (200, True))
        _, from_first = self.call("/generate", greedy)
        self.assertEqual(from_first["meta_info"]["weight_version"], "7")
        self.assertEqual(self.call("/update_weights_from_disk", {"model_path": second})[0], 200)
        _, from_second = self.call("/generate", greedy)
        # Random weights repeat a token; the logprobs tell the two models apart.
        logprobs = lambda answer: [round(entry[0], 5) for entry in answer["meta_info"]["output_token_logprobs"]]  # noqa: E731
        self.assertNotEqual(logprobs(from_second), logprobs(from_first))
        self.assertEqual(from_second["meta_info"]["weight_version"], "8")
        self.call("/update_weights_from_disk", {"model_path": first})
        self.assertEqual(logprobs(self.call("/generate", greedy)[1]), logprobs(from_first))
        # SGLang's answer to a refused load: 400, success false, the message; never a hub lookup.
        for path in (os.path.join(self.temp, "missing"), "Qwen/Qwen3-0.6B", os.path.join(first, "config.json")):
            status, failed = self.call("/update_weights_from_disk", {"model_path": path})
            self.assertEqual((status, failed["success"]), (400, False))
            self.assertTrue(failed["message"].startswith("Failed to get weights iterator: "), failed)
            found = "a file, not a folder" if path.endswith("config.json") else "no such folder"
            self.assertIn(f"{found}: {path}", failed["message"])
        # A folder of another shape is refused and the served weights stay.
        other = os.path.join(self.temp, "other-shape")
        os.makedirs(other)
        init_byte_model(other, seed=0, shape="test", num_hidden_layers=1)
        status, failed = self.call("/update_weights_from_disk", {"model_path": other})
        self.assertEqual((status, failed["success"]), (400, False))
        self.assertIn("different model", failed["message"])
        self.assertEqual(logprobs(self.call("/generate", greedy)[1]), logprobs(from_first))

    def test_served_folder_loads_in_a_fresh_worker(self):
        folder = os.path.join(self.temp, "fresh")
        os.makedirs(folder)
        init_byte_model(folder, seed=3, shape="test")
        self.call("/update_weights_from_disk", {"model_path": folder})
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
            self.assertEqual(status("/update_weights_from_disk", "Bearer wrong-key", {"model_path": "/tmp"}), 401)
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
            generate=None, update_weights_from_disk=None, engine=None, model_info=None, server_info=None, flush_cache=None,
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
