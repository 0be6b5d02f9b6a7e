"""The model: `AutoModelForCausalLM` from a folder, untouched, with its dtype and device policy.

Weights are loaded in fp32 (the master copy the optimizer updates); on a GPU the forward and
backward run in bf16 through FSDP2's mixed-precision policy, on CPU in fp32 unless bf16 is
asked for (`--compute-dtype bfloat16`, worth it only where the CPU has native bf16: see
docs/training.md). A CPU rank uses its share of the machine's cores as torch threads.
Attention is `agentmath_varlen` (attention.py): within each packed sequence, no [T × T] mask.
`meta_model` is the model with no storage, for sharding before loading (`sharded_load.py`);
`load_model` is the whole model on every rank (the plain loop, and the reference the sharded
load is tested against).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import torch
import torch.distributed as dist
import transformers

from agentmath_models import register_architectures

from .attention import ATTENTION_IMPLEMENTATION

register_architectures()


@dataclasses.dataclass(frozen=True)
class Placement:
    device: torch.device
    compute_dtype: torch.dtype
    backend: str  # "nccl", "gloo", or "cuda:nccl,cpu:gloo" (CPU offload: gradient norms of host tensors)
    # Sharded parameters, gradients and optimizer state in host memory, moved to the GPU layer by
    # layer (FSDP2's CPUOffloadPolicy). Only on a GPU: a CPU rank's state is in host memory already.
    cpu_offload: bool = False


COMPUTE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def placement(compute_dtype: Optional[str] = None, cpu_offload: bool = False) -> Placement:
    """The device and compute dtype of this rank: bf16 on a GPU, fp32 on CPU, unless `compute_dtype`
    says. `cpu_offload` applies on a GPU only (on CPU there is nothing to offload from)."""
    if compute_dtype is not None and compute_dtype not in COMPUTE_DTYPES:
        raise ValueError(f"compute dtype {compute_dtype!r}: expected one of {', '.join(COMPUTE_DTYPES)}")
    if torch.cuda.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        # Offloaded, the gradient clipping's norms are of host tensors: they need a CPU backend (as torchtitan).
        backend = "cuda:nccl,cpu:gloo" if cpu_offload else "nccl"
        return Placement(torch.device("cuda", local_rank), COMPUTE_DTYPES[compute_dtype or "bfloat16"], backend, cpu_offload)
    return Placement(torch.device("cpu"), COMPUTE_DTYPES[compute_dtype or "float32"], "gloo")


def rank_threads(local_world_size: int, cores: Optional[int] = None) -> int:
    """Torch threads of one CPU rank: the cores this process may run on, shared by the node's
    ranks (torchrun's own default is 1 thread whenever it starts more than one process)."""
    available = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(1, available // max(1, local_world_size))


def init_distributed(where: Placement) -> None:
    """One process group for every run, one process included (torchrun sets the rendezvous)."""
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        dist.init_process_group(where.backend)


def _require_model_folder(path: str) -> None:
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"{path}: not a Hugging Face model folder (no config.json)")


def _attention(config, attention: str) -> dict:
    """The attn_implementation to ask for: `attention`, unless the model computes its own
    attention (the byte model: transformers does not dispatch it, and refuses to be asked)."""
    model_class = transformers.AutoModelForCausalLM._model_mapping[type(config)]
    return {"attn_implementation": attention} if getattr(model_class, "_supports_attention_backend", True) else {}


def load_model(path: str, where: Placement, attention: str = ATTENTION_IMPLEMENTATION) -> torch.nn.Module:
    """The whole model in fp32 on this rank's device (every rank a full copy). `attention`: a
    transformers attn_implementation; "sdpa" is the dense-mask path, kept for comparison."""
    _require_model_folder(path)
    config = transformers.AutoConfig.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **_attention(config, attention))
    model.config.use_cache = False
    return model.to(where.device)


def meta_model(path: str, dtype: torch.dtype) -> torch.nn.Module:
    """The model of `path`'s config.json with every tensor on `meta` (no memory), in `dtype`."""
    _require_model_folder(path)
    config = transformers.AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype, **_attention(config, ATTENTION_IMPLEMENTATION))
    model.config.use_cache = False
    return model


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The repeated blocks FSDP shards one by one (`model.model.layers` in every HF decoder)."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f"{type(model).__name__}: no `model.layers` ModuleList to shard per decoder layer")
    return layers
