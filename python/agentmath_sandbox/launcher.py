"""The AgentMath sandbox launcher: a small helper process that starts jailed workers for the pool.

Forking a large Node.js process is slow and blocks its event loop, so the pool never forks per
worker: it starts this helper once and asks it, over a framed control socket (fd 3; 4-byte
big-endian length + UTF-8 JSON, as between the pool and the runner), to start each jail.

For each worker the helper connects to the pool's Unix socket, writes the hello (the pool's token
and the worker's id) and only then starts the jail command with that connection as its fd 3, so
the jailed runner talks to the pool directly and cannot pose as another worker. It reaps its
children and reports how each ended, with the tail of its stderr, and kills a jail on request
(the namespace's init first, which takes every process of the jail with it). It does not jail
anything itself: the command it runs is the jail. It dies with the pool: on end of file of the
control socket, and by the parent-death signal.
"""

import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys
from time import monotonic

HEADER = struct.Struct(">I")
STDERR_TAIL_BYTES = 4096
KILL_FALLBACK_SECONDS = 2.0
PR_SET_PDEATHSIG = 1


def encode(message):
    payload = json.dumps(message).encode("utf-8")
    return HEADER.pack(len(payload)) + payload


def hello_bytes(token, worker_id):
    """The fixed-size greeting the pool reads before anything the jail writes: token, then id."""
    return f"{token}{worker_id:>32}".encode("ascii")


def namespace_inits(pid):
    """Children of the jail's bwrap process: the pid namespace's init."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(each) for each in children.read().split()]
    except (OSError, ValueError):
        return []


def signal_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


class Child:
    def __init__(self, worker_id, pid, stderr_fd):
        self.worker_id = worker_id
        self.pid = pid
        self.stderr_fd = stderr_fd
        self.stderr = bytearray()
        self.kill_deadline = None

    def read_stderr(self):
        """Reads what is there; returns False at end of file."""
        while self.stderr_fd is not None:
            try:
                chunk = os.read(self.stderr_fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            room = STDERR_TAIL_BYTES - len(self.stderr)
            if room > 0:
                self.stderr += chunk[:room]
        return False

    def close_stderr(self):
        if self.stderr_fd is not None:
            os.close(self.stderr_fd)
            self.stderr_fd = None


class Launcher:
    def __init__(self, control, socket_path, token):
        self.control = control
        self.socket_path = socket_path
        self.token = token
        self.children = {}  # pid -> Child
        self.by_id = {}  # worker id -> Child
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        self.wake_read, self.wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        self.default_signals = {
            each for each in signal.valid_signals() if each not in (signal.SIGKILL, signal.SIGSTOP)
        }

    def spawn(self, request):
        worker_id = int(request["id"])
        argv = [str(each) for each in request["argv"]]
        env = {str(key): str(value) for key, value in request.get("env", {}).items()}
        connection = None
        stderr_read = stderr_write = None
        try:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(self.socket_path)
            connection.sendall(hello_bytes(self.token, worker_id))
            stderr_read, stderr_write = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(stderr_read, False)
            pid = os.posix_spawn(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, self.devnull, 0),
                    (os.POSIX_SPAWN_DUP2, self.devnull, 1),
                    (os.POSIX_SPAWN_DUP2, stderr_write, 2),
                    (os.POSIX_SPAWN_DUP2, connection.fileno(), 3),
                ],
                setsigdef=self.default_signals,
                setsigmask=(),
            )
        except OSError as error:
            if stderr_read is not None:
                os.close(stderr_read)
            self.send({"op": "spawn-failed", "id": worker_id, "error": f"{type(error).__name__}: {error}"})
            return
        finally:
            if connection is not None:
                connection.close()
            if stderr_write is not None:
                os.close(stderr_write)
        child = Child(worker_id, pid, stderr_read)
        self.children[pid] = child
        self.by_id[worker_id] = child
        self.send({"op": "spawned", "id": worker_id, "pid": pid})

    def kill(self, request):
        child = self.by_id.get(int(request["id"]))
        if child is None:
            return  # already reaped; its exit was reported
        inits = namespace_inits(child.pid)
        for pid in inits:
            signal_quietly(pid)
        if not inits:
            signal_quietly(child.pid)
        if child.kill_deadline is None:
            child.kill_deadline = monotonic() + KILL_FALLBACK_SECONDS

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is None:
                continue
            self.by_id.pop(child.worker_id, None)
            child.read_stderr()
            child.close_stderr()
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            self.send(
                {
                    "op": "exited",
                    "id": child.worker_id,
                    "code": code,
                    "signal": signal.Signals(signum).name if signum else None,
                    "stderr": child.stderr.decode("utf-8", errors="replace"),
                }
            )

    def send(self, message):
        self.outbox += encode(message)

    def flush(self):
        while self.outbox:
            try:
                written = os.write(self.control, self.outbox)
            except BlockingIOError:
                return
            del self.outbox[:written]

    def handle(self, message):
        op = message.get("op")
        if op == "spawn":
            self.spawn(message)
        elif op == "kill":
            self.kill(message)

    def read_control(self):
        """Reads requests; returns False when the pool has gone."""
        try:
            chunk = os.read(self.control, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.inbox += chunk
        while len(self.inbox) >= HEADER.size:
            (length,) = HEADER.unpack_from(self.inbox)
            if len(self.inbox) < HEADER.size + length:
                break
            payload = bytes(self.inbox[HEADER.size : HEADER.size + length])
            del self.inbox[: HEADER.size + length]
            self.handle(json.loads(payload))
        return True

    def kill_all(self):
        for child in list(self.children.values()):
            self.kill({"id": child.worker_id})

    def serve(self):
        os.set_blocking(self.control, False)
        while True:
            stderr_fds = {child.stderr_fd: child for child in self.children.values() if child.stderr_fd is not None}
            writers = [self.control] if self.outbox else []
            deadlines = [child.kill_deadline for child in self.children.values() if child.kill_deadline]
            timeout = max(0.0, min(deadlines) - monotonic()) if deadlines else None
            readable, writable, _ = select.select([self.control, self.wake_read, *stderr_fds], writers, [], timeout)
            if self.wake_read in readable:
                try:
                    os.read(self.wake_read, 4096)
                except BlockingIOError:
                    pass
            for fd in readable:
                child = stderr_fds.get(fd)
                if child is not None and not child.read_stderr():
                    child.close_stderr()
            if self.control in readable and not self.read_control():
                self.kill_all()
                return
            self.reap()
            now = monotonic()
            for child in self.children.values():
                if child.kill_deadline is not None and child.kill_deadline <= now:
                    signal_quietly(child.pid)
                    child.kill_deadline = None
            if self.outbox or writable:
                self.flush()


def die_with_parent(parent_pid):
    """SIGKILL when the pool's process ends (also if it ended before this line ran)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(0)


def main(argv):
    config = json.loads(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(config.get("parentPid"))
    control = os.dup(int(config.get("controlFd", 3)))
    os.close(int(config.get("controlFd", 3)))
    Launcher(control, config["socketPath"], config["token"]).serve()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
