"""H11: a per-rank skip of a bad batch (`continue` before backward) in DDP: the ranks' gradient
all_reduce counts diverge, and the rank that finishes first leaves the other waiting. With
--log-loss each step first all-reduces the loss for logging, as training loops do: the skipping
rank's next loss all_reduce then meets the other's gradient all-reduce (DDP's, in backward).

    torchrun --standalone --nproc_per_node 2 skip_backward.py [--log-loss]
"""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init

rank, world = init(timeout_s=10)
model = DDP(torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    loss = model(torch.randn(8, 16)).sum()
    if "--log-loss" in sys.argv:
        dist.all_reduce(loss.detach().clone())
    if rank == 1 and step == 1:
        continue  # "NaN loss, skip this batch"
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
