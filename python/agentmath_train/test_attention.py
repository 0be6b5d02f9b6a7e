"""The trainer's packed attention (attention.py) on CPU: each sequence of a packed row gets the
log-probs, entropies and gradients it gets alone through the plain `sdpa` model; no [T × T]
tensor is built; the flex path's document mask and the loop agree; padding is refused.

Models are the distributed tests' random-init Qwen3, Qwen3-MoE and Llama (2 layers, hidden 64,
4 query heads sharing 2 key/value heads). Tolerance fp32: 1e-5 on log-probs and entropies
(seen: 5e-7 and 2.4e-6 on entropies of ~5.7; the same sums in another order), gradients within
1e-5 of the largest in their tensor. The flash-attn and compiled flex kernels need a GPU: `scripts/gpu-check.sh` runs them.
"""

from __future__ import annotations

import os
import unittest
import warnings
from unittest import mock

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

from agentmath_train.attention import (  # noqa: E402
    ATTENTION_IMPLEMENTATION,
    cu_seqlens_from_position_ids,
    document_block_layout,
    document_block_mask,
    document_ids,
    implementation_name,
    varlen_attention,
)
from agentmath_train.model import Placement, load_model  # noqa: E402
from agentmath_train.packing import pack, packed_scores  # noqa: E402
from agentmath_train.parallelize import parallelize  # noqa: E402
from agentmath_train.test_distributed import OneProcessGroupTestCase  # noqa: E402
from agentmath_train.losses import token_entropy, token_logprobs  # noqa: E402

CPU = Placement(torch.device("cpu"), torch.float32, "gloo")
LENGTHS = (23, 2, 41, 9, 17)
TEMPERATURE = 0.7
TOLERANCE = 1e-5


def random_sequences(vocab: int, lengths=LENGTHS, seed: int = 3):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (length,), generator=generator) for length in lengths]


def alone(model, sequence):
    """(log π, entropy) of one sequence, by itself, from full logits: [L] each, 0 at position 0."""
    logits = model(input_ids=sequence[None], use_cache=False).logits
    return token_logprobs(logits, sequence[None], TEMPERATURE)[0], token_entropy(logits, TEMPERATURE)[0]


class ShapeRecorder(TorchDispatchMode):
    """Every shape an aten op returns, backward included."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.shapes.extend(tuple(t.shape) for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


class PackedAttentionTest(OneProcessGroupTestCase):
    def pair(self, arch):
        """The trainer's model (varlen) and the same weights with transformers' sdpa."""
        folder = self.models[arch]
        return load_model(folder, CPU), load_model(folder, CPU, attention="sdpa")

    def test_the_trainer_loads_models_with_the_varlen_attention(self):
        model, _ = self.pair("llama")
        self.assertEqual(model.config._attn_implementation, ATTENTION_IMPLEMENTATION)

    def test_each_packed_sequence_gets_the_logprobs_and_entropy_it_gets_alone(self):
        for arch in self.models:
            packed_model, plain = self.pair(arch)
            packed_model.eval()
            plain.eval()
            sequences = random_sequences(packed_model.config.vocab_size)
            row = pack(sequences, CPU.device)
            with torch.no_grad():
                expected = [alone(plain, sequence) for sequence in sequences]
                for chunk_tokens in (0, 8):
                    with self.subTest(arch=arch, chunk_tokens=chunk_tokens):
                        logprobs, entropy = packed_scores(packed_model, row, TEMPERATURE, chunk_tokens)
                        for (start, end), (want_logprobs, want_entropy) in zip(row.spans, expected):
                            torch.testing.assert_close(logprobs[0, start:end], want_logprobs, atol=TOLERANCE, rtol=TOLERANCE)
                            torch.testing.assert_close(entropy[0, start:end], want_entropy, atol=TOLERANCE, rtol=TOLERANCE)

    def test_gradients_of_a_packed_row_equal_the_sum_over_sequences_alone_under_fsdp2_and_checkpointing(self):
        for arch in ("qwen3", "llama"):
            with self.subTest(arch=arch):
                folder = self.models[arch]
                # FSDP2 even in one fp32 process (which `parallelize` otherwise leaves unwrapped).
                with mock.patch("agentmath_train.parallelize.needs_fsdp", return_value=True):
                    packed_model = parallelize(load_model(folder, CPU), CPU, activation_checkpointing=True)
                plain = load_model(folder, CPU, attention="sdpa")
                packed_model.train()
                plain.train()
                sequences = random_sequences(plain.config.vocab_size, seed=5)
                row = pack(sequences, CPU.device)
                logprobs, entropy = packed_scores(packed_model, row, TEMPERATURE, chunk_tokens=8)
                (logprobs.sum() + 0.1 * entropy.sum()).backward()
                total = 0.0
                for sequence in sequences:
                    logits = plain(input_ids=sequence[None], use_cache=False).logits
                    total = total + token_logprobs(logits, sequence[None], TEMPERATURE).sum()
                    total = total + 0.1 * token_entropy(logits, TEMPERATURE).sum()
                total.backward()
                packed_grads = {name: p.grad.full_tensor() for name, p in packed_model.named_parameters()}
                for name, parameter in plain.named_parameters():
                    largest = parameter.grad.abs().max().item()
                    self.assertGreater(largest, 0.0, name)
                    torch.testing.assert_close(packed_grads[name], parameter.grad, atol=TOLERANCE * largest, rtol=0, msg=name)

    def test_no_tensor_of_the_packed_rows_length_squared_is_built_forward_or_backward(self):
        lengths = (61,) * 8  # T = 488 tokens, no dimension of the model equals it
        tokens = sum(lengths)

        def square_shapes(model):
            sequences = random_sequences(model.config.vocab_size, lengths)
            row = pack(sequences, CPU.device)
            with ShapeRecorder() as recorder:
                logprobs, entropy = packed_scores(model, row, TEMPERATURE, chunk_tokens=64)
                (logprobs.sum() + entropy.sum()).backward()
            return [shape for shape in recorder.shapes if sum(1 for size in shape if size == tokens) >= 2]

        varlen, sdpa = self.pair("qwen3")
        self.assertNotIn(tokens, (varlen.config.vocab_size, varlen.config.hidden_size, varlen.config.intermediate_size))
        self.assertEqual(square_shapes(varlen), [])
        # The recorder sees the dense block-diagonal mask of the sdpa path.
        self.assertIn((1, 1, tokens, tokens), square_shapes(sdpa))

    def test_a_model_with_the_flex_backend_gives_the_loops_logprobs(self):
        folder = self.models["qwen3"]
        loop = load_model(folder, CPU, attention=implementation_name("loop")).eval()
        flex = load_model(folder, CPU, attention=implementation_name("flex")).eval()
        row = pack(random_sequences(loop.config.vocab_size, (150, 7, 120)), CPU.device)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eager flex on CPU warns that it is not compiled
            expected, _ = packed_scores(loop, row, TEMPERATURE, 64, entropy=False)
            actual, _ = packed_scores(flex, row, TEMPERATURE, 64, entropy=False)
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)

    def test_a_padding_mask_is_refused_not_ignored(self):
        model, _ = self.pair("llama")
        ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
        with self.assertRaisesRegex(ValueError, "padding"):
            model(input_ids=ids, attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]))


class VarlenKernelTest(unittest.TestCase):
    """The backends against attention written out per sequence with a dense causal mask."""

    def reference(self, query, key, value, bounds):
        groups = query.shape[1] // key.shape[1]
        parts = []
        for start, end in zip(bounds[:-1], bounds[1:]):
            q = query[0, :, start:end]
            k, v = (tensor[0, :, start:end].repeat_interleave(groups, 0) for tensor in (key, value))
            scores = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5
            causal = torch.ones(end - start, end - start, dtype=torch.bool).tril()
            parts.append(scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v)
        return torch.cat(parts, 1).transpose(0, 1)[None]

    def test_loop_and_flex_attend_within_each_sequence_with_grouped_heads(self):
        generator = torch.Generator().manual_seed(0)
        bounds = [0, 130, 131, 200, 333]  # more than one 128-token block, a 1-token sequence
        query = torch.randn(1, 4, 333, 16, generator=generator)
        key, value = (torch.randn(1, 2, 333, 16, generator=generator) for _ in range(2))
        expected = self.reference(query, key, value, bounds)
        cu_seqlens = torch.tensor(bounds, dtype=torch.int32)
        for backend in ("loop", "flex"):
            with self.subTest(backend=backend), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # eager flex on CPU warns that it is not compiled
                actual = varlen_attention(query, key, value, cu_seqlens, backend=backend)
                torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)

    def test_the_document_block_mask_equals_the_one_create_block_mask_evaluates_densely(self):
        from torch.nn.attention.flex_attention import create_block_mask

        for bounds in ([0, 130, 131, 200, 333], [0, 128, 256], [0, 40, 300, 700], [0, 5]):
            for causal in (True, False):
                with self.subTest(bounds=bounds, causal=causal):
                    tokens = bounds[-1]
                    cu_seqlens = torch.tensor(bounds, dtype=torch.int32)
                    documents = document_ids(cu_seqlens, tokens)

                    def same(_b, _h, q, kv):
                        inside = documents[q] == documents[kv]
                        return inside & (q >= kv) if causal else inside

                    expected = create_block_mask(same, None, None, tokens, tokens, device="cpu")
                    actual = document_block_mask(cu_seqlens, tokens, causal)
                    self.assertTrue(torch.equal(actual.to_dense(), expected.to_dense()))
                    # A full block (mask_mod skipped) must allow every pair in it.
                    partial, full = document_block_layout(cu_seqlens, tokens, causal)
                    dense = same(0, 0, torch.arange(tokens)[:, None], torch.arange(tokens)[None, :])
                    for q_block, kv_block in full.nonzero().tolist():
                        rows, cols = slice(q_block * 128, (q_block + 1) * 128), slice(kv_block * 128, (kv_block + 1) * 128)
                        self.assertTrue(bool(dense[rows, cols].all()), (q_block, kv_block))
                    self.assertTrue(torch.equal(partial | full, expected.to_dense()[0, 0].bool()))

    def test_bounds_from_position_ids_split_packed_sequences_and_rows(self):
        positions = torch.tensor([[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 0, 1]])
        self.assertEqual(cu_seqlens_from_position_ids(positions, 2).tolist(), [0, 3, 5, 6, 10, 12])
        self.assertEqual(cu_seqlens_from_position_ids(torch.arange(4)[None], 2).tolist(), [0, 4, 8])

    def test_the_loop_matches_sdpa_with_a_block_diagonal_mask(self):
        generator = torch.Generator().manual_seed(1)
        query, key, value = (torch.randn(1, 2, 12, 8, generator=generator) for _ in range(3))
        documents = torch.tensor([0] * 5 + [1] * 7)
        mask = (documents[:, None] == documents[None, :]) & torch.ones(12, 12, dtype=torch.bool).tril()
        expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask).transpose(1, 2)
        actual = varlen_attention(query, key, value, torch.tensor([0, 5, 12], dtype=torch.int32), backend="loop")
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)


if __name__ == "__main__":
    unittest.main()
