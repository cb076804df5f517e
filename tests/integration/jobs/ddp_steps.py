"""A DDP job for the step counter: each rank runs STEPS optimizer steps of a tiny model wrapped
in DistributedDataParallel (gloo), reading its batches through a DataLoader worker, so that
launcher, ranks and a worker exist and only the ranks step."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset


def main(steps):
    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(steps * 4, 8), torch.randn(steps * 4, 2))
    for x, y in DataLoader(data, batch_size=4, num_workers=1):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        model(torch.randn(1, 8))  # an evaluation forward: counted as a DDP forward, not a step
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]))
