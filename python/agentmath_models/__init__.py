"""Model architectures of our own, registered with transformers by
`register_architectures()` (and by importing `byte_gpt`), so the engine and the
trainer (and any transformers code) load their folders through the Auto classes.

  byte_gpt        the embedded byte model (`agentmath-byte-gpt`)
  byte_tokenizer  its byte-level tokenizer and the Hugging Face files that describe it
  byte_folder     writing a new byte model folder, and converting one the old worker wrote

Importing the package loads neither torch nor transformers: `import_gguf`'s cheap checks (no
such file, not a GGUF file) answer in a fraction of a second.
"""


def register_architectures() -> None:
    """Makes every architecture of ours loadable by transformers' Auto classes (idempotent), and
    turns off transformers' progress bars (small local folders: no bars in the engine's or the
    trainer's output)."""
    import transformers

    from . import byte_gpt

    byte_gpt.register()
    transformers.utils.logging.disable_progress_bar()
