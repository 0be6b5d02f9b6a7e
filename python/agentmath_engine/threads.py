"""Switches torch's intra-op thread count between generation and training (never concurrent:
weight changes run exclusively), calling into torch only when the count changes."""

from __future__ import annotations

import torch

_current = {"threads": 0}


def use_threads(threads: int) -> None:
    if threads > 0 and threads != _current["threads"]:
        torch.set_num_threads(threads)
        _current["threads"] = threads
