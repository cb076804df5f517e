"""T12: the ranks take different code paths, so rank 0 calls all_reduce where rank 1 calls
reduce. TORCH_DISTRIBUTED_DEBUG=DETAIL (set below) makes PyTorch compare them.

    torchrun --standalone --nproc_per_node 2 collective_op_mismatch.py
"""
import os

os.environ.setdefault("TORCH_DISTRIBUTED_DEBUG", "DETAIL")

import torch
import torch.distributed as dist

from common import init

rank, world = init()
metrics = torch.randn(20, 10)
if rank == 0:
    dist.all_reduce(metrics)
else:
    dist.reduce(metrics, dst=0)
dist.destroy_process_group()
