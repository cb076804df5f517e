"""H08 (b) and (c): rank 1 skips an all_reduce (a rank-dependent branch). With --then-exit it
finishes at once, so rank 0 sees "Connection closed by peer"; otherwise it keeps working, so rank
0 times out.

    torchrun --standalone --nproc_per_node 2 skip_collective.py [--then-exit]
"""
import sys
import time

import torch
import torch.distributed as dist

from common import init

rank, world = init(timeout_s=5)
loss_sum = torch.tensor([1.0])
if rank != 1:
    dist.all_reduce(loss_sum)
if rank == 1 and "--then-exit" not in sys.argv:
    time.sleep(12)  # still training
