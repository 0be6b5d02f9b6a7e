"""The model: `AutoModelForCausalLM` from a folder, untouched, with its dtype and device policy.

Weights are loaded in fp32 (the master copy the optimizer updates); on a GPU the forward and
backward run in bf16 through FSDP2's mixed-precision policy, on CPU everything stays fp32.
"""

from __future__ import annotations

import dataclasses
import os

import torch
import torch.distributed as dist
import transformers


@dataclasses.dataclass(frozen=True)
class Placement:
    device: torch.device
    compute_dtype: torch.dtype
    backend: str  # "nccl" or "gloo"


def placement() -> Placement:
    if torch.cuda.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        return Placement(torch.device("cuda", local_rank), torch.bfloat16, "nccl")
    return Placement(torch.device("cpu"), torch.float32, "gloo")


def init_distributed(where: Placement) -> None:
    """One process group for every run, one process included (torchrun sets the rendezvous)."""
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        dist.init_process_group(where.backend)


def load_model(path: str, where: Placement) -> torch.nn.Module:
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"{path}: not a Hugging Face model folder (no config.json)")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    model.config.use_cache = False
    return model.to(where.device)


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The repeated blocks FSDP shards one by one (`model.model.layers` in every HF decoder)."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f"{type(model).__name__}: no `model.layers` ModuleList to shard per decoder layer")
    return layers
