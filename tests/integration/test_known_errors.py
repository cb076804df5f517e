"""Exceptions whose text is known get the kind of failure they are, with their numbers."""
from conftest import python_job

LABEL_255 = """
import torch, torch.nn.functional as F
logits = torch.randn(2, 19, 4, 4)
target = torch.randint(0, 19, (2, 4, 4)); target[0, 0, 0] = 255
F.cross_entropy(logits, target)
"""

STORE_TIMEOUT = """
import datetime, os, tempfile, torch.distributed as dist
path = os.path.join(tempfile.mkdtemp(), "store")
dist.init_process_group("gloo", init_method=f"file://{path}", world_size=1, rank=0,
                        timeout=datetime.timedelta(seconds=1))
dist.distributed_c10d._get_default_store().get("nonexistent key")
"""


def root_cause(run):
    roots = [f for f in run.report["findings"] if f["root_cause"]]
    assert len(roots) == 1, run.report["findings"]
    return roots[0]


def test_cityscapes_void_label(traindoc):
    run = traindoc(python_job(LABEL_255))
    assert run.status == 1
    root = root_cause(run)
    assert root["kind"] == "label-out-of-range"
    assert "Target 255 is out of bounds" in root["title"]
    assert "ignore_index=255" in root["fix"]


def test_store_key_timeout(traindoc):
    run = traindoc(python_job(STORE_TIMEOUT))
    assert run.status == 1
    root = root_cause(run)
    assert root["kind"] == "rendezvous-timeout"
    assert "nonexistent key" in "\n".join(root["evidence"])
