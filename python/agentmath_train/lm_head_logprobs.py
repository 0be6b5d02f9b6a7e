"""Per-token log-probs and entropy from the final hidden states, a chunk of tokens at a time.

The LM head (h·Wᵀ + b, divided by the sampling temperature T) is applied to C tokens at once
inside one autograd function; forward keeps only log π(x_t) and the entropy per token, and
backward recomputes each chunk's logits. Memory of the head is C·V floats (a few of them at
once) instead of the ~18·V·T bytes of full fp32 logits, their log-softmax saved for backward
and a second pass for the entropy.

With z = (h·Wᵀ + b) / T, log Z = logsumexp(z), p = softmax(z):
  log π(x) = z_x − log Z                 ∂/∂z = onehot(x) − p
  H        = log Z − Σ_v p_v z_v         ∂/∂z = −p (log p + H)
and ∂/∂(h·Wᵀ) = ∂/∂z / T. The logits are computed in the hidden states' dtype and turned into
fp32 before the softmax, as the full-logits path does (`losses.token_logprobs`), so the two
give the same numbers up to summation order. The weight's gradient is summed over chunks in
fp32 (V·H floats) and returned in the weight's dtype.

The approach is verl's `FusedLinearForPPO` (verl/utils/experimental/torch_functional.py, chunks
of tokens, recomputation in backward) and prime-rl's chunked LM head
(src/prime_rl/trainer/models/layers/lm_head.py, which also chunks the vocabulary and does not
differentiate the entropy); this one chunks tokens only and differentiates both outputs.
`model_token_logprobs` runs the Hugging Face model itself untouched: its decoder's output is
captured by a forward hook and the model is asked for no logits (`logits_to_keep` = no position).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch.distributed.tensor import DTensor

# Tokens per chunk: at V = 151,936 one fp32 chunk of logits is 311 MB.
DEFAULT_CHUNK_TOKENS = 512
# A small vocabulary takes longer chunks, up to this many logits (64 MB in fp32): the byte model
# (V = 258) scores a whole micro-batch in one chunk, kept for backward instead of recomputed;
# any vocabulary of 32,768 or more keeps the 512-token default.
CHUNK_LOGITS = 512 * 32_768


def default_chunk_tokens(vocab_size: int) -> int:
    """Tokens per LM-head chunk for a vocabulary: 512, or more when 512 rows are under CHUNK_LOGITS."""
    return max(DEFAULT_CHUNK_TOKENS, CHUNK_LOGITS // max(1, vocab_size))


def _chunk_logits(hidden: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], temperature: float) -> torch.Tensor:
    logits = torch.nn.functional.linear(hidden, weight, bias).float()
    return logits / temperature if temperature != 1.0 else logits


def keeps_logits(count: int, chunk_tokens: int) -> bool:
    """Whether forward keeps the log-probabilities [N, V] for backward instead of recomputing
    them: when the N tokens fit one chunk, the kept buffer is the one backward would allocate
    for its recomputation anyway, so the head's peak memory is the same either way."""
    return count <= chunk_tokens


class _ChunkedHead(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, temperature: float, chunk_tokens: int):  # type: ignore[override]
        count = hidden.shape[0]
        logprobs = torch.empty(count, dtype=torch.float32, device=hidden.device)
        entropy = torch.empty(count, dtype=torch.float32, device=hidden.device)
        log_z = torch.empty(count, dtype=torch.float32, device=hidden.device)
        # The one chunk's log p, for backward to use once (an attribute, not a saved tensor, so
        # backward can free it as it goes; a second backward finds none and recomputes).
        ctx.kept_log_p = None
        for start in range(0, count, chunk_tokens):
            end = min(start + chunk_tokens, count)
            z = _chunk_logits(hidden[start:end], weight, bias, temperature)
            chunk_log_z = torch.logsumexp(z, dim=-1)
            logprobs[start:end] = z.gather(-1, targets[start:end, None])[:, 0] - chunk_log_z
            # Σ p·z with p = exp(z − log Z), in one more [C, V] buffer.
            entropy[start:end] = chunk_log_z - (z - chunk_log_z[:, None]).exp_().mul_(z).sum(-1)
            log_z[start:end] = chunk_log_z
            if keeps_logits(count, chunk_tokens):
                ctx.kept_log_p = z.sub_(chunk_log_z[:, None])
            del z
        ctx.save_for_backward(hidden, weight, bias, targets, log_z, entropy)
        ctx.temperature = temperature
        ctx.chunk_tokens = chunk_tokens
        ctx.has_bias = bias is not None
        # An output whose gradient is not asked for arrives as None, not zeros (SFT never
        # differentiates the entropy): its terms are skipped rather than multiplied by 0.
        ctx.set_materialize_grads(False)
        return logprobs, entropy

    @staticmethod
    def backward(ctx, grad_logprobs, grad_entropy):  # type: ignore[override]
        hidden, weight, bias, targets, log_z, entropy = ctx.saved_tensors
        temperature, chunk_tokens = ctx.temperature, ctx.chunk_tokens
        kept_log_p, ctx.kept_log_p = ctx.kept_log_p, None
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_hidden = torch.empty_like(hidden) if need_hidden else None
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_weight else None
        grad_bias = torch.zeros(weight.shape[0], dtype=torch.float32, device=weight.device) if need_bias else None
        for start in range(0, hidden.shape[0], chunk_tokens):
            end = min(start + chunk_tokens, hidden.shape[0])
            chunk = hidden[start:end]
            # Two [C, V] fp32 buffers: log p (then the entropy term, in place) and p (then ∂/∂z).
            if kept_log_p is not None:
                log_p, kept_log_p = kept_log_p, None
            else:
                log_p = _chunk_logits(chunk, weight, bias, temperature).sub_(log_z[start:end, None])
            grad = log_p.exp()
            entropy_term = None
            if grad_entropy is not None:
                g_entropy = grad_entropy[start:end, None].float()
                entropy_term = log_p.add_(entropy[start:end, None]).mul_(grad).mul_(g_entropy)
            if grad_logprobs is not None:
                g_logprob = grad_logprobs[start:end, None].float()
                grad.mul_(-g_logprob).scatter_add_(-1, targets[start:end, None], g_logprob)
            else:
                grad.zero_()
            if entropy_term is not None:
                grad.sub_(entropy_term)
            del log_p, entropy_term
            if temperature != 1.0:
                grad.div_(temperature)
            step = grad if hidden.dtype == torch.float32 else grad.to(hidden.dtype)
            if grad_hidden is not None:
                grad_hidden[start:end] = step @ weight
            if grad_weight is not None:
                if step.dtype == torch.float32:
                    grad_weight.addmm_(step.t(), chunk.float())
                else:
                    grad_weight.add_(step.t() @ chunk)
            if grad_bias is not None:
                grad_bias.add_(grad.sum(0))
            del grad, step
        grad_weight = grad_weight.to(weight.dtype) if grad_weight is not None else None
        grad_bias = grad_bias.to(bias.dtype) if grad_bias is not None else None
        return grad_hidden, grad_weight, grad_bias, None, None, None


def chunked_logprobs_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor],
    targets: torch.Tensor,
    temperature: float = 1.0,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """hidden [N, H], weight [V, H], bias [V] or None, targets [N] → (log π(target), entropy),
    both [N] fp32 and both differentiable. T ≤ 0 (greedy) is scored at T = 1, as the engine does."""
    if chunk_tokens < 1:
        raise ValueError(f"chunk_tokens must be at least 1, got {chunk_tokens}")
    temperature = float(temperature) if temperature > 0 else 1.0
    return _ChunkedHead.apply(hidden, weight, bias, targets, temperature, chunk_tokens)


def final_hidden_states(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    position_ids: Optional[torch.Tensor] = None,
    attention_mask: Optional[torch.Tensor] = None,
    **model_kwargs,
) -> Tuple[torch.Tensor, torch.nn.Module]:
    """(the decoder's last hidden states [B, T, H], the LM head module) from the model's own
    forward, asked for no logits; `model_kwargs` reach the attention functions."""
    head = model.get_output_embeddings()
    captured = []
    hook = model.get_decoder().register_forward_hook(lambda _module, _inputs, output: captured.append(output[0]))
    try:
        none = torch.zeros(0, dtype=torch.long, device=input_ids.device)
        model(
            input_ids=input_ids,
            position_ids=position_ids,
            attention_mask=attention_mask,
            use_cache=False,
            logits_to_keep=none,
            **model_kwargs,
        )
    finally:
        hook.remove()
    if isinstance(head.weight, DTensor):
        raise RuntimeError("the LM head's weight is still sharded after the forward: the root module must not reshard after forward")
    return captured[-1], head


def model_token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    position_ids: Optional[torch.Tensor] = None,
    attention_mask: Optional[torch.Tensor] = None,
    temperature: float = 1.0,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    **model_kwargs,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """(log π(x_t | x_<t), entropy of the distribution predicting x_t), each [B, T] with 0 at
    position 0, from a Hugging Face causal LM's forward without its [B, T, V] logits.

    The model runs through its own `forward` (so FSDP2 gathers the head's weight and keeps it
    gathered for backward); the decoder's last hidden state is taken by a forward hook.
    `model_kwargs` go to the forward as they are (a packed row's sequence bounds)."""
    hidden, head = final_hidden_states(model, input_ids, position_ids, attention_mask, **model_kwargs)
    weight = head.weight
    hidden = hidden[:, :-1]
    batch, steps = hidden.shape[0], hidden.shape[1]
    logprobs, entropy = chunked_logprobs_entropy(
        hidden.reshape(batch * steps, -1), weight, head.bias, input_ids[:, 1:].reshape(-1), temperature, chunk_tokens
    )
    zero = logprobs.new_zeros(batch, 1)
    return torch.cat((zero, logprobs.view(batch, steps)), 1), torch.cat((zero, entropy.view(batch, steps)), 1)
