"""S05: one rank sums its metric as float32, the other as int64 (a count kept as an integer), in
one all_reduce.

    torchrun --standalone --nproc_per_node 2 dtype_mismatch.py
"""
import time

import torch
import torch.distributed as dist

from common import init

rank, world = init()
correct = torch.tensor([17.0]) if rank == 0 else torch.tensor([17])
dist.all_reduce(correct)
time.sleep(3)  # the job goes on with a wrong (or no) result
dist.destroy_process_group()
