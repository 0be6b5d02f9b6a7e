"""Backend for a local Hugging Face causal LM (needs `transformers`; on a GPU when there is one).

Same engine and trainer as the byte model, same routes. Generation keeps each sequence's own
`past_key_values` and decodes the running sequences one after another within a step (no
padded batching), which is correct for any architecture and fine for the small models this
path is meant for; production serving at scale belongs to SGLang or vLLM.

Weights are held in fp32 (the master weights the optimizer updates, and AdamW's state with
them); on a GPU the forward passes run under bf16 autocast. Updating bf16 weights directly
loses every update smaller than bf16's resolution (at lr 1e-6 almost no weight moves).
"""

from __future__ import annotations

import contextlib
import copy
import os
from typing import Any, Dict, List, Optional

import torch

try:  # optional dependency
    import transformers
except ImportError:  # pragma: no cover - depends on the machine
    transformers = None


def transformers_available() -> bool:
    return transformers is not None


class HuggingFaceBackend:
    kind = "huggingface"

    def __init__(
        self,
        model,
        tokenizer,
        model_path: str,
        n_slots: int,
        device: torch.device,
        compute_dtype: Optional[torch.dtype] = None,
    ) -> None:
        # fp32 master weights whatever the checkpoint's dtype; `compute_dtype` is autocast's.
        self.model = model.float().eval()
        self.compute_dtype = compute_dtype
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
        self._past: Dict[int, Any] = {}

    @staticmethod
    def create(
        path: str, n_slots: int, device: str = "auto", compute_dtype: Optional[torch.dtype] = None
    ) -> "HuggingFaceBackend":
        """`compute_dtype`: the forward passes' autocast dtype (default bf16 on a GPU, none on CPU)."""
        if transformers is None:
            raise ImportError(
                f"--model {path} is a Hugging Face folder, but the Python package `transformers` is not "
                "installed; install it (pip install transformers) or use --model tiny"
            )
        chosen = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else ("cpu" if device == "auto" else device))
        if compute_dtype is None and chosen.type == "cuda":
            compute_dtype = torch.bfloat16
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).to(chosen)
        return HuggingFaceBackend(model, tokenizer, path, n_slots, chosen, compute_dtype)

    def _autocast(self):
        if self.compute_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.compute_dtype)

    # Text -------------------------------------------------------------------------------------
    def encode(self, text: str) -> List[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, token_ids: List[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=skip_special_tokens)

    def extend_bytes(self, previous: bytes, output_ids: List[int]) -> bytes:
        # Multi-byte tokens can change earlier characters' decoding, so decode the whole output.
        del previous
        return self.decode(output_ids).encode("utf-8")

    # Generation -------------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, slot: int, token_ids: List[int]) -> torch.Tensor:
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
        with self._autocast():
            output = self.model(input_ids=ids, use_cache=True)
        self._past[slot] = output.past_key_values
        return output.logits[0, -1].float().cpu()

    @torch.no_grad()
    def decode_step(self, tokens: torch.Tensor, positions: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        rows = []
        for slot in range(tokens.shape[0]):
            past = self._past.get(slot)
            if past is None or not bool(active[slot]):  # an idle row inside the decoded range
                rows.append(torch.zeros(self.vocab_size))
                continue
            position = int(positions[slot])
            ids = tokens[slot : slot + 1, None].to(self.device)
            attention = torch.ones(1, position + 1, dtype=torch.long, device=self.device)
            with self._autocast():
                output = self.model(input_ids=ids, past_key_values=past, attention_mask=attention, use_cache=True)
            self._past[slot] = output.past_key_values
            rows.append(output.logits[0, -1].float().cpu())
        return torch.stack(rows)

    def release(self, slot: int) -> None:
        self._past.pop(slot, None)

    # Training ---------------------------------------------------------------------------------
    def trainable(self) -> torch.nn.Module:
        return self.model

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        with self._autocast():
            output = self.model(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device))
        return output.logits.float().cpu()

    def frozen_copy(self, folder: Optional[str] = None) -> torch.nn.Module:
        """A frozen model: the one saved in `folder`, else a copy of the weights held now."""
        if folder is None:
            reference = copy.deepcopy(self.model)
        else:
            reference = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
        return reference.to(self.device).eval().requires_grad_(False)

    def reference_logits(self, reference, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        with self._autocast():
            output = reference(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device))
        return output.logits.float().cpu()

    # Folders ----------------------------------------------------------------------------------
    def save(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def load_weights(self, folder: str) -> None:
        loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
        self.model.load_state_dict(loaded.state_dict())
        self.model_path = folder

    def describe(self) -> Dict[str, Any]:
        return {
            "architecture": type(self.model).__name__,
            "device": str(self.device),
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }
