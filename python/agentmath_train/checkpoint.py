"""Checkpoints: sharded (torch.distributed.checkpoint) for resume, and a Hugging Face export.

A resume checkpoint is a folder with DCP shards of the model and optimizer and a
`trainer-state.json` written by rank 0 after every rank finished: the file is the commit
marker, a folder without it is an interrupted save and is never loaded. The export gathers
the full state dict on rank 0 and saves it, in the training compute dtype (bf16 on a GPU, fp32
on CPU; config `dtype` and `torch_dtype` say which), through `save_pretrained` on an unsharded copy
of the model (safetensors, Hugging Face names and on-disk layout, shards over 5 GB), with the
tokenizer files of the source folder, so SGLang, vLLM and `transformers` load it as it is.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, Optional

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import transformers
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)

from agentmath_models import register_architectures
from agentmath_models.file_modes import match_umask

register_architectures()

STATE_FILE = "trainer-state.json"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
    "generation_config.json",
    # How the model is prompted (the project's declaration, src/model/training-prompt.ts).
    "training-prompt.json",
)


def save_checkpoint(folder: str, model, optimizer, state: Dict[str, Any]) -> None:
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)
    dist.barrier()
    if dist.get_rank() == 0:
        temporary = os.path.join(folder, STATE_FILE + ".tmp")
        with open(temporary, "w") as handle:
            json.dump(state, handle)
        os.replace(temporary, os.path.join(folder, STATE_FILE))
    dist.barrier()


def write_config_dtype(folder: str, dtype: torch.dtype) -> None:
    """transformers 5 writes `dtype` only; readers on transformers 4 (SGLang, vLLM pinned to it)
    read `torch_dtype`. Both name the weights' dtype, so `--dtype auto` serves them as they are."""
    path = os.path.join(folder, "config.json")
    with open(path) as handle:
        config = json.load(handle)
    name = str(dtype).removeprefix("torch.")
    config["dtype"] = name
    config["torch_dtype"] = name
    with open(path, "w") as handle:
        json.dump(config, handle, indent=2, sort_keys=True)
        handle.write("\n")


def read_checkpoint_state(folder: str) -> Optional[Dict[str, Any]]:
    path = os.path.join(folder, STATE_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def load_checkpoint(folder: str, model, optimizer) -> Dict[str, Any]:
    state = read_checkpoint_state(folder)
    if state is None:
        raise FileNotFoundError(f"{folder}: not a committed checkpoint (no {STATE_FILE})")
    model_state, optimizer_state = get_state_dict(model, optimizer)
    loaded = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(loaded, checkpoint_id=folder)
    set_state_dict(model, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optimizer"])
    return state


def export_hugging_face(folder: str, model, source: str, dtype: torch.dtype = torch.float32) -> None:
    """Writes `folder` atomically (a sibling temporary folder renamed at the end), its weights in
    `dtype` (the training compute dtype: bf16 on a GPU) and its config saying so."""
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if dist.get_rank() == 0:
        temporary = folder.rstrip("/") + ".tmp"
        shutil.rmtree(temporary, ignore_errors=True)
        config = transformers.AutoConfig.from_pretrained(source)
        with torch.device("meta"):
            plain = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        plain.load_state_dict({name: tensor.to(dtype) for name, tensor in full.items()}, assign=True, strict=False)
        plain.tie_weights()
        missing = [name for name, parameter in plain.named_parameters() if parameter.is_meta]
        if missing:
            raise RuntimeError(f"export: parameters missing from the trained state: {missing[:5]}")
        plain.config.dtype = dtype
        plain.save_pretrained(temporary, max_shard_size="5GB")
        write_config_dtype(temporary, dtype)
        for name in TOKENIZER_FILES:
            path = os.path.join(source, name)
            if os.path.isfile(path) and not os.path.exists(os.path.join(temporary, name)):
                shutil.copy(path, os.path.join(temporary, name))
        match_umask(temporary)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(temporary, folder)
    dist.barrier()
