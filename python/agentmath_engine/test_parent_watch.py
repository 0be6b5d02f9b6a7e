"""watch_parent: a process exits when the program named in AGENTMATH_PARENT_PID is gone, and
also when its own launcher dies (a trainer rank whose torchrun was killed)."""
import os
import signal
import subprocess
import sys
import time
import unittest

# The launcher starts a watched child, prints its pid, then waits to be killed.
LAUNCHER = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print(child.pid, flush=True)
time.sleep(600)
"""
WATCHED = r"""
import time
from agentmath_engine.parent_watch import watch_parent
watch_parent("test", period_seconds=0.1)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class ParentWatchTest(unittest.TestCase):
    def test_exits_when_its_launcher_dies_while_the_named_parent_lives(self) -> None:
        environment = {**os.environ, "AGENTMATH_PARENT_PID": str(os.getpid()),
                       "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, WATCHED], stdout=subprocess.PIPE,
                                    env=environment, start_new_session=True)
        try:
            child = int(launcher.stdout.readline())
            time.sleep(0.5)
            self.assertTrue(alive(child))
            os.kill(launcher.pid, signal.SIGKILL)
            launcher.wait()
            # No deadline beyond the test runner's: without the launcher check the child lives on.
            for _ in range(100):
                if not alive(child):
                    break
                time.sleep(0.1)
            self.assertFalse(alive(child), "the watched child outlived its launcher")
        finally:
            for pid in (launcher.pid,):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


if __name__ == "__main__":
    unittest.main()
