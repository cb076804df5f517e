"""The failures of a torchrun rank whose error file traindoc writes (test_torchrun_error_files.py):
`worker_segfault` (rank 1's DataLoader worker dies of SIGSEGV), `peer_killed` (rank 1 kills
itself with SIGKILL while rank 0 waits for it in a barrier, which then fails) and `recorded`
(rank 1 raises in a main decorated with torch's @record, which writes the file itself; rank 0's
is not decorated)."""
import ctypes
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, Dataset


class Crashing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        ctypes.string_at(0)  # SIGSEGV in the worker
        return torch.zeros(1)


def main(scenario):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 1:
        if scenario == "worker_segfault":
            for _ in DataLoader(Crashing(), num_workers=1):
                pass
        elif scenario == "peer_killed":
            os.kill(os.getpid(), signal.SIGKILL)
        elif scenario == "recorded":
            raise ValueError("rank 1 recorded its own failure")
    dist.barrier()


if __name__ == "__main__":
    scenario = sys.argv[1]
    # Only rank 1 decorated: a rank 0 that writes its own record too leads torchrun's summary in
    # the same second by its lower rank, and no one's words could then name rank 1.
    recorded = scenario == "recorded" and os.environ.get("RANK") == "1"
    (record(main) if recorded else main)(scenario)
