"""A 2-rank gloo job for the trace export: each rank trains a few steps on batches from one
DataLoader worker and all-reduces a [20, 10] float32 tensor each step; rank 1 is a straggler
(it comes to each all_reduce 0.3 s after rank 0) and raises at its fourth step, after which
torchrun stops rank 0, which waits in that step's all_reduce."""
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(torch.arange(40.0).reshape(10, 4), batch_size=2, num_workers=1)
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 1:
            time.sleep(0.3)
            if step == 3:
                raise RuntimeError("straggler gives up at step 3")
        dist.all_reduce(torch.ones(20, 10))


if __name__ == "__main__":
    main()
