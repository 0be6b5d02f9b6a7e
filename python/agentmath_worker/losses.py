"""Loss functions of the two training steps, as pure tensor functions (no model, no optimizer).

Shapes: a batch of B sequences padded to T tokens. `mask[b, t]` = 1 where token t of sequence b
is trained (a model-generated response token), 0 for prompt, interpreter output and padding.
`token_logprobs[b, t]` = log π_θ(x_t | x_<t); position 0 has no prediction and is always 0.

SFT:   L = −(1 / Σ m) Σ_{b,t} m_{b,t} log π_θ(x_{b,t} | x_{b,<t})
GRPO (token-level normalisation as in DAPO; clip ε_low / ε_high; optional k3 KL):
  r_{b,t} = exp(log π_θ − log π_old)
  J = (1 / Σ m) Σ_{b,t} m_{b,t} [ min(r Â_b, clip(r, 1 − ε_low, 1 + ε_high) Â_b) − β D_KL,t ]
  D_KL,t = π_ref / π_θ − log(π_ref / π_θ) − 1        (Schulman's k3 estimator, ≥ 0)
  L = −J
The normaliser Σ m counts every trained token of the whole batch (not per sequence), so long
and short responses weigh each token equally; micro-batches pass the batch-wide count in.
"""

from __future__ import annotations

from typing import Dict, Optional

import torch


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """log π(x_t | x_<t) for t ≥ 1 from logits [B, T, V]; position 0 is 0. Returns [B, T]."""
    log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = log_probs.gather(-1, input_ids[:, 1:, None])[..., 0]
    return torch.cat((torch.zeros_like(picked[:, :1]), picked), dim=1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the next-token distribution predicting x_t (t ≥ 1), [B, T]; position 0 is 0."""
    log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
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
) -> Dict[str, torch.Tensor]:
    """Masked sums over the batch: `loss` (= −Σ m·objective) and statistics' sums.
    advantages: [B] (one group-normalised advantage per sequence, broadcast over its tokens)."""
    # Masked positions may hold anything (padding, zeros); keep them out of exp() overflow.
    log_ratio = torch.where(mask > 0, logprobs - old_logprobs, torch.zeros_like(logprobs))
    ratio = torch.exp(log_ratio)
    advantage = advantages[:, None].expand_as(ratio)
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantage
    objective = torch.minimum(unclipped, clipped)
    result: Dict[str, torch.Tensor] = {}
    if kl_coef > 0.0 and ref_logprobs is not None:
        ref_log_ratio = torch.where(mask > 0, ref_logprobs - logprobs, torch.zeros_like(logprobs))
        kl = torch.exp(ref_log_ratio) - ref_log_ratio - 1.0
        objective = objective - kl_coef * kl
        result["kl_sum"] = (kl * mask).sum().detach()
    result["loss"] = -(objective * mask).sum()
    with torch.no_grad():
        result["clipped_sum"] = ((clipped < unclipped).float() * mask).sum()
        result["ratio_sum"] = (ratio * mask).sum()
        # k3 estimate of KL(π_old ‖ π_θ) on the sampled tokens: how far this step has moved.
        result["approx_kl_old_sum"] = ((ratio - 1.0 - log_ratio) * mask).sum()
    return result
