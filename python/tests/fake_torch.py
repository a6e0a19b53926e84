"""A stand-in for the few parts of PyTorch that graphc's Context.run reads, over
the stand-in driver's device memory (fake_device.py), so the PyTorch path of
``ctx.run`` (its fast path, and the general path it falls back to) runs on the
CPU machine, where PyTorch is not installed.

``install()`` puts it in ``sys.modules["torch"]`` (graphc never imports torch:
it recognises tensors once the caller has). Tensors are ``Tensor(array)`` over
a NumPy view of fake device memory. Their members are C callables where
torch's are (``data_ptr``, ``get_device``, ``is_contiguous`` are bound builtin
methods returning a constant; ``dtype``, ``shape``, ``is_cuda`` plain
attributes), so a timing over them is graphc's own work plus roughly what
torch's getters cost; torch's ``shape`` builds a new ``torch.Size`` per read,
which these do not.
"""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

from fake_device import aligned, new_stream


class dtype:  # noqa: N801 - torch's spelling
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class Size(tuple):
    pass


class device:  # noqa: N801
    def __init__(self, type: str, index=None):  # noqa: A002
        self.type, self.index = type, index

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"


_DTYPES = {n: dtype(n) for n in ("float32", "float16", "float64", "int32", "int64", "int8", "uint8", "bool")}


class Tensor:
    def __init__(self, array: np.ndarray, dev: device = None):
        dev = dev or device("cuda", 0)
        self.array = array  # keeps the memory alive
        self.dtype = _DTYPES[array.dtype.name]
        self.shape = Size(array.shape)
        self.device = dev
        self.is_cuda = dev.type == "cuda"
        self.data_ptr = int(array.ctypes.data).__index__
        self.get_device = (dev.index if self.is_cuda else -1).__index__
        self.is_contiguous = bool(array.flags.c_contiguous).__bool__

    def detach(self):
        return self

    def numpy(self):
        return self.array


Tensor.__module__ = "torch"  # graphc recognises tensors by their module


class Module:
    """torch.nn.Module, as far as graphc.torch's backend uses it."""

    def register_buffer(self, name: str, value) -> None:
        setattr(self, name, value)


class Parameter(Tensor):
    pass


def empty(shape, dtype=None, device=None):  # noqa: A002
    name = dtype.name if dtype is not None else "float32"
    return Tensor(aligned(np.zeros(tuple(shape), np.dtype(name))), device)


def install():
    """Puts the stand-in in sys.modules["torch"] (tests: monkeypatch.setitem
    instead) and returns it."""
    torch = make()
    sys.modules["torch"] = torch
    return torch


def make():
    """A new stand-in module; its current stream is a new stream of the stand-in
    driver (torch's default stream, handle 0, is the legacy stream, which the
    stand-in driver does not have)."""
    torch = types.ModuleType("torch")
    torch.Tensor, torch.Size, torch.device, torch.dtype, torch.empty = Tensor, Size, device, dtype, empty
    torch.nn = types.SimpleNamespace(Module=Module, Parameter=Parameter)
    torch.no_grad = contextlib.nullcontext
    for name, dt in _DTYPES.items():
        setattr(torch, name, dt)
    stream = new_stream()
    torch.current_stream_handle = stream
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream={0: stream}.get)
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda device=None: types.SimpleNamespace(cuda_stream=stream))
    return torch
