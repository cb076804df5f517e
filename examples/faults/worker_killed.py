"""T03: a DataLoader worker ends by SIGKILL mid-epoch, as the kernel's OOM killer would end it.

    python worker_killed.py
"""
import os
import signal

import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        if index == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.randn(3, 32, 32)


for batch in DataLoader(Images(), batch_size=8, num_workers=2):
    print(batch.shape)
