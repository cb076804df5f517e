"""T08: workers hand 64 MiB samples to the main process through /dev/shm, which is too small
(a container's default 64 MiB). Needs a small /dev/shm to fail, e.g. as root:

    unshare -m sh -c 'mount -t tmpfs -o size=16m tmpfs /dev/shm && python small_shm.py'
"""
import torch
from torch.utils.data import DataLoader, Dataset


class Volumes(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        return torch.ones(256, 1024, 64)


for batch in DataLoader(Volumes(), batch_size=4, num_workers=2):
    print(batch.shape)
