"""The byte-level tokenizer and the Hugging Face files that describe it.

Token id = byte value (0..255) of the UTF-8 text; 256 = `<|endoftext|>` (EOS); 257 = `<|pad|>`.
`tokenizer.json` states exactly that in the `tokenizers` library's format: a BPE model with no
merges over the 256 byte symbols (GPT-2's byte-to-unicode alphabet, so any byte string
round-trips), a ByteLevel pre-tokenizer and decoder, and the two added special tokens.
"""

from __future__ import annotations

import json
import os
from typing import Dict, Iterable, List

from .byte_gpt import EOS_TOKEN_ID, PAD_TOKEN_ID

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def encode(text: str) -> List[int]:
    return list(text.encode("utf-8"))


def decode(token_ids: Iterable[int], skip_special_tokens: bool = True) -> str:
    """Text of the byte tokens, invalid UTF-8 replaced; special tokens (EOS, PAD) are skipped
    or, with skip_special_tokens false, written as their text."""
    special = {EOS_TOKEN_ID: EOS_TOKEN, PAD_TOKEN_ID: PAD_TOKEN}
    parts: List[str] = []
    run = bytearray()
    for token in token_ids:
        if 0 <= token < 256:
            run.append(token)
        elif not skip_special_tokens and token in special:
            parts.append(run.decode("utf-8", errors="replace"))
            run = bytearray()
            parts.append(special[token])
    parts.append(run.decode("utf-8", errors="replace"))
    return "".join(parts)


def _byte_alphabet() -> Dict[int, str]:
    """GPT-2's reversible byte → printable unicode character map."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    mapping = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in mapping:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def tokenizer_json() -> Dict:
    alphabet = _byte_alphabet()
    special = [
        {"id": EOS_TOKEN_ID, "content": EOS_TOKEN},
        {"id": PAD_TOKEN_ID, "content": PAD_TOKEN},
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {**token, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
            for token in special
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "vocab": {alphabet[byte]: byte for byte in range(256)},
            "merges": [],
        },
    }


def tokenizer_config_json() -> Dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": None,
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }


def write_tokenizer_files(folder: str, context_length: int) -> None:
    os.makedirs(folder, exist_ok=True)
    config = tokenizer_config_json()
    config["model_max_length"] = context_length
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as handle:
        json.dump(tokenizer_json(), handle, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2)
    with open(os.path.join(folder, "special_tokens_map.json"), "w", encoding="utf-8") as handle:
        json.dump({"eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN}, handle, indent=2)
