"""Three small zoo-like PyTorch models for the torch tests and the benchmark."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                                 nn.Linear(1024, 10))

    def forward(self, x):
        return self.net(x)


class ResBlockCNN(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                                   nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        y = self.stem(x)
        y = torch.relu(y + self.block(y))
        return self.head(y.mean(dim=(2, 3)))


class Encoder(nn.Module):
    def __init__(self, d=128, heads=4):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True,
                                                norm_first=True)

    def forward(self, x):
        return self.layer(x)


ZOO = {
    "mlp": (MLP, (8, 256)),
    "resnet_block": (ResBlockCNN, (4, 3, 32, 32)),
    "transformer": (Encoder, (4, 64, 128)),
}


def make(name: str, seed: int = 0):
    torch.manual_seed(seed)
    cls, shape = ZOO[name]
    model = cls().cuda().eval()
    return model, torch.randn(*shape, device="cuda")
