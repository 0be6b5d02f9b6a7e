"""The chunked LM head against full logits (losses.token_logprobs / token_entropy): values and
gradients of both outputs, with and without a bias, at a temperature, chunks that do not divide
the tokens, fp32 and bf16; through a Hugging Face model with a tied and an untied head; and the
tensors kept for backward, which never hold [tokens × vocabulary].

Tolerances: fp32 — values 1e-5 absolute, gradients within 1e-5 of the largest in the tensor
(summation order only); bf16 — values 1e-4 absolute (the same bf16 logits, softmax in fp32),
gradients within 2e-2 of the largest (∂/∂logits is rounded to bf16 at different points)."""

from __future__ import annotations

import os
import unittest

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402

from unittest import mock  # noqa: E402

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from agentmath_train import lm_head_logprobs  # noqa: E402
from agentmath_train.lm_head_logprobs import chunked_logprobs_entropy, model_token_logprobs  # noqa: E402
from agentmath_train.losses import token_entropy, token_logprobs  # noqa: E402

TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1e-4, 2e-2)}  # (values absolute, gradient share of max)


def full_logits_path(hidden, weight, bias, targets, temperature):
    """The full-logits path on [N] targets: logits for positions 0..N−1 predict targets 0..N−1."""
    logits = torch.nn.functional.linear(hidden, weight, bias)[None]
    logits = torch.cat((logits, logits[:, :1]), 1)  # token_logprobs drops the last position
    ids = torch.cat((targets[:1], targets))[None]
    return token_logprobs(logits, ids, temperature)[0, 1:], token_entropy(logits, temperature)[0, 1:]


class ChunkedHeadTest(unittest.TestCase):
    def compare(self, dtype, with_bias, temperature, chunk_tokens):
        generator = torch.Generator().manual_seed(1)
        count, width, vocab = 29, 16, 97
        hidden = torch.randn(count, width, generator=generator).to(dtype).requires_grad_()
        weight = (torch.randn(vocab, width, generator=generator) * 0.5).to(dtype).requires_grad_()
        bias = (torch.randn(vocab, generator=generator) * 0.1).to(dtype).requires_grad_() if with_bias else None
        targets = torch.randint(0, vocab, (count,), generator=generator)
        upstream_logprob, upstream_entropy = torch.randn(count, generator=generator), torch.randn(count, generator=generator)
        leaves = [hidden, weight] + ([bias] if with_bias else [])
        outputs = []
        for path in (
            lambda: full_logits_path(hidden, weight, bias, targets, temperature),
            lambda: chunked_logprobs_entropy(hidden, weight, bias, targets, temperature, chunk_tokens),
        ):
            logprobs, entropy = path()
            grads = torch.autograd.grad((logprobs * upstream_logprob + entropy * upstream_entropy).sum(), leaves)
            outputs.append((logprobs.detach(), entropy.detach(), grads))
        (expected_lp, expected_entropy, expected_grads), (lp, entropy, grads) = outputs
        value_tolerance, gradient_tolerance = TOLERANCES[dtype]
        torch.testing.assert_close(lp, expected_lp, atol=value_tolerance, rtol=0)
        torch.testing.assert_close(entropy, expected_entropy, atol=value_tolerance, rtol=0)
        for name, actual, expected in zip(("hidden", "weight", "bias"), grads, expected_grads):
            self.assertEqual(actual.dtype, expected.dtype, name)
            largest = expected.float().abs().max().item()
            self.assertLessEqual((actual.float() - expected.float()).abs().max().item(), gradient_tolerance * largest, name)

    def test_values_and_gradients_match_full_logits(self):
        for dtype in (torch.float32, torch.bfloat16):
            for with_bias in (False, True):
                for temperature, chunk_tokens in ((1.0, 29), (0.7, 8), (1.3, 1)):
                    with self.subTest(dtype=str(dtype), bias=with_bias, temperature=temperature, chunk=chunk_tokens):
                        self.compare(dtype, with_bias, temperature, chunk_tokens)

    def test_only_the_logprob_gradient_when_entropy_is_unused(self):
        generator = torch.Generator().manual_seed(2)
        hidden = torch.randn(11, 8, generator=generator, requires_grad=True)
        weight = torch.randn(31, 8, generator=generator, requires_grad=True)
        targets = torch.randint(0, 31, (11,), generator=generator)
        expected = torch.autograd.grad(full_logits_path(hidden, weight, None, targets, 0.9)[0].sum(), (hidden, weight))
        actual = torch.autograd.grad(chunked_logprobs_entropy(hidden, weight, None, targets, 0.9, 4)[0].sum(), (hidden, weight))
        for got, want in zip(actual, expected):
            torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)

    def test_nothing_of_size_tokens_times_vocabulary_is_kept_for_backward(self):
        count, width, vocab = 64, 8, 500
        hidden = torch.randn(count, width, requires_grad=True)
        weight = torch.randn(vocab, width, requires_grad=True)
        targets = torch.randint(0, vocab, (count,))
        for chunk_tokens, path in (
            (None, lambda: full_logits_path(hidden, weight, None, targets, 1.0)),
            (16, lambda: chunked_logprobs_entropy(hidden, weight, None, targets, 1.0, 16)),
        ):
            kept = []

            def pack(tensor, kept=kept):
                kept.append(tensor.numel())
                return tensor

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                logprobs, entropy = path()
            if chunk_tokens is None:
                self.assertGreaterEqual(max(kept), count * vocab)  # the full path keeps [N × V]
            else:
                self.assertLess(max(kept), count * vocab / 4)
            (logprobs.sum() + entropy.sum()).backward()

    def test_one_chunk_keeps_its_log_probabilities_instead_of_recomputing_them(self):
        generator = torch.Generator().manual_seed(3)
        count, width, vocab = 20, 8, 50
        hidden = torch.randn(count, width, generator=generator, requires_grad=True)
        weight = torch.randn(vocab, width, generator=generator, requires_grad=True)
        targets = torch.randint(0, vocab, (count,), generator=generator)
        upstream = torch.randn(count, generator=generator), torch.randn(count, generator=generator)

        def run(chunk_tokens):
            with mock.patch.object(lm_head_logprobs, "_chunk_logits", wraps=lm_head_logprobs._chunk_logits) as logits:
                logprobs, entropy = chunked_logprobs_entropy(hidden, weight, None, targets, 0.9, chunk_tokens)
                grads = torch.autograd.grad((logprobs * upstream[0] + entropy * upstream[1]).sum(), (hidden, weight))
            return logits.call_count, grads

        self.assertEqual(run(count)[0], 1)  # forward only
        self.assertEqual(run(7)[0], 2 * 3)  # three chunks, each recomputed in backward
        kept = run(count)[1]
        with mock.patch.object(lm_head_logprobs, "keeps_logits", return_value=False):
            calls, recomputed = run(count)
        self.assertEqual(calls, 2)
        for got, want in zip(kept, recomputed):
            self.assertTrue(torch.equal(got, want))  # the same arithmetic, not recomputed

    def test_no_entropy_arithmetic_in_backward_when_only_the_logprobs_are_differentiated(self):
        count, width, vocab = 12, 8, 40
        hidden = torch.randn(count, width, requires_grad=True)
        weight = torch.randn(vocab, width, requires_grad=True)
        targets = torch.randint(0, vocab, (count,))

        class Record(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[1] == vocab:
                    self.ops.append(func.overloadpacket.__name__)
                return out

        for chunk_tokens in (count, 5):
            with self.subTest(chunk=chunk_tokens):
                logprobs, _entropy = chunked_logprobs_entropy(hidden, weight, None, targets, 1.0, chunk_tokens)
                record = Record()
                with record:
                    logprobs.sum().backward()
                # ∂/∂z = onehot − p per chunk: exp, one mul_, scatter_add_; the entropy's
                # term (an add_, two more mul_ and a sub_ on [C × V]) is never computed.
                self.assertNotIn("add_", record.ops)
                self.assertEqual(record.ops.count("mul_"), record.ops.count("exp"))

    def test_a_bad_chunk_size_is_refused(self):
        with self.assertRaisesRegex(ValueError, "chunk_tokens"):
            chunked_logprobs_entropy(torch.zeros(2, 4), torch.zeros(5, 4), None, torch.zeros(2, dtype=torch.long), 1.0, 0)

    def test_a_hugging_face_model_tied_and_untied(self):
        common = dict(vocab_size=120, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
        configs = {
            "qwen3 (tied)": transformers.Qwen3Config(num_key_value_heads=1, head_dim=16, tie_word_embeddings=True, **common),
            "llama (untied)": transformers.LlamaConfig(num_key_value_heads=1, tie_word_embeddings=False, **common),
        }
        for name, config in configs.items():
            with self.subTest(model=name):
                torch.manual_seed(0)
                model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
                ids = torch.randint(0, 120, (2, 13))
                logits = model(input_ids=ids, use_cache=False).logits
                expected = token_logprobs(logits, ids, 0.8), token_entropy(logits, 0.8)
                expected_grads = torch.autograd.grad((expected[0] + expected[1]).sum(), list(model.parameters()))
                actual = model_token_logprobs(model, ids, temperature=0.8, chunk_tokens=5)
                actual_grads = torch.autograd.grad((actual[0] + actual[1]).sum(), list(model.parameters()))
                torch.testing.assert_close(actual[0], expected[0], atol=1e-5, rtol=0)
                torch.testing.assert_close(actual[1], expected[1], atol=1e-5, rtol=0)
                for got, want in zip(actual_grads, expected_grads):
                    self.assertLessEqual((got - want).abs().max().item(), 1e-5 * want.abs().max().item())


if __name__ == "__main__":
    unittest.main()
