"""The byte model as a Hugging Face architecture, `agentmath-byte-gpt`, registered with
transformers (`AutoConfig` / `AutoModelForCausalLM`), so the trainer, its export and any
transformers code load, shard, train and save it like every other causal LM.

A decoder-only transformer over 258 byte-level tokens (bytes 0..255, EOS 256, PAD 257):
pre-norm blocks (LayerNorm, causal self-attention with grouped-query heads and rotary position
embeddings, GELU MLP) and an input embedding tied to the LM head, with three options that make
copying numbers learnable in minutes on a CPU (docs/embedded-model.md):
  token shift      each position also embeds the token before it (PAD before a sequence's first);
  digit positions  a digit embeds its index within its run of digits, every byte the ordinal of
                   its number within its line (`digit_features`);
  digit match      every head adds a learned multiple of "this key is the next digit of my
                   number" to its attention scores (`digit_match`).
All three restart at every sequence of a packed row: given the row's bounds (`cu_seq_lens_q`,
transformers' FlashAttentionKwargs, or position ids that restart at 0), the forward lays the
sequences out as right-padded rows (a batch of rows per group of similar lengths), runs those,
and packs the hidden states back, so a packed sequence gets exactly what it gets alone. Queries are laid out [rows, kv_heads, group·time,
head_dim], one matmul per layer for all heads that share a key/value head. Rotary angles are
computed from positions in the forward (no buffer to rebuild after a meta-device build).
The engine decodes the same weights with its own slot KV cache (agentmath_engine.byte_backend),
from the functions and modules defined here.
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import transformers
from transformers import GenerationMixin, PreTrainedConfig, PreTrainedModel
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

MODEL_TYPE = "agentmath-byte-gpt"
VOCAB_SIZE = 258
EOS_TOKEN_ID = 256
PAD_TOKEN_ID = 257
_ZERO, _NINE, _NEWLINE = ord("0"), ord("9"), ord("\n")
# Initial digit-match weight (logit units): e^4 ≈ 55 times the weight of an unmatched key, so
# copying heads exist from the first step and only the values' use has to be learned.
DIGIT_MATCH_INIT = 4.0


class ByteGptConfig(PreTrainedConfig):
    """The shape of a byte model (Hugging Face key names where they exist, our own for the options)."""

    model_type = MODEL_TYPE

    vocab_size: int = VOCAB_SIZE
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    # Grouped-query attention: heads share key/value heads (1 = multi-query). Fewer cached
    # keys/values is what keeps batched CPU decode fast: it is bound by reading the cache.
    num_key_value_heads: int = 2
    max_position_embeddings: int = 768
    intermediate_size: int = 512
    rope_theta: float = 10000.0
    token_shift: bool = False
    digit_index: bool = False
    number_index: bool = False
    digit_match: bool = False
    max_digit_index: int = 32
    max_number_index: int = 16
    initializer_range: float = 0.02
    tie_word_embeddings: bool = True
    use_cache: bool = False
    eos_token_id: Optional[int] = EOS_TOKEN_ID
    pad_token_id: Optional[int] = PAD_TOKEN_ID
    bos_token_id: Optional[int] = None

    def __post_init__(self, **kwargs) -> None:
        # Folders written before the byte model was a transformers architecture named the seed so.
        kwargs.pop("init_seed", None)
        super().__post_init__(**kwargs)
        for name in ("num_hidden_layers", "hidden_size", "num_attention_heads", "max_position_embeddings",
                     "intermediate_size", "max_digit_index", "max_number_index"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{MODEL_TYPE} config: {name} must be positive, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"{MODEL_TYPE} config: hidden_size {self.hidden_size} must be divisible by num_attention_heads {self.num_attention_heads}")
        if self.num_key_value_heads <= 0 or self.num_attention_heads % self.num_key_value_heads != 0:
            raise ValueError(f"{MODEL_TYPE} config: num_attention_heads {self.num_attention_heads} must be a multiple of num_key_value_heads {self.num_key_value_heads}")
        if self.head_dim % 2 != 0:
            raise ValueError(f"{MODEL_TYPE} config: the head width hidden_size / num_attention_heads must be even (rotary embeddings)")
        if self.digit_match and not (self.digit_index and self.number_index):
            raise ValueError(f"{MODEL_TYPE} config: digit_match needs digit_index and number_index")
        if self.vocab_size != VOCAB_SIZE:
            raise ValueError(f"{MODEL_TYPE} config: vocab_size must be {VOCAB_SIZE} (256 bytes, EOS, PAD)")
        if self.intermediate_size % self.hidden_size != 0:
            raise ValueError(f"{MODEL_TYPE} config: intermediate_size must be a multiple of hidden_size")

    @property
    def group_size(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def uses_digit_features(self) -> bool:
        return self.digit_index or self.number_index


# The shapes `model init --arch byte-gpt` writes. `tiny` is the embedded default: two query heads
# sharing one key/value head (half the score work of four heads, a quarter of the KV cache), with
# token shift and the digit options; sized so batched decode on two cores stays above 5k tokens/s
# and SFT on the arith tasks converges within minutes. `test` is for unit tests.
BYTE_GPT_SHAPES = {
    "tiny": dict(num_attention_heads=2, num_key_value_heads=1, token_shift=True, digit_index=True, number_index=True, digit_match=True),
    "test": dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, max_position_embeddings=256, intermediate_size=256),
}


# Digit positions ------------------------------------------------------------------------------
def digit_features(ids: torch.Tensor, run_before: torch.Tensor, numbers_before: torch.Tensor):
    """Digit positions of a [rows, time] id tensor that continues a text whose state is
    (`run_before`, `numbers_before`), each [rows]: the length of the digit run the text ended in
    (0 after a non-digit) and the digit runs started in its last line (both 0 at the start).

    Returns (index, number, run_after, numbers_after):
      - index [rows, time]: a digit's 1-based index within its run of consecutive digits
        (counted from the left, uncapped); 0 for any other token;
      - number [rows, time]: the ordinal within the current line of the digit run a digit
        belongs to (1 = first number of the line); for a non-digit, the ordinal the next run of
        its line would get. A newline ends its line: it and the bytes after it count from 1 again;
      - run_after, numbers_after [rows]: the state after the last position (for the next chunk).
    """
    rows, time = ids.shape
    digit = (ids >= _ZERO) & (ids <= _NINE)
    newline = ids == _NEWLINE
    steps = torch.arange(time, device=ids.device).expand(rows, time)
    # Index: distance to the last non-digit (a virtual one run_before places before the start).
    before = -1 - run_before[:, None]
    last_other = torch.where(digit, torch.full_like(steps, -(1 << 40)), steps).cummax(dim=1).values.maximum(before)
    index = torch.where(digit, steps - last_other, torch.zeros_like(steps))
    previous_digit = torch.cat(((run_before > 0)[:, None], digit[:, :-1]), dim=1)
    starts = (digit & ~previous_digit).long().cumsum(dim=1)
    # Runs counted in the line: starts so far minus the count at the line's newline, if any.
    base = torch.where(newline, starts, -numbers_before[:, None].expand(rows, time)).cummax(dim=1).values
    in_line = starts - base
    number = torch.where(digit, in_line, in_line + 1)
    return index, number, index[:, -1], in_line[:, -1]


def digit_match(query_index, query_number, key_index, key_number) -> torch.Tensor:
    """1.0 where the key is the next digit of the query's number: same number index (within its
    line) and digit index one higher ([rows, T_q] and [rows, T_k] → [rows, T_q, T_k])."""
    same = query_number[:, :, None] == key_number[:, None, :]
    following = key_index[:, None, :] == query_index[:, :, None] + 1
    return (same & following).float()


def rotary_angles(config: ByteGptConfig, positions: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of the rotary angles at `positions` (any shape) → shape + [head_dim / 2]."""
    half = config.head_dim // 2
    inverse_frequency = 1.0 / (config.rope_theta ** (torch.arange(half, dtype=torch.float32, device=positions.device) / half))
    angles = positions.to(torch.float32)[..., None] * inverse_frequency
    return torch.cos(angles), torch.sin(angles)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on the last dim (halves convention): x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


# Modules --------------------------------------------------------------------------------------
class ByteGptLayer(GradientCheckpointingLayer):
    """One pre-norm block: attention (fused q/k/v, grouped-query, rotary, digit match), then MLP."""

    def __init__(self, config: ByteGptConfig) -> None:
        super().__init__()
        d = config.hidden_size
        self.n_kv_heads = config.num_key_value_heads
        self.group = config.group_size
        self.head_dim = config.head_dim
        self.scale = 1.0 / math.sqrt(config.head_dim)
        self.norm_attention = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, d + 2 * config.num_key_value_heads * config.head_dim)
        self.attention_out = nn.Linear(d, d)
        self.norm_mlp = nn.LayerNorm(d)
        self.mlp_in = nn.Linear(d, config.intermediate_size)
        self.mlp_out = nn.Linear(config.intermediate_size, d)
        self.digit_match = nn.Parameter(torch.zeros(config.num_attention_heads)) if config.digit_match else None

    def with_match(self, mask: Optional[torch.Tensor], match: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The additive mask (None: none) plus this layer's digit-match scores (match [rows, T_q, T_k])."""
        if self.digit_match is None or match is None:
            return mask
        rows, time, keys = match.shape
        weights = self.digit_match.view(1, self.n_kv_heads, self.group, 1, 1)
        scores = (weights * match[:, None, None]).reshape(rows, self.n_kv_heads, self.group * time, keys)
        return scores if mask is None else scores + mask

    def project(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """q: [rows, kv_heads, group, time, hd]; k, v: [rows, kv_heads, time, hd]; rotary applied.
        cos/sin: [time, hd/2] (one layout for all rows) or [rows, time, hd/2]."""
        rows, time, _ = x.shape
        fused = self.qkv(self.norm_attention(x)).view(rows, time, self.n_kv_heads, self.group + 2, self.head_dim)
        q = rotate(fused[:, :, :, : self.group], cos[..., None, None, :], sin[..., None, None, :])
        k = rotate(fused[:, :, :, self.group], cos[..., None, :], sin[..., None, :])
        return q.permute(0, 2, 3, 1, 4), k.transpose(1, 2), fused[:, :, :, self.group + 1].transpose(1, 2)

    def attention(self, q, keys, values, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """Attention of q ([rows, kv, group·T_q, hd], already scaled by `scale`) over keys/values
        ([rows, kv, T_k, hd]); mask additive (or None), broadcastable to [rows, kv, group·T_q, T_k]."""
        scores = torch.matmul(q, keys.transpose(-1, -2))
        if mask is not None:
            # In place: matmul's backward needs its inputs, not its output.
            scores = scores.add_(mask)
        return torch.matmul(torch.softmax(scores, dim=-1), values)

    def attend(self, x, q, keys, values, mask):
        """Attention of q over keys/values ([rows, kv, T_k, hd]); mask additive, broadcastable to
        [rows, kv, group·T_q, T_k]. Adds the output projection, then the MLP, to the residual x."""
        rows, time, _ = x.shape
        # Scaling q (time × head_dim) is cheaper than scaling the scores (time × time).
        q = q.reshape(rows, self.n_kv_heads, self.group * time, self.head_dim) * self.scale
        return self.finish(x, self.attention(q, keys, values, mask))

    def finish(self, x, attended):
        """The residual x plus the output projection of `attended` ([rows, kv, group·T, hd]), then
        plus the MLP."""
        rows, time, d = x.shape
        attended = attended.view(rows, self.n_kv_heads, self.group, time, self.head_dim)
        x = x + self.attention_out(attended.permute(0, 3, 1, 2, 4).reshape(rows, time, d))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.norm_mlp(x))))

    def forward(self, x, cos, sin, mask, match):
        q, k, v = self.project(x, cos, sin)
        return self.attend(x, q, k, v, self.with_match(mask, match))


class ByteGptPreTrainedModel(PreTrainedModel):
    config_class = ByteGptConfig
    config: ByteGptConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["ByteGptLayer"]
    # The attention is the model's own (digit match is an additive score): transformers' dispatch
    # is not used, so no attention function (the trainer's varlen, Ulysses) can replace it; the
    # trainer's packed rows reach it through the sequence bounds.
    _supports_attention_backend = False

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """GPT-2 style: N(0, 0.02), residual projections scaled by 1/sqrt(2·layers), norms 1,
        biases 0; the first head of each key/value group starts as a digit-copying head."""
        std = self.config.initializer_range
        if isinstance(module, ByteGptLayer):
            residual_std = std / math.sqrt(2 * self.config.num_hidden_layers)
            for linear in (module.qkv, module.mlp_in):
                transformers.initialization.normal_(linear.weight, 0.0, std)
            for linear in (module.attention_out, module.mlp_out):
                transformers.initialization.normal_(linear.weight, 0.0, residual_std)
            for linear in (module.qkv, module.attention_out, module.mlp_in, module.mlp_out):
                transformers.initialization.zeros_(linear.bias)
            for norm in (module.norm_attention, module.norm_mlp):
                transformers.initialization.ones_(norm.weight)
                transformers.initialization.zeros_(norm.bias)
            if module.digit_match is not None and not getattr(module.digit_match, "_is_hf_initialized", False):
                module.digit_match.zero_()
                module.digit_match.view(module.n_kv_heads, module.group)[:, 0] = DIGIT_MATCH_INIT
        elif isinstance(module, ByteGptModel):
            for embedding in module.embeddings():
                transformers.initialization.normal_(embedding.weight, 0.0, std)
            transformers.initialization.ones_(module.norm.weight)
            transformers.initialization.zeros_(module.norm.bias)


class ByteGptModel(ByteGptPreTrainedModel):
    """Embeddings, the layers and the final norm: input ids → hidden states."""

    def __init__(self, config: ByteGptConfig) -> None:
        super().__init__(config)
        d = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, d)
        # Built only when enabled, so a model without an option holds no weights for it.
        self.previous_embedding = nn.Embedding(config.vocab_size, d) if config.token_shift else None
        self.digit_index_embedding = nn.Embedding(config.max_digit_index + 1, d) if config.digit_index else None
        self.number_index_embedding = nn.Embedding(config.max_number_index + 1, d) if config.number_index else None
        self.layers = nn.ModuleList([ByteGptLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(d)
        self.gradient_checkpointing = False
        self.post_init()

    def embeddings(self) -> List[nn.Embedding]:
        return [e for e in (self.embed_tokens, self.previous_embedding, self.digit_index_embedding, self.number_index_embedding) if e is not None]

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    def embed(self, input_ids: torch.Tensor, previous_ids: Optional[torch.Tensor], digits=None) -> torch.Tensor:
        """Token embedding, plus the previous token's under token shift, plus the digit positions
        (`digits` = digit_features' index and number) when enabled."""
        x = self.embed_tokens(input_ids)
        if self.previous_embedding is not None and previous_ids is not None:
            x = x + self.previous_embedding(previous_ids)
        if digits is not None:
            index, number = digits
            if self.digit_index_embedding is not None:
                x = x + self.digit_index_embedding(index.clamp(max=self.config.max_digit_index))
            if self.number_index_embedding is not None:
                x = x + self.number_index_embedding(number.clamp(max=self.config.max_number_index))
        return x

    def padded_forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Hidden states [rows, time, d] of right-padded rows, each one sequence from position 0."""
        rows, time = ids.shape
        if time > self.config.max_position_embeddings:
            raise ValueError(f"a sequence of {time} tokens exceeds the context length {self.config.max_position_embeddings}")
        cos, sin = rotary_angles(self.config, torch.arange(time, device=ids.device))
        # Query row g·time + i is position i of head g in its group: the same causal row for every g.
        mask = torch.full((time, time), float("-inf"), device=ids.device).triu(1).repeat(self.config.group_size, 1)
        previous = F.pad(ids[:, :-1], (1, 0), value=PAD_TOKEN_ID)
        digits, match = None, None
        if self.config.uses_digit_features:
            zeros = torch.zeros(rows, dtype=torch.long, device=ids.device)
            digits = digit_features(ids, zeros, zeros)[:2]
            if self.config.digit_match:
                match = digit_match(digits[0], digits[1], digits[0], digits[1])
        x = self.embed(ids, previous, digits)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, match)
        return self.norm(x)

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        use_cache: Optional[bool] = None,
        cu_seq_lens_q: Optional[torch.Tensor] = None,
        **kwargs,
    ) -> BaseModelOutputWithPast:
        """[batch, time] ids: each row one sequence from position 0 (right padding is harmless:
        attention is causal), or one packed row of several sequences whose bounds are
        `cu_seq_lens_q` or the restarts of `position_ids`. No KV cache here: the engine has one."""
        del attention_mask, use_cache, kwargs
        if input_ids is None or inputs_embeds is not None:
            raise ValueError(f"{MODEL_TYPE} takes input_ids (its embeddings depend on the token ids)")
        spans = packed_spans(input_ids, position_ids, cu_seq_lens_q)
        if spans is None:
            return BaseModelOutputWithPast(last_hidden_state=self.padded_forward(input_ids))
        # Each group of similar lengths runs as right-padded rows of its own longest: one row of
        # 700 tokens among seven of 250 would otherwise pad them all to 700 (2.5× the linear
        # layers' work, 8× the attention's).
        # Under several ranks every rank must run the same layers the same number of times (FSDP
        # gathers a layer's weights at each call): one group, all padded to the longest.
        one_group = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        pieces, order = [], []
        for group in [list(range(len(spans)))] if one_group else length_groups(spans):
            columns = span_columns([spans[index] for index in group], input_ids.device)
            valid = columns >= 0
            padded = torch.full(columns.shape, PAD_TOKEN_ID, dtype=input_ids.dtype, device=input_ids.device)
            padded[valid] = input_ids[0][columns[valid]]
            pieces.append(self.padded_forward(padded)[valid])
            order.append(columns[valid])
        # The pieces hold the packed columns in group order; put them back in packed order.
        position = torch.empty(input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        gathered = torch.cat(order)
        position[gathered] = torch.arange(gathered.numel(), device=input_ids.device)
        hidden = torch.cat(pieces).index_select(0, position)
        return BaseModelOutputWithPast(last_hidden_state=hidden[None])


def packed_spans(
    input_ids: torch.Tensor, position_ids: Optional[torch.Tensor], cu_seq_lens: Optional[torch.Tensor]
) -> Optional[List[Tuple[int, int]]]:
    """[start, end) of each sequence of a packed row, or None when every row is one sequence."""
    if cu_seq_lens is not None:
        if input_ids.shape[0] != 1:
            raise ValueError("packed sequence bounds need a single row of input_ids")
        bounds = [int(value) for value in cu_seq_lens.tolist()]
        return list(zip(bounds[:-1], bounds[1:]))
    if position_ids is None or input_ids.shape[0] != 1:
        return None
    starts = (position_ids[0] == 0).nonzero().flatten().tolist()
    if len(starts) <= 1 and (not starts or starts[0] == 0):
        return None
    if not starts or starts[0] != 0:
        raise ValueError("packed position ids must start at 0")
    bounds = starts + [input_ids.shape[1]]
    return list(zip(bounds[:-1], bounds[1:]))


def length_groups(spans: List[Tuple[int, int]], max_padding: float = 0.25) -> List[List[int]]:
    """The spans' indices in groups of similar length, longest first: a group takes the next
    span while its padded cells (members × its longest) stay within (1 + max_padding) × its
    tokens. Every index is in exactly one group."""
    lengths = [end - start for start, end in spans]
    groups: List[List[int]] = []
    tokens = 0
    for index in sorted(range(len(spans)), key=lambda i: -lengths[i]):
        if groups and (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= (1 + max_padding) * (tokens + lengths[index]):
            groups[-1].append(index)
            tokens += lengths[index]
        else:
            groups.append([index])
            tokens = lengths[index]
    return groups


def span_columns(spans: List[Tuple[int, int]], device: torch.device) -> torch.Tensor:
    """Right-padded rows [S, L] of the spans: the packed column each cell takes its token from,
    −1 on padding. Selecting the cells ≥ 0 in row-major order gives the packed order back."""
    longest = max(end - start for start, end in spans)
    columns = torch.full((len(spans), longest), -1, dtype=torch.long)
    for row, (start, end) in enumerate(spans):
        columns[row, : end - start] = torch.arange(start, end)
    return columns.to(device)


class ByteGptForCausalLM(ByteGptPreTrainedModel, GenerationMixin):
    """The byte model with its LM head (tied to the input embedding)."""

    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, config: ByteGptConfig) -> None:
        super().__init__(config)
        self.model = ByteGptModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head = value

    def forward(
        self,
        input_ids: Optional[torch.LongTensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        labels: Optional[torch.LongTensor] = None,
        use_cache: Optional[bool] = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs,
    ) -> CausalLMOutputWithPast:
        """Logits of every position (or of `logits_to_keep`: the last k, or those indices)."""
        for name in ("cache", "past_key_values"):
            if kwargs.pop(name, None) is not None:
                raise ValueError(f"{MODEL_TYPE} keeps no KV cache in transformers (the engine decodes it with its own)")
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             inputs_embeds=inputs_embeds, use_cache=use_cache, **kwargs)
        hidden = outputs.last_hidden_state
        kept = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden[:, kept, :])
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size)
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        """`generate` without a cache: the whole sequence each step (slow, for checks only)."""
        return {"input_ids": input_ids}


def seeded_init(model: ByteGptForCausalLM, seed: int) -> None:
    """Initialises every weight from `seed` alone (the global generator is left as it was)."""
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        for module in model.modules():
            for parameter in module.parameters(recurse=False):
                parameter._is_hf_initialized = False
        model.apply(model._init_weights)
        model.tie_weights()
    finally:
        torch.random.set_rng_state(state)


def register() -> None:
    """Makes `agentmath-byte-gpt` folders loadable by transformers' Auto classes (idempotent)."""
    try:
        transformers.AutoConfig.register(MODEL_TYPE, ByteGptConfig)
    except ValueError:  # already registered in this process
        pass
    try:
        transformers.AutoModelForCausalLM.register(ByteGptConfig, ByteGptForCausalLM)
    except ValueError:
        pass


# Importing the architecture makes it loadable: a folder of it opens with the Auto classes.
register()
