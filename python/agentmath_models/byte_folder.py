"""Byte model folders: a new random-init one (`model init --arch byte-gpt`) and the one-time
conversion of a folder the worker wrote before the byte model was a transformers architecture
(its `pytorch_model.bin` under the old names) into the Hugging Face layout every other model has.

A folder holds config.json (`model_type: agentmath-byte-gpt`), model.safetensors,
generation_config.json and the byte tokenizer's files (tokenizer.json, tokenizer_config.json,
special_tokens_map.json).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Optional

import torch

from .byte_gpt import BYTE_GPT_SHAPES, EOS_TOKEN_ID, MODEL_TYPE, PAD_TOKEN_ID, ByteGptConfig, ByteGptForCausalLM, seeded_init
from .byte_tokenizer import write_tokenizer_files

LEGACY_WEIGHTS_FILE = "pytorch_model.bin"
# The old module names → the architecture's (everything else kept its name).
_LEGACY_NAMES = (
    (r"^embedding\.", "model.embed_tokens."),
    (r"^previous_embedding\.", "model.previous_embedding."),
    (r"^digit_index_embedding\.", "model.digit_index_embedding."),
    (r"^number_index_embedding\.", "model.number_index_embedding."),
    (r"^blocks\.", "model.layers."),
    (r"^norm_final\.", "model.norm."),
)


def byte_config(shape: str = "tiny", **overrides: Any) -> ByteGptConfig:
    if shape not in BYTE_GPT_SHAPES:
        raise ValueError(f"byte-gpt shape {shape!r}: expected one of {', '.join(BYTE_GPT_SHAPES)}")
    return ByteGptConfig(**{**BYTE_GPT_SHAPES[shape], **overrides})


def save_byte_model(model: ByteGptForCausalLM, out: str) -> None:
    """The folder of `model`: weights, config and the tokenizer's files."""
    model.generation_config.eos_token_id = EOS_TOKEN_ID
    model.generation_config.pad_token_id = PAD_TOKEN_ID
    model.save_pretrained(out)
    write_tokenizer_files(out, model.config.max_position_embeddings)


def init_byte_model(out: str, seed: int = 0, shape: str = "tiny", **overrides: Any) -> Dict[str, Any]:
    """A random-init byte model in `out` (a folder the caller made for it), its weights a
    function of `seed` alone."""
    config = byte_config(shape, **overrides)
    model = ByteGptForCausalLM(config)
    seeded_init(model, seed)
    save_byte_model(model, out)
    parameters = sum(p.numel() for p in model.parameters())
    return {"arch": "byte-gpt", "out": out, "parameters": parameters, "vocabSize": config.vocab_size,
            "layers": config.num_hidden_layers, "hidden": config.hidden_size}


def is_legacy_byte_folder(folder: str) -> bool:
    """Written by the old worker: a byte model config beside `pytorch_model.bin`, no safetensors."""
    config = _read_json(os.path.join(folder, "config.json"))
    return (
        config is not None
        and config.get("model_type") == MODEL_TYPE
        and os.path.isfile(os.path.join(folder, LEGACY_WEIGHTS_FILE))
        and not os.path.isfile(os.path.join(folder, "model.safetensors"))
    )


def convert_legacy_folder(folder: str, out: str) -> Dict[str, Any]:
    """The model of an old worker folder, written in the Hugging Face layout into `out`."""
    if not is_legacy_byte_folder(folder):
        raise ValueError(f"{folder}: not a byte model folder of the old layout (config.json with model_type {MODEL_TYPE} and {LEGACY_WEIGHTS_FILE})")
    body = _read_json(os.path.join(folder, "config.json")) or {}
    keys = {field for field in ByteGptConfig.__dataclass_fields__}
    config = ByteGptConfig(**{key: value for key, value in body.items() if key in keys and key not in ("architectures", "transformers_version", "dtype")})
    state = torch.load(os.path.join(folder, LEGACY_WEIGHTS_FILE), map_location="cpu", weights_only=True)
    renamed = {legacy_name(name): tensor for name, tensor in state.items()}
    model = ByteGptForCausalLM(config)
    missing, unexpected = model.load_state_dict(renamed, strict=False)
    missing = [name for name in missing if name != "lm_head.weight"]  # tied to the embedding
    if missing or unexpected:
        raise ValueError(f"{folder}/{LEGACY_WEIGHTS_FILE}: weights do not match the config (missing {missing[:3]}, unexpected {unexpected[:3]})")
    model.tie_weights()
    save_byte_model(model, out)
    return {"from": folder, "out": out, "parameters": sum(p.numel() for p in model.parameters())}


def legacy_name(name: str) -> str:
    for pattern, replacement in _LEGACY_NAMES:
        if re.match(pattern, name):
            return re.sub(pattern, replacement, name)
    return name


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            body = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None
    return body if isinstance(body, dict) else None
