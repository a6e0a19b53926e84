"""graphc.torch.compile and torch.compile(backend="graphc") on a GPU against
eager PyTorch, on three small zoo-like models (an MLP, a ResNet-style CNN, a
transformer encoder layer)."""

from __future__ import annotations

import warnings

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
import graphc.torch  # noqa: E402  (registers the backend)

from zoo import ZOO, make  # noqa: E402


def rel_l2(a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30))


@pytest.mark.parametrize("name", list(ZOO))
def test_graphc_torch_compile_matches_eager(name):
    model, x = make(name)
    with torch.no_grad():
        expected = model(x)
    fast = graphc.torch.compile(model, (x,))
    got = fast(x)
    torch.cuda.synchronize()
    assert got.shape == expected.shape and rel_l2(got, expected) < 1e-3
    x2 = torch.randn_like(x)
    with torch.no_grad():
        assert rel_l2(fast(x2), model(x2)) < 1e-3  # new input values, same buffers


@pytest.mark.parametrize("name", list(ZOO))
def test_torch_compile_backend_matches_eager(name):
    torch._dynamo.reset()
    model, x = make(name)
    with torch.no_grad():
        expected = model(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = torch.compile(model, backend="graphc")
            got = compiled(x)
    fallbacks = [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)]
    assert not fallbacks, fallbacks  # these models compile whole with graphc
    assert rel_l2(got, expected) < 1e-3


def test_backend_builds_with_torch_compiles_options():
    # options= reaches graphc.build: an fp16 model built with precision="fp16",
    # the way python/bench/bench_python.py compares zoo models.
    torch._dynamo.reset()
    model, x = make("transformer")
    model, x = model.half(), x.half()
    with torch.no_grad():
        expected = model(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(model, backend="graphc", options={"precision": "fp16"})(x)
    fallbacks = [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)]
    assert not fallbacks, fallbacks
    assert got.dtype == torch.float16 and rel_l2(got, expected) < 1e-2  # the project's fp16 bound


def test_backend_falls_back_with_a_reason():
    torch._dynamo.reset()

    def f(x):
        return torch.sin(x) + 1  # on the CPU: graphc takes CUDA tensors only

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(f, backend="graphc")(torch.ones(4))
    assert torch.allclose(got, torch.sin(torch.ones(4)) + 1)
    assert any("runs in PyTorch" in str(w.message) and "not CUDA" in str(w.message) for w in caught)


def test_backend_entry_point_is_declared():
    from importlib.metadata import entry_points

    names = [e.name for e in entry_points(group="torch_dynamo_backends")]
    assert "graphc" in names
