"""DDP-eval: evaluation through the DDP model on rank 0 only (`if rank == 0: evaluate()`), the
"evaluate on the main process" mistake. With broadcast_buffers (DDP's default) and a model that
has buffers (BatchNorm), DDP's forward broadcasts the buffers from rank 0, a collective that only
rank 0 makes: it pairs with the other ranks' next one, and the last waits for ranks that have
left. Without broadcast_buffers (--no-broadcast-buffers), a forward under torch.no_grad() makes
no collective, and the run is clean; with --join it then trains on uneven inputs under join(),
which shadows rank 0's collectives from rank 1's exit of the `with`, as it should.

    torchrun --nproc_per_node 2 eval_rank_zero.py [--no-broadcast-buffers] [--join]
"""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init

rank, world = init(timeout_s=5)
net = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1))
model = DDP(net, broadcast_buffers="--no-broadcast-buffers" not in sys.argv)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def evaluate():
    model.eval()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(8, 16))  # fault: a forward through DDP that only rank 0 runs
    model.train()


for epoch in range(2):
    for step in range(3):
        loss = model(torch.randn(8, 16)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if rank == 0:
        evaluate()
if "--join" in sys.argv:  # last: after join(), every forward is a collective step (a flag)
    with model.join():
        for step in range(4 if rank == 0 else 2):
            loss = model(torch.randn(8, 16)).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
dist.destroy_process_group()
