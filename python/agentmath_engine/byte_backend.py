"""Backend for the byte model (`agentmath-byte-gpt`): its folder loaded through transformers'
Auto classes (the architecture is registered by `agentmath_models`), and the slot-cache
generation calls the engine drives (`byte_slot_cache.py`).

`--model` is a folder in the Hugging Face layout (`agentmath model init --arch byte-gpt`
writes one, the trainer exports one), or a shape name (`tiny`, `test`) for a random-init model
of that shape (benchmarks and tests). A folder the old worker wrote (`pytorch_model.bin` under
the old names) is refused with the command that converts it once.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Dict, List, Optional

import torch
import transformers
from safetensors.torch import load_file

from agentmath_models import byte_tokenizer
from agentmath_models.byte_folder import byte_config, is_legacy_byte_folder
from agentmath_models.byte_gpt import BYTE_GPT_SHAPES, EOS_TOKEN_ID, MODEL_TYPE, ByteGptForCausalLM, seeded_init

from .byte_slot_cache import SlotKVCache, decode, prefill


def is_byte_model_folder(path: str) -> bool:
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
            return json.load(handle).get("model_type") == MODEL_TYPE
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


class ByteBackend:
    """The byte model behind the engine."""

    kind = "byte-gpt"
    default_decode_threads = 1  # 0: every core (see WorkerOptions.decode_threads)

    def __init__(self, model: ByteGptForCausalLM, model_path: str, n_slots: int) -> None:
        self.model = model.eval().requires_grad_(False)
        self.model_path = model_path
        self.config = model.config
        self.context_length = model.config.max_position_embeddings
        self.eos_token_ids = {EOS_TOKEN_ID}
        self.vocab_size = model.config.vocab_size
        self.n_slots = n_slots
        self.cache = SlotKVCache(model.model, n_slots)

    @staticmethod
    def create(model: str, n_slots: int, seed: Optional[int] = None) -> "ByteBackend":
        """`model`: a shape name (a random-init model from `seed`) or a byte model folder."""
        if model in BYTE_GPT_SHAPES:
            network = ByteGptForCausalLM(byte_config(model))
            seeded_init(network, seed or 0)
            return ByteBackend(network, model, n_slots)
        _refuse_legacy(model)
        network = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
        return ByteBackend(network, model, n_slots)

    # Text -------------------------------------------------------------------------------
    def encode(self, text: str) -> List[int]:
        return byte_tokenizer.encode(text)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        return byte_tokenizer.decode(token_ids, skip_special_tokens)

    def extend_bytes(self, previous: bytes, output_ids: List[int]) -> bytes:
        """The generated text's bytes after output_ids[-1] was appended (specials add nothing)."""
        token = output_ids[-1]
        return previous + bytes((token,)) if token < 256 else previous

    # Generation ---------------------------------------------------------------------------
    def prefill(self, slot: int, token_ids: List[int]) -> torch.Tensor:
        hidden = prefill(self.model.model, self.cache, slot, torch.tensor(token_ids, dtype=torch.long))
        return self.model.lm_head(hidden)

    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        return self.model.lm_head(decode(self.model.model, self.cache, tokens, positions, active=active))

    def release(self, slot: int) -> None:
        """The slot's row is free: a re-sort of the cache leaves it behind the occupied ones."""
        self.cache.release(slot)

    # Weights ------------------------------------------------------------------------------
    def load_weights(self, folder: str) -> None:
        """The folder's weights copied into the served model; a folder of another shape, or whose
        tensors do not cover the model, is refused before anything is copied."""
        _refuse_legacy(folder)
        config = transformers.AutoConfig.from_pretrained(folder)
        if getattr(config, "model_type", None) != MODEL_TYPE or _shape(config) != _shape(self.config):
            raise ValueError(f"{folder}/config.json describes a different model than the one served")
        files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
        if not files:
            raise FileNotFoundError(f"{folder}: no *.safetensors weights")
        state: Dict[str, torch.Tensor] = {}
        for path in files:
            state.update(load_file(path))
        self.load_tensors(state, origin=folder, complete=True)
        self.model_path = folder

    def load_tensors(self, state: Dict[str, torch.Tensor], origin: str, complete: bool = False) -> None:
        """Named tensors (the checkpoint's names) copied into the served model in place."""
        own = self.model.state_dict()
        unknown = sorted(set(state) - set(own))
        wrong = [name for name, tensor in state.items() if name in own and tuple(tensor.shape) != tuple(own[name].shape)]
        if unknown or wrong:
            raise ValueError(f"{origin}: tensors the served model does not have, or of another shape: {', '.join((unknown + wrong)[:5])}")
        # The head is tied to the embedding: a checkpoint names it once.
        missing = [name for name in own if name not in state and name != "lm_head.weight"]
        if complete and missing:
            raise ValueError(f"{origin}: tensors missing: {', '.join(missing[:5])}")
        with torch.no_grad():
            for name, tensor in state.items():
                own[name].copy_(tensor.to(own[name].dtype))

    def describe(self) -> Dict:
        return {"architecture": MODEL_TYPE, **self.config.to_dict(), "parameters": sum(p.numel() for p in self.model.parameters())}


def _shape(config) -> Dict:
    """What decides the weights' shapes and meaning (not the seed or the dtype)."""
    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
            "intermediate_size", "rope_theta", "token_shift", "digit_index", "number_index", "digit_match",
            "max_digit_index", "max_number_index")
    return {key: getattr(config, key, None) for key in keys}


def _refuse_legacy(folder: str) -> None:
    if is_legacy_byte_folder(folder):
        raise ValueError(
            f"{folder} holds a byte model in the layout of an older AgentMath (pytorch_model.bin); convert it once: "
            f"agentmath model convert {folder} --out NEW_FOLDER"
        )
