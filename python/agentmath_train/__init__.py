"""The distributed trainer: SFT and GRPO for any Hugging Face causal LM on PyTorch FSDP2.

Entered by `torchrun … -m agentmath_train serve` (rank 0 answers HTTP and broadcasts each
command to every rank) or `python -m agentmath_train init-model` (a random-init model for tests).
Every model trains here, the byte model too (`agentmath_models` registers it with transformers).
"""
