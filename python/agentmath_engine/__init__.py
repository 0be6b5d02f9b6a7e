"""AgentMath's PyTorch engine: serves a model over SGLang's routes (`/generate`, the weight
updates RL's sync sends) and nothing else; training is `agentmath_train`'s.

Run it with `python3 -m agentmath_engine --model FOLDER --port 0`: a model folder (the byte
model's or a Hugging Face one), or a byte-model shape name (`tiny`, `test`) for a random-init
byte model.
"""
