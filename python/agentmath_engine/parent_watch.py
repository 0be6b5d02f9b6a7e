"""Exits a server process when the program that started it is gone (kill -9 included), so no
engine or trainer rank outlives the orchestrator that owned it. The starter passes its pid in
AGENTMATH_PARENT_PID; without it nothing is watched (a server started by hand lives on). The
immediate parent is watched too: a trainer rank whose torchrun died (ranks run in sessions of
their own, so a kill of torchrun's process group does not reach them) exits with it."""
import os
import sys
import threading


def watch_parent(name: str, variable: str = "AGENTMATH_PARENT_PID", period_seconds: float = 1.0) -> None:
    """Starts a thread that exits this process (status 3) once the parent named in `variable` is
    gone or a zombie; `name` prefixes the line it prints."""
    value = os.environ.get(variable)
    if not value:
        return
    parent = int(value)
    launcher = os.getppid()

    def gone() -> bool:
        if os.getppid() != launcher:
            return True  # the process that launched this one died: it was re-parented
        # A killed parent may stay a zombie (its own parent killed too, PID 1 not reaping):
        # on Linux its state letter says so; elsewhere only a missing process counts.
        try:
            with open(f"/proc/{parent}/stat") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
        except OSError:
            try:
                os.kill(parent, 0)
                return False
            except ProcessLookupError:
                return True
            except PermissionError:
                return False

    def watch() -> None:
        while not gone():
            threading.Event().wait(period_seconds)
        try:
            print(f"{name}: the parent process {parent} is gone; exiting", file=sys.stderr, flush=True)
        except OSError:
            pass  # stderr was a pipe to the parent: nobody reads it any more
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()
