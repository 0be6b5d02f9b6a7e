"""The byte model's architecture: seeded initialisation, its options (token shift, digit
positions, digit match), packed rows equal to the sequences alone, registration with
transformers' Auto classes, and the one-time conversion of the old worker's folders."""

import os
import shutil
import tempfile
import unittest

import torch
import transformers

import agentmath_models  # noqa: F401  (registers the architecture)
from agentmath_models.byte_folder import LEGACY_WEIGHTS_FILE, byte_config, convert_legacy_folder, init_byte_model, is_legacy_byte_folder
from agentmath_models.byte_gpt import DIGIT_MATCH_INIT, MODEL_TYPE, ByteGptConfig, ByteGptForCausalLM, digit_features, digit_match, seeded_init

PLAIN = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, max_position_embeddings=256, intermediate_size=256)
DIGITS = dict(PLAIN, token_shift=True, digit_index=True, number_index=True, digit_match=True)


def model_of(seed=0, **shape) -> ByteGptForCausalLM:
    model = ByteGptForCausalLM(ByteGptConfig(**(shape or PLAIN)))
    seeded_init(model, seed)
    return model.eval()


def reference_digit_features(text: bytes):
    """The digit positions spelled out byte by byte (the definition in docs/embedded-model.md)."""
    index, number, run, runs = [], [], 0, 0
    for byte in text:
        if 48 <= byte <= 57:
            run += 1
            runs += run == 1
            index.append(run)
            number.append(runs)
        else:
            run = 0
            runs = 0 if byte == 10 else runs
            index.append(0)
            number.append(runs + 1)
    return index, number


def features_of(text: bytes):
    zero = torch.zeros(1, dtype=torch.long)
    index, number, _, _ = digit_features(torch.tensor([list(text)]), zero, zero)
    return index[0].tolist(), number[0].tolist()


def last_logits(model, text: bytes) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([list(text)])).logits[0, -1]


class ByteGptTest(unittest.TestCase):
    def test_initialisation_depends_only_on_the_seed(self):
        a, b = model_of(0), model_of(0)
        torch.manual_seed(1234)  # the global generator must not matter
        c, other = model_of(0), model_of(1)
        for name, tensor in a.state_dict().items():
            self.assertTrue(torch.equal(tensor, b.state_dict()[name]), name)
            self.assertTrue(torch.equal(tensor, c.state_dict()[name]), name)
        self.assertFalse(torch.equal(a.model.embed_tokens.weight, other.model.embed_tokens.weight))
        self.assertIs(a.lm_head.weight, a.model.embed_tokens.weight)

    def test_token_shift_sees_the_previous_token(self):
        model = model_of(0, **dict(PLAIN, token_shift=True))
        with torch.no_grad():
            model.model.previous_embedding.weight.mul_(50)
        # Same last token, different token before it: the last logits must differ.
        self.assertFalse(torch.allclose(last_logits(model, bytes([5, 6, 7, 9])), last_logits(model, bytes([5, 6, 8, 9])), atol=1e-3))
        plain = model_of(0)
        self.assertIsNone(plain.model.previous_embedding)
        self.assertNotIn("model.previous_embedding.weight", plain.state_dict())

    def test_digit_features_follow_their_definition(self):
        text = b"Add 2166 + 8821 + 3597\n<code>\nprint(2166 + 88)\n14584\nx = 7.\n\n12a3"
        self.assertEqual(features_of(text), reference_digit_features(text))
        index, number = features_of(b"ab 123 4\n56")
        self.assertEqual(index, [0, 0, 0, 1, 2, 3, 0, 1, 0, 1, 2])
        self.assertEqual(number, [1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1])

    def test_digit_features_continue_across_chunks(self):
        # Any split into a prefix and a continuation (prefill chunks, decode steps) gives the
        # features of the whole text.
        text = b"9 + 12\nprint(345 + 6789)\n0012 x 3\n"
        whole = features_of(text)
        zero = torch.zeros(1, dtype=torch.long)
        for split in range(1, len(text)):
            head = digit_features(torch.tensor([list(text[:split])]), zero, zero)
            tail = digit_features(torch.tensor([list(text[split:])]), head[2], head[3])
            self.assertEqual(head[0][0].tolist() + tail[0][0].tolist(), whole[0], split)
            self.assertEqual(head[1][0].tolist() + tail[1][0].tolist(), whole[1], split)

    def test_digit_positions_change_the_logits(self):
        model = model_of(0, **DIGITS)
        with torch.no_grad():
            model.model.digit_index_embedding.weight.mul_(50)
            model.model.number_index_embedding.weight.mul_(50)
        # Same last two tokens: "5" is the 2nd digit of the 1st number vs the 1st digit of the 2nd.
        self.assertFalse(torch.allclose(last_logits(model, b"x 45"), last_logits(model, b"4 45"), atol=1e-3))
        self.assertIsNone(model_of(0).model.digit_index_embedding)
        self.assertNotIn("model.number_index_embedding.weight", model_of(0).state_dict())

    def test_digit_match_marks_the_next_digit_of_the_same_number(self):
        ids = torch.tensor([list(b"7 123\n45 1")])
        zero = torch.zeros(1, dtype=torch.long)
        index, number, _, _ = digit_features(ids, zero, zero)
        match = digit_match(index, number, index, number)[0]
        # "4" (number 1, digit 1) matches only "5" (number 1, digit 2), a later position (the
        # causal mask hides it); "2" of "123" is digit 2 of number 2.
        self.assertEqual(match[6].nonzero().flatten().tolist(), [7])
        # The space after "45" (next number 2) matches first digits of number-2 runs: "1" at 2
        # and the "1" at 9 itself (causality is the attention mask's job).
        self.assertEqual(match[8].nonzero().flatten().tolist(), [2, 9])
        self.assertEqual(match[9].nonzero().flatten().tolist(), [3])
        model = model_of(0, **DIGITS)
        self.assertEqual(model.model.layers[0].digit_match.tolist(), [DIGIT_MATCH_INIT, 0.0, DIGIT_MATCH_INIT, 0.0])
        with self.assertRaisesRegex(ValueError, "digit_match needs"):
            ByteGptConfig(**dict(PLAIN, digit_match=True))

    def test_a_packed_row_gives_each_sequence_what_it_gets_alone(self):
        # Token shift, digit positions and the digit match restart at each sequence of the row,
        # whether the bounds come as cu_seq_lens (the trainer's packed rows) or position ids.
        model = model_of(3, **DIGITS)
        texts = [b"Add 12 + 345\n<code>\nprint(12 + 345)\n", b"7 98765\n54 3", b"x"]
        alone = [model(input_ids=torch.tensor([list(text)])).logits[0] for text in texts]
        row = torch.tensor([[byte for text in texts for byte in text]])
        ends = torch.tensor([len(text) for text in texts]).cumsum(0)
        bounds = torch.cat([torch.zeros(1, dtype=torch.long), ends]).to(torch.int32)
        spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        positions = torch.cat([torch.arange(len(text)) for text in texts])[None]
        for packed in (model(input_ids=row, cu_seq_lens_q=bounds).logits[0], model(input_ids=row, position_ids=positions).logits[0]):
            for (start, end), logits in zip(spans, alone):
                self.assertTrue(torch.allclose(packed[start:end], logits, atol=1e-5), (start, end))
        # Gradients flow through the packing to every option's weights.
        model.train()
        model(input_ids=row, cu_seq_lens_q=bounds).logits.sum().backward()
        for name in ("model.previous_embedding.weight", "model.digit_index_embedding.weight", "model.layers.0.digit_match"):
            self.assertGreater(float(dict(model.named_parameters())[name].grad.abs().sum()), 0.0, name)

    def test_rejects_sequences_longer_than_the_context(self):
        with self.assertRaisesRegex(ValueError, "context length"):
            model_of(0)(input_ids=torch.zeros(1, PLAIN["max_position_embeddings"] + 1, dtype=torch.long))

    def test_a_folder_loads_through_the_auto_classes(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        result = init_byte_model(folder, seed=4, shape="test", token_shift=True)
        self.assertEqual(result["parameters"], sum(p.numel() for p in model_of(4, **dict(PLAIN, token_shift=True)).parameters()))
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            self.assertTrue(os.path.isfile(os.path.join(folder, name)), name)
        config = transformers.AutoConfig.from_pretrained(folder)
        self.assertEqual((config.model_type, config.token_shift, config.hidden_size), (MODEL_TYPE, True, 64))
        loaded = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
        self.assertIsInstance(loaded, ByteGptForCausalLM)
        expected = model_of(4, **dict(PLAIN, token_shift=True))
        for name, tensor in expected.state_dict().items():
            self.assertTrue(torch.equal(tensor, loaded.state_dict()[name]), name)
        with torch.device("meta"):
            on_meta = transformers.AutoModelForCausalLM.from_config(config)
        self.assertTrue(all(p.is_meta for p in on_meta.parameters()))
        self.assertEqual(len(on_meta.model.layers), 2)

    def test_an_old_worker_folder_converts_once_to_the_same_model(self):
        model = model_of(5, **DIGITS)
        old, new = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, old)
        self.addCleanup(shutil.rmtree, new)
        # The old worker's layout: its own names in pytorch_model.bin, its config keys.
        renames = {"model.embed_tokens.": "embedding.", "model.previous_embedding.": "previous_embedding.",
                   "model.digit_index_embedding.": "digit_index_embedding.", "model.number_index_embedding.": "number_index_embedding.",
                   "model.layers.": "blocks.", "model.norm.": "norm_final."}
        state = {}
        for name, tensor in model.state_dict().items():
            if name == "lm_head.weight":
                continue
            for prefix, old_prefix in renames.items():
                if name.startswith(prefix):
                    name = old_prefix + name[len(prefix):]
                    break
            state[name] = tensor
        torch.save(state, os.path.join(old, LEGACY_WEIGHTS_FILE))
        import json

        body = {key: value for key, value in model.config.to_dict().items() if key in DIGITS or key == "model_type"}
        with open(os.path.join(old, "config.json"), "w") as handle:
            json.dump({**body, "architectures": ["AgentMathByteGPT"], "init_seed": 5}, handle)
        self.assertTrue(is_legacy_byte_folder(old))
        convert_legacy_folder(old, new)
        self.assertFalse(is_legacy_byte_folder(new))
        converted = transformers.AutoModelForCausalLM.from_pretrained(new).eval()
        text = b"Add 12 + 345\n"
        self.assertTrue(torch.equal(last_logits(model, text), last_logits(converted, text)))
        with self.assertRaisesRegex(ValueError, "not a byte model folder of the old layout"):
            convert_legacy_folder(new, tempfile.mkdtemp())

    def test_shapes_and_config_errors(self):
        self.assertEqual(byte_config("tiny").num_key_value_heads, 1)
        with self.assertRaisesRegex(ValueError, "expected one of tiny, test"):
            byte_config("huge")
        with self.assertRaisesRegex(ValueError, "num_key_value_heads"):
            ByteGptConfig(**dict(PLAIN, num_key_value_heads=3))


if __name__ == "__main__":
    unittest.main()
