"""One SFT or GRPO step over a global batch, on every rank at once.

The story of a step: every rank holds the whole batch (rank 0 broadcast it) and takes its
share, balanced by tokens → packs it into micro-batches by the token budget → forward, loss,
backward per micro-batch → clip the gradient → one AdamW step → statistics summed over ranks.
The loss of every micro-batch is divided by one normaliser taken over the whole global batch
(trained tokens for token-mean, sequences for sequence-mean), so neither the number of ranks
nor the micro-batch size changes the update. FSDP2 averages gradients over ranks, so each
rank's loss is multiplied by the world size to make that average a sum. With sequence
parallelism (`sequence_parallel.py`) the batch is shared among data-parallel groups instead of
ranks, and the N ranks of a group compute one micro-batch together.
GRPO with `epochs` E and `miniBatches` M takes E·M optimizer steps (PPO-style), each over a
contiguous M-th of the batch; with `proximal: recompute` the proximal policy's logprobs are
scored once before the first update.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.distributed as dist

from .lm_head_logprobs import DEFAULT_CHUNK_TOKENS
from .losses import grpo_loss_sum, sft_loss_sum

from .batch_io import Batch
from .options import StepOptions
from .packing import PackedRow, micro_batches, pack, packed_scores, padded, split_across_ranks, unpack
from .sequence_parallel import SequenceParallel

# A micro-batch's loss (already divided by the normaliser) and its statistics' sums, from its
# packed row and the row's per-token log-probs and entropies ([1, T] each).
LossFunction = Callable[
    [List[int], PackedRow, torch.Tensor, Optional[torch.Tensor]], Tuple[torch.Tensor, Dict[str, torch.Tensor]]
]


class StepRunner:
    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device,
        micro_batch_tokens: int,
        max_grad_norm: float,
        reference: Optional[Callable[[], torch.nn.Module]] = None,
        logits_chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
        sequence_parallel: Optional[SequenceParallel] = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.device = device
        self.micro_batch_tokens = micro_batch_tokens
        self.max_grad_norm = max_grad_norm
        # Tokens per LM-head chunk (0: the model's full [T × V] logits).
        self.logits_chunk_tokens = logits_chunk_tokens
        # None: every rank computes its own micro-batches alone.
        self.sequence_parallel = sequence_parallel
        self._reference_loader = reference
        self._reference: Optional[torch.nn.Module] = None
        self.optimizer_steps = 0
        self.policy_version = 0

    # Public steps ---------------------------------------------------------------------------
    def sft_step(self, batch: Batch, options: StepOptions) -> Dict[str, float]:
        started = time.perf_counter()
        indices = list(range(len(batch)))
        normaliser = _trained_tokens(batch, indices)

        def loss_of(members, row, logprobs, _entropy):
            mask = self._packed_mask(batch, members, row)
            logprob_sum = (logprobs * mask).sum()
            return sft_loss_sum(logprobs, mask) / normaliser, {"logprob_sum": logprob_sum.detach()}

        sums, grad_norm, skipped = self._optimizer_step(batch, indices, loss_of, options.learning_rate, 1.0, False)
        return self._result(batch, sums, grad_norm, skipped, options, started, {"loss": -sums["logprob_sum"] / normaliser})

    def grpo_step(self, batch: Batch, options: StepOptions) -> Dict[str, float]:
        started = time.perf_counter()
        if batch.advantages is None or batch.old_logprobs is None:
            raise ValueError("a GRPO batch needs advantages and oldLogprobs")
        offsets = batch.offsets
        proximal_all: Optional[List[torch.Tensor]] = None
        steps = options.epochs * options.mini_batches
        if options.proximal == "recompute" and steps > 1:
            proximal_all = self.score_sequences(batch, options.temperature)
        reference = self.reference_model() if options.kl_coef > 0 else None
        chunks = [list(chunk) for chunk in np.array_split(np.arange(len(batch)), options.mini_batches) if len(chunk)]
        totals: Dict[str, float] = {}
        grad_norms: List[float] = []
        any_skipped = False
        updates = 0
        # Largest |engine − trainer| logprob on a trained token of this rank, first pass only: over
        # the tokens sampled by the weights this step starts from (numeric mismatch), and over
        # those sampled by older ones (that plus the policy's change since).
        gap_max = {"fresh": 0.0, "stale": 0.0}
        for epoch in range(options.epochs):
            for chunk in chunks:
                sequence_mean = options.aggregation == "sequence-mean"
                if sequence_mean:
                    normaliser = float(sum(1 for i in chunk if batch.loss_mask[offsets[i] + 1 : offsets[i + 1]].any()))
                else:
                    normaliser = _trained_tokens(batch, chunk)

                def loss_of(
                    members, row, row_logprobs, row_entropy, normaliser=normaliser, sequence_mean=sequence_mean, first_pass=epoch == 0
                ):
                    logprobs = unpack(row_logprobs, row)
                    mask = unpack(self._packed_mask(batch, members, row), row)
                    old = padded([_slice(batch.old_logprobs, offsets, i) for i in members], row.max_length).to(self.device)
                    advantages = torch.from_numpy(batch.advantages[members].astype(np.float32)).to(self.device)
                    ref = None
                    if reference is not None:
                        with torch.no_grad():
                            scored, _ = self._scores(reference, row, options.temperature, False)
                            ref = unpack(scored, row)
                    if options.proximal == "recompute":
                        proximal = (
                            padded([proximal_all[i] for i in members], row.max_length).to(self.device)
                            if proximal_all is not None
                            else logprobs.detach()
                        )
                    else:
                        proximal = None
                    weight = mask / mask.sum(dim=1, keepdim=True).clamp(min=1.0) if sequence_mean else mask
                    parts = grpo_loss_sum(
                        logprobs,
                        old,
                        advantages,
                        mask,
                        options.clip_low,
                        options.clip_high,
                        options.kl_coef,
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
                        entropy = unpack(row_entropy.detach(), row)
                        stats = {key: value.detach() for key, value in parts.items() if key != "loss"}
                        stats["entropy_sum"] = (entropy * mask).sum()
                        stats["objective_sum"] = -parts["loss"].detach() / normaliser
                        if first_pass:
                            # The trainer's logprob of each token before any update (π_prox, or
                            # π_θ on the first pass) against the engine's: their numeric gap.
                            trainer_side = proximal if proximal is not None else logprobs.detach()
                            gap = (trainer_side - old).abs()
                            trained = mask > 0
                            fresh = trained
                            if batch.policy_lag is not None:
                                lag = padded([_slice(batch.policy_lag, offsets, i) for i in members], row.max_length)
                                fresh = trained & (lag.to(self.device) == 0)
                            for name, where in (("fresh", fresh), ("stale", trained & ~fresh)):
                                part = gap * where
                                prefix = "" if name == "fresh" else "stale_"
                                stats[f"{prefix}logprob_gap_sum"] = part.sum()
                                stats[f"{prefix}logprob_gap_tokens"] = where.sum().to(part.dtype)
                                gap_max[name] = max(gap_max[name], float(part.max()) if part.numel() else 0.0)
                    return parts["loss"] / normaliser, stats

                sums, grad_norm, skipped = self._optimizer_step(
                    batch, chunk, loss_of, options.learning_rate, options.temperature, True, () if reference is None else (reference,)
                )
                grad_norms.append(grad_norm)
                any_skipped = any_skipped or skipped
                updates += 0 if skipped else 1
                for key, value in sums.items():
                    totals[key] = totals.get(key, 0.0) + value
        tokens = _trained_tokens(batch, list(range(len(batch)))) * options.epochs
        extra = {
            "loss": -totals.pop("objective_sum") / steps,
            "clip_fraction": totals.pop("clipped_sum") / tokens,
            "mean_ratio": totals.pop("ratio_sum") / tokens,
            "approx_kl_old": totals.pop("approx_kl_old_sum") / tokens,
            "entropy": totals.pop("entropy_sum") / tokens,
            "updates": updates,
        }
        # Every rank reaches both reductions; the sums are the same on every rank after the step.
        for name, prefix in (("fresh", ""), ("stale", "stale_")):
            largest = _float_max_over_ranks(gap_max[name], self.device)
            gap_tokens = totals.pop(f"{prefix}logprob_gap_tokens", 0.0)
            gap_sum = totals.pop(f"{prefix}logprob_gap_sum", 0.0)
            if gap_tokens > 0:
                extra[f"{prefix}logprob_gap_mean"] = gap_sum / gap_tokens
                extra[f"{prefix}logprob_gap_max"] = largest
        for key, name in (
            ("kl_sum", "kl_ref"),
            ("dual_clipped_sum", "dual_clip_fraction"),
            ("off_policy_weight_sum", "off_policy_weight"),
            ("off_policy_capped_sum", "off_policy_capped"),
        ):
            if key in totals:
                extra[name] = totals.pop(key) / tokens
        grad_norm = max(grad_norms) if grad_norms else 0.0
        return self._result(batch, {}, grad_norm, any_skipped, options, started, extra)

    @torch.no_grad()
    def score_sequences(self, batch: Batch, temperature: float = 1.0) -> List[torch.Tensor]:
        """log π_θ per token of every sequence (0 at position 0), identical on every rank."""
        groups, group_index = self._data_parallel()
        lengths = batch.lengths.tolist()
        mine = split_across_ranks(lengths, groups)[group_index]
        plan = micro_batches(mine, lengths, self._row_tokens())
        rounds = _max_over_ranks(len(plan), self.device)
        found: Dict[int, np.ndarray] = {}
        was_training = self.model.training
        self.model.eval()
        for index in range(rounds):
            if index < len(plan):
                members = plan[index]
                row = self._row(batch, members)
                scored, _ = self._scores(self.model, row, temperature, False)
                values = scored[0].float().cpu().numpy()
                for member, (start, end) in zip(members, row.spans):
                    found[member] = values[start:end]
            else:
                self._idle_forward(batch, self.model)
        self.model.train(was_training)
        gathered: List[Dict[int, np.ndarray]] = [None] * dist.get_world_size()  # type: ignore[list-item]
        dist.all_gather_object(gathered, found)
        merged: Dict[int, np.ndarray] = {}
        for part in gathered:
            merged.update(part)
        return [torch.from_numpy(merged[i].copy()) for i in range(len(batch))]

    @property
    def reference_loaded(self) -> bool:
        return self._reference is not None

    def reference_model(self) -> torch.nn.Module:
        """The KL reference, loaded on first use (a collective: every rank calls it together)."""
        if self._reference is None:
            if self._reference_loader is None:
                raise ValueError("klCoef > 0 needs a reference model (the trainer's --reference folder)")
            self._reference = self._reference_loader()
        return self._reference

    # Internals ------------------------------------------------------------------------------
    def _row(self, batch: Batch, members: Sequence[int]) -> PackedRow:
        offsets = batch.offsets
        return pack([torch.from_numpy(_slice(batch.input_ids, offsets, i).astype(np.int64)) for i in members], self.device)

    def _packed_mask(self, batch: Batch, members: Sequence[int], row: PackedRow) -> torch.Tensor:
        offsets = batch.offsets
        mask = torch.from_numpy(np.concatenate([_slice(batch.loss_mask, offsets, i) for i in members]).astype(np.float32))
        mask = mask[None].to(self.device)
        # The first token of a sequence has no prediction: never trained.
        return mask.index_fill(1, torch.tensor([start for start, _ in row.spans], device=self.device), 0.0)

    def _data_parallel(self) -> Tuple[int, int]:
        """(groups the batch is shared among, this rank's group): ranks, or SP groups."""
        if self.sequence_parallel is None:
            return dist.get_world_size(), dist.get_rank()
        return self.sequence_parallel.data_parallel_size, self.sequence_parallel.data_parallel_rank

    def _row_tokens(self) -> int:
        """A packed row's budget: each of an SP group's N ranks holds 1/N of the row."""
        return self.micro_batch_tokens * (self.sequence_parallel.size if self.sequence_parallel else 1)

    def _scores(
        self, model: torch.nn.Module, row: PackedRow, temperature: float, entropy: bool
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        if self.sequence_parallel is None:
            return packed_scores(model, row, temperature, self.logits_chunk_tokens, entropy)
        return self.sequence_parallel.scores(model, row, temperature, self.logits_chunk_tokens, entropy)

    def _idle_forward(self, batch: Batch, model: torch.nn.Module) -> torch.Tensor:
        """A rank with fewer micro-batches still joins every FSDP collective: a 2-token forward
        whose loss is multiplied by 0."""
        if self.sequence_parallel is not None:
            return self.sequence_parallel.idle_forward(model, self.device)
        ids = torch.from_numpy(batch.input_ids[:2].astype(np.int64))[None].to(self.device)
        return model(input_ids=ids, position_ids=torch.arange(ids.shape[1], device=self.device)[None], use_cache=False).logits.sum() * 0.0

    def _optimizer_step(
        self,
        batch: Batch,
        indices: List[int],
        loss_of: LossFunction,
        learning_rate: float,
        temperature: float,
        with_entropy: bool,
        also_scored: Sequence[torch.nn.Module] = (),
    ) -> Tuple[Dict[str, float], float, bool]:
        """`also_scored`: the models `loss_of` runs besides the policy (the KL reference); an idle
        round runs them too, in the same order, so every rank joins their collectives."""
        groups, group_index = self._data_parallel()
        lengths = batch.lengths.tolist()
        shares = split_across_ranks([lengths[i] for i in indices], groups)
        mine = [indices[i] for i in shares[group_index]]
        plan = micro_batches(mine, lengths, self._row_tokens())
        rounds = _max_over_ranks(len(plan), self.device)
        self.model.train()
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self.optimizer.zero_grad(set_to_none=True)
        sums: Dict[str, torch.Tensor] = {}
        for index in range(rounds):
            if index < len(plan):
                members = plan[index]
                row = self._row(batch, members)
                logprobs, entropy = self._scores(self.model, row, temperature, with_entropy)
                loss, stats = loss_of(members, row, logprobs, entropy)
                for key, value in stats.items():
                    sums[key] = sums.get(key, torch.zeros((), dtype=torch.float64, device=self.device)) + value.double()
            else:
                loss = self._idle_forward(batch, self.model)
                with torch.no_grad():
                    for model in also_scored:
                        self._idle_forward(batch, model)
            (loss * dist.get_world_size()).backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        grad_norm = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
        skipped = not math.isfinite(grad_norm)
        if skipped:
            self.optimizer.zero_grad(set_to_none=True)  # a non-finite step changes nothing, version included
        else:
            self.optimizer.step()
            self.optimizer_steps += 1
        if self.sequence_parallel is not None and not self.sequence_parallel.counts_statistics:
            sums = {}
        return _sum_over_ranks(sums, self.device), grad_norm, skipped

    def _result(self, batch, sums, grad_norm, skipped, options, started, extra) -> Dict[str, float]:
        # A GRPO step with several updates counts as one policy version when any update applied.
        if not skipped or extra.get("updates", 0) > 0:
            self.policy_version += 1
        elapsed = time.perf_counter() - started
        return {
            **extra,
            "tokens": int(_trained_tokens(batch, list(range(len(batch))))),
            "sequences": len(batch),
            "batch_tokens": int(batch.lengths.sum()),
            "grad_norm": grad_norm,
            "learning_rate": options.learning_rate,
            "skipped": skipped,
            "step_ms": elapsed * 1000.0,
            "tokens_per_second": float(batch.lengths.sum()) / max(elapsed, 1e-9),
            "policy_version": self.policy_version,
        }


def _slice(array: np.ndarray, offsets: np.ndarray, index: int) -> np.ndarray:
    return array[offsets[index] : offsets[index + 1]]


def _trained_tokens(batch: Batch, indices: Sequence[int]) -> float:
    offsets = batch.offsets
    return float(sum(int(batch.loss_mask[offsets[i] + 1 : offsets[i + 1]].sum()) for i in indices))


def _max_over_ranks(value: int, device: torch.device) -> int:
    tensor = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())


def _float_max_over_ranks(value: float, device: torch.device) -> float:
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor.item())


def _sum_over_ranks(sums: Dict[str, torch.Tensor], device: torch.device) -> Dict[str, float]:
    # Every rank must reduce the same keys in the same order; a rank with no micro-batch has none.
    keys: List[List[str]] = [None] * dist.get_world_size()  # type: ignore[list-item]
    dist.all_gather_object(keys, sorted(sums))
    union = sorted({key for part in keys for key in part})
    if not union:
        return {}
    tensor = torch.stack([sums.get(key, torch.zeros((), dtype=torch.float64, device=device)) for key in union])
    dist.all_reduce(tensor)
    return dict(zip(union, tensor.tolist()))
