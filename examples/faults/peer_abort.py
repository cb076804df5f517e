"""T16 (gloo): rank 1 dies (os.abort(), standing in for any crash) between two all_reduces, and
rank 0 loses its connection in the next one.

    torchrun --standalone --nproc_per_node 2 peer_abort.py
"""
import os

import torch
import torch.distributed as dist

from common import init

rank, world = init()
grad = torch.ones(1024)
for step in range(4):
    if rank == 1 and step == 2:
        os.abort()
    dist.all_reduce(grad)
dist.destroy_process_group()
