"""AgentMath's PyTorch worker: serves a policy over SGLang's /generate and trains it (SFT, GRPO).

Run it with `python3 -m agentmath_engine --model tiny --port 0`. The default model is a small
byte-level transformer trained from scratch; a local Hugging Face folder works where
`transformers` is installed.
"""
