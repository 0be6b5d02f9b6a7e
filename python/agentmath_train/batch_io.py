"""The binary batch format shared with TypeScript (`src/train/trainer-batch.ts` writes it).

Layout, little-endian, every array 4-byte aligned:
  b"AMB1" · u32 header length · header JSON (UTF-8, space-padded to a multiple of 8)
  int32 lengths[n] · int32 input_ids[Σ lengths] · float32 advantages[n] (if header.advantages)
  · float32 old_logprobs[Σ lengths] (if header.oldLogprobs) · uint8 loss_mask[Σ lengths]
  · uint8 policy_lag[Σ lengths] (if header.policyLag)
The header carries `sequences`, `tokens`, the three flags and the step's `options` (a JSON object).
`policy_lag` is how many policy versions before the weights the step trains from a token was
sampled (0: by those weights; 255: unknown or 255 and more); a batch without it is all 0.
A batch at paper scale (512 × 16k tokens) is ~170 MB and parses with no per-token Python work.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from typing import Any, Dict, Optional

import numpy as np

MAGIC = b"AMB1"


class BatchFormatError(ValueError):
    """The bytes are not a batch this module wrote, or disagree with their own header."""


@dataclasses.dataclass
class Batch:
    lengths: np.ndarray  # int32 [n]
    input_ids: np.ndarray  # int32 [Σ lengths]
    loss_mask: np.ndarray  # uint8 [Σ lengths]
    advantages: Optional[np.ndarray]  # float32 [n]
    old_logprobs: Optional[np.ndarray]  # float32 [Σ lengths]
    options: Dict[str, Any]
    policy_lag: Optional[np.ndarray] = None  # uint8 [Σ lengths]

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.lengths, dtype=np.int64)))

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


def encode_batch(
    input_ids: list,
    loss_mask: list,
    advantages: Optional[list] = None,
    old_logprobs: Optional[list] = None,
    options: Optional[Dict[str, Any]] = None,
    policy_lag: Optional[list] = None,
) -> bytes:
    """Lists of per-sequence lists → bytes (tests and Python callers; TypeScript has its own writer)."""
    lengths = np.array([len(ids) for ids in input_ids], dtype="<i4")
    header = {
        "sequences": int(lengths.shape[0]),
        "tokens": int(lengths.sum()),
        "advantages": advantages is not None,
        "oldLogprobs": old_logprobs is not None,
        "policyLag": policy_lag is not None,
        "options": options or {},
    }
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    parts = [MAGIC, struct.pack("<I", len(text)), text, lengths.tobytes()]
    parts.append(np.concatenate([np.asarray(ids, dtype="<i4") for ids in input_ids] or [np.zeros(0, "<i4")]).tobytes())
    if advantages is not None:
        parts.append(np.asarray(advantages, dtype="<f4").tobytes())
    if old_logprobs is not None:
        parts.append(np.concatenate([np.asarray(row, dtype="<f4") for row in old_logprobs] or [np.zeros(0, "<f4")]).tobytes())
    parts.append(np.concatenate([np.asarray(row, dtype="u1") for row in loss_mask] or [np.zeros(0, "u1")]).tobytes())
    if policy_lag is not None:
        parts.append(np.concatenate([np.asarray(row, dtype="u1") for row in policy_lag] or [np.zeros(0, "u1")]).tobytes())
    return b"".join(parts)


def decode_batch(data: bytes) -> Batch:
    if len(data) < 8 or data[:4] != MAGIC:
        raise BatchFormatError("not an AgentMath batch (the first bytes are not AMB1)")
    (header_length,) = struct.unpack_from("<I", data, 4)
    try:
        header = json.loads(data[8 : 8 + header_length].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BatchFormatError(f"batch header is not JSON: {error}") from error
    if not isinstance(header, dict):
        raise BatchFormatError("batch header is not a JSON object")
    n, tokens = header.get("sequences"), header.get("tokens")
    for name, value in (("sequences", n), ("tokens", tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BatchFormatError(f"batch header field {name!r} must be an integer ≥ 0, not {value!r}")
    if not isinstance(header.get("options", {}), dict):
        raise BatchFormatError("batch header field 'options' must be a JSON object")
    offset = 8 + header_length

    def take(dtype: str, count: int) -> np.ndarray:
        nonlocal offset
        size = np.dtype(dtype).itemsize * count
        if offset + size > len(data):
            raise BatchFormatError(f"batch is truncated: {len(data)} bytes, header promises more")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
        offset += size
        return array

    lengths = take("<i4", n)
    if int(lengths.sum()) != tokens or (n > 0 and int(lengths.min()) < 1):
        raise BatchFormatError("batch lengths disagree with the header's token count, or a sequence is empty")
    input_ids = take("<i4", tokens)
    advantages = take("<f4", n) if header.get("advantages") else None
    old_logprobs = take("<f4", tokens) if header.get("oldLogprobs") else None
    loss_mask = take("u1", tokens)
    policy_lag = take("u1", tokens) if header.get("policyLag") else None
    if offset != len(data):
        raise BatchFormatError(f"batch has {len(data) - offset} bytes past its end")
    return Batch(lengths, input_ids, loss_mask, advantages, old_logprobs, dict(header.get("options") or {}), policy_lag)


def check_ranges(batch: Batch, vocab_size: int) -> None:
    """Every value in range for the model it is meant for; the error names the field, the
    sequence and the position of the first value out of range. A token id outside the
    embedding table would otherwise fail inside the forward pass, on every rank."""
    sequence_of = np.repeat(np.arange(len(batch)), batch.lengths)
    offsets = batch.offsets

    def first_bad(field: str, bad: np.ndarray, values: np.ndarray, expected: str) -> None:
        where = np.flatnonzero(bad)
        if where.size == 0:
            return
        index = int(where[0])
        sequence = int(sequence_of[index])
        raise BatchFormatError(
            f"{field}: sequence {sequence} position {index - int(offsets[sequence])} holds {values[index].item()!r}; "
            f"expected {expected} ({where.size} value(s) out of range)"
        )

    ids = batch.input_ids
    first_bad("input_ids", (ids < 0) | (ids >= vocab_size), ids, f"a token id in 0..{vocab_size - 1} (the model's vocabulary)")
    first_bad("loss_mask", batch.loss_mask > 1, batch.loss_mask, "0 or 1")
    if batch.old_logprobs is not None:
        first_bad("oldLogprobs", ~np.isfinite(batch.old_logprobs), batch.old_logprobs, "a finite log-probability")
    if batch.advantages is not None:
        advantages = batch.advantages
        bad = ~np.isfinite(advantages)
        if bad.any():
            sequence = int(np.flatnonzero(bad)[0])
            raise BatchFormatError(f"advantages: sequence {sequence} holds {advantages[sequence].item()!r}; expected a finite number")
