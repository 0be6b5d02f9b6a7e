"""Model architectures of our own, registered with transformers on import, so the engine and the
trainer (and any transformers code) load their folders through the Auto classes.

  byte_gpt        the embedded byte model (`agentmath-byte-gpt`)
  byte_tokenizer  its byte-level tokenizer and the Hugging Face files that describe it
  byte_folder     writing a new byte model folder, and converting one the old worker wrote
"""

import transformers

from .byte_gpt import register

register()
# Loading and saving small local folders: no progress bars in the engine's or trainer's output.
transformers.utils.logging.disable_progress_bar()
