"""S04 / H02: the running loss is summed as a tensor (`total_loss += loss`), so every step's
autograd graph stays alive: memory grows by a few MiB per step until the job is killed.

    python total_loss_leak.py
"""
import torch

model = torch.nn.Sequential(torch.nn.Linear(64, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
total_loss = 0
for step in range(120):
    images, labels = torch.randn(256, 64), torch.randint(0, 10, (256,))
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    total_loss += loss  # should be loss.item()
print(f"mean loss {float(total_loss) / 120:.3f}")
