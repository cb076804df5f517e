"""T30: a rank waits for a store key that no process ever writes.

    python store_key_timeout.py
"""
import datetime
import os
import tempfile

import torch.distributed as dist

path = os.path.join(tempfile.mkdtemp(), "store")
dist.init_process_group("gloo", init_method=f"file://{path}", world_size=1, rank=0,
                        timeout=datetime.timedelta(seconds=1))
store = dist.distributed_c10d._get_default_store()
store.get("dataset/prepared")
