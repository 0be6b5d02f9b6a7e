"""A GGUF file as an ordinary Hugging Face model folder (`agentmath model import --gguf`).

`transformers` reads GGUF (with the `gguf` package) and de-quantizes every tensor to float;
`save_pretrained` refuses a model loaded that way, so a plain model built from the same config
takes its state dict and is saved normally. The folder holds config.json, safetensors in the
asked dtype, tokenizer.json, tokenizer_config.json with the model's own chat template, and
generation_config.json; nothing downstream knows it came from GGUF.

Every check runs before anything is written, cheapest first (file, magic, tensor extents,
`--out`, then the architecture through transformers' own GGUF config reader). The folder is
written beside `--out` under a temporary name and renamed into place. Not covered: GGUF files
split into shards, and architectures `AutoModelForCausalLM` has no class for.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Optional

GGUF_MAGIC = b"GGUF"
# Written into every folder this module makes; a folder with it may be replaced by a new import.
MARKER_FILE = "agentmath-import.json"
DTYPES = ("float32", "bfloat16")


class ImportRefused(ValueError):
    """Bad input found before anything is written (the command exits 2 with this message)."""


@dataclasses.dataclass(frozen=True)
class GgufSummary:
    path: str
    architecture: str
    tensors: int
    size_bytes: int


@dataclasses.dataclass(frozen=True)
class ImportResult:
    out: str
    architecture: str
    model_type: str
    parameters: int
    vocab_size: int
    dtype: str
    chat_template: bool

    def to_json(self) -> dict:
        return {
            "out": self.out,
            "architecture": self.architecture,
            "modelType": self.model_type,
            "parameters": self.parameters,
            "vocabSize": self.vocab_size,
            "dtype": self.dtype,
            "chatTemplate": self.chat_template,
        }


def check_gguf_file(path: str) -> GgufSummary:
    """The file exists, starts with the GGUF magic, parses, and holds every tensor it declares."""
    if not os.path.exists(path):
        raise ImportRefused(f"--gguf {path}: no such file")
    if not os.path.isfile(path):
        raise ImportRefused(f"--gguf {path}: not a file")
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        raise ImportRefused(f"--gguf {path}: not a GGUF file (it starts with {magic!r}, not {GGUF_MAGIC!r})")
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except Exception as error:  # the reader raises ValueError, IndexError, struct errors … on a cut file
        raise ImportRefused(f"--gguf {path}: truncated or damaged GGUF ({type(error).__name__}: {error})") from error
    end = max((tensor.data_offset + int(tensor.n_bytes) for tensor in reader.tensors), default=0)
    if end > size or not reader.tensors:
        raise ImportRefused(
            f"--gguf {path}: truncated GGUF ({size} bytes; its {len(reader.tensors)} tensors need {end})"
        )
    field = reader.fields.get("general.architecture")
    if field is None:
        raise ImportRefused(f"--gguf {path}: no general.architecture field")
    architecture = bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")
    return GgufSummary(path, architecture, len(reader.tensors), size)


def check_out(out: str) -> None:
    """`--out` is new, empty, or an earlier import of ours; anything else is not ours to replace."""
    if not os.path.exists(out):
        parent = os.path.dirname(os.path.abspath(out))
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise ImportRefused(f"--out {out}: its parent {parent} is not a folder")
        return
    if not os.path.isdir(out):
        raise ImportRefused(f"--out {out}: exists and is not a folder")
    entries = os.listdir(out)
    if entries and MARKER_FILE not in entries:
        raise ImportRefused(
            f"--out {out}: holds other files ({', '.join(sorted(entries)[:3])}…), not a model imported here; "
            "choose a new or empty folder"
        )


def check_architecture(summary: GgufSummary) -> str:
    """transformers reads this GGUF's config and has a causal-LM class for it; returns model_type."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    try:
        parsed = load_gguf_checkpoint(summary.path, return_tensors=False)
    except Exception as error:
        raise ImportRefused(
            f"--gguf {summary.path}: architecture {summary.architecture!r}: transformers cannot read it ({error})"
        ) from error
    model_type = parsed["config"].get("model_type", summary.architecture)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ImportRefused(
            f"--gguf {summary.path}: architecture {summary.architecture!r} (model_type {model_type!r}) "
            "is not a causal language model transformers can build"
        )
    return model_type


def import_gguf(gguf_path: str, out: str, dtype: str = "float32", source: Optional[str] = None) -> ImportResult:
    if dtype not in DTYPES:
        raise ImportRefused(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    summary = check_gguf_file(gguf_path)
    check_out(out)
    model_type = check_architecture(summary)

    import torch
    import transformers

    folder, name = os.path.split(os.path.abspath(gguf_path))
    quantized = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    torch_dtype = getattr(torch, dtype)
    plain = transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    plain.load_state_dict(quantized.state_dict())
    plain.config.dtype = dtype
    plain.generation_config = quantized.generation_config
    del quantized

    target = os.path.abspath(out)
    temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.importing-{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        plain.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)
        chat_template = _template_into_config(temporary, tokenizer)
        with open(os.path.join(temporary, MARKER_FILE), "w") as handle:
            json.dump(
                {"source": source or os.path.abspath(gguf_path), "architecture": summary.architecture,
                 "ggufBytes": summary.size_bytes, "dtype": dtype},
                handle,
                indent=2,
            )
        _replace(temporary, target)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return ImportResult(
        out=target,
        architecture=summary.architecture,
        model_type=model_type,
        parameters=sum(parameter.numel() for parameter in plain.parameters()),
        vocab_size=int(plain.config.vocab_size),
        dtype=dtype,
        chat_template=chat_template,
    )


def _template_into_config(folder: str, tokenizer) -> bool:
    """The chat template lives in tokenizer_config.json (one copy; readers that look only there find it)."""
    template = getattr(tokenizer, "chat_template", None)
    jinja = os.path.join(folder, "chat_template.jinja")
    if template is None and os.path.exists(jinja):
        with open(jinja, encoding="utf-8") as handle:
            template = handle.read()
    if os.path.exists(jinja):
        os.remove(jinja)
    path = os.path.join(folder, "tokenizer_config.json")
    with open(path, encoding="utf-8") as handle:
        tokenizer_config = json.load(handle)
    if template is not None:
        tokenizer_config["chat_template"] = template
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(tokenizer_config, handle, indent=2, ensure_ascii=False)
    return template is not None


def _replace(temporary: str, target: str) -> None:
    """Renames the finished folder into place; an earlier import (or an empty folder) is replaced."""
    if not os.path.exists(target):
        os.replace(temporary, target)
        return
    old = f"{temporary}.old"
    os.replace(target, old)
    os.replace(temporary, target)
    shutil.rmtree(old, ignore_errors=True)
