"""The typed options of a step, read from a batch header (camelCase keys, as TypeScript sends
them); a key that is not known, a value of the wrong type or out of its range is an error
naming it (the service answers 400 and keeps serving)."""

from __future__ import annotations

import dataclasses
import math
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


_WIRE_OF = {field: key for key, field in _WIRE.items()}
# Numeric options: (lowest value, whether it is allowed). Temperature ≤ 0 means greedy (below).
_RANGES = {
    "learning_rate": (0.0, True),
    "temperature": (-math.inf, True),
    "clip_low": (0.0, True),
    "clip_high": (0.0, True),
    "kl_coef": (0.0, True),
    "dual_clip": (1.0, False),
    "off_policy_cap": (0.0, False),
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
    for name, (low, low_inclusive) in _RANGES.items():
        if name not in values or (name == "dual_clip" and values[name] is None):
            continue
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise StepOptionsError(f"step option {_WIRE_OF[name]} must be a finite number, not {value!r}")
        if value < low or (value == low and not low_inclusive):
            raise StepOptionsError(f"step option {_WIRE_OF[name]}={value!r}: expected a number {'≥' if low_inclusive else '>'} {low}")
    if values.get("reference_path") is not None and not isinstance(values["reference_path"], str):
        raise StepOptionsError("step option referencePath must be a string")
    for name in ("mini_batches", "epochs"):
        if name in values and (not isinstance(values[name], int) or values[name] < 1):
            raise StepOptionsError(f"step option {name} must be an integer ≥ 1")
    if values.get("temperature", 1.0) <= 0:
        # Greedy samples have no distribution to correct; the engine reports T = 1 logprobs for them.
        values["temperature"] = 1.0
    return StepOptions(**values)
