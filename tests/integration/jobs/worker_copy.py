"""CASES.md H01: a dataset held in a Python list, read by two DataLoader workers through a batch
sampler. Reading an item writes its reference count, so each worker copies every page of the
list's objects it touches: its private memory (USS) grows while its RSS stays flat. With
`numpy` the same data sits in one array and nothing is copied. The main loop stretches the
epoch to at least SECONDS, however fast the machine, so that the supervisor samples the growth
often enough."""
import sys
import time

import numpy as np
from torch.utils.data import DataLoader, Dataset

ITEMS = 8_000_000
BATCH = 16384


class Items(Dataset):
    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


def batches():
    for start in range(0, ITEMS, BATCH):
        yield list(range(start, min(start + BATCH, ITEMS)))


def main(kind, seconds):
    data = list(range(ITEMS)) if kind == "list" else np.arange(ITEMS)
    sampler = list(batches())
    loader = DataLoader(Items(data), batch_sampler=sampler, num_workers=2)
    total = 0
    start = time.monotonic()
    for i, batch in enumerate(loader, 1):
        total += int(batch[-1])
        time.sleep(max(0.0, start + seconds * i / len(sampler) - time.monotonic()))
    print("done", total, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
