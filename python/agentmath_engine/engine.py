"""The continuous-batching generation engine.

One engine thread owns the model's slot KV cache. Each loop iteration it
  1. admits waiting requests into free slots (prefill, then the first token is sampled), and
  2. runs ONE batched decode step over every running sequence, each at its own position.
A request that arrives while others run joins at the next step; finished sequences leave
their slot at once. Per-step Python work is bookkeeping only (append, stop check); the model
call and sampling are batched tensors.

Weight changes (training steps, loading weights) run through `exclusive()`: they wait until
the running sequences finish, new requests wait behind them, so every response comes from
exactly one policy version (reported as meta_info.weight_version) and no KV cache mixes
weights. This matches SGLang, whose weight updates also wait for in-flight requests.

Pausing (SGLang's `pause_generation` / `continue_generation`): while paused no step runs and
new requests wait; a weight change runs at once, without waiting for the paused sequences
(as SGLang skips its update lock when paused). The modes are SGLang's:
  abort     every request in flight or waiting finishes now with finish_reason abort and the
            tokens it has (the client resubmits `prompt + tokens so far`, as AReaL does);
  in_place  running sequences keep their slot, tokens and KV cache, and go on at continue
            (their cache then mixes the old weights' keys with the new weights' queries);
  retract   running sequences keep their slot and tokens but drop their KV cache; at
            continue it is recomputed from prompt + tokens so far (under the new weights).
A paused request's response reports the policy version at its finish.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Set, TypeVar

import torch
from torch.profiler import record_function

from .threads import use_threads
from .sampling import sample_tokens
from .stop import StopChecker, trim_text

T = TypeVar("T")
PAUSE_MODES = ("abort", "in_place", "retract")
# Stop strings are matched on the end of the output's text, decoded from its last WINDOW_TOKENS
# tokens (more when they give too few bytes); the first WINDOW_EDGE_BYTES of such a window are
# not trusted (a cut multi-byte character decodes to up to 3 replacement characters).
WINDOW_TOKENS = 16
WINDOW_EDGE_BYTES = 16
# SGLang 0.5.23's finish reason of an aborted request: FINISH_ABORT("Aborted").to_json()
# (srt/managers/schedule_batch.py; the scheduler's abort path, srt/managers/scheduler.py).
ABORTED = {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None}
logger = logging.getLogger("agentmath_engine.engine")
_seed_source = itertools.count(0x5EED)


@dataclasses.dataclass
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    stop: List[str] = dataclasses.field(default_factory=list)
    stop_token_ids: List[int] = dataclasses.field(default_factory=list)
    no_stop_trim: bool = False
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    seed: Optional[int] = None


@dataclasses.dataclass
class Sequence:
    request_id: str
    prompt: List[int]
    params: SamplingParams
    return_logprob: bool
    seed: int
    stop_checker: StopChecker
    created: float
    output: List[int] = dataclasses.field(default_factory=list)
    logprobs: List[float] = dataclasses.field(default_factory=list)
    output_bytes: bytes = b""
    slot: int = -1
    # Prompt positions whose keys and values came from the backend's prefix cache.
    cached_tokens: int = 0
    finish: Optional[Dict[str, Any]] = None
    result: Optional[Dict[str, Any]] = None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)


class RequestError(ValueError):
    """A request the engine cannot serve (reported to the client as HTTP 400)."""


class Engine:
    def __init__(self, backend, max_running: int, threads: int = 0, start: bool = True) -> None:
        """`start=False`: no engine thread; whoever made it drives it with `step_once` (the decode
        profile does, because torch's profiler records only the thread that started it)."""
        self.backend = backend
        self.threads = threads
        self.max_running = max_running
        self.policy_version = 0
        self._condition = threading.Condition()
        self._waiting: List[Sequence] = []
        self._running: Dict[int, Sequence] = {}
        self._aborted: Set[str] = set()
        self._writers_waiting = 0
        self._writer_active = False
        self._in_step = False
        self._stopped = False
        self._paused = False
        self._retracted: Set[int] = set()
        n = backend.n_slots
        self._tokens = torch.zeros(n, dtype=torch.long)
        self._positions = torch.zeros(n, dtype=torch.long)
        self._temperatures = torch.ones(n)
        self._top_ps = torch.ones(n)
        self._seeds = torch.zeros(n, dtype=torch.long)
        self._counters = torch.zeros(n, dtype=torch.long)
        self.steps = 0
        self._thread: Optional[threading.Thread] = None
        if start:
            self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)
            self._thread.start()

    # Public ---------------------------------------------------------------------------------
    def submit(self, prompt: List[int], params: SamplingParams, return_logprob: bool, request_id: Optional[str]) -> Sequence:
        context = self.backend.context_length
        if len(prompt) == 0:
            raise RequestError("input_ids is empty")
        if len(prompt) >= context:
            raise RequestError(f"the input ({len(prompt)} tokens) is not shorter than the context length ({context})")
        seed = params.seed if params.seed is not None else (next(_seed_source) * 2654435761 + time.time_ns()) & (2**62 - 1)
        eos = set() if params.ignore_eos else set(self.backend.eos_token_ids)
        sequence = Sequence(
            request_id=request_id or uuid.uuid4().hex,
            prompt=list(prompt),
            params=params,
            return_logprob=return_logprob,
            seed=int(seed),
            stop_checker=StopChecker(params.stop, eos | set(params.stop_token_ids)),
            created=time.time(),
        )
        with self._condition:
            if self._stopped:
                raise RequestError("the engine is shutting down")
            self._waiting.append(sequence)
            self._condition.notify_all()
        return sequence

    def abort(self, request_id: Optional[str] = None) -> int:
        """Aborts one request by id, or every request when id is None. Returns how many. A
        request aborted while the engine is paused finishes at once."""
        with self._condition:
            targets = [s for s in self._waiting + list(self._running.values()) if request_id in (None, s.request_id)]
            if self._paused and not self._in_step:
                for sequence in targets:
                    self._finish_aborted(sequence)
            else:
                for sequence in targets:
                    self._aborted.add(sequence.request_id)
            self._condition.notify_all()
        return len(targets)

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self, mode: str) -> int:
        """Stops generating after the step in flight (see module comment for the modes).
        Returns how many running sequences are kept (0 for abort)."""
        if mode not in PAUSE_MODES:
            raise RequestError(f"mode must be one of {', '.join(PAUSE_MODES)}, got {mode!r}")
        with self._condition:
            self._paused = True
            while self._in_step:
                self._condition.wait()
            if mode == "abort":
                for sequence in self._waiting + list(self._running.values()):
                    self._finish_aborted(sequence)
            elif mode == "retract":
                for slot, sequence in self._running.items():
                    if slot not in self._retracted:
                        self._release(sequence)
                        self._retracted.add(slot)
            self._condition.notify_all()
            return len(self._running)

    def flush_cache(self, ignore_waiting: bool = False) -> bool:
        """SGLang's flush (Scheduler.flush_cache / is_fully_idle): refused while any request holds
        its KV cache (one paused in place does; a retracted one does not) and, unless paused or
        `ignore_waiting`, while any waits. A flush that succeeds empties the backend's prefix cache
        (SGLang resets its radix cache)."""
        with self._condition:
            holding = [slot for slot in self._running if slot not in self._retracted] or self._in_step
            flushed = not holding and (self._paused or ignore_waiting or not self._waiting)
            prefixes = getattr(self.backend, "prefixes", None)
            if flushed and prefixes is not None:
                prefixes.clear()
            return flushed

    def resume(self) -> None:
        """SGLang's continue_generation: steps run again (retracted caches are recomputed first)."""
        with self._condition:
            self._paused = False
            self._condition.notify_all()

    def exclusive(self, action: Callable[[], T]) -> T:
        """Runs `action` with no sequence in flight, or at once while paused (see module comment)."""
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writer_active or self._in_step or (self._running and not self._paused):
                    self._condition.wait()
                self._writer_active = True
            finally:
                self._writers_waiting -= 1
        try:
            return action()
        finally:
            with self._condition:
                self._writer_active = False
                self._condition.notify_all()

    def stats(self) -> Dict[str, int]:
        with self._condition:
            return {"running": len(self._running), "waiting": len(self._waiting), "decode_steps": self.steps,
                    "paused": self._paused}

    def shutdown(self) -> None:
        self.abort()
        with self._condition:
            self._stopped = True
            self._paused = False
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    # Engine thread --------------------------------------------------------------------------
    def _loop(self) -> None:
        while self._iterate(wait=True):
            pass

    def step_once(self) -> bool:
        """One iteration of the engine loop (admission, then a decode step) in the calling thread,
        for an engine made with `start=False`. False when there was nothing to do."""
        return self._iterate(wait=False)

    def _idle(self) -> bool:
        return (
            self._writer_active
            or self._paused
            or (not self._running and (not self._waiting or self._writers_waiting))
        )

    def _iterate(self, wait: bool) -> bool:
        """Admits and steps once; False when stopped with nothing left (or idle, without `wait`)."""
        with self._condition:
            while not self._stopped and self._idle():
                if not wait:
                    return False
                self._condition.wait()
            if self._stopped and not self._running and not self._waiting:
                return False
            admit: List[Sequence] = []
            if not self._writers_waiting:
                free = [slot for slot in range(self.backend.n_slots) if slot not in self._running]
                room = min(len(free), self.max_running - len(self._running))
                admit, self._waiting = self._waiting[:room], self._waiting[room:]
                for sequence, slot in zip(admit, free):
                    sequence.slot = slot
                    self._running[slot] = sequence
            self._in_step = True
        try:
            use_threads(self.threads)
            self._step(admit)
        except Exception as error:  # a bug or exhausted memory: fail the batch, keep serving
            logger.exception("decode step failed")
            with self._condition:
                for sequence in list(self._running.values()):
                    self._finish(sequence, {"type": "abort", "message": f"engine error: {error}"})
        finally:
            with self._condition:
                self._in_step = False
                self._condition.notify_all()
        return True

    def _step(self, admit: List[Sequence]) -> None:
        with self._condition:
            aborted, self._aborted = self._aborted, set()
            for sequence in list(self._running.values()):
                if sequence.request_id in aborted:
                    self._finish(sequence, dict(ABORTED))
            for sequence in [s for s in self._waiting if s.request_id in aborted]:
                self._waiting.remove(sequence)
                self._finish(sequence, dict(ABORTED))
        with self._condition:
            retracted, self._retracted = self._retracted, set()
        for slot in sorted(retracted):
            sequence = self._running.get(slot)
            if sequence is not None:  # the cache holds every token but the last sampled one
                self.backend.prefill(slot, sequence.prompt + sequence.output[:-1])
        with record_function("engine.prefill"):
            self._admit([sequence for sequence in admit if sequence.finish is None])
        admitted = {sequence.slot for sequence in admit}
        decoding = [s for s in self._running.values() if s.slot not in admitted]
        if not decoding:
            return
        width = max(s.slot for s in decoding) + 1
        active = torch.zeros(width, dtype=torch.bool)
        slots = torch.tensor(sorted(s.slot for s in decoding))
        active[slots] = True
        # Idle rows (free slots, and slots admitted this step, whose first decode comes next
        # step) compute a pad at position 0 and write nothing: their rows are ignored.
        tokens = torch.where(active, self._tokens[:width], torch.zeros_like(self._tokens[:width]))
        positions = torch.where(active, self._positions[:width], torch.zeros_like(self._positions[:width]))
        with record_function("engine.forward"):
            logits = self.backend.decode_step(tokens, positions, active)
        with record_function("engine.sampling"):
            # Only the decoding rows are sampled (all of them, in slot order, when none is idle).
            rows = slice(0, width) if len(slots) == width else slots
            sampled, logprobs = sample_tokens(
                logits[rows], self._temperatures[rows], self._top_ps[rows], self._seeds[rows], self._counters[rows]
            )
            self.steps += 1
            self._positions[slots] += 1
            self._counters[slots] += 1
            self._tokens[slots] = sampled
            sampled_list, logprob_list = sampled.tolist(), logprobs.tolist()
        with record_function("engine.bookkeeping"):
            row_of = {slot: row for row, slot in enumerate(slots.tolist())}
            for sequence in decoding:
                row = row_of[sequence.slot]
                self._append(sequence, sampled_list[row], logprob_list[row])

    def _admit(self, sequences: List[Sequence]) -> None:
        """Prefills the admitted sequences (in one forward pass where the backend batches
        prefills) and samples each one's first token."""
        for sequence in [s for s in sequences if s.params.max_new_tokens <= 0]:
            self._finish_locked(sequence, {"type": "length", "length": 0})
        sequences = [s for s in sequences if s.params.max_new_tokens > 0]
        if not sequences:
            return
        requests = [(sequence.slot, sequence.prompt) for sequence in sequences]
        prefill_batch = getattr(self.backend, "prefill_batch", None)  # a backend may batch prefills
        all_logits = prefill_batch(requests) if prefill_batch else [self.backend.prefill(*request) for request in requests]
        cached = getattr(self.backend, "cached_tokens", {})
        for sequence, logits in zip(sequences, all_logits):
            sequence.cached_tokens = cached.get(sequence.slot, 0)
            self._first_token(sequence, logits)

    def _first_token(self, sequence: Sequence, logits: torch.Tensor) -> None:
        slot, params = sequence.slot, sequence.params
        self._temperatures[slot] = float(params.temperature)
        self._top_ps[slot] = float(params.top_p)
        self._seeds[slot] = sequence.seed
        # The draw is keyed on the token's absolute position (prompt + generated so far), not on
        # its index in this request: a continuation (a paused turn resumed, the next turn of a
        # trajectory, with the same seed) draws exactly what one uninterrupted request would
        # have, and never reuses the draws of its start.
        self._counters[slot] = len(sequence.prompt)
        token, logprob = sample_tokens(
            logits[None], self._temperatures[slot : slot + 1], self._top_ps[slot : slot + 1],
            self._seeds[slot : slot + 1], self._counters[slot : slot + 1],
        )
        self._counters[slot] = len(sequence.prompt) + 1
        self._positions[slot] = len(sequence.prompt)
        self._tokens[slot] = token[0]
        self._append(sequence, int(token[0]), float(logprob[0]))

    def _append(self, sequence: Sequence, token: int, logprob: float) -> None:
        """Records a token and checks the finish conditions in SGLang's order: length, then stop
        token, then stop string."""
        sequence.output.append(token)
        sequence.logprobs.append(logprob)
        if sequence.stop_checker.stop_bytes:  # only stop strings read the text while decoding
            sequence.output_bytes = self._text_end(sequence)
        matched = sequence.stop_checker.check(token, sequence.output_bytes)
        if len(sequence.output) >= sequence.params.max_new_tokens:
            self._finish_locked(sequence, {"type": "length", "length": sequence.params.max_new_tokens})
        elif matched is not None:
            self._finish_locked(sequence, {"type": "stop", "matched": matched})
        elif len(sequence.prompt) + len(sequence.output) >= self.backend.context_length:
            self._finish_locked(sequence, {"type": "length", "length": len(sequence.output)})

    def _text_end(self, sequence: Sequence) -> bytes:
        """The end of the output's text (UTF-8), at least the longest stop string's bytes: the
        decoding of its last tokens without its first WINDOW_EDGE_BYTES, which may differ from
        the whole text's (a multi-byte character cut by the window, a leading space a tokenizer
        drops at the start). Per token it decodes a few tokens, not the whole output."""
        output, needed = sequence.output, sequence.stop_checker.longest_bytes + WINDOW_EDGE_BYTES
        window = WINDOW_TOKENS
        while window < len(output):
            text = self.backend.decode(output[-window:]).encode("utf-8")
            if len(text) >= needed:
                return text[WINDOW_EDGE_BYTES:]
            window *= 4
        return self.backend.decode(output).encode("utf-8")

    def _release(self, sequence: Sequence) -> None:
        """Frees the sequence's slot; a backend with a prefix cache keeps its keys and values."""
        keep = getattr(self.backend, "keep_prefix", None)
        if keep is not None:
            keep(sequence.slot, sequence.prompt + sequence.output)
        self.backend.release(sequence.slot)

    def _finish_locked(self, sequence: Sequence, reason: Dict[str, Any]) -> None:
        with self._condition:
            self._finish(sequence, reason)

    def _finish_aborted(self, sequence: Sequence) -> None:
        """Finishes an aborted sequence outside a step. Holds the lock; no step is in flight."""
        if sequence in self._waiting:
            self._waiting.remove(sequence)
        self._retracted.discard(sequence.slot)
        self._finish(sequence, dict(ABORTED))

    def _finish(self, sequence: Sequence, reason: Dict[str, Any]) -> None:
        """Builds the SGLang-shaped result, frees the slot, wakes the waiting request. Holds the lock."""
        if sequence.finish is not None:
            return
        sequence.finish = reason
        if sequence.slot >= 0 and self._running.get(sequence.slot) is sequence:
            del self._running[sequence.slot]
            self._release(sequence)
        matched = reason.get("matched")
        text_ids = sequence.output[:-1] if isinstance(matched, int) and not sequence.params.no_stop_trim else sequence.output
        text = trim_text(self.backend.decode(text_ids, sequence.params.skip_special_tokens), matched, sequence.params.no_stop_trim)
        meta: Dict[str, Any] = {
            "id": sequence.request_id,
            "finish_reason": reason,
            "prompt_tokens": len(sequence.prompt),
            "completion_tokens": len(sequence.output),
            "cached_tokens": sequence.cached_tokens,
            "weight_version": str(self.policy_version),
            "e2e_latency": time.time() - sequence.created,
        }
        if sequence.return_logprob:
            meta["output_token_logprobs"] = [[lp, tok, None] for lp, tok in zip(sequence.logprobs, sequence.output)]
        sequence.result = {"text": text, "output_ids": list(sequence.output), "meta_info": meta}
        sequence.done.set()
