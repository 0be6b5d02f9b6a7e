"""The typed options of a step, read from a batch header (camelCase keys, as TypeScript sends
them); a key that is not known is an error naming it."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional


class StepOptionsError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class StepOptions:
    learning_rate: float
    temperature: float = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    aggregation: str = "token-mean"
    dual_clip: Optional[float] = None
    proximal: str = "behaviour"
    off_policy_cap: float = 2.0
    off_policy_mode: str = "truncate"
    off_policy_floor: float = 0.0
    mini_batches: int = 1
    epochs: int = 1
    reference_path: Optional[str] = None


_WIRE = {
    "learningRate": "learning_rate",
    "temperature": "temperature",
    "clipEpsilonLow": "clip_low",
    "clipEpsilonHigh": "clip_high",
    "klCoef": "kl_coef",
    "klEstimator": "kl_estimator",
    "aggregation": "aggregation",
    "dualClip": "dual_clip",
    "proximal": "proximal",
    "offPolicyCap": "off_policy_cap",
    "offPolicyMode": "off_policy_mode",
    "offPolicyFloor": "off_policy_floor",
    "miniBatches": "mini_batches",
    "epochs": "epochs",
    "referencePath": "reference_path",
}
_CHOICES = {
    "kl_estimator": ("k3", "k2"),
    "aggregation": ("token-mean", "sequence-mean"),
    "proximal": ("behaviour", "recompute"),
    "off_policy_mode": ("truncate", "mask"),
}


def parse_step_options(raw: Dict[str, Any]) -> StepOptions:
    values: Dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _WIRE:
            raise StepOptionsError(f"step option {key!r} is not known (known: {', '.join(sorted(_WIRE))})")
        values[_WIRE[key]] = value
    if "learning_rate" not in values:
        raise StepOptionsError("step option 'learningRate' is required")
    for name, choices in _CHOICES.items():
        if name in values and values[name] not in choices:
            raise StepOptionsError(f"step option {name}={values[name]!r}: expected one of {', '.join(choices)}")
    for name in ("mini_batches", "epochs"):
        if name in values and (not isinstance(values[name], int) or values[name] < 1):
            raise StepOptionsError(f"step option {name} must be an integer ≥ 1")
    if values.get("temperature", 1.0) <= 0:
        # Greedy samples have no distribution to correct; the engine reports T = 1 logprobs for them.
        values["temperature"] = 1.0
    return StepOptions(**values)
