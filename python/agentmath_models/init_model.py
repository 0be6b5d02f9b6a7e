"""A random-init model in Hugging Face layout with its own tokenizer, for tests and smoke runs.

The architectures are the real ones (`Qwen3ForCausalLM`, `Qwen3MoeForCausalLM`,
`LlamaForCausalLM`) at a small size; nothing is downloaded. The tokenizer is a byte-level BPE
trained on a corpus file with the Qwen pre-tokenizer (digits split one by one), ChatML special
tokens, and a ChatML chat template, so prompts are built exactly as for a Qwen model.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import List, Optional

import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from .file_modes import match_umask

ARCHITECTURES = ("qwen3", "qwen3-moe", "llama")
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]
# The split rule of Qwen2/Qwen3 tokenizers (letters, single digits, punctuation runs, spaces).
PRE_TOKENIZER_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def build_tokenizer(corpus: List[str], vocab_size: int) -> transformers.PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKENIZER_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 4096
    return fast


def build_config(
    arch: str,
    vocab_size: int,
    layers: int,
    hidden: int,
    eos_id: int,
    pad_id: int,
    heads: Optional[int] = None,
    kv_heads: Optional[int] = None,
    intermediate: Optional[int] = None,
):
    """The shape: hidden // 16 heads, half as many KV heads, intermediate 3 × hidden, unless given."""
    heads = heads or max(1, hidden // 16)
    if hidden % heads != 0:
        raise ValueError(f"--heads {heads}: must divide --hidden {hidden}")
    kv_heads = kv_heads or max(1, heads // 2)
    if heads % kv_heads != 0:
        raise ValueError(f"--kv-heads {kv_heads}: must divide --heads {heads}")
    common = dict(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
    )
    if arch == "qwen3":
        return transformers.Qwen3Config(head_dim=hidden // heads, tie_word_embeddings=True, **common)
    if arch == "qwen3-moe":
        return transformers.Qwen3MoeConfig(
            head_dim=hidden // heads,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=hidden,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            tie_word_embeddings=False,
            **common,
        )
    if arch == "llama":
        return transformers.LlamaConfig(head_dim=hidden // heads, tie_word_embeddings=False, **common)
    raise ValueError(f"--arch {arch!r}: expected one of {', '.join(ARCHITECTURES)}")


def init_model(
    arch: str,
    out: str,
    corpus_path: str,
    layers: int,
    hidden: int,
    vocab_size: int,
    seed: int,
    heads: Optional[int] = None,
    kv_heads: Optional[int] = None,
    intermediate: Optional[int] = None,
    embedding_rows: Optional[int] = None,
) -> dict:
    """`embedding_rows`: the model's vocabulary (embedding and head rows) when larger than the
    tokenizer's, as real models pad theirs (the extra rows are never produced by the tokenizer)."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"--arch {arch!r}: expected one of {', '.join(ARCHITECTURES)}")
    if hidden % 16 != 0 or hidden < 32:
        raise ValueError(f"--hidden {hidden}: must be a multiple of 16, at least 32")
    if layers < 1:
        raise ValueError(f"--layers {layers}: must be at least 1")
    with open(corpus_path, encoding="utf-8") as handle:
        corpus = [line for line in handle.read().split("\n\n") if line.strip()]
    if not corpus:
        raise ValueError(f"{corpus_path}: the tokenizer corpus is empty")
    tokenizer = build_tokenizer(corpus, vocab_size)
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    if embedding_rows is not None and embedding_rows < len(tokenizer):
        raise ValueError(f"--embedding-rows {embedding_rows}: below the tokenizer's {len(tokenizer)} tokens")
    rows = embedding_rows or len(tokenizer)
    config = build_config(arch, rows, layers, hidden, eos_id, pad_id, heads, kv_heads, intermediate)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = transformers.GenerationConfig(eos_token_id=[eos_id, pad_id], pad_token_id=pad_id)
    # Written into `out` as it is: the caller gives a folder of its own (`agentmath model init`
    # passes a fresh temporary folder beside the target and moves it into place).
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # Also in tokenizer_config.json, for readers that look only there.
    config_path = os.path.join(out, "tokenizer_config.json")
    with open(config_path) as handle:
        tokenizer_config = json.load(handle)
    tokenizer_config["chat_template"] = CHAT_TEMPLATE
    with open(config_path, "w") as handle:
        json.dump(tokenizer_config, handle, indent=2)
    match_umask(out)
    parameters = sum(p.numel() for p in model.parameters())
    return {"arch": arch, "out": out, "parameters": parameters, "vocabSize": rows, "layers": layers, "hidden": hidden}
