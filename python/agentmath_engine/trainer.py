"""SFT and GRPO steps on the served weights (see losses.py for the exact objectives).

An update takes a batch, splits it into micro-batches of at most `micro_batch_tokens` padded
tokens, accumulates gradients with the batch-wide token count as the normaliser, clips the
gradient norm and takes one AdamW step. An SFT step is one update. A GRPO step is
`epochs` × `mini_batches` updates (PPO-style: the batch split into M mini-batches, each an
optimizer step, E passes; 1 × 1 is one update on the whole batch), all against the same
behaviour logprobs, and with the decoupled objective against one proximal policy: the weights
before the step's first update. A step whose every update was skipped (non-finite gradient)
reports `skipped`, and the server then leaves the policy version as it was. Logprobs are of the
tempered distribution the engine sampled from (`temperature`). The KL reference is loaded from
`reference_path` (the run's initial model) when given, so a resumed run regularises towards
the same policy as a fresh one. The optimizer's state is saved beside the weights so a run
resumes exactly.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any, Dict, List, Optional

import torch

from .threads import use_threads
from .losses import grpo_loss_sum, sft_loss_sum, token_entropy, token_logprobs


@dataclasses.dataclass
class TrainSequence:
    input_ids: List[int]
    loss_mask: List[int]
    advantage: float = 0.0
    old_logprobs: Optional[List[float]] = None
    # The proximal policy's logprobs when a step takes several updates (decoupled objective).
    proximal_logprobs: Optional[List[float]] = None


@dataclasses.dataclass
class GrpoOptions:
    """The GRPO objective's choices (losses.py has the formulas; docs/rl.md their biases)."""

    dual_clip: Optional[float] = None
    kl_estimator: str = "k3"
    aggregation: str = "token-mean"
    proximal: str = "behaviour"
    off_policy_cap: float = 2.0
    off_policy_mode: str = "truncate"
    off_policy_floor: float = 0.0
    # The engine's sampling temperature: every logprob is of log_softmax(logits / T).
    temperature: float = 1.0
    # PPO mini-batches per pass and passes over the batch (1 × 1: one update per step).
    mini_batches: int = 1
    epochs: int = 1
    # The KL reference's model folder (the run's initial policy); None: a frozen copy of the
    # weights held when the reference is first needed.
    reference_path: Optional[str] = None


@dataclasses.dataclass
class OptimizerSettings:
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.95
    max_grad_norm: float = 1.0


class Trainer:
    def __init__(self, backend, settings: OptimizerSettings, micro_batch_tokens: int = 8192, threads: int = 0) -> None:
        self.backend = backend
        self.threads = threads
        self.settings = settings
        self.micro_batch_tokens = micro_batch_tokens
        self.optimizer_steps = 0
        self._optimizer: Optional[torch.optim.Optimizer] = None
        self._reference: Optional[torch.nn.Module] = None
        self._reference_source: Optional[str] = None

    # Steps ----------------------------------------------------------------------------------
    def sft_step(self, sequences: List[TrainSequence], learning_rate: Optional[float] = None) -> Dict[str, Any]:
        def loss_of(batch, logits, ids, mask, attention, count):
            del batch, attention
            logprobs = token_logprobs(logits, ids)
            return sft_loss_sum(logprobs, mask) / count, {"logprob_sum": (logprobs * mask).sum().item()}

        stats = self._step(sequences, loss_of, learning_rate)
        stats["loss"] = -stats.pop("logprob_sum") / stats["tokens"]
        return stats

    def grpo_step(
        self,
        sequences: List[TrainSequence],
        clip_low: float,
        clip_high: float,
        kl_coef: float,
        learning_rate: Optional[float] = None,
        options: Optional["GrpoOptions"] = None,
    ) -> Dict[str, Any]:
        options = options or GrpoOptions()
        if options.mini_batches < 1 or options.epochs < 1:
            raise ValueError("mini_batches and epochs must be at least 1")
        if kl_coef > 0:
            self._load_reference(options.reference_path)
        if options.proximal == "recompute" and options.mini_batches * options.epochs > 1:
            # π_prox is the weights before the step's first update, for every update of the step.
            scored = self.score([s.input_ids for s in sequences], options.temperature)
            sequences = [dataclasses.replace(s, proximal_logprobs=p) for s, p in zip(sequences, scored)]
        parts = [part for part in _split(sequences, options.mini_batches) if _trained_tokens(part) > 0]
        if not parts:
            raise ValueError("the batch has no trained tokens (every loss_mask entry after position 0 is 0)")
        updates = [
            self._grpo_update(part, clip_low, clip_high, kl_coef, learning_rate, options)
            for _ in range(options.epochs)
            for part in parts
        ]
        return _merge_updates(updates, len(sequences), _trained_tokens(sequences))

    def _grpo_update(
        self,
        sequences: List[TrainSequence],
        clip_low: float,
        clip_high: float,
        kl_coef: float,
        learning_rate: Optional[float],
        options: "GrpoOptions",
    ) -> Dict[str, Any]:
        """One optimizer step on one mini-batch; its sums, for `_merge_updates`."""
        sequence_mean = options.aggregation == "sequence-mean"
        temperature = options.temperature

        def loss_of(batch, logits, ids, mask, attention, count):
            logprobs = token_logprobs(logits, ids, temperature)
            old = _pad_floats([s.old_logprobs or [] for s in batch], ids.shape[1])
            advantages = torch.tensor([s.advantage for s in batch], dtype=torch.float32)
            ref = None
            if kl_coef > 0:
                with torch.no_grad():
                    reference_logits = self.backend.reference_logits(self._reference, ids, attention)
                    ref = token_logprobs(reference_logits, ids, temperature)
            proximal = None
            if options.proximal == "recompute":
                if all(s.proximal_logprobs is not None for s in batch):
                    proximal = _pad_floats([s.proximal_logprobs or [] for s in batch], ids.shape[1])
                else:
                    # One update per step: the weights before it are this forward pass's, detached.
                    proximal = logprobs.detach()
            weight = mask / mask.sum(dim=1, keepdim=True).clamp(min=1.0) if sequence_mean else mask
            parts = grpo_loss_sum(
                logprobs,
                old,
                advantages,
                mask,
                clip_low,
                clip_high,
                kl_coef,
                ref,
                token_weight=weight,
                dual_clip=options.dual_clip,
                kl_estimator=options.kl_estimator,
                proximal_logprobs=proximal,
                off_policy_cap=options.off_policy_cap,
                off_policy_mode=options.off_policy_mode,
                off_policy_floor=options.off_policy_floor,
            )
            with torch.no_grad():
                entropy = (token_entropy(logits, temperature) * mask).sum().item()
            extra = {key: value.item() for key, value in parts.items() if key != "loss"}
            extra["entropy_sum"] = entropy
            extra["objective_sum"] = -parts["loss"].item()
            return parts["loss"] / count, extra

        normaliser = None
        if sequence_mean:
            normaliser = float(sum(1 for s in sequences if any(s.loss_mask[1:])))
        stats = self._step(sequences, loss_of, learning_rate, normaliser)
        stats["normaliser"] = normaliser or stats["tokens"]
        return stats

    def _load_reference(self, path: Optional[str]) -> None:
        """The KL reference: loaded from `path` (kept while the path stays), else a frozen copy
        of the weights held now (kept for the worker's life)."""
        source = path or "<weights in memory>"
        if self._reference is None or self._reference_source != source:
            self._reference = self.backend.frozen_copy(path)
            self._reference_source = source

    @torch.no_grad()
    def score(self, sequences: List[List[int]], temperature: float = 1.0) -> List[List[float]]:
        """log π_θ(x_t | x_<t) per token (0 at position 0) under the current weights, of the
        distribution sampled at `temperature`."""
        output: List[List[float]] = []
        use_threads(self.threads)
        for start in range(0, len(sequences), 8):
            chunk = sequences[start : start + 8]
            ids, _, attention = _collate([TrainSequence(s, [1] * len(s)) for s in chunk])
            logprobs = token_logprobs(self.backend.logits(ids, attention), ids, temperature)
            output.extend(row[: len(s)] for row, s in zip(logprobs.tolist(), chunk))
        return output

    # Checkpoint state -----------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        return {"optimizer_steps": self.optimizer_steps, "optimizer": self._optimizer.state_dict() if self._optimizer else None}

    def save_optimizer(self, folder: str) -> None:
        torch.save(self.state_dict(), os.path.join(folder, "optimizer.pt"))

    def load_optimizer(self, folder: str) -> bool:
        path = os.path.join(folder, "optimizer.pt")
        if not os.path.isfile(path):
            self._optimizer = None
            return False
        state = torch.load(path, map_location="cpu")
        self.optimizer_steps = int(state["optimizer_steps"])
        self._optimizer = None
        if state["optimizer"] is not None:
            self._optimizer_for().load_state_dict(state["optimizer"])
        return True

    # Internals ------------------------------------------------------------------------------
    def _optimizer_for(self) -> torch.optim.Optimizer:
        if self._optimizer is None:
            module = self.backend.trainable()
            decay = [p for n, p in module.named_parameters() if p.requires_grad and p.dim() >= 2]
            no_decay = [p for n, p in module.named_parameters() if p.requires_grad and p.dim() < 2]
            self._optimizer = torch.optim.AdamW(
                [{"params": decay, "weight_decay": self.settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                lr=self.settings.learning_rate,
                betas=(self.settings.beta1, self.settings.beta2),
            )
        return self._optimizer

    def _step(
        self, sequences: List[TrainSequence], loss_of, learning_rate: Optional[float], normaliser: Optional[float] = None
    ) -> Dict[str, Any]:
        """`normaliser`: what each micro-batch's loss sum is divided by (default the batch's
        trained-token count); computed over the whole batch, so micro-batching changes nothing."""
        started = time.perf_counter()
        use_threads(self.threads)
        tokens = float(sum(sum(1 for m in s.loss_mask[1:] if m) for s in sequences))
        if tokens == 0:
            raise ValueError("the batch has no trained tokens (every loss_mask entry after position 0 is 0)")
        count = tokens if normaliser is None else normaliser
        module = self.backend.trainable()
        module.train()
        optimizer = self._optimizer_for()
        lr = self.settings.learning_rate if learning_rate is None else learning_rate
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        totals: Dict[str, float] = {}
        try:
            for batch in _micro_batches(sequences, self.micro_batch_tokens):
                ids, mask, attention = _collate(batch)
                logits = self.backend.logits(ids, attention)
                loss, extra = loss_of(batch, logits, ids, mask, attention, count)
                loss.backward()
                for key, value in extra.items():
                    totals[key] = totals.get(key, 0.0) + value
            parameters = [p for p in module.parameters() if p.grad is not None]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(parameters, self.settings.max_grad_norm))
            if math.isfinite(grad_norm):
                optimizer.step()
        finally:
            optimizer.zero_grad(set_to_none=True)
            module.eval()
        self.optimizer_steps += 1
        return {
            **totals,
            "tokens": int(tokens),
            "sequences": len(sequences),
            "grad_norm": grad_norm,
            "learning_rate": lr,
            "skipped": not math.isfinite(grad_norm),
            "step_ms": (time.perf_counter() - started) * 1000.0,
        }


def _trained_tokens(sequences: List[TrainSequence]) -> int:
    return sum(sum(1 for m in s.loss_mask[1:] if m) for s in sequences)


def _split(sequences: List[TrainSequence], parts: int) -> List[List[TrainSequence]]:
    """`parts` contiguous mini-batches in the batch's order, sizes differing by at most one."""
    size, extra = divmod(len(sequences), parts)
    out: List[List[TrainSequence]] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        out.append(sequences[start:end])
        start = end
    return [part for part in out if part]


_RATIOS = {
    "clip_fraction": "clipped_sum",
    "mean_ratio": "ratio_sum",
    "approx_kl_old": "approx_kl_old_sum",
    "entropy": "entropy_sum",
    "kl_ref": "kl_sum",
    "dual_clip_fraction": "dual_clipped_sum",
    "off_policy_weight": "off_policy_weight_sum",
    "off_policy_capped": "off_policy_capped_sum",
}


def _merge_updates(updates: List[Dict[str, Any]], sequences: int, batch_tokens: int) -> Dict[str, Any]:
    """A step's statistics over its updates: sums over every update's trained tokens; `tokens`
    is the batch's trained tokens (counted once), `skipped` whether no update was applied."""
    tokens = sum(u["tokens"] for u in updates)
    normaliser = sum(u["normaliser"] for u in updates)
    applied = [u for u in updates if not u["skipped"]]
    result: Dict[str, Any] = {
        "loss": -sum(u["objective_sum"] for u in updates) / normaliser,
        "tokens": batch_tokens,
        "sequences": sequences,
        "grad_norm": updates[-1]["grad_norm"],
        "learning_rate": updates[-1]["learning_rate"],
        "skipped": not applied,
        "updates": len(applied),
        "step_ms": sum(u["step_ms"] for u in updates),
    }
    for name, key in _RATIOS.items():
        if key in updates[0]:
            result[name] = sum(u[key] for u in updates) / tokens
    return result


def _micro_batches(sequences: List[TrainSequence], budget: int) -> List[List[TrainSequence]]:
    """Groups sequences (by length, to limit padding) so rows × longest ≤ budget tokens."""
    ordered = sorted(sequences, key=lambda s: len(s.input_ids))
    batches: List[List[TrainSequence]] = []
    current: List[TrainSequence] = []
    for sequence in ordered:
        if current and (len(current) + 1) * len(sequence.input_ids) > budget:
            batches.append(current)
            current = []
        current.append(sequence)
    if current:
        batches.append(current)
    return batches


def _collate(batch: List[TrainSequence]):
    """Right-padded ids [B, T], float loss mask [B, T] (0 on padding and position 0) and the
    attention mask [B, T] (1 on real tokens). Padding uses token 0: causal attention keeps
    right padding from influencing real tokens, and the loss mask drops it."""
    width = max(len(s.input_ids) for s in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros(len(batch), width)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for row, sequence in enumerate(batch):
        ids[row, : len(sequence.input_ids)] = torch.tensor(sequence.input_ids, dtype=torch.long)
        mask[row, : len(sequence.loss_mask)] = torch.tensor(sequence.loss_mask, dtype=torch.float32)
        attention[row, : len(sequence.input_ids)] = 1
    mask[:, 0] = 0.0
    return ids, mask, attention


def _pad_floats(rows: List[List[float]], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for index, row in enumerate(rows):
        if row:
            out[index, : len(row)] = torch.tensor(row[:width], dtype=torch.float32)
    return out
