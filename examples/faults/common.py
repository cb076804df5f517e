"""What the distributed fault scripts share: a gloo process group (so they run on CPU) with a
short timeout, so that a hang ends in seconds rather than after the default 30 minutes."""
import datetime
import os

import torch
import torch.distributed as dist


def init(timeout_s=10):
    """Joins the process group that torchrun set up; returns (rank, world size)."""
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))
    torch.manual_seed(0)
    return dist.get_rank(), dist.get_world_size()


def env_flag(name):
    return os.environ.get(name, "") not in ("", "0")
