"""Model configuration of the embedded byte-level policy, and the named presets.

The vocabulary is fixed by the project's byte-level tokenizer: ids 0..255 are the bytes of the
UTF-8 text, 256 is `<|endoftext|>` (EOS) and 257 is `<|pad|>`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

VOCAB_SIZE = 258
EOS_TOKEN_ID = 256
PAD_TOKEN_ID = 257
MODEL_TYPE = "agentmath-byte-gpt"


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape of the decoder-only transformer. `seed` fixes the initial weights."""

    n_layers: int = 4
    d_model: int = 128
    n_heads: int = 4
    # Grouped-query attention: heads share n_kv_heads key/value heads (1 = multi-query). Fewer
    # cached keys/values is what keeps batched CPU decode fast: it is bound by reading the cache.
    n_kv_heads: int = 2
    context_length: int = 768
    mlp_ratio: int = 4
    rope_base: float = 10000.0
    # Token shift: each position's input also embeds the previous token (a learned second
    # embedding), so one attention layer can match "the token after an earlier copy of mine"
    # and copying (numbers into code, interpreter output into the answer) is learned in a few
    # hundred steps instead of waiting for a two-layer induction circuit to form.
    token_shift: bool = False
    # Digit positions (model.digit_features): each digit byte also embeds its 1-based index
    # within its run of consecutive digits (`digit_index`, capped at max_digit_index) and every
    # byte embeds the ordinal of the digit run it belongs to, or for a non-digit of the run that
    # would come next, counted within its line (`number_index`, capped at max_number_index). A
    # head can then copy "digit i+1 of the k-th number of a recent line" directly.
    digit_index: bool = False
    number_index: bool = False
    # Digit match (needs both digit positions): every attention head adds a learned multiple of
    # "this key is the next digit of my number" (same number index, digit index one higher) to
    # its scores, initialised so the first head of each key/value group starts out attending there.
    digit_match: bool = False
    max_digit_index: int = 32
    max_number_index: int = 16
    seed: int = 0
    vocab_size: int = VOCAB_SIZE

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.n_kv_heads <= 0 or self.n_heads % self.n_kv_heads != 0:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if (self.d_model // self.n_heads) % 2 != 0:
            raise ValueError("head width d_model / n_heads must be even (rotary embeddings)")
        for name in ("n_layers", "d_model", "n_heads", "context_length", "mlp_ratio", "max_digit_index", "max_number_index"):
            if getattr(self, name) <= 0:
                raise ValueError(f"config field {name} must be positive")
        if self.digit_match and not (self.digit_index and self.number_index):
            raise ValueError("digit_match needs digit_index and number_index")
        if self.vocab_size != VOCAB_SIZE:
            raise ValueError(f"vocab_size must be {VOCAB_SIZE} (bytes + EOS + PAD)")

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_json(self) -> Dict[str, Any]:
        """The config.json body (HF-style keys where they exist, plus our own)."""
        return {
            "model_type": MODEL_TYPE,
            "architectures": ["AgentMathByteGPT"],
            "vocab_size": self.vocab_size,
            "num_hidden_layers": self.n_layers,
            "hidden_size": self.d_model,
            "num_attention_heads": self.n_heads,
            "num_key_value_heads": self.n_kv_heads,
            "max_position_embeddings": self.context_length,
            "intermediate_size": self.d_model * self.mlp_ratio,
            "rope_theta": self.rope_base,
            "token_shift": self.token_shift,
            "digit_index": self.digit_index,
            "number_index": self.number_index,
            "digit_match": self.digit_match,
            "max_digit_index": self.max_digit_index,
            "max_number_index": self.max_number_index,
            "eos_token_id": EOS_TOKEN_ID,
            "pad_token_id": PAD_TOKEN_ID,
            "bos_token_id": None,
            "init_seed": self.seed,
            "torch_dtype": "float32",
        }

    @staticmethod
    def from_json(body: Dict[str, Any], source: str = "config.json") -> "ModelConfig":
        if body.get("model_type") != MODEL_TYPE:
            raise ValueError(f"{source}: model_type is {body.get('model_type')!r}, expected {MODEL_TYPE!r}")
        try:
            d_model = int(body["hidden_size"])
            return ModelConfig(
                n_layers=int(body["num_hidden_layers"]),
                d_model=d_model,
                n_heads=int(body["num_attention_heads"]),
                n_kv_heads=int(body.get("num_key_value_heads", body["num_attention_heads"])),
                context_length=int(body["max_position_embeddings"]),
                mlp_ratio=int(body["intermediate_size"]) // d_model,
                rope_base=float(body.get("rope_theta", 10000.0)),
                token_shift=bool(body.get("token_shift", False)),
                digit_index=bool(body.get("digit_index", False)),
                number_index=bool(body.get("number_index", False)),
                digit_match=bool(body.get("digit_match", False)),
                max_digit_index=int(body.get("max_digit_index", 32)),
                max_number_index=int(body.get("max_number_index", 16)),
                seed=int(body.get("init_seed", 0)),
                vocab_size=int(body.get("vocab_size", VOCAB_SIZE)),
            )
        except KeyError as error:
            raise ValueError(f"{source}: missing field {error.args[0]!r}") from None

    @staticmethod
    def load(path: str) -> "ModelConfig":
        with open(path, "r", encoding="utf-8") as handle:
            return ModelConfig.from_json(json.load(handle), source=path)


# `tiny`: the embedded default. Sized for two CPU cores: batched decode at 64 sequences stays
# above 5k tokens/s, and SFT on the arith tasks converges within minutes. See docs/embedded-model.md.
PRESETS: Dict[str, ModelConfig] = {
    # Two query heads sharing one key/value head: half the attention-score work of four heads
    # per step (training is bound by it at 250-token sequences) and a quarter of the KV cache;
    # token shift and the digit positions make copying numbers learnable within minutes.
    "tiny": ModelConfig(n_heads=2, n_kv_heads=1, token_shift=True, digit_index=True, number_index=True, digit_match=True),
    # For unit tests: fast to build and step.
    "test": ModelConfig(n_layers=2, d_model=64, n_heads=4, context_length=256, mlp_ratio=4),
}
