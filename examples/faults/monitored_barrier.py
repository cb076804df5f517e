"""T14 / H08 (a): rank 1 is still busy elsewhere (here: saving a checkpoint for 6 s) when the
others enter a monitored barrier with a 2 s timeout.

    torchrun --standalone --nproc_per_node 2 monitored_barrier.py
"""
import datetime
import time

import torch.distributed as dist

from common import init

rank, world = init()
if rank == 1:
    time.sleep(6)
else:
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))
