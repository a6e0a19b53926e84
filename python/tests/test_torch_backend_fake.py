"""The torch.compile backend's arguments, on the CPU machine (stand-in torch):
torch.compile hands a backend its ``options=`` dict as one keyword and its
``mode=`` as another; both must reach graphc.build as flags (or be ignored:
mode), not make graphc fall back to PyTorch."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest

import fake_torch
import graphc.torch as graphc_torch  # before the stand-in: it registers no backend then
from fake_device import aligned

pytestmark = pytest.mark.fake_driver


def test_backend_flags_come_from_torch_compiles_options(monkeypatch):
    torch = fake_torch.make()
    monkeypatch.setitem(sys.modules, "torch", torch)
    built = []

    def fake_compile(module, example_inputs, **flags):  # graphc.torch.compile: export + build
        built.append(flags)
        return lambda *xs: xs[0]

    monkeypatch.setattr(graphc_torch, "compile", fake_compile)
    x = torch.Tensor(aligned(np.ones((4, 8), np.float32)))

    class GraphModule:  # an FX graph of one input that returns it
        graph = types.SimpleNamespace(nodes=[types.SimpleNamespace(op="placeholder", name="l_x_")])

        def __call__(self, *args):
            return args[0]

    calls = [{"options": {"precision": "fp16"}},                    # torch.compile(..., options=...)
             {"mode": "reduce-overhead"},                            # torch.compile(..., mode=...)
             {"precision": "fp16", "options": {"tune": True}}]      # a partial of the backend
    for kwargs in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fall-back to PyTorch warns: none here
            run = graphc_torch.graphc_backend(GraphModule(), [x], **kwargs)
        assert run(x) is x
    assert built == [{"precision": "fp16"}, {}, {"tune": True, "precision": "fp16"}]
