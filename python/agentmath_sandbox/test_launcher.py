"""Unit tests of the launcher helper outside any jail: spawn, hello, fd 3, stderr, exit, kill."""

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.py")
HEADER = struct.Struct(">I")
TOKEN = "0123456789abcdef0123456789abcdef"


def read_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("closed")
        data += chunk
    return data


class LauncherProcess:
    def __init__(self):
        self.folder = tempfile.TemporaryDirectory()
        self.socket_path = os.path.join(self.folder.name, "pool.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.socket_path)
        self.server.listen(8)
        self.server.settimeout(10)
        self.control, child = socket.socketpair()
        self.control.settimeout(10)
        config = {"controlFd": child.fileno(), "socketPath": self.socket_path, "token": TOKEN, "parentPid": os.getpid()}
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-B", "-S", LAUNCHER, json.dumps(config)],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        child.close()

    def send(self, message):
        payload = json.dumps(message).encode()
        self.control.sendall(HEADER.pack(len(payload)) + payload)

    def receive(self):
        (length,) = HEADER.unpack(read_exactly(self.control, HEADER.size))
        return json.loads(read_exactly(self.control, length))

    def close(self):
        self.control.close()
        self.process.wait(timeout=10)
        self.server.close()
        self.folder.cleanup()


class LauncherTest(unittest.TestCase):
    def setUp(self):
        self.launcher = LauncherProcess()

    def tearDown(self):
        self.launcher.close()

    def test_hello_precedes_the_child_output_on_fd_3_and_the_exit_is_reported(self):
        script = 'echo "from fd 3" >&3; echo "to stderr" >&2; exit 7'
        self.launcher.send({"op": "spawn", "id": 5, "argv": ["/bin/sh", "-c", script], "env": {"PATH": "/usr/bin:/bin"}})
        spawned = self.launcher.receive()
        self.assertEqual((spawned["op"], spawned["id"]), ("spawned", 5))
        connection, _ = self.launcher.server.accept()
        with connection:
            connection.settimeout(10)
            hello = read_exactly(connection, 64).decode()
            self.assertEqual(hello, TOKEN + " " * 31 + "5")
            self.assertEqual(read_exactly(connection, 10), b"from fd 3\n")
        exited = self.launcher.receive()
        self.assertEqual(exited, {"op": "exited", "id": 5, "code": 7, "signal": None, "stderr": "to stderr\n"})

    def test_kill_ends_the_child_and_reports_the_signal(self):
        self.launcher.send({"op": "spawn", "id": 1, "argv": ["/bin/sleep", "60"], "env": {}})
        self.assertEqual(self.launcher.receive()["op"], "spawned")
        connection, _ = self.launcher.server.accept()
        connection.close()
        self.launcher.send({"op": "kill", "id": 1})
        exited = self.launcher.receive()
        self.assertEqual((exited["op"], exited["id"], exited["signal"]), ("exited", 1, "SIGKILL"))

    def test_a_command_that_cannot_start_is_reported(self):
        self.launcher.send({"op": "spawn", "id": 2, "argv": ["/nonexistent/program"], "env": {}})
        failed = self.launcher.receive()
        self.assertEqual((failed["op"], failed["id"]), ("spawn-failed", 2))
        self.assertIn("FileNotFoundError", failed["error"])

    def test_children_die_when_the_pool_goes_away(self):
        self.launcher.send({"op": "spawn", "id": 3, "argv": ["/bin/sleep", "60"], "env": {}})
        pid = self.launcher.receive()["pid"]
        self.launcher.server.accept()[0].close()
        self.launcher.control.shutdown(socket.SHUT_WR)
        self.launcher.process.wait(timeout=10)
        for _ in range(200):  # the SIGKILL is delivered asynchronously
            if process_state(pid) in ("", "Z", "X"):
                break
            time.sleep(0.01)
        self.assertIn(process_state(pid), ("", "Z", "X"))  # gone, or dead and waiting for init


def process_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[-1][:1]
    except FileNotFoundError:
        return ""


if __name__ == "__main__":
    unittest.main()
