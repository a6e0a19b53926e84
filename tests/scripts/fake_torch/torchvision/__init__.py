"""Stand-in torchvision for bench.py's CPU test: models.resnet50() is a tiny module."""
import types

import torch


class _Net(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.0002)  # a latency to measure
        return torch.Tensor(x.a.reshape(x.a.shape[0], -1)[:, :10])


import time  # noqa: E402

models = types.SimpleNamespace(resnet50=lambda weights=None: _Net(), mobilenet_v2=lambda weights=None: _Net())
