"""T05: workers alive but slower than the DataLoader's timeout (a blocked read).

    python worker_timeout.py
"""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class RemoteShards(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        time.sleep(3)  # a network filesystem that stalls
        return torch.zeros(8)


for batch in DataLoader(RemoteShards(), batch_size=2, num_workers=2, timeout=1):
    print(batch.shape)
