"""Loss functions of the two training steps, as pure tensor functions (no model, no optimizer).

Shapes: a batch of B sequences padded to T tokens. `mask[b, t]` = 1 where token t of sequence b
is trained (a model-generated response token), 0 for prompt, interpreter output and padding.
`token_logprobs[b, t]` = log π_θ(x_t | x_<t); position 0 has no prediction and is always 0.

SFT:   L = −(1 / Σ m) Σ_{b,t} m_{b,t} log π_θ(x_{b,t} | x_{b,<t})
GRPO (token-level normalisation as in DAPO by default; clip ε_low / ε_high; optional KL):
  r_{b,t} = exp(log π_θ − log π_anchor)        anchor = π_behaviour, or π_prox when decoupled
  w_{b,t} = min(π_prox / π_behaviour, cap)     decoupled only: truncated IS (TIS); "mask" (MIS):
                                               w, or 0 outside [floor, cap]; without π_prox: 1
  J = (1 / N) Σ_{b,t} v_{b,t} [ w · min(r Â_b, clip(r, 1 − ε_low, 1 + ε_high) Â_b) − β D_KL,t ]
  dual clip (c > 1): for Â_b < 0 the clipped term is max(…, c Â_b)
  D_KL,t = π_ref / π_θ − log(π_ref / π_θ) − 1  (k3, ≥ 0)   or   ½ (log π_θ − log π_ref)²  (k2)
  L = −J
k1 (log π_θ − log π_ref) is not offered as a loss: on-policy its gradient has zero mean, so it
regularises nothing (it is only a reward penalty in the literature). Every log π is of the
distribution the engine sampled from: log_softmax(logits / T) at sampling temperature T.
Token-mean: v = m and N = Σ m over the whole batch, so each token weighs the same. Sequence-mean:
v = m / (tokens of sequence b) and N = the batch's sequences, so each sequence weighs the same.
N is computed over the whole batch before micro-batching, so a result does not depend on the
micro-batch size.
"""

from __future__ import annotations

from typing import Dict, Optional

import torch


KL_ESTIMATORS = ("k3", "k2")


def _tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / T as float (T ≤ 0 is greedy sampling, whose logprobs the engine reports at T = 1)."""
    logits = logits.float()
    return logits / temperature if temperature > 0 and temperature != 1.0 else logits


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log π(x_t | x_<t) for t ≥ 1 from logits [B, T, V] divided by the sampling temperature;
    position 0 is 0. Returns [B, T]."""
    log_probs = torch.log_softmax(_tempered(logits[:, :-1], temperature), dim=-1)
    picked = log_probs.gather(-1, input_ids[:, 1:, None])[..., 0]
    return torch.cat((torch.zeros_like(picked[:, :1]), picked), dim=1)


def token_entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of the next-token distribution predicting x_t (t ≥ 1), [B, T]; position 0 is 0."""
    log_probs = torch.log_softmax(_tempered(logits[:, :-1], temperature), dim=-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    return torch.cat((torch.zeros_like(entropy[:, :1]), entropy), dim=1)


def sft_loss_sum(logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ m · (−log π); divide by the batch-wide Σ m for the mean."""
    return -(logprobs * mask).sum()


def grpo_loss_sum(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float,
    clip_high: float,
    kl_coef: float = 0.0,
    ref_logprobs: Optional[torch.Tensor] = None,
    *,
    token_weight: Optional[torch.Tensor] = None,
    dual_clip: Optional[float] = None,
    kl_estimator: str = "k3",
    proximal_logprobs: Optional[torch.Tensor] = None,
    off_policy_cap: float = 2.0,
    off_policy_mode: str = "truncate",
    off_policy_floor: float = 0.0,
) -> Dict[str, torch.Tensor]:
    """Weighted sums over the batch: `loss` (= −Σ w·objective) and statistics' sums.

    advantages: [B] (one group-normalised advantage per sequence, broadcast over its tokens).
    old_logprobs: the behaviour policy's logprobs (the engine's, recorded at generation).
    token_weight: [B, T] weight of each token in the sum (default the mask: token-mean once the
      caller divides by the batch's token count; mask / tokens-of-the-sequence gives
      sequence-mean once divided by the batch's sequence count).
    dual_clip: c > 1; for a negative advantage the objective is bounded below by c·Â.
    kl_estimator: "k3" (π_ref/π_θ − log(π_ref/π_θ) − 1) or "k2" (½ (log π_θ − log π_ref)²);
      "k1" is refused (its gradient has zero mean on-policy: no regularisation).
    proximal_logprobs: the proximal policy (decoupled objective): the ratio is π_θ / π_prox,
      and each token is weighted once by the off-policy weight π_prox / π_behaviour, truncated
      at `off_policy_cap` ("truncate") or zeroed outside [`off_policy_floor`, `off_policy_cap`]
      ("mask"). Without it the ratio is
      π_θ / π_behaviour and there is no separate weight."""
    if kl_estimator not in KL_ESTIMATORS:
        raise ValueError(
            f"kl_estimator {kl_estimator!r} is not a KL loss; use one of {', '.join(KL_ESTIMATORS)} "
            "(k1's gradient has zero mean on-policy)"
        )
    weight = mask if token_weight is None else token_weight
    on = mask > 0
    zeros = torch.zeros_like(logprobs)
    result: Dict[str, torch.Tensor] = {}
    if proximal_logprobs is None:
        anchor = old_logprobs
        off_weight = None
    else:
        anchor = proximal_logprobs
        # Masked positions may hold anything (padding, zeros); keep them out of exp() overflow.
        raw = torch.exp(torch.where(on, proximal_logprobs - old_logprobs, zeros))
        if off_policy_mode == "mask":
            outside = (raw > off_policy_cap) | (raw < off_policy_floor)
            off_weight = torch.where(outside, zeros, raw)
        else:
            outside = raw > off_policy_cap
            off_weight = torch.clamp(raw, max=off_policy_cap)
        with torch.no_grad():
            result["off_policy_weight_sum"] = (raw * mask).sum()
            result["off_policy_capped_sum"] = (outside.float() * mask).sum()
    log_ratio = torch.where(on, logprobs - anchor, zeros)
    ratio = torch.exp(log_ratio)
    advantage = advantages[:, None].expand_as(ratio)
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantage
    objective = torch.minimum(unclipped, clipped)
    if dual_clip is not None:
        bounded = torch.maximum(objective, dual_clip * advantage)
        with torch.no_grad():
            result["dual_clipped_sum"] = (((bounded > objective) & (advantage < 0)).float() * mask).sum()
        objective = torch.where(advantage < 0, bounded, objective)
    if off_weight is not None:
        objective = off_weight.detach() * objective  # applied here once, never again
    if kl_coef > 0.0 and ref_logprobs is not None:
        if kl_estimator == "k2":
            kl = 0.5 * torch.where(on, logprobs - ref_logprobs, zeros) ** 2
        else:
            ref_log_ratio = torch.where(on, ref_logprobs - logprobs, zeros)
            kl = torch.exp(ref_log_ratio) - ref_log_ratio - 1.0
        objective = objective - kl_coef * kl
        result["kl_sum"] = (kl * mask).sum().detach()
    result["loss"] = -(objective * weight).sum()
    with torch.no_grad():
        result["clipped_sum"] = ((clipped < unclipped).float() * mask).sum()
        result["ratio_sum"] = (ratio * mask).sum()
        # k3 estimate of KL(π_anchor ‖ π_θ) on the sampled tokens: how far this step has moved.
        result["approx_kl_old_sum"] = ((ratio - 1.0 - log_ratio) * mask).sum()
    return result
