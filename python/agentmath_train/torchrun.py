"""`python -m agentmath_train.torchrun ARGS`: torchrun (`torch.distributed.run`) that exits when
the program that started it is gone, kill -9 included.

torchrun runs in a process group of its own and starts each rank in a session of its own, so
a killed launcher reaches none of them. Each rank watches its parent (`parent_watch`); this
watches torchrun's, before torch is imported, so an agent waiting in a rendezvous that never
completes, or still importing, does not live on under init. Arguments are torchrun's, unchanged.
"""

from __future__ import annotations

import sys

from agentmath_engine.parent_watch import watch_parent

if __name__ == "__main__":
    watch_parent("torchrun")
    from torch.distributed.run import main

    sys.argv[0] = "torchrun"
    main()
