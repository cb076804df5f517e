"""H16, T17: rank 0 alone syncs a metric (an all_reduce in `if rank == 0:` code, as a rank-0-only
logging callback does). It pairs with the other ranks' next all_reduce of the same shape, so every
result after it is silently wrong, and rank 0's last all_reduce waits for ranks that have
finished. With --at-end the metric sync is rank 0's last call, which no other rank ever makes.

    torchrun --standalone --nproc_per_node 3 rank_zero_collective.py [--at-end]
"""
import sys

import torch
import torch.distributed as dist

from common import init

rank, world = init(timeout_s=5)
steps = 3
log_step = steps - 1 if "--at-end" in sys.argv else 1
for step in range(steps):
    loss = torch.ones(1) * (rank + 1)
    dist.all_reduce(loss)  # every rank, every step
    if rank == 0 and step == log_step:
        accuracy = torch.tensor([0.9])
        dist.all_reduce(accuracy)  # fault: a metric sync in rank-0-only code
dist.destroy_process_group()
