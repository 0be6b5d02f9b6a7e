"""Weights & Biases sidecar of `train rl --logger wandb`: JSON lines on stdin, one wandb run.

`python -m agentmath_train.wandb_logger` (started by src/train/wandb-logger.ts with the
trainer's interpreter). Protocol, one JSON object per line:

  stdin   {"type": "start", "name": str, "dir": str, "project": str, "config": {...}}   first
          {"type": "log", "step": int, "scalars": {str: number | "NaN" | "Infinity" | "-Infinity"}}
          end of input: the run is finished (wandb.finish) and the process exits 0
  stdout  {"event": "ready", "mode": str, "dir": str}   after wandb.init
          {"event": "error", "code": str, "message": str}  then exit status 2

Offline unless the user set WANDB_MODE (`wandb sync DIR` uploads later). wandb is not in the
lock (an optional package): when it cannot be imported the error says how to install it.
Nothing here reads, prints or writes the API key; wandb reads WANDB_API_KEY itself when online.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

PROTOCOL_OUT = sys.stdout


@dataclass(frozen=True)
class StartMessage:
    name: str
    dir: str
    project: str
    config: dict

    @staticmethod
    def parse(line: str) -> StartMessage:
        body = json.loads(line)
        if not isinstance(body, dict) or body.get("type") != "start":
            raise ValueError(f"the first line must be a start message, got: {line[:200]}")
        config = body.get("config", {})
        if not isinstance(config, dict):
            raise ValueError("start.config must be an object")
        return StartMessage(str(body["name"]), str(body["dir"]), str(body["project"]), config)


@dataclass(frozen=True)
class LogMessage:
    step: int
    scalars: dict[str, float]

    @staticmethod
    def parse(line: str) -> LogMessage:
        body = json.loads(line)
        if not isinstance(body, dict) or body.get("type") != "log":
            raise ValueError(f"expected a log message, got: {line[:200]}")
        step = body["step"]
        if not isinstance(step, int) or step < 0:
            raise ValueError(f"log.step must be a non-negative integer, got {step!r}")
        scalars = {str(tag): _number(value) for tag, value in dict(body["scalars"]).items()}
        return LogMessage(step, scalars)


def _number(value) -> float:
    # JSON has no NaN/Infinity: the client sends them as strings.
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _say(event: dict) -> None:
    PROTOCOL_OUT.write(json.dumps(event) + "\n")
    PROTOCOL_OUT.flush()


def _install_hint() -> str:
    python = sys.executable
    return (
        "wandb is not installed in the trainer's environment (it is optional and not in uv.lock). "
        f"Install it with `{python} -m pip install wandb` or `uv pip install --python {python} wandb`, "
        "or use --logger tensorboard, which needs no package"
    )


def main() -> int:
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_SILENT", "true")
    try:
        import wandb
    except ImportError as error:
        _say({"event": "error", "code": "WANDB_UNAVAILABLE", "message": f"{_install_hint()} ({error})"})
        return 2
    try:
        start = StartMessage.parse(sys.stdin.readline())
        os.makedirs(start.dir, exist_ok=True)
        # console="off": wandb leaves our stdout alone (it carries the protocol).
        run = wandb.init(
            project=start.project,
            name=start.name,
            dir=start.dir,
            config=start.config,
            settings=wandb.Settings(console="off"),
        )
    except Exception as error:  # noqa: BLE001 - reported to the client, which stops the run
        _say({"event": "error", "code": "WANDB_LOGGER_FAILED", "message": f"wandb.init failed: {error}"})
        return 2
    # The run's own folder (what `wandb sync` takes), not its files/ subfolder.
    run_folder = getattr(getattr(run, "settings", None), "sync_dir", None) or run.dir
    _say({"event": "ready", "mode": os.environ["WANDB_MODE"], "dir": str(run_folder)})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = LogMessage.parse(line)
        run.log(message.scalars, step=message.step)
    run.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
