"""S04 / H02: the loop keeps tensors that hold their autograd graph, so every step's graph stays
alive and memory grows by a few MiB per step until the job is killed: the running loss summed as
a tensor (`total_loss += loss`), or with `--keep-outputs` (S04) every step's output kept for a
metric at the end of the epoch (`outputs.append(out)`).

    python total_loss_leak.py [--keep-outputs]
"""
import sys

import torch

KEEP_OUTPUTS = "--keep-outputs" in sys.argv[1:]
model = torch.nn.Sequential(torch.nn.Linear(64, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
total_loss = 0
outputs, targets = [], []
for step in range(120):
    images, labels = torch.randn(256, 64), torch.randint(0, 10, (256,))
    optimizer.zero_grad()
    out = model(images)
    loss = torch.nn.functional.cross_entropy(out, labels)
    loss.backward()
    optimizer.step()
    if KEEP_OUTPUTS:
        outputs.append(out)  # should be out.detach()
        targets.append(labels)
    else:
        total_loss += loss  # should be loss.item()
if KEEP_OUTPUTS:
    accuracy = (torch.cat(outputs).argmax(1) == torch.cat(targets)).float().mean()
    print(f"accuracy {float(accuracy):.3f}")
else:
    print(f"mean loss {float(total_loss) / 120:.3f}")
