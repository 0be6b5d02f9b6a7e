"""The in-jail runner of the AgentMath sandbox (see runner.py)."""
