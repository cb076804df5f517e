"""A healthy single-process run with DataLoader workers, for comparison. No finding expected.

    python clean_single.py
"""
import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(512, 32), torch.randint(0, 10, (512,)))
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(2):
    for features, labels in DataLoader(data, batch_size=32, shuffle=True, num_workers=2):
        loss = torch.nn.functional.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
