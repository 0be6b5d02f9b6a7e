"""Backend for the embedded byte-level model: building, loading and saving its model folder,
and the slot-cache generation calls the engine drives.

A model folder holds config.json, pytorch_model.bin (a state dict), tokenizer.json,
tokenizer_config.json, special_tokens_map.json and, when the trainer wrote it,
trainer_state.json (policy version) and optimizer.pt.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

import torch

from . import tokenizer_files
from .config import EOS_TOKEN_ID, MODEL_TYPE, PRESETS, ModelConfig
from .model import ByteGPT, SlotKVCache

WEIGHTS_FILE = "pytorch_model.bin"


def is_byte_model_folder(path: str) -> bool:
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        return False
    with open(config_path, "r", encoding="utf-8") as handle:
        try:
            return json.load(handle).get("model_type") == MODEL_TYPE
        except json.JSONDecodeError:
            return False


class ByteBackend:
    """The byte GPT behind the engine and the trainer."""

    kind = "byte-gpt"
    default_decode_threads = 1  # 0: every core (see WorkerOptions.decode_threads)

    def __init__(self, model: ByteGPT, model_path: str, n_slots: int) -> None:
        self.model = model.eval()
        self.model_path = model_path
        self.config = model.config
        self.context_length = model.config.context_length
        self.eos_token_ids = {EOS_TOKEN_ID}
        self.vocab_size = model.config.vocab_size
        self.n_slots = n_slots
        self.cache = SlotKVCache(model.config, n_slots)

    @staticmethod
    def create(model: str, n_slots: int, seed: Optional[int] = None) -> "ByteBackend":
        """`model` is a preset name (tiny, test) or a model folder written by `save`."""
        if model in PRESETS:
            config = PRESETS[model]
            if seed is not None:
                config = ModelConfig(**{**config.__dict__, "seed": seed})
            return ByteBackend(ByteGPT(config), model, n_slots)
        config = ModelConfig.load(os.path.join(model, "config.json"))
        network = ByteGPT(config)
        network.load_state_dict(_read_state_dict(model))
        return ByteBackend(network, model, n_slots)

    # Text -------------------------------------------------------------------------------
    def encode(self, text: str) -> List[int]:
        return tokenizer_files.encode(text)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        return tokenizer_files.decode(token_ids, skip_special_tokens)

    def extend_bytes(self, previous: bytes, output_ids: List[int]) -> bytes:
        """The generated text's bytes after output_ids[-1] was appended (specials add nothing)."""
        token = output_ids[-1]
        return previous + bytes((token,)) if token < 256 else previous

    # Generation ---------------------------------------------------------------------------
    def prefill(self, slot: int, token_ids: List[int]) -> torch.Tensor:
        return self.model.prefill(self.cache, slot, torch.tensor(token_ids, dtype=torch.long))

    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        return self.model.decode(self.cache, tokens, positions, active=active)

    def release(self, slot: int) -> None:
        """Nothing to free: a slot's stale keys sit beyond the next owner's positions."""

    # Training -----------------------------------------------------------------------------
    def trainable(self) -> torch.nn.Module:
        return self.model

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # Right padding: causal attention means pads never influence earlier real tokens.
        del attention_mask
        return self.model(input_ids)

    def frozen_copy(self, folder: Optional[str] = None) -> torch.nn.Module:
        """A frozen model: the one saved in `folder`, else a copy of the weights held now."""
        reference = ByteGPT(self.config)
        reference.load_state_dict(self.model.state_dict() if folder is None else _read_state_dict(folder))
        reference.eval().requires_grad_(False)
        return reference

    def reference_logits(self, reference: torch.nn.Module, input_ids, attention_mask) -> torch.Tensor:
        del attention_mask
        return reference(input_ids)

    # Folders ------------------------------------------------------------------------------
    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
            json.dump(self.config.to_json(), handle, indent=2)
        torch.save(self.model.state_dict(), os.path.join(folder, WEIGHTS_FILE))
        tokenizer_files.write_tokenizer_files(folder, self.context_length)

    def load_weights(self, folder: str) -> None:
        config = ModelConfig.load(os.path.join(folder, "config.json"))
        if {**config.__dict__, "seed": 0} != {**self.config.__dict__, "seed": 0}:
            raise ValueError(f"{folder}/config.json describes a different model shape than the one served")
        self.model.load_state_dict(_read_state_dict(folder))
        self.model_path = folder

    def describe(self) -> Dict:
        return {"architecture": MODEL_TYPE, **self.config.to_json(), "parameters": _count(self.model)}


def _read_state_dict(folder: str) -> Dict[str, torch.Tensor]:
    path = os.path.join(folder, WEIGHTS_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: weights file not found")
    return torch.load(path, map_location="cpu")


def _count(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())
