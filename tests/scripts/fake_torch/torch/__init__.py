"""A stand-in for the few PyTorch calls scripts/bench.py makes, on numpy and the
host clock, so its control flow (resume, fail-soft variants, time budget, reports)
is tested on the CPU machine. Not a model of PyTorch's numbers.
  FAKE_TORCH_COMPILE_FAIL=default|reduce-overhead   that torch.compile mode raises
"""
import contextlib
import os
import time
import types

import numpy as np

__version__ = "0.0+fake"
float16 = np.float16
version = types.SimpleNamespace(cuda="0.0-fake")


class _Cudnn:
    benchmark = False

    @staticmethod
    def version():
        return 0


backends = types.SimpleNamespace(cudnn=_Cudnn, mha=types.SimpleNamespace(set_fastpath_enabled=lambda on: None))


class Tensor:
    def __init__(self, a):
        self.a = np.asarray(a)

    def cuda(self):
        return self

    def half(self):
        return Tensor(self.a.astype(np.float16)) if self.is_floating_point() else self

    def is_floating_point(self):
        return np.issubdtype(self.a.dtype, np.floating)

    def numel(self):
        return self.a.size

    def normal_(self):
        self.a[...] = np.random.default_rng(0).standard_normal(self.a.shape)
        return self

    def copy_(self, other):
        self.a[...] = other.a
        return self

    def __add__(self, o):
        return Tensor(self.a + o.a)

    def __mul__(self, o):
        return Tensor(self.a * o.a)


def from_numpy(a):
    return Tensor(a)


def empty(n, dtype=np.float32, device=None):
    return Tensor(np.empty(n, dtype))


def empty_like(t):
    return Tensor(np.empty_like(t.a))


def randn(*shape):
    return Tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def manual_seed(seed):
    return None


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        return None

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000


cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda: "Fake GPU 80GB",
                             synchronize=lambda: None, empty_cache=lambda: None, Event=_Event)


def inference_mode():
    return contextlib.nullcontext()


def no_grad():
    return contextlib.nullcontext()


class Generator:
    """export_models.make_realistic seeds one; the stand-in model has no parameters."""

    def manual_seed(self, seed):
        return self


def compile(fn, mode=None, dynamic=None):  # noqa: A001 - torch's name
    if os.environ.get("FAKE_TORCH_COMPILE_FAIL") == (mode or "default"):
        raise RuntimeError(f"fake inductor failure in mode {mode or 'default'}")
    return fn


_dynamo = types.SimpleNamespace(reset=lambda: None)


class _Module:
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def eval(self):
        return self

    def half(self):
        return self

    def cuda(self):
        return self

    def train(self, mode=True):
        return self

    def parameters(self):
        return iter(())

    def modules(self):
        return iter((self,))


class _BatchNorm(_Module):
    pass


def _gelu(x, approximate="none"):
    v = x.a.astype(np.float32)
    return Tensor((0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v**3)))).astype(x.a.dtype))


nn = types.SimpleNamespace(Module=_Module, functional=types.SimpleNamespace(gelu=_gelu),
                           modules=types.SimpleNamespace(batchnorm=types.SimpleNamespace(_BatchNorm=_BatchNorm)))
