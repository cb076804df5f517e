"""A healthy run for comparison: 2-rank DDP with DataLoader workers. No finding expected.

    torchrun --standalone --nproc_per_node 2 clean_ddp.py
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from common import init

rank, world = init()
data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
loader = DataLoader(data, batch_size=16, num_workers=2, sampler=DistributedSampler(data))
model = DDP(torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for features, targets in loader:
    loss = torch.nn.functional.mse_loss(model(features), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
