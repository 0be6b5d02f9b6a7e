"""Backend for a local Hugging Face causal LM (needs `transformers`; on a GPU when there is one).

Same engine as the byte model, same routes; it trains nothing (agentmath_train does). Each decode step runs ONE forward pass
over every running sequence: their KV caches are stacked into a left-padded batch (see
`packed_batch.py`) with an attention mask hiding the padding and each row's own position ids,
so a sequence's tokens are computed once (a real KV cache) and requests share the matmuls.
Prefill runs per request. Caches that are not plain growing tensors (sliding-window or
recurrent layers) fall back to decoding those sequences one by one. Production serving at
scale belongs to SGLang or vLLM.

Weights are held in fp32 (the trainer's master weights, whose logprobs RL's ratios assume); on
a GPU the forward passes run under bf16 autocast.

Generation may decode in another dtype than the master weights (`decode_dtype`, bf16 where the
CPU computes bf16 natively): a copy of the model in that dtype serves prefill and decode, so a
step reads half the bytes (decoding is bound by reading every weight once per step), and it is
refreshed from the master weights before the first generation after any weight change
(`load_weights` and `load_tensors` copy new ones in).

On a CPU, generation's linear layers run on weights pre-packed for oneDNN (`decode_linear=
"packed"`, see `packed_linear.py`): then there is always a decode copy, in fp32 too, refreshed
the same way; `"plain"` decodes on the master weights (fp32) or their plain copy.
"""

from __future__ import annotations

import contextlib
import copy
import glob
import inspect
import os
from typing import Any, Dict, List, Optional, Tuple

import torch

from .decode_attention import NAME as DECODE_ATTENTION
from .decode_attention import register_decode_attention
from .decode_copy import refresh_decode_copy
from .decode_dtype_choice import DecodeDtypeChoice, choose_decode_dtype
from .int8_linear import int8_decode_copy, int8_linear_available
from .packed_batch import PackedBatch
from .packed_linear import packed_decode_copy, packed_linear_available
from .prefix_store import PREFIX_CACHE_MB, PrefixStore

DECODE_LINEARS = ("packed", "plain")
# Prompts prefilled together in one forward pass, at most this many tokens with their padding.
PREFILL_BATCH_TOKENS = 4096

try:  # optional dependency
    import transformers
except ImportError:  # pragma: no cover - depends on the machine
    transformers = None


def transformers_available() -> bool:
    return transformers is not None


class HuggingFaceBackend:
    kind = "huggingface"
    default_decode_threads = 0  # every core: a step reads every weight, as many MB as the model has

    def __init__(
        self,
        model,
        tokenizer,
        model_path: str,
        n_slots: int,
        device: torch.device,
        compute_dtype: Optional[torch.dtype] = None,
        decode_dtype: Optional[torch.dtype] = torch.float32,
        decode_linear: str = "packed",
        prefix_cache_mb: float = PREFIX_CACHE_MB,
    ) -> None:
        # fp32 master weights whatever the checkpoint's dtype; `compute_dtype` is autocast's.
        self.model = model.float().eval()
        self.compute_dtype = compute_dtype
        if decode_linear not in DECODE_LINEARS:
            raise ValueError(f"--decode-linear {decode_linear!r}: expected one of {', '.join(DECODE_LINEARS)}")
        # Packed only where it runs: oneDNN on a CPU (on a GPU the forward passes are cuBLAS's).
        unavailable = packed_linear_available() if device.type == "cpu" else "not on a CPU"
        self.decode_linear = "packed" if decode_linear == "packed" and unavailable is None else "plain"
        self.decode_linear_note = None if decode_linear == "plain" or unavailable is None else unavailable
        if decode_dtype == torch.int8:
            if device.type != "cpu" or int8_linear_available() is not None:
                raise ValueError(f"--decode-dtype int8: {int8_linear_available() or 'a CPU decode path (this model is on ' + device.type + ')'}")
            self.decode_linear, self.decode_linear_note = "int8", None
        # None (`auto`): timed on this CPU (decode_dtype_choice.py).
        self.decode_dtype_choice: Optional[DecodeDtypeChoice] = None
        if decode_dtype is None:
            self.decode_dtype_choice = choose_decode_dtype(
                self.model, packed=self.decode_linear == "packed", batch_hint=self._batch_hint(n_slots))
            decode_dtype = self.decode_dtype_choice.dtype
        self.decode_dtype = decode_dtype
        self._decode_copy: Optional[torch.nn.Module] = None
        self._decode_stale = True
        self.tokenizer = tokenizer
        self.model_path = model_path
        self.device = device
        self.n_slots = n_slots
        config = model.config
        self.context_length = int(getattr(config, "max_position_embeddings", None) or tokenizer.model_max_length)
        self.vocab_size = int(config.vocab_size)
        eos = getattr(config, "eos_token_id", None)
        if eos is None:
            eos = tokenizer.eos_token_id
        self.eos_token_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # Each slot's KV cache lives either alone (a per-layer list of (keys, values) of shape
        # [1, kv_heads, length, head_dim], right after its prefill) or as one row of the packed
        # batch the decode steps run on; caches that cannot be packed decode one by one.
        self._alone: Dict[int, List[Tuple[torch.Tensor, torch.Tensor]]] = {}
        self._unpackable: Dict[int, Any] = {}
        self._batch = PackedBatch()
        # Decode steps attend through `decode_attention.py` (SDPA's own function everywhere else),
        # where the model attends through SDPA to begin with.
        self.decode_attention = getattr(self.model.config, "_attn_implementation", None) == "sdpa"
        if self.decode_attention:
            register_decode_attention()
            self.model.set_attn_implementation(DECODE_ATTENTION)
        parameters = inspect.signature(self.model.forward).parameters
        self._cache_argument = "cache" if "cache" in parameters else "past_key_values"
        self._last_logits_only = {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}
        # Keys and values of earlier prompts and sequences, for prompts that begin like them (only
        # for caches of plain growing tensors, which can be cut at any position).
        plain = self._packable(self._new_cache())
        self.prefixes = PrefixStore(int(prefix_cache_mb * 2**20) if plain else 0)
        # Per slot, the prompt positions its last prefill took from the prefix cache.
        self.cached_tokens: Dict[int, int] = {}

    @staticmethod
    def create(
        path: str,
        n_slots: int,
        device: str = "auto",
        compute_dtype: Optional[torch.dtype] = None,
        decode_dtype: Optional[torch.dtype] = torch.float32,
        decode_linear: str = "packed",
        prefix_cache_mb: float = PREFIX_CACHE_MB,
    ) -> "HuggingFaceBackend":
        """`compute_dtype`: the forward passes' autocast dtype (default bf16 on a GPU, none on CPU);
        `decode_dtype`: the dtype of the weights generation reads (torch.int8: int8 weights and
        bf16 activations; None: fp32 or bf16, whichever this CPU runs the model's layers faster);
        `decode_linear`: packed (oneDNN's layout, CPU) or plain weights for generation (see the
        module comment); `prefix_cache_mb`: the prefix cache's budget (0: none)."""
        if transformers is None:
            raise ImportError(
                f"--model {path} is a Hugging Face folder, but the Python package `transformers` is not "
                "installed; install it (pip install transformers) or use --model tiny"
            )
        chosen = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else ("cpu" if device == "auto" else device))
        if compute_dtype is None and chosen.type == "cuda":
            compute_dtype = torch.bfloat16
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(chosen)
        return HuggingFaceBackend(model, tokenizer, path, n_slots, chosen, compute_dtype, decode_dtype, decode_linear, prefix_cache_mb)

    @staticmethod
    def _batch_hint(n_slots: int) -> int:
        """The layout hint of packed weights: the rows of a decode step (oneDNN runs any count)."""
        return max(1, min(n_slots, 64))

    def _decoder(self) -> torch.nn.Module:
        """The model generation runs: the master weights, or their copy in `decode_dtype` (with
        packed or int8 linear weights), refreshed after a weight change."""
        formed = self.decode_linear in ("packed", "int8")
        if self.decode_dtype == torch.float32 and not formed:
            return self.model
        if self._decode_copy is None:
            if self.decode_linear == "int8":
                self._decode_copy = int8_decode_copy(self.model)
            elif formed:
                self._decode_copy = packed_decode_copy(self.model, self.decode_dtype, self._batch_hint(self.n_slots))
            else:
                self._decode_copy = copy.deepcopy(self.model).to(self.decode_dtype).requires_grad_(False)
        elif self._decode_stale:
            if formed:
                refresh_decode_copy(self._decode_copy, self.model)
            else:
                with torch.no_grad():
                    for mine, master in zip(self._decode_copy.parameters(), self.model.parameters()):
                        mine.copy_(master)
        self._decode_stale = False
        return self._decode_copy

    def _autocast(self):
        if self.compute_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.compute_dtype)

    # Text -------------------------------------------------------------------------------------
    def encode(self, text: str) -> List[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=skip_special_tokens)

    # Generation -------------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, slot: int, token_ids: List[int]) -> torch.Tensor:
        return self._prefill(slot, token_ids, self.prefixes.longest(token_ids) or (0, []))

    def _prefill(self, slot: int, token_ids: List[int], found) -> torch.Tensor:
        """Runs the prompt from position `reused` on, after the keys and values of its first
        `reused` positions (`found`: from the prefix cache, or (0, []))."""
        reused, layers = found
        self._forget(slot)
        cache = self._new_cache()
        for index, (keys, values) in enumerate(layers):
            cache.update(keys, values, index)  # copies: the store's tensors stay as they are
        ids = torch.tensor([token_ids[reused:]], dtype=torch.long, device=self.device)
        positions = torch.arange(reused, len(token_ids), device=self.device)[None]
        with self._autocast():
            output = self._decoder()(
                input_ids=ids, position_ids=positions, use_cache=True, **self._last_logits_only, **{self._cache_argument: cache}
            )
        if self._packable(cache):
            self._alone[slot] = [(layer.keys, layer.values) for layer in cache.layers]
            self.prefixes.put(token_ids, self._alone[slot])
        else:
            self._unpackable[slot] = cache
        self.cached_tokens[slot] = reused
        return output.logits[0, -1].float().cpu()

    @torch.no_grad()
    def prefill_batch(self, requests: List[Tuple[int, List[int]]]) -> List[torch.Tensor]:
        """Prefills several slots (slot, prompt ids) in as few forward passes as fit
        PREFILL_BATCH_TOKENS: the prompts left-padded into one batch with an attention mask and
        each row's own position ids, so the matmuls run on every prompt's rows at once. Returns
        each prompt's last logits, in order. Each slot's cache is kept without its padding.
        A prompt that begins like a cached one (`prefix_store.py`) prefills only the rest, alone; of
        several equal prompts one is prefilled with the others, and the rest reuse it."""
        logits: Dict[int, torch.Tensor] = {}
        misses: List[int] = []
        repeats: List[int] = []
        firsts = set()
        for index, (slot, prompt) in enumerate(requests):
            found = self.prefixes.longest(prompt)
            if found is not None:
                logits[index] = self._prefill(slot, prompt, found)
            elif self.prefixes.enabled and tuple(prompt) in firsts:
                repeats.append(index)
            else:
                firsts.add(tuple(prompt))
                misses.append(index)
        # Shortest first, so prompts of similar lengths share a pass (little padding).
        order = sorted(misses, key=lambda index: len(requests[index][1]))
        chunks: List[List[int]] = [[]]
        for index in order:
            longest = len(requests[index][1])
            if chunks[-1] and longest * (len(chunks[-1]) + 1) > PREFILL_BATCH_TOKENS:
                chunks.append([])
            chunks[-1].append(index)
        for chunk in chunks:
            if chunk:
                logits.update(self._prefill_together([requests[index] for index in chunk], chunk))
        for index in repeats:
            logits[index] = self.prefill(*requests[index])
        return [logits[index] for index in range(len(requests))]

    def _prefill_together(self, requests: List[Tuple[int, List[int]]], indices: List[int]) -> Dict[int, torch.Tensor]:
        cache = self._new_cache()
        if len(requests) == 1 or not self._packable(cache):
            return {index: self.prefill(slot, ids) for index, (slot, ids) in zip(indices, requests)}
        for slot, _ in requests:
            self._forget(slot)
        width = max(len(ids) for _, ids in requests)
        ids = torch.zeros(len(requests), width, dtype=torch.long)
        mask = torch.zeros(len(requests), width, dtype=torch.long)
        for row, (_, prompt) in enumerate(requests):
            ids[row, width - len(prompt) :] = torch.tensor(prompt)
            mask[row, width - len(prompt) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp_(min=0)
        with self._autocast():
            output = self._decoder()(
                input_ids=ids.to(self.device), attention_mask=mask.to(self.device), position_ids=positions.to(self.device),
                use_cache=True, **self._last_logits_only, **{self._cache_argument: cache},
            )
        answers = {}
        for row, (index, (slot, prompt)) in enumerate(zip(indices, requests)):
            start = width - len(prompt)
            self._alone[slot] = [(layer.keys[row : row + 1, :, start:], layer.values[row : row + 1, :, start:]) for layer in cache.layers]
            self.prefixes.put(prompt, self._alone[slot])
            self.cached_tokens[slot] = 0
            answers[index] = output.logits[row, -1].float().cpu()
        return answers

    @torch.no_grad()
    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """One token for every active slot, in one forward pass over the packed batch. Returns logits
        [slots, vocab]; rows of inactive slots are zeros."""
        width = tokens.shape[0]
        slots = [slot for slot in range(width) if bool(active[slot]) and self.holds(slot)]
        packable = [slot for slot in slots if slot not in self._unpackable]
        alone = [slot for slot in slots if slot in self._unpackable]
        if not packable:
            logits = torch.zeros(width, self.vocab_size)
        else:
            batch = self._batch.repack(packable, self._alone, self._new_cache)
            batch.advance()
            rows = torch.tensor(batch.slots)
            if self.decode_attention:
                attention: Dict[str, Any] = {"decode_plan": batch.plan(self.device)}
            else:
                attention = {"attention_mask": batch.mask(self.device)}
            with self._autocast():
                output = self._decoder()(
                    input_ids=tokens[rows][:, None].to(self.device),
                    position_ids=positions[rows][:, None].to(self.device),
                    use_cache=True,
                    **attention,
                    **{self._cache_argument: batch.cache},
                )
            step_logits = output.logits[:, -1].float().cpu()
            if batch.slots == list(range(width)):
                logits = step_logits  # every slot decodes, in slot order: no copy
            else:
                logits = torch.zeros(width, self.vocab_size)
                logits[rows] = step_logits
        for slot in alone:
            logits[slot] = self._decode_alone(slot, int(tokens[slot]), int(positions[slot]))
        return logits

    def holds(self, slot: int) -> bool:
        """Whether the slot has a KV cache (prefilled and not released)."""
        return slot in self._alone or slot in self._unpackable or slot in self._batch.slots

    def release(self, slot: int) -> None:
        self._forget(slot)

    def keep_prefix(self, slot: int, token_ids: List[int]) -> None:
        """Keeps the slot's keys and values in the prefix cache as those of `token_ids` (the
        sequence's prompt and output; its cache holds all but the last sampled token)."""
        if not self.prefixes.enabled:
            return
        layers = self._alone.get(slot) or self._batch.row(slot)
        if layers:
            self.prefixes.put(token_ids, layers)

    def _forget(self, slot: int) -> None:
        self.cached_tokens.pop(slot, None)
        self._alone.pop(slot, None)
        self._unpackable.pop(slot, None)
        self._batch.remove(slot)

    def _new_cache(self):
        return transformers.DynamicCache(config=self.model.config)

    @staticmethod
    def _packable(cache) -> bool:
        """Only caches that are plain growing key/value tensors can be padded and stacked; a
        sliding-window or recurrent layer keeps the slow path."""
        layers = getattr(cache, "layers", None)
        plain = transformers.cache_utils.DynamicLayer  # a sliding-window layer is a subclass
        return bool(layers) and all(type(layer) is plain and not layer.is_sliding for layer in layers)

    def _decode_alone(self, slot: int, token: int, position: int) -> torch.Tensor:
        cache = self._unpackable[slot]
        ids = torch.tensor([[token]], dtype=torch.long, device=self.device)
        attention = torch.ones(1, position + 1, dtype=torch.long, device=self.device)
        with self._autocast():
            output = self._decoder()(input_ids=ids, attention_mask=attention, use_cache=True, **{self._cache_argument: cache})
        return output.logits[0, -1].float().cpu()

    # Folders ----------------------------------------------------------------------------------
    def load_weights(self, folder: str) -> None:
        """Copies a Hugging Face folder's weights into the served model in place (the folder's
        *.safetensors files straight into the parameters; other formats through
        `from_pretrained`). Every parameter must be in the folder, a tied one through its twin;
        a tensor the model does not have, or of another shape, is refused before any is copied."""
        files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
        if not files:
            loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
            self.model.load_state_dict(loaded.state_dict())
            self.model_path = folder
            self._decode_stale = True
            self.prefixes.clear()
            return
        from safetensors.torch import load_file

        state: Dict[str, torch.Tensor] = {}
        for path in files:
            state.update(load_file(path))
        self.load_tensors(state, origin=folder, complete=True)
        self.model_path = folder

    def load_tensors(self, state: Dict[str, torch.Tensor], origin: str, complete: bool = False) -> None:
        """Copies named tensors (the checkpoint's names, as `save_pretrained` writes them) into
        the served model in place, cast to its dtype (`checkpoint_layout.py`). A name the model
        does not have, or another shape, is refused before any is copied; `complete`: every
        parameter must be given (a tied one through its twin)."""
        if getattr(self, "_checkpoint_layout", None) is None:
            from .checkpoint_layout import CheckpointLayout

            self._checkpoint_layout = CheckpointLayout(self.model)
        self._checkpoint_layout.load(state, origin, complete)
        self._decode_stale = True
        self.prefixes.clear()  # keys and values of the old weights

    def describe(self) -> Dict[str, Any]:
        return {
            "architecture": type(self.model).__name__,
            "device": str(self.device),
            "decode_dtype": str(self.decode_dtype).replace("torch.", ""),
            **({} if self.decode_dtype_choice is None else {"decode_dtype_choice": self.decode_dtype_choice.describe()}),
            "decode_linear": self.decode_linear,
            "decode_attention": DECODE_ATTENTION if self.decode_attention else "the model's own",
            **({} if self.decode_linear_note is None else {"decode_linear_note": self.decode_linear_note}),
            "prefix_cache": self.prefixes.describe(),
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }
