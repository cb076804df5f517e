"""T01: a Dataset whose __getitem__ calls native code that reads a NULL pointer, inside a
DataLoader worker. The main process only sees "DataLoader worker (pid N) is killed by signal".

    python worker_segfault.py
"""
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        header = ctypes.string_at(0)  # what a broken C extension does: strlen(NULL)
        return torch.tensor(list(header[:8]), dtype=torch.float32)


for batch in DataLoader(Records(), batch_size=8, num_workers=2):
    print(batch.sum())
