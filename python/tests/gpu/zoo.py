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
    """A pre-LN transformer encoder block, written out (attention as
    matmul-softmax-matmul, GELU MLP) so export does not meet PyTorch's fused
    fast-path kernels."""

    def __init__(self, d=128, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // h) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


ZOO = {
    "mlp": (MLP, (8, 256)),
    "resnet_block": (ResBlockCNN, (4, 3, 32, 32)),
    "transformer": (Encoder, (4, 64, 128)),
}


def make(name: str, seed: int = 0):
    # True fp32 in PyTorch too (graphc's fp32 engines use no TF32 unless asked).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(seed)
    cls, shape = ZOO[name]
    model = cls().cuda().eval()
    return model, torch.randn(*shape, device="cuda")
