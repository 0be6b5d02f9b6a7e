"""A Hugging Face model built on `meta`, sharded by FSDP2, then filled from its safetensors files
shard by shard: each rank reads only the rows it owns, so a rank's peak host and device memory
for the weights is about 1/P of the model, not a whole copy.

The order is torchtitan's (build on meta, `fully_shard`, `to_empty`, then initialise buffers and
load: `torchtitan/train.py` and `CheckpointManager.dcp_load(from_hf=True)` in
`torchtitan/components/checkpoint.py`); the read is the one of torch's own Hugging Face reader
(`_HuggingFaceStorageReader._process_read_request` in torch 2.15's
`torch/distributed/checkpoint/hf_storage.py`: `get_slice(name)[owned slices]`, then `copy_` into
the local shard, which casts a bf16 file into fp32 master weights). The pages of a memory-mapped
file that a read touched stay in the process's resident set until the file is closed, so a file
is closed and opened again after every `RELEASE_BYTES` read: the load's peak is its shards plus
that much, not plus its share of the files. What neither does for a
`transformers` model is ours: checkpoint names become the model's through transformers' own
conversion mapping (renamings, and converters such as a MoE's per-expert tensors fused into one
`experts.gate_up_proj`; a rank reads only the experts it owns), tied weights are loaded once,
non-persistent buffers (rotary `inv_freq`) are recomputed by the model's `_init_weights` as
`from_pretrained` does after building on meta, and a tensor the model lacks, or a parameter the
files lack, is an error that names it.

Not covered: `pytorch_model.bin` folders (refused, naming the fix), quantized checkpoints, and
sharding other than FSDP2's (1-D mesh, `Shard(d)` or `Replicate`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

import torch
from safetensors import safe_open
from torch.distributed.fsdp import FSDPModule
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
from transformers.conversion_mapping import get_model_conversion_mapping
from transformers.core_model_loading import MergeModulelist, WeightConverter, WeightRenaming, rename_source_key

from .model import Placement, meta_model

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
# Names transformers drops from old checkpoints whatever the model says (modeling_utils.py,
# `_adjust_missing_and_unexpected_keys`): buffers that used to be persistent.
LEGACY_BUFFER_PATTERNS = (r"rotary_emb\.inv_freq", r"(^|\.)position_ids$")
# Bytes read through one opening of a file before it is closed, letting its touched pages go.
RELEASE_BYTES = 256 * 2**20


class CheckpointMismatchError(ValueError):
    """The files and the model disagree: a tensor without a parameter, a parameter without a
    tensor, or a shape."""


def sharded_model(
    folder: str, where: Placement, dtype: torch.dtype, shard: Callable[[torch.nn.Module], torch.nn.Module]
) -> torch.nn.Module:
    """The model of `folder` in `dtype`, sharded by `shard` (`parallelize` or `freeze`) while on
    meta, then given storage and this rank's part of the weights. With CPU offload the shards get
    host memory and the buffers (which FSDP2 leaves where they are) the device."""
    model = shard(meta_model(folder, dtype))
    model.to_empty(device=torch.device("cpu") if where.cpu_offload else where.device)
    if not isinstance(model, FSDPModule):
        # Unwrapped (one fp32 rank: `parallelize.needs_fsdp`), `to_empty` gave each parameter a
        # new Parameter, the tied head included: tie it to the embedding again.
        model.tie_weights()
    if where.cpu_offload:
        for module in model.modules():
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = buffer.to(where.device)
    _check_tied(model)
    reset_non_persistent_buffers(model)
    load_sharded_weights(model, folder)
    return model


def _check_tied(model: torch.nn.Module) -> None:
    """A tied head must still be the embedding's Parameter: `to_empty` swaps a DTensor parameter's
    contents in place, so it is (re-tying here would leave FSDP2 holding the old parameter)."""
    tied = getattr(model.config.get_text_config(), "tie_word_embeddings", False)
    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    if tied and head is not None and head.weight is not embedding.weight:
        raise RuntimeError(f"{type(model).__name__}: the tied LM head lost its embedding weight after to_empty")


def checkpoint_index(folder: str) -> Dict[str, str]:
    """Each tensor name in the folder's safetensors files → the file that holds it."""
    index_path = os.path.join(folder, INDEX_FILE)
    if os.path.isfile(index_path):
        with open(index_path) as handle:
            weight_map = json.load(handle).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CheckpointMismatchError(f"{index_path}: no `weight_map` of tensor names to files")
        return {name: os.path.join(folder, file) for name, file in weight_map.items()}
    single = os.path.join(folder, SINGLE_FILE)
    if os.path.isfile(single):
        with safe_open(single, framework="pt") as handle:
            return {name: single for name in handle.keys()}
    others = [name for name in sorted(os.listdir(folder)) if name.endswith((".bin", ".pt", ".pth"))]
    hint = f" (it holds {', '.join(others)}: re-save it with `save_pretrained`, which writes safetensors)" if others else ""
    raise FileNotFoundError(f"{folder}: no {SINGLE_FILE} or {INDEX_FILE}; the trainer reads safetensors shard by shard{hint}")


def owned_region(target: torch.Tensor) -> Tuple[slice, ...]:
    """The part of the full tensor this rank holds: FSDP2's `Shard(0)` gives rank r rows
    [r·c, min((r+1)·c, N)) with c = ceil(N/P) (fewer, or none, on the last ranks); a plain
    tensor or a `Replicate` placement is held whole."""
    if not isinstance(target, DTensor):
        return tuple(slice(0, size) for size in target.shape)
    local_shape, offset = compute_local_shape_and_global_offset(target.shape, target.device_mesh, target.placements)
    return tuple(slice(start, start + size) for start, size in zip(offset, local_shape))


def local_tensor(target: torch.Tensor) -> torch.Tensor:
    return target.to_local() if isinstance(target, DTensor) else target


def reset_non_persistent_buffers(model: torch.nn.Module) -> None:
    """Buffers that are not in the files (rotary `inv_freq`, Gemma's `embed_scale`) hold garbage
    after `to_empty`: each module that owns one is initialised again by the model's own
    `_init_weights`, which is how `from_pretrained` fills them after building on meta."""
    for module in model.modules():
        if module._non_persistent_buffers_set & set(name for name, value in module._buffers.items() if value is not None):
            model._init_weights(module)


def model_tensors(model: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """Every name of every parameter and persistent buffer (a tied weight under each of its names)."""
    tensors: Dict[str, torch.Tensor] = dict(model.named_parameters(remove_duplicate=False))
    for module_name, module in model.named_modules(remove_duplicate=False):
        for name, buffer in module._buffers.items():
            if buffer is not None and name not in module._non_persistent_buffers_set:
                tensors[f"{module_name}.{name}" if module_name else name] = buffer
    return tensors


def _natural_key(name: str) -> List[Tuple[int, object]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in name.split(".")]


def _ignored(patterns: Iterable[str]) -> Optional[re.Pattern]:
    patterns = [pattern for pattern in patterns if pattern]
    return re.compile("|".join(f"({pattern})" for pattern in patterns)) if patterns else None


class _Plan:
    """Which checkpoint tensors fill which model tensors."""

    def __init__(self) -> None:
        self.plain: Dict[str, str] = {}  # model name → checkpoint name
        self.converted: Dict[str, Tuple[WeightConverter, List[Tuple[str, str]]]] = {}  # first target → (converter, [(pattern, checkpoint name)])
        self.filled: Set[str] = set()  # model names the plan fills
        self.unexpected: List[str] = []


def _plan(model: torch.nn.Module, names: Iterable[str], targets: Dict[str, torch.Tensor]) -> _Plan:
    transforms = get_model_conversion_mapping(model)
    renamings = [entry for entry in transforms if isinstance(entry, WeightRenaming)]
    converters = [entry for entry in transforms if isinstance(entry, WeightConverter)]
    by_pattern = {pattern: converter for converter in converters for pattern in converter.source_patterns}
    prefix = getattr(model, "base_model_prefix", None) or None
    plan = _Plan()
    for name in sorted(names, key=_natural_key):
        renamed, pattern = rename_source_key(name, renamings, converters, prefix, targets)
        if renamed not in targets and name in targets:  # as from_pretrained: a name that needed no renaming
            renamed, pattern = rename_source_key(name, [], [], prefix, targets)
        if renamed not in targets:
            plan.unexpected.append(name)
            continue
        if pattern is None:
            plan.plain[renamed] = name
            plan.filled.add(renamed)
            continue
        converter = by_pattern[pattern]
        entry = plan.converted.get(renamed)
        if entry is None:
            entry = plan.converted[renamed] = (converter, [])
            for target_pattern in converter.target_patterns:
                plan.filled.add(renamed.replace(converter.target_patterns[0], target_pattern))
        entry[1].append((pattern, name))
    return plan


def _check(model: torch.nn.Module, plan: _Plan, targets: Dict[str, torch.Tensor], folder: str) -> None:
    unexpected_rule = _ignored([*(getattr(model, "_keys_to_ignore_on_load_unexpected", None) or []), *LEGACY_BUFFER_PATTERNS])
    unexpected = [name for name in plan.unexpected if unexpected_rule is None or not unexpected_rule.search(name)]
    if unexpected:
        shown = ", ".join(unexpected[:5]) + (f" and {len(unexpected) - 5} more" if len(unexpected) > 5 else "")
        raise CheckpointMismatchError(f"{folder}: the checkpoint holds tensors this {type(model).__name__.removeprefix('FSDP')} has no parameter for: {shown}")
    # A tied weight is one tensor under several names: filled when any of its names is.
    filled_ids = {id(targets[name]) for name in plan.filled}
    missing_rule = _ignored(getattr(model, "_keys_to_ignore_on_load_missing", None) or [])
    missing = [
        name
        for name, tensor in targets.items()
        if id(tensor) not in filled_ids and (missing_rule is None or not missing_rule.search(name))
    ]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise CheckpointMismatchError(f"{folder}: the checkpoint has no tensor for the model's {shown}")


@torch.no_grad()
def load_sharded_weights(model: torch.nn.Module, folder: str) -> None:
    """Fills every parameter and persistent buffer of `model` (after `fully_shard` and
    `to_empty`) from `folder`'s safetensors: each rank reads its own rows of each tensor and
    copies them into its local shard in the parameter's dtype."""
    index = checkpoint_index(folder)
    targets = model_tensors(model)
    plan = _plan(model, index, targets)
    _check(model, plan, targets, folder)
    files = _Files(index)
    try:
        for target_name, name in plan.plain.items():
            _fill(target_name, targets[target_name], files.open(name).get_slice(name), name, folder)
            files.read(name, local_tensor(targets[target_name]))
        for target_name, (converter, sources) in plan.converted.items():
            _fill_converted(model, target_name, converter, sources, targets, files.open, folder)
            files.read(sources[0][1], local_tensor(targets[target_name]))
    finally:
        files.close()


class _Files:
    """Open safetensors files, each closed once `RELEASE_BYTES` were read through it (its touched
    pages are mapped, and counted in the resident set, until then), and opened again on demand."""

    def __init__(self, index: Dict[str, str]) -> None:
        self.index = index
        self.handles: Dict[str, object] = {}
        self.read_bytes: Dict[str, int] = {}

    def open(self, name: str):
        path = self.index[name]
        if path not in self.handles:
            handle = safe_open(path, framework="pt")
            self.handles[path] = handle.__enter__()
            self.read_bytes[path] = 0
        return self.handles[path]

    def read(self, name: str, filled: torch.Tensor) -> None:
        path = self.index[name]
        # What was filled approximates what was read (the file's dtype may be narrower).
        self.read_bytes[path] = self.read_bytes.get(path, 0) + filled.numel() * filled.element_size()
        if path in self.handles and self.read_bytes[path] >= RELEASE_BYTES:
            self.handles.pop(path).__exit__(None, None, None)

    def close(self) -> None:
        for handle in self.handles.values():
            handle.__exit__(None, None, None)
        self.handles.clear()


def _fill(target_name: str, target: torch.Tensor, source, name: str, folder: str) -> None:
    shape = tuple(source.get_shape())
    if shape != tuple(target.shape):
        raise CheckpointMismatchError(f"{folder}: tensor {name} has shape {list(shape)}; the model's {target_name} has {list(target.shape)}")
    local = local_tensor(target)
    if local.numel() == 0:
        return
    region = owned_region(target)
    local.copy_(source[region] if region else source[:])


def _fill_converted(model, target_name, converter, sources, targets, handle, folder) -> None:
    """A converted tensor (e.g. a MoE's experts stacked into one): the sources go through the
    converter's own operations. When its first operation stacks one tensor per index of the
    sharded dim 0 (MergeModulelist(0)), only this rank's indices are read and the result is its
    shard; otherwise the whole converted tensor is built and this rank's part copied."""
    target = targets[target_name]
    if local_tensor(target).numel() == 0:
        return
    instance = copy.deepcopy(converter)  # one per target, as transformers' loader does
    region = owned_region(target)
    per_pattern: Dict[str, List[str]] = {}
    for pattern, name in sources:
        per_pattern.setdefault(pattern, []).append(name)
    stacked = isinstance(converter.operations[0], MergeModulelist) and converter.operations[0].dim == 0
    whole_beyond_dim_0 = all(part == slice(0, size) for part, size in zip(region[1:], target.shape[1:]))
    filtered = stacked and whole_beyond_dim_0 and all(len(names) == target.shape[0] for names in per_pattern.values())
    rows = range(region[0].start, region[0].stop) if filtered else None
    for pattern, names in per_pattern.items():
        for position, name in enumerate(names):
            if rows is not None and position not in rows:
                continue
            instance.add_tensor(target_name, name, pattern, _reader(handle, name))
    converted = instance.convert(target_name, model=model, config=model.config)
    for output_name, value in converted.items():
        value = value[0] if isinstance(value, list) else value
        if output_name not in targets:
            raise CheckpointMismatchError(f"{folder}: converting {sources[0][1]} gave {output_name}, which the model does not have")
        output = targets[output_name]
        local = local_tensor(output)
        expected = tuple(local.shape) if filtered else tuple(output.shape)
        if tuple(value.shape) != expected:
            raise CheckpointMismatchError(
                f"{folder}: {output_name} converted from {sources[0][1]}… has shape {list(value.shape)}; expected {list(expected)}"
            )
        local.copy_(value if filtered else value[owned_region(output)])


def _reader(handle: Callable[[str], object], name: str) -> Callable[[], torch.Tensor]:
    # Deferred, as transformers' own loader does: the converter reads its sources when it runs.
    return lambda: handle(name).get_tensor(name)
