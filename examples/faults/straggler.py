"""H14: a multi-rank evaluation where rank 1 gets the long generations. Every rank makes the
same all_reduce of one metric; rank 1 comes to it seconds after the others. A straggler, not a
desync: with a shorter process group timeout it would have ended in a watchdog timeout.

    torchrun --standalone --nproc_per_node 2 straggler.py
"""
import time

import torch
import torch.distributed as dist

from common import init

rank, world = init(timeout_s=30)
lengths = [2, 40] if rank == 1 else [2, 3]  # tokens to generate per prompt
score = torch.zeros(1)
for length in lengths:
    time.sleep(0.1 * length)  # generating
    score += length
dist.all_reduce(score)
if rank == 0:
    print(f"mean length {score.item() / (world * len(lengths)):.1f}")
