"""The AgentMath sandbox runner: one stateful Python session inside a bubblewrap jail.

It preloads heavy modules (SymPy, NumPy, SciPy) before it reports ready, then runs code cells
sent by the Node pool over a private control socket (inherited as fd 3, moved to a high fd)
with length-prefixed JSON frames. User stdout/stderr never touch the control channel: fds 1
and 2 are pipes drained by a thread into capped buffers, so text that imitates the protocol
is just output. It does not jail itself; the jail, the uid and the cgroup come from outside.
"""

import ast
import gc
import json
import linecache
import os
import resource
import select
import signal
import struct
import sys
import threading
import time
import traceback

HEADER = struct.Struct(">I")
MAX_REQUEST_BYTES = 16 * 1024 * 1024
EXCEPTION_MAX_LINES = 12


class ExecutionTimeout(BaseException):
    """Raised inside user code by the SIGALRM handler when a call exceeds its time limit."""


class StreamCapture:
    """One output stream (fd 1 or 2) of the session: a pipe drained into a capped buffer."""

    def __init__(self, fd, limit_bytes):
        self.fd = fd
        self.limit_bytes = limit_bytes
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.buffer = bytearray()
        self.total = 0

    def install(self):
        """Points fd 1/2 at the pipe again (user code may have closed or replaced them)."""
        os.dup2(self.write_fd, self.fd, inheritable=True)

    def drain(self):
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            room = self.limit_bytes - len(self.buffer)
            if room > 0:
                self.buffer += chunk[:room]
            self.total += len(chunk)

    def take(self):
        text = bytes(self.buffer).decode("utf-8", errors="replace")
        if self.total > len(self.buffer):
            text += f"\n[output truncated: {self.total} bytes in total, the first {len(self.buffer)} shown]\n"
        self.buffer = bytearray()
        self.total = 0
        return text


class OutputCapture:
    """Both streams plus the thread that keeps the pipes empty so a flood never blocks."""

    def __init__(self, limit_bytes):
        self.lock = threading.Lock()
        self.streams = [StreamCapture(1, limit_bytes), StreamCapture(2, limit_bytes)]
        for stream in self.streams:
            stream.install()
        self.text_streams = [None, None]
        threading.Thread(target=self._pump, name="agentmath-output", daemon=True).start()

    def _pump(self):
        readers = [stream.read_fd for stream in self.streams]
        while True:
            try:
                ready, _, _ = select.select(readers, [], [])
            except InterruptedError:
                continue
            with self.lock:
                for stream in self.streams:
                    if stream.read_fd in ready:
                        stream.drain()

    def begin(self):
        """Starts a call: fresh buffers, fds 1/2 and sys.stdout/stderr restored."""
        with self.lock:
            for stream in self.streams:
                stream.install()
                stream.drain()
                stream.take()
        for index, stream in enumerate(self.streams):
            current = self.text_streams[index]
            if current is None or current.closed:
                current = open(stream.fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                self.text_streams[index] = current
        sys.stdout, sys.stderr = self.text_streams
        sys.__stdout__, sys.__stderr__ = self.text_streams

    def flush(self):
        for text_stream in self.text_streams:
            try:
                if text_stream is not None and not text_stream.closed:
                    text_stream.flush()
            except (OSError, ValueError):
                pass

    def stdout_bytes(self):
        self.flush()
        with self.lock:
            self.streams[0].drain()
            return self.streams[0].total

    def finish(self):
        self.flush()
        with self.lock:
            for stream in self.streams:
                stream.drain()
            return self.streams[0].take(), self.streams[1].take()


class Session:
    """The user namespace and the code that runs one cell in it."""

    def __init__(self, capture):
        self.capture = capture
        self.namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        self.cell_count = 0
        self.armed = False
        self.reap = False

    def _on_alarm(self, signum, frame):
        if self.armed:
            self.armed = False
            raise ExecutionTimeout()

    def _arm(self, timeout_ms):
        signal.signal(signal.SIGALRM, self._on_alarm)
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, max(timeout_ms, 1) / 1000.0)

    def _disarm(self):
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def execute(self, code, timeout_ms):
        self.cell_count += 1
        filename = f"<cell-{self.cell_count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        self.capture.begin()
        started = time.perf_counter()
        result = {"status": "ok"}
        try:
            try:
                tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST)
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                body = compile(tree, filename, "exec")
                tail = compile(last, filename, "eval") if last is not None else None
                self._arm(timeout_ms)
                try:
                    exec(body, self.namespace)
                    value = eval(tail, self.namespace) if tail is not None else None
                finally:
                    self._disarm()
                if value is not None and self.capture.stdout_bytes() == 0:
                    self.capture.text_streams[0].write(_safe_repr(value) + "\n")
            except SystemExit as exit_request:
                exit_code = process_exit_status(exit_request.code)
                if exit_code != 0:
                    result = {"status": "error", "exception": f"SystemExit: {exit_request.code}", "exit_code": exit_code}
        except ExecutionTimeout:
            result = {"status": "timeout"}
        except MemoryError:
            result = {"status": "memory-exceeded"}
        except BaseException as error:  # noqa: BLE001 - every user exception is an outcome
            result = {"status": "error", "exception": _format_exception(error)}
        finally:
            self._disarm()
        result["ms"] = (time.perf_counter() - started) * 1000.0
        result["stdout"], result["stderr"] = self.capture.finish()
        if self.reap:
            reap_background_processes()
        return result


def process_exit_status(code):
    """The status a Python process exits with for `sys.exit(code)`: None is 0, an int is taken
    modulo 256 as the OS does, anything else (a message) is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code % 256
    return 1


def _safe_repr(value):
    try:
        return repr(value)
    except BaseException as error:  # noqa: BLE001
        return f"<repr failed: {type(error).__name__}>"


def _format_exception(error):
    """The traceback of user frames only (runner frames dropped), its last lines."""
    try:
        tb = error.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
            tb = tb.tb_next
        lines = "".join(traceback.format_exception(type(error), error, tb)).rstrip("\n").split("\n")
        if len(lines) > EXCEPTION_MAX_LINES:
            lines = [lines[0], "  ..."] + lines[-(EXCEPTION_MAX_LINES - 2) :]
        return "\n".join(lines)[:8000]
    except BaseException:  # noqa: BLE001 - a hostile __str__ must not break the runner
        return f"{type(error).__name__}: <unprintable>"


def in_jail():
    """True only inside the bubblewrap pid namespace as an unprivileged uid, where kill(-1) is safe."""
    try:
        with open("/proc/1/comm") as comm:
            return comm.read().strip() == "bwrap" and os.getuid() != 0
    except OSError:
        return False


def reap_background_processes():
    """No process started by user code outlives its call: kill all others in the pid namespace."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        return
    while True:  # every child got SIGKILL, so this blocking wait ends promptly
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def apply_limits(limits):
    table = {
        "addressSpaceBytes": resource.RLIMIT_AS,
        "processes": resource.RLIMIT_NPROC,
        "fileSizeBytes": resource.RLIMIT_FSIZE,
        "cpuSeconds": resource.RLIMIT_CPU,
        "openFiles": resource.RLIMIT_NOFILE,
    }
    for name, which in table.items():
        value = limits.get(name)
        if value is not None:
            resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def read_exactly(fd, size):
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def send(fd, message):
    payload = json.dumps(message, ensure_ascii=False).encode("utf-8", errors="replace")
    data = HEADER.pack(len(payload)) + payload
    while data:
        written = os.write(fd, data)
        data = data[written:]


def serve(control, session):
    while True:
        header = read_exactly(control, HEADER.size)
        if header is None:
            return
        (length,) = HEADER.unpack(header)
        if length > MAX_REQUEST_BYTES:
            return
        payload = read_exactly(control, length)
        if payload is None:
            return
        request = json.loads(payload)
        if request.get("op") == "execute":
            result = session.execute(request["code"], int(request["timeoutMs"]))
            result["id"] = request["id"]
            send(control, result)
        elif request.get("op") == "ping":
            send(control, {"id": request["id"], "status": "pong"})


def main(argv):
    config = json.loads(argv[1])
    control = os.dup(int(config.get("controlFd", 3)))
    os.close(int(config.get("controlFd", 3)))
    apply_limits(config.get("limits", {}))
    for name in config.get("preload", []):
        __import__(name)
    # The preloaded modules' objects live as long as the worker: moving them out of the
    # collector's generations spares every later collection a walk over SymPy's object graph
    # (SymPy code runs about a quarter faster).
    gc.collect()
    gc.freeze()
    capture = OutputCapture(int(config.get("outputLimitBytes", 65536)))
    session = Session(capture)
    session.reap = bool(config.get("reapBackgroundProcesses")) and in_jail()
    send(control, {"op": "ready"})
    serve(control, session)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
