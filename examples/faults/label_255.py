"""S03: Cityscapes-style segmentation with 19 classes whose masks keep 255 for "void" pixels,
trained with CrossEntropyLoss() and its default ignore_index. H03 (`--voc`): Pascal VOC's 21
classes, where a single object-boundary pixel is 255, with the functional F.cross_entropy.

    python label_255.py [--voc]
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOC = "--voc" in sys.argv[1:]
CLASSES = 21 if VOC else 19
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, CLASSES, 1))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(5):
    images = torch.randn(2, 3, 64, 128)
    masks = torch.randint(0, CLASSES, (2, 64, 128))
    if VOC:
        masks[0, 0, 0] = 255  # one boundary pixel
        loss = F.cross_entropy(model(images), masks)
    else:
        masks[:, :4, :] = 255  # the void border
        loss = criterion(model(images), masks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.3f}")
