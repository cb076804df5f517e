"""S03: Cityscapes-style segmentation with 19 classes whose masks keep 255 for "void" pixels,
trained with CrossEntropyLoss() and its default ignore_index.

    python label_255.py
"""
import torch
import torch.nn as nn

CLASSES = 19
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, CLASSES, 1))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(5):
    images = torch.randn(2, 3, 64, 128)
    masks = torch.randint(0, CLASSES, (2, 64, 128))
    masks[:, :4, :] = 255  # the void border
    loss = criterion(model(images), masks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.3f}")
