"""A DataLoader whose workers pass batches of --sample-mib MiB samples to the main process
(tests/integration/test_check.py): through /dev/shm, one descriptor per tensor in flight (torch's
file_descriptor sharing strategy).

  loader.py --workers N --batch-size B --sample-mib M [--batches K]

It prints "ok" after K batches (default 8)."""
import argparse

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, count, elements):
        self.count = count
        self.elements = elements

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.ones(self.elements), index


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--sample-mib", type=float, default=0.01)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    elements = int(args.sample_mib * (1 << 20) / 4)
    loader = DataLoader(Samples(args.batches * args.batch_size, elements),
                        batch_size=args.batch_size, num_workers=args.workers)
    for _ in loader:
        pass
    print("ok")


if __name__ == "__main__":
    main()
