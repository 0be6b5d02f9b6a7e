"""The binary batch format shared with TypeScript (`src/train/trainer-batch.ts` writes it).

Layout, little-endian, every array 4-byte aligned:
  b"AMB1" · u32 header length · header JSON (UTF-8, space-padded to a multiple of 8)
  int32 lengths[n] · int32 input_ids[Σ lengths] · float32 advantages[n] (if header.advantages)
  · float32 old_logprobs[Σ lengths] (if header.oldLogprobs) · uint8 loss_mask[Σ lengths]
The header carries `sequences`, `tokens`, the two flags and the step's `options` (a JSON object).
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
) -> bytes:
    """Lists of per-sequence lists → bytes (tests and Python callers; TypeScript has its own writer)."""
    lengths = np.array([len(ids) for ids in input_ids], dtype="<i4")
    header = {
        "sequences": int(lengths.shape[0]),
        "tokens": int(lengths.sum()),
        "advantages": advantages is not None,
        "oldLogprobs": old_logprobs is not None,
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
    return b"".join(parts)


def decode_batch(data: bytes) -> Batch:
    if len(data) < 8 or data[:4] != MAGIC:
        raise BatchFormatError("not an AgentMath batch (the first bytes are not AMB1)")
    (header_length,) = struct.unpack_from("<I", data, 4)
    try:
        header = json.loads(data[8 : 8 + header_length].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BatchFormatError(f"batch header is not JSON: {error}") from error
    n, tokens = int(header["sequences"]), int(header["tokens"])
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
    if offset != len(data):
        raise BatchFormatError(f"batch has {len(data) - offset} bytes past its end")
    return Batch(lengths, input_ids, loss_mask, advantages, old_logprobs, dict(header.get("options") or {}))
