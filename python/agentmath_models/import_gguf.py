"""A GGUF file as an ordinary Hugging Face model folder (`agentmath model import --gguf`).

`transformers` reads GGUF (with the `gguf` package) and de-quantizes every tensor to float;
`save_pretrained` refuses a model loaded that way, so a plain model built from the same config
takes its state dict and is saved normally. The folder holds config.json, safetensors in the
asked dtype, tokenizer.json, tokenizer_config.json with the model's own chat template, and
generation_config.json; nothing downstream knows it came from GGUF.

Every check runs before anything is written, cheapest first (file, magic, tensor extents,
`--out`, then the architecture through transformers' own GGUF config reader). One import at a
time writes a folder (an advisory lock beside it, released by the kernel however the process
ends). The folder is written beside `--out` under a temporary name; a new folder is renamed into
place, an earlier import is updated file by file with signals held, and only the files that
import recorded in its marker are replaced or removed: what the user added to the folder (notes,
a fine-tune in a sub-folder) stays. Not covered: GGUF files split into shards, and
architectures `AutoModelForCausalLM` has no class for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import signal
from typing import Iterator, Optional

from .file_modes import match_umask

GGUF_MAGIC = b"GGUF"
# Written last into every folder this module makes; it lists the files the import wrote (name →
# bytes), so a later import knows which files are its own and a reader can tell a finished one.
MARKER_FILE = "agentmath-import.json"
# Present while an earlier import's files are being replaced (and after a kill -9 meanwhile):
# the folder is still ours to import into, but not a finished import.
PARTIAL_MARKER_FILE = "agentmath-import.partial.json"
# What an import writes, for folders whose marker predates the file list.
EARLIER_IMPORT_FILES = frozenset(
    {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "chat_template.jinja",
    }
)
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
    # Entries of an earlier import's folder that the import did not write, left as they were.
    kept: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "out": self.out,
            "architecture": self.architecture,
            "modelType": self.model_type,
            "parameters": self.parameters,
            "vocabSize": self.vocab_size,
            "dtype": self.dtype,
            "chatTemplate": self.chat_template,
            "kept": list(self.kept),
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
        found = f"its first bytes are {magic.hex(' ')}" if magic else "it is empty"
        raise ImportRefused(f"--gguf {path}: not a GGUF file ({found}; a GGUF file starts with the letters GGUF)")
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except Exception as error:  # the reader raises ValueError, IndexError, struct errors … on a cut file
        raise ImportRefused(
            f"--gguf {path}: truncated or damaged GGUF: its header and tensor table cannot be read ({size} bytes)"
        ) from error
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


def owned_files(folder: str) -> set[str]:
    """The names an earlier import wrote into `folder` (its marker's list, else the usual names)."""
    for name in (PARTIAL_MARKER_FILE, MARKER_FILE):
        try:
            with open(os.path.join(folder, name)) as handle:
                files = json.load(handle).get("files")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(files, (dict, list)):
            return {str(entry) for entry in files}
    return set(EARLIER_IMPORT_FILES)


def check_out(out: str) -> list[str]:
    """`--out` is new, empty, or an earlier import of ours (anything else is not ours to write
    into); returns the entries of an earlier import that are the user's, kept by the import."""
    if not os.path.exists(out):
        parent = os.path.dirname(os.path.abspath(out))
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise ImportRefused(f"--out {out}: {parent} is a file, not a folder")
        return []
    if not os.path.isdir(out):
        raise ImportRefused(f"--out {out}: exists and is not a folder")
    entries = set(os.listdir(out))
    if entries and not entries & {MARKER_FILE, PARTIAL_MARKER_FILE}:
        raise ImportRefused(
            f"--out {out}: holds other files ({', '.join(sorted(entries)[:3])}…), not a model imported here; "
            "choose a new or empty folder"
        )
    return sorted(entries - owned_files(out) - {MARKER_FILE, PARTIAL_MARKER_FILE})


def check_architecture(summary: GgufSummary) -> str:
    """transformers reads this GGUF's config and has a causal-LM class for it; returns model_type."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    try:
        parsed = load_gguf_checkpoint(summary.path, return_tensors=False)
    except Exception as error:
        raise ImportRefused(
            f"--gguf {summary.path}: architecture {summary.architecture}: transformers cannot read it ({error})"
        ) from error
    model_type = parsed["config"].get("model_type", summary.architecture)
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ImportRefused(
            f"--gguf {summary.path}: architecture {summary.architecture} (model_type {model_type}) "
            "is not a causal language model transformers can build"
        )
    return model_type


def import_gguf(gguf_path: str, out: str, dtype: str = "float32", source: Optional[str] = None) -> ImportResult:
    if dtype not in DTYPES:
        raise ImportRefused(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    summary = check_gguf_file(gguf_path)
    target = os.path.abspath(out)
    check_out(target)
    model_type = check_architecture(summary)
    with import_lock(target):
        check_out(target)  # unchanged while the lock was taken
        _remove_stale_temporaries(target)
        return _write_import(summary, target, model_type, dtype, source)


def _write_import(summary: GgufSummary, target: str, model_type: str, dtype: str, source: Optional[str]) -> ImportResult:
    import torch
    import transformers

    folder, name = os.path.split(os.path.abspath(summary.path))
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

    temporary = _temporary(target)
    try:
        plain.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)
        chat_template = _template_into_config(temporary, tokenizer)
        match_umask(temporary)
        files = {entry: os.path.getsize(os.path.join(temporary, entry)) for entry in sorted(os.listdir(temporary))}
        _write_json(
            os.path.join(temporary, MARKER_FILE),
            {"source": source or os.path.abspath(summary.path), "architecture": summary.architecture,
             "ggufBytes": summary.size_bytes, "dtype": dtype, "files": files},
        )
        kept = install_import(temporary, target)
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
        kept=tuple(kept),
    )


def _temporary(target: str) -> str:
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.importing-{os.getpid()}")


def _write_json(path: str, value: dict) -> None:
    with open(f"{path}.writing", "w") as handle:
        json.dump(value, handle, indent=2)
        handle.write("\n")
    os.replace(f"{path}.writing", path)


@contextlib.contextmanager
def import_lock(target: str) -> Iterator[None]:
    """Holds `.NAME.import.lock` beside `target`; a second import into it is refused, naming the holder."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    path = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.import.lock")
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise ImportRefused(
                f"--out {target}: another import into it is running (pid {holder}); wait for it or stop it"
            ) from None
        try:
            same = os.path.exists(path) and os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except OSError:
            same = False
        if same:
            break
        handle.close()  # the holder before us removed the file meanwhile: lock the new one
    try:
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
        handle.close()


def _remove_stale_temporaries(target: str) -> None:
    """Temporary folders of imports into `target` that were killed (the lock is ours, so none runs)."""
    parent, prefix = os.path.dirname(target), f".{os.path.basename(target)}.importing-"
    for entry in os.listdir(parent):
        if entry.startswith(prefix) and entry != os.path.basename(_temporary(target)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """INT, TERM and HUP wait until the block ends (they arrive then), so a folder is never left half-replaced by them."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def install_import(temporary: str, target: str) -> list[str]:
    """Moves the finished import into place; returns the entries of the user's that stayed."""
    with _signals_held():
        if not os.path.exists(target):
            os.replace(temporary, target)
            return []
        previous = owned_files(target)
        new = set(os.listdir(temporary)) - {MARKER_FILE}
        _write_json(os.path.join(target, PARTIAL_MARKER_FILE), {"files": sorted(previous | new)})
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(target, MARKER_FILE))
        for entry in sorted(new):
            os.replace(os.path.join(temporary, entry), os.path.join(target, entry))
        for entry in sorted(previous - new - {MARKER_FILE, PARTIAL_MARKER_FILE}):
            path = os.path.join(target, entry)
            if os.path.isfile(path) and not os.path.islink(path):
                os.remove(path)  # an earlier import's file this one does not write (another shard count)
        os.replace(os.path.join(temporary, MARKER_FILE), os.path.join(target, MARKER_FILE))
        os.remove(os.path.join(target, PARTIAL_MARKER_FILE))
        os.rmdir(temporary)
        return sorted(set(os.listdir(target)) - new - {MARKER_FILE})


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
