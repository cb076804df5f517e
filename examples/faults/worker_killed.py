"""T03: a DataLoader worker ends by SIGKILL mid-epoch, as the kernel's OOM killer would end it:
sent to its own thread, as no process of the job would send it (kill() is what traindoc sees a
process of the job call).

    python worker_killed.py
"""
import signal
import threading

import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        if index == 20:
            signal.pthread_kill(threading.get_ident(), signal.SIGKILL)
        return torch.randn(3, 32, 32)


for batch in DataLoader(Images(), batch_size=8, num_workers=2):
    print(batch.shape)
