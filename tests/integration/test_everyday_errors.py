"""Everyday shape errors with real PyTorch: a batch of samples of unequal shapes, raised in a
DataLoader worker and re-raised in its rank, and a layer fed another number of features than it
was built for. The fix names the sizes."""
from conftest import python_job

UNEQUAL_SAMPLES = """
import torch
from torch.utils.data import DataLoader, Dataset
class Crops(Dataset):
    def __len__(self): return 16
    def __getitem__(self, i): return torch.zeros(3, 32 + i % 3, 32)
for batch in DataLoader(Crops(), batch_size=4, num_workers=2): pass
"""

WRONG_FEATURES = """
import torch
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 30 * 30, 10))
model(torch.randn(4, 3, 64, 64))
"""


def root_cause(run):
    return next(f for f in run.report["findings"] if f["root_cause"])


def test_a_batch_of_unequal_samples_in_a_worker(traindoc):
    run = traindoc(python_job(UNEQUAL_SAMPLES))
    assert run.status == 1, run.stderr.decode()[-2000:]
    root = root_cause(run)
    assert root["kind"] == "python-exception", root
    assert "in the worker: RuntimeError: stack expects each tensor to be equal size" in \
        "\n".join(root["evidence"])
    assert "([3, 32, 32] at entry 0, [3, 33, 32] at entry 1), so the default collate cannot " \
           "stack them" in root["fix"], root["fix"]


def test_a_layer_fed_another_number_of_features(traindoc):
    run = traindoc(python_job(WRONG_FEATURES))
    assert run.status == 1, run.stderr.decode()[-2000:]
    root = root_cause(run)
    assert root["title"].endswith("mat1 and mat2 shapes cannot be multiplied (4x30752 and 7200x10)")
    assert root["fix"].startswith("A layer built for 7200 input features got 30752"), root["fix"]
