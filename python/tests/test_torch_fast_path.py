"""Context.run's PyTorch fast path (python/src/torch_run.cpp) on the stand-in
driver, with the stand-in torch of fake_torch.py: tensors bound by address,
the ways to pass them, PyTorch's current stream or the one given, and every
argument the fast path cannot take falling back to the general path, which
gives the same errors as before. Counters on the two stream queries tell which
path ran (the fast path asks torch._C._cuda_getCurrentRawStream, the general
path torch.cuda.current_stream)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fake_torch
import graphc
from fake_device import aligned
from models import identity_model, two_input_model

pytestmark = pytest.mark.fake_driver


@pytest.fixture
def torch(monkeypatch):
    t = fake_torch.make()
    calls = {"fast": 0, "general": 0}
    raw, current = t._C._cuda_getCurrentRawStream, t.cuda.current_stream

    def fast_query(device):
        calls["fast"] += 1
        return raw(device)

    def general_query(device=None):
        calls["general"] += 1
        return current(device)

    t._C._cuda_getCurrentRawStream = fast_query
    t.cuda.current_stream = general_query
    t.calls = calls
    monkeypatch.setitem(__import__("sys").modules, "torch", t)
    return t


@pytest.fixture(scope="module")
def engine():
    return graphc.Engine(graphc.build(identity_model(), arch="sm_90"))


def tensor(torch, array, dev=None):
    return torch.Tensor(aligned(np.asarray(array)), dev)


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def test_tensors_are_bound_by_address_on_torchs_stream(torch, engine):
    ctx = engine.create_context()
    for i, form in enumerate(("list", "dict", "one")):
        x, y = tensor(torch, rand((4, 8), i)), tensor(torch, np.zeros((4, 8), np.float32))
        if form == "list":
            res = ctx.run([x], [y])
        elif form == "dict":
            res = ctx.run({"x": x}, {"y": y})
        else:
            res = ctx.run(x, y)
        ctx.synchronize()
        assert list(res) == ["y"] and res["y"] is y
        np.testing.assert_array_equal(y.array, x.array)  # the engine wrote the caller's buffer
    assert torch.calls == {"fast": 3, "general": 0}


def test_new_outputs_and_a_given_stream(torch, engine):
    ctx = engine.create_context()
    x = tensor(torch, rand((4, 8), 5))
    y = ctx.run([x])["y"]  # made by torch.empty on the engine's device
    ctx.synchronize()
    assert isinstance(y, torch.Tensor) and y.shape == (4, 8) and y.get_device() == 0
    np.testing.assert_array_equal(y.array, x.array)
    other = engine.create_context()  # a stream handle as an int and as a torch-like object
    for stream in (other.stream, type("S", (), {"cuda_stream": other.stream})()):
        y2 = tensor(torch, np.zeros((4, 8), np.float32))
        assert ctx.run([x], [y2], stream=stream)["y"] is y2
        other.synchronize()
        np.testing.assert_array_equal(y2.array, x.array)
    assert torch.calls == {"fast": 1, "general": 0}


def test_what_the_fast_path_cannot_take_gets_the_general_paths_errors(torch, engine):
    ctx = engine.create_context()
    x, y = tensor(torch, np.zeros((4, 8), np.float32)), tensor(torch, np.zeros((4, 8), np.float32))
    cases = [
        (([tensor(torch, np.zeros((4, 8)))], [y]), "input 'x': dtype float64, the engine's is float32"),
        (([tensor(torch, np.zeros((2, 8), np.float32))], [y]), r"shape \[2, 8\], the engine's is \[4, 8\]"),
        (([x], [tensor(torch, np.zeros((4, 8), np.int64))]), "output 'y': dtype int64"),
        (([torch.Tensor(aligned(np.zeros((4, 16), np.float32))[:, ::2])], [y]), "non-contiguous"),
        (([tensor(torch, np.zeros((4, 8), np.float32), torch.device("cuda", 1))], [y]),
         "'x' is on CUDA device 1, the engine on device 0"),
        (([x], [tensor(torch, np.zeros((4, 8), np.float32), torch.device("cpu"))]), "on the host but"),
        (({"x": x, "q": x}, [y]), None),
        (([x, x], [y]), "expected 1 arrays"),
        (([x], "fast"), None),
    ]
    for (ins, outs), message in cases:
        with pytest.raises(graphc.Error, match=message):
            ctx.run(ins, outs)
    with pytest.raises(graphc.NotFoundError, match="no input 'q'"):
        ctx.run({"q": x}, [y])
    with pytest.raises(graphc.InvalidArgumentError, match="stream must be a CUstream handle"):
        ctx.run([x], [y], stream="fast")
    # An error from the engine itself (the runtime checks alignment) comes from the fast path.
    big = aligned(np.zeros((64,), np.float32))
    before = torch.calls["fast"]
    with pytest.raises(graphc.InvalidArgumentError, match="not 256-byte aligned"):
        ctx.run([torch.Tensor(big[1:33].reshape(4, 8))], [y])
    assert torch.calls["fast"] == before + 1


def test_python_errors_of_tensor_getters_and_torch_empty_are_torchs(torch, engine):
    ctx = engine.create_context()

    class Broken(torch.Tensor):
        def __getattribute__(self, name):
            if name == "dtype":
                raise RuntimeError("a getter that fails")
            return super().__getattribute__(name)

    Broken.__module__ = "torch"  # a torch tensor to the general path too
    x = Broken(aligned(np.zeros((4, 8), np.float32)))
    with pytest.raises(RuntimeError, match="a getter that fails"):  # the general path meets it again
        ctx.run([x], [tensor(torch, np.zeros((4, 8), np.float32))])

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory")

    torch.empty = out_of_memory
    ctx2 = engine.create_context()
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        ctx2.run([tensor(torch, np.zeros((4, 8), np.float32))])


def test_two_inputs_by_name_in_any_order(torch):
    engine = graphc.Engine(graphc.build(two_input_model(), arch="sm_90"))
    ctx = engine.create_context()
    a, b = tensor(torch, rand((2, 16), 1)), tensor(torch, rand((2, 16), 2))
    z = tensor(torch, np.zeros((2, 16), np.float32))
    assert ctx.run({"b": b, "a": a}, {"z": z})["z"] is z
    with pytest.raises(graphc.InvalidArgumentError, match="missing b"):
        ctx.run({"a": a}, {"z": z})
    assert torch.calls["fast"] == 1


def test_contexts_on_threads(torch, engine):
    errors = []

    def work(seed):
        try:
            ctx = engine.create_context()
            for i in range(50):
                x = tensor(torch, rand((4, 8), seed * 100 + i))
                y = tensor(torch, np.zeros((4, 8), np.float32))
                ctx.run([x], [y])
                ctx.synchronize()
                np.testing.assert_array_equal(y.array, x.array)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert torch.calls["fast"] == 200


def test_engines_with_shape_ranges_take_the_general_path(torch):
    engine = graphc.Engine(graphc.build(identity_model(shape=("batch", 8)), arch="sm_90",
                                        profiles={"x": ((1, 8), (4, 8), (16, 8))}))
    ctx = engine.create_context()
    x, y = tensor(torch, rand((3, 8), 9)), tensor(torch, np.zeros((3, 8), np.float32))
    ctx.run([x], [y])
    ctx.synchronize()
    np.testing.assert_array_equal(y.array, x.array)
    assert torch.calls == {"fast": 0, "general": 1}
