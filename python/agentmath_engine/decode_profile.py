"""Where a decode step of the engine goes on this machine, for `bench engine --model DIR --profile`.

The engine is built as the worker builds it (`app.build_backend`, the same decode dtype, linear
weights and threads) but without its thread: this process drives its loop (`Engine.step_once`),
because torch's profiler records the thread that starts it. For a list of prompts it admits them
all (prefill), runs a few decode steps to warm up, times `steps` steps, then runs `steps` more under
`torch.profiler` (after one it does not record) and reports each op's share of that time (its self time: what the op itself took,
without the ops it called), the engine's phases (`engine.forward`, `engine.sampling`,
`engine.bookkeeping`: the record_function labels of `engine.py`) and what no op accounts for (the
Python of the model code and the engine, and the dispatch between ops).

Commands, one JSON object a line on stdin, one answer a line on stdout:
  {"command": "profile", "prompts": [[ids…]…], "steps": n}
      → {"concurrency", "stepMs", "profiledStepMs", "phases": [{name, share}], "ops":
         [{name, share, callsPerStep, msPerStep}], "outsideOpsShare"}
  {"command": "stop"}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ["HF_HUB_OFFLINE"] = "1"

import torch  # noqa: E402

from .app import WorkerOptions, build_backend  # noqa: E402
from .engine import Engine, SamplingParams  # noqa: E402
from .threads import use_threads  # noqa: E402

PHASES = ("engine.forward", "engine.sampling", "engine.bookkeeping")
WARM_UP_STEPS = 3
TOP_OPS = 15


def profile_decode(engine: Engine, prompts: List[List[int]], steps: int) -> Dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile, schedule

    if not prompts or len(prompts) > engine.max_running:
        raise ValueError(f"profile: {len(prompts)} prompts; the engine runs 1 to {engine.max_running} at once")
    params = SamplingParams(max_new_tokens=WARM_UP_STEPS + 2 * steps + 3, temperature=0.0, ignore_eos=True)
    sequences = [engine.submit(prompt, params, False, None) for prompt in prompts]
    try:
        while any(sequence.slot < 0 for sequence in sequences):  # admission: prefill, first tokens
            engine.step_once()
        for _ in range(WARM_UP_STEPS):
            engine.step_once()
        times = []
        for _ in range(steps):
            started = time.perf_counter()
            engine.step_once()
            times.append(time.perf_counter() - started)
        # One step under the profiler before the recorded ones: its start-up is no step's cost.
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=steps, repeat=1)) as profiler:
            engine.step_once()
            profiler.step()
            profiled = 0.0
            for _ in range(steps):
                started = time.perf_counter()
                engine.step_once()
                profiled += time.perf_counter() - started
                profiler.step()
    finally:
        engine.abort()
        while engine.step_once():
            pass
    return summarise(profiler.key_averages(), profiled, steps, len(prompts), statistics.median(times))


def summarise(averages, profiled_seconds: float, steps: int, concurrency: int, step_seconds: float) -> Dict[str, Any]:
    """The shares of `profiled_seconds` (wall time of `steps` profiled steps) from torch's
    per-op averages (microseconds)."""
    total_us = profiled_seconds * 1e6
    phases = {event.key: event.cpu_time_total for event in averages if event.key in PHASES}
    ops = sorted((event for event in averages if not event.key.startswith("engine.")),
                 key=lambda event: event.self_cpu_time_total, reverse=True)
    in_ops = sum(event.self_cpu_time_total for event in ops)
    in_phases = sum(phases.values())
    return {
        "concurrency": concurrency,
        "stepMs": 1e3 * step_seconds,
        "profiledStepMs": 1e3 * profiled_seconds / steps,
        "phases": [{"name": name.removeprefix("engine."), "share": phases.get(name, 0.0) / total_us} for name in PHASES]
        + [{"name": "rest of the loop", "share": max(0.0, total_us - in_phases) / total_us}],
        "ops": [
            {"name": event.key, "share": event.self_cpu_time_total / total_us, "callsPerStep": event.count / steps,
             "msPerStep": event.self_cpu_time_total / 1e3 / steps}
            for event in ops[:TOP_OPS]
        ],
        "outsideOpsShare": max(0.0, total_us - in_ops) / total_us,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agentmath_engine.decode_profile")
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: the machine's cores)")
    parser.add_argument("--decode-dtype", default="float32")
    parser.add_argument("--decode-linear", default="packed")
    parser.add_argument("--max-running-requests", type=int, default=64)
    args = parser.parse_args(argv)
    threads = args.threads or os.cpu_count() or 1
    use_threads(threads)
    backend = build_backend(WorkerOptions(
        model=args.model, max_running_requests=args.max_running_requests, decode_dtype=args.decode_dtype,
        decode_linear=args.decode_linear, device="cpu",
    ))
    engine = Engine(backend, args.max_running_requests, threads, start=False)
    print(json.dumps({"event": "ready", "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        command = request.get("command")
        if command == "stop":
            break
        try:
            if command == "profile":
                answer = profile_decode(engine, request["prompts"], int(request.get("steps", 8)))
            else:
                answer = {"error": f"unknown command {command!r}"}
        except (ValueError, KeyError) as error:
            answer = {"error": str(error)}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
