"""Checkpoints and disks with real PyTorch: a save onto a full filesystem (a small tmpfs in a
private mount namespace), a resume from a file that is no whole checkpoint, and a checkpoint of
CUDA tensors loaded without CUDA are the root cause, named as such, with the fix."""
import subprocess

import pytest
from conftest import PYTHON, TRAINDOC, Run

TRAIN_AND_SAVE = """
import sys, torch
model = torch.nn.Linear(1024, 1024)  # 4 MiB of weights
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 1024)).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("saving", flush=True)
if sys.argv[2] == "torch.save":
    torch.save(model.state_dict(), sys.argv[1] + "/model.pt")
else:
    with open(sys.argv[1] + "/metrics.bin", "wb") as f:
        f.write(b"x" * (4 << 20))
"""


def root_cause(run):
    return next(f for f in run.report["findings"] if f["root_cause"])


@pytest.mark.parametrize("write, words", [
    ("torch.save", "torch.save could not write the checkpoint (record data/0)"),
    ("open", "the disk is full: a write failed"),
])
def test_a_write_onto_a_full_disk(tmp_path, write, words):
    full = tmp_path / "full"
    full.mkdir()
    mount = f"mount -t tmpfs -o size=1m tmpfs {full}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    script = tmp_path / "train.py"
    script.write_text(TRAIN_AND_SAVE)
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", mount + ' && exec "$0" run --out "$1" -- "$2" "$3" "$4" "$5"',
         str(TRAINDOC), str(run_dir), PYTHON, str(script), str(full), write],
        capture_output=True, timeout=120)
    run = Run(proc, run_dir)
    assert run.status != 0, run.stderr.decode()[-2000:]
    root = root_cause(run)
    assert root["kind"] == "disk-full", [(f["kind"], f["title"]) for f in run.report["findings"]]
    assert words in root["title"], root["title"]
    assert any(f"{script}:" in e for e in root["evidence"]), root["evidence"]
    assert "df -h" in root["fix"] and "os.replace()" in root["fix"]
    # PyTorch 1.13 then aborts as it destroys the writer: a consequence, not the cause.
    for i, finding in enumerate(run.report["findings"]):
        if finding["kind"] == "abort":
            assert "(in its teardown, after it raised RuntimeError)" in finding["title"]
            assert i in root["consequences"]


@pytest.mark.parametrize("damage, size, words", [
    # The zip reader says it one way or the other with the size of what is left.
    ("truncate", 512, "the checkpoint is not a whole file (failed finding central directory)"),
    ("truncate", 64, "the checkpoint is not a whole file (Invalid argument)"),
    ("lfs", 64, "the file is not a PyTorch checkpoint (invalid load key, 'v')"),
    ("empty", 64, "the checkpoint file is empty"),
])
def test_resuming_from_a_damaged_checkpoint(traindoc, tmp_path, damage, size, words):
    checkpoint = tmp_path / "last.pt"
    script = tmp_path / "resume.py"
    script.write_text(f"""
import torch
model = torch.nn.Linear({size}, {size})
torch.save(model.state_dict(), {str(checkpoint)!r})
data = open({str(checkpoint)!r}, "rb").read()
damaged = {{"truncate": data[: len(data) // 2], "empty": b"",
           "lfs": b"version https://git-lfs.github.com/spec/v1\\noid sha256:0\\nsize 1\\n"}}
open({str(checkpoint)!r}, "wb").write(damaged[{damage!r}])
model.load_state_dict(torch.load({str(checkpoint)!r}))
""")
    run = traindoc([PYTHON, str(script)])
    assert run.status == 1, run.stderr.decode()[-2000:]
    root = root_cause(run)
    assert root["kind"] == "checkpoint-corrupt", root
    assert root["title"].endswith(words), root["title"]
    assert any(f"{script}:9 in <module>" in e for e in root["evidence"]), root["evidence"]
    assert "Load an earlier checkpoint" in root["fix"]


def test_a_checkpoint_of_cuda_tensors_on_a_machine_without_cuda(traindoc, tmp_path):
    """A checkpoint saved on a GPU node, loaded where CUDA is not available: the checkpoint's
    storages are tagged cuda:0 as torch.save tags them on a GPU."""
    script = tmp_path / "resume.py"
    script.write_text(f"""
import torch, torch.serialization
tag = torch.serialization.location_tag
torch.serialization.location_tag = lambda storage: "cuda:0"
torch.save(torch.nn.Linear(4, 4).state_dict(), {str(tmp_path / "gpu.pt")!r})
torch.serialization.location_tag = tag
torch.load({str(tmp_path / "gpu.pt")!r})
""")
    run = traindoc([PYTHON, str(script)])
    assert run.status == 1, run.stderr.decode()[-2000:]
    root = root_cause(run)
    assert root["kind"] == "cuda-unavailable", root
    assert root["title"].endswith(": torch.load found CUDA tensors in the checkpoint, and CUDA is "
                                  "not available here"), root["title"]
    assert 'map_location="cpu"' in root["fix"]
