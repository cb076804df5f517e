"""H01: a corpus of token ids held in a Python list, read by two DataLoader workers through a
batch sampler. Reading an item writes its reference count, so each worker copies every page of
the list's objects it touches: its private memory (USS) grows while its RSS stays flat, and the
job's memory heads for the corpus's size times num_workers. `--numpy` holds the same ids in one
array (the fix): nothing is copied. The epoch is stretched to at least SECONDS, however fast the
machine, so that memory is sampled often enough to see the growth.

    python python_list_dataset.py [--numpy] [--seconds 15]
"""
import argparse
import time

import numpy as np
from torch.utils.data import DataLoader, Dataset

TOKENS = 8_000_000
BATCH = 16384


class Tokens(Dataset):
    def __init__(self, ids):
        self.ids = ids

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i]


def batches():
    for start in range(0, TOKENS, BATCH):
        yield list(range(start, min(start + BATCH, TOKENS)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--numpy", action="store_true", help="hold the ids in a numpy array")
    parser.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    ids = np.arange(TOKENS) if args.numpy else list(range(TOKENS))
    sampler = list(batches())
    loader = DataLoader(Tokens(ids), batch_sampler=sampler, num_workers=2)
    total = 0
    start = time.monotonic()
    for i, batch in enumerate(loader, 1):
        total += int(batch[-1])
        time.sleep(max(0.0, start + args.seconds * i / len(sampler) - time.monotonic()))
    print("done", total, flush=True)


if __name__ == "__main__":
    main()
