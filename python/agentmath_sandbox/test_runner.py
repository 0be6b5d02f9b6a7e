"""Unit tests of the runner outside the jail: cells, capture, timeouts, framing."""

import json
import os
import socket
import struct
import subprocess
import sys
import unittest

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
HEADER = struct.Struct(">I")


class RunnerProcess:
    def __init__(self, output_limit=4096):
        self.parent, child = socket.socketpair()
        config = {"controlFd": child.fileno(), "preload": [], "outputLimitBytes": output_limit, "limits": {}}
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-B", RUNNER, json.dumps(config)],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        child.close()
        self.next_id = 0
        assert self.receive()["op"] == "ready"

    def receive(self):
        header = self._read(HEADER.size)
        return json.loads(self._read(HEADER.unpack(header)[0]))

    def _read(self, size):
        data = b""
        while len(data) < size:
            chunk = self.parent.recv(size - len(data))
            if not chunk:
                raise EOFError("runner closed the control socket")
            data += chunk
        return data

    def run(self, code, timeout_ms=2000):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "op": "execute", "code": code, "timeoutMs": timeout_ms}).encode()
        self.parent.sendall(HEADER.pack(len(payload)) + payload)
        reply = self.receive()
        assert reply["id"] == self.next_id
        return reply

    def close(self):
        self.parent.close()
        self.process.wait(timeout=10)


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.runner = RunnerProcess()

    def tearDown(self):
        self.runner.close()

    def test_state_persists_and_last_expression_is_echoed_only_without_other_output(self):
        self.assertEqual(self.runner.run("x = 6\ndef f(y):\n    return x * y")["stdout"], "")
        self.assertEqual(self.runner.run("f(7)")["stdout"], "42\n")
        self.assertEqual(self.runner.run("print('seen')\nf(7)")["stdout"], "seen\n")
        self.assertEqual(self.runner.run("None")["stdout"], "")

    def test_exception_keeps_user_frames_and_earlier_output(self):
        reply = self.runner.run("print('before')\ndef g():\n    return 1 / 0\ng()")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["stdout"], "before\n")
        self.assertIn("ZeroDivisionError: division by zero", reply["exception"])
        self.assertIn("<cell-1>", reply["exception"])
        self.assertNotIn("runner.py", reply["exception"])

    def test_sys_exit_reports_the_status_the_process_would_exit_with(self):
        reply = self.runner.run("print('partial')\nimport sys\nsys.exit(3)\nprint('never')")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["exit_code"], 3)
        self.assertEqual(reply["stdout"], "partial\n")
        self.assertIn("SystemExit: 3", reply["exception"])
        self.assertEqual(self.runner.run("import sys\nsys.exit('bad input')")["exit_code"], 1)
        self.assertEqual(self.runner.run("import sys\nsys.exit(-1)")["exit_code"], 255)
        self.assertEqual(self.runner.run("import sys\nsys.exit(0)")["status"], "ok")
        self.assertEqual(self.runner.run("import sys\nsys.exit()")["status"], "ok")
        self.assertNotIn("exit_code", self.runner.run("1 / 0"))

    def test_syntax_error_is_an_error_outcome(self):
        reply = self.runner.run("def (:")
        self.assertEqual(reply["status"], "error")
        self.assertIn("SyntaxError", reply["exception"])

    def test_timeout_interrupts_and_keeps_the_session(self):
        self.runner.run("kept = 5")
        reply = self.runner.run("print('start')\nwhile True:\n    pass", timeout_ms=200)
        self.assertEqual(reply["status"], "timeout")
        self.assertEqual(reply["stdout"], "start\n")
        self.assertEqual(self.runner.run("kept")["stdout"], "5\n")

    def test_output_is_capped_with_the_total_reported(self):
        reply = self.runner.run("print('y' * 100000)")
        self.assertLess(len(reply["stdout"]), 4096 + 200)
        self.assertIn("100001 bytes in total", reply["stdout"])

    def test_fd_level_and_protocol_imitating_output_are_plain_output(self):
        fake = HEADER.pack(20).decode("latin-1") + '{"id": 1, "status": "ok"}'
        reply = self.runner.run(f"import os\nos.write(1, b'raw\\n')\nprint({fake!r})")
        self.assertEqual(reply["status"], "ok")
        self.assertTrue(reply["stdout"].startswith("raw\n"))
        self.assertIn('"status": "ok"', reply["stdout"])

    def test_closed_stdout_is_restored_for_the_next_call(self):
        self.runner.run("import sys, os\nsys.stdout.close()\nos.close(1)")
        self.assertEqual(self.runner.run("print('back')")["stdout"], "back\n")

    def test_memory_error_is_reported_as_memory_exceeded(self):
        self.assertEqual(self.runner.run("raise MemoryError()")["status"], "memory-exceeded")


if __name__ == "__main__":
    unittest.main()
