"""Engine and Context on graphc's stand-in driver (tests/fake_cuda: host memory
posing as device memory, real copies, kernels that do nothing). The identity
model's engine is one output copy, so its results prove which addresses the
run used; kernel arithmetic is checked by the GPU tests."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import graphc
from fake_device import FakeCudaArray, aligned
from models import identity_model, two_input_model

pytestmark = pytest.mark.fake_driver


@pytest.fixture(scope="module")
def identity_engine():
    return graphc.Engine(graphc.build(identity_model(), arch="sm_90"))


def test_engine_describes_itself(identity_engine, models):
    e = identity_engine
    assert [b.name for b in e.inputs] == ["x"] and [b.name for b in e.outputs] == ["y"]
    assert e.binding("y").shape == (4, 8) and e.device == 0
    assert "sm_90" in e.device_name
    with pytest.raises(graphc.NotFoundError, match="has no binding 'q'"):
        e.binding("q")
    assert graphc.Engine(models / "mlp.onnx" if False else graphc.build(models / "mlp.onnx", arch="sm_90")).arena_bytes >= 0


def test_host_run_copies_in_and_out(identity_engine):
    ctx = identity_engine.create_context()
    x = np.random.default_rng(1).uniform(-1, 1, (4, 8)).astype(np.float32)
    y = ctx.run({"x": x})["y"]
    np.testing.assert_array_equal(y, x)
    out = np.empty((4, 8), np.float32)
    res = ctx.run([x * 2], [out])
    assert res["y"] is out
    np.testing.assert_array_equal(out, x * 2)
    np.testing.assert_array_equal(ctx.run(x[:, ::-1].copy().T.T)["y"], x[:, ::-1])  # one-input form


def test_non_contiguous_host_input_is_copied(identity_engine):
    ctx = identity_engine.create_context()
    big = np.random.default_rng(2).uniform(-1, 1, (4, 16)).astype(np.float32)
    np.testing.assert_array_equal(ctx.run({"x": big[:, ::2]})["y"], big[:, ::2])


def test_device_arrays_are_bound_by_address(identity_engine):
    ctx = identity_engine.create_context()
    x = aligned(np.random.default_rng(3).uniform(-1, 1, (4, 8)).astype(np.float32))
    y = aligned(np.zeros((4, 8), np.float32))
    res = ctx.run({"x": FakeCudaArray(x)}, {"y": FakeCudaArray(y)})
    np.testing.assert_array_equal(y, x)  # the engine wrote straight into the caller's buffer
    assert res["y"].array is y
    x2 = aligned(np.asarray(x) + 1)  # new addresses: rebound
    y2 = aligned(np.zeros_like(y))
    ctx.run([FakeCudaArray(x2)], [FakeCudaArray(y2)], stream=ctx.stream)
    ctx.synchronize()
    np.testing.assert_array_equal(y2, x2)
    # and back to host arrays: the context's own buffers again
    np.testing.assert_array_equal(ctx.run({"x": x})["y"], x)


def test_stream_objects(identity_engine):
    ctx = identity_engine.create_context()
    other = identity_engine.create_context()

    class TorchLikeStream:
        cuda_stream = other.stream

    x = aligned(np.arange(32, dtype=np.float32).reshape(4, 8))
    y = aligned(np.zeros_like(x))
    ctx.run([FakeCudaArray(x)], [FakeCudaArray(y)], stream=TorchLikeStream())
    ctx.synchronize()
    np.testing.assert_array_equal(y, x)
    with pytest.raises(graphc.InvalidArgumentError, match="stream"):
        ctx.run([FakeCudaArray(x)], [FakeCudaArray(y)], stream="fast")
    with pytest.raises(graphc.InvalidArgumentError, match="stream= applies to CUDA arrays"):
        ctx.run([x], stream=0)


def test_bad_arrays_are_refused_with_names(identity_engine):
    ctx = identity_engine.create_context()
    x = aligned(np.zeros((4, 8), np.float32))
    with pytest.raises(graphc.InvalidArgumentError, match="input 'x': dtype float64, the engine's is float32"):
        ctx.run({"x": np.zeros((4, 8))})
    with pytest.raises(graphc.InvalidArgumentError, match=r"shape \[2, 8\], the engine's is \[4, 8\]"):
        ctx.run({"x": np.zeros((2, 8), np.float32)})
    with pytest.raises(graphc.NotFoundError, match="no input 'q'"):
        ctx.run({"q": x})
    with pytest.raises(graphc.InvalidArgumentError, match="expected 1 arrays"):
        ctx.run([x, x])
    with pytest.raises(graphc.InvalidArgumentError, match="mix of host and CUDA|on the GPU but"):
        ctx.run([x], [FakeCudaArray(aligned(np.zeros((4, 8), np.float32)))])
    with pytest.raises(graphc.InvalidArgumentError, match="writable"):
        ro = np.zeros((4, 8), np.float32)
        ro.flags.writeable = False
        ctx.run([x], [ro])
    with pytest.raises(graphc.InvalidArgumentError, match="give outputs="):
        ctx.run([FakeCudaArray(x)])
    with pytest.raises(graphc.InvalidArgumentError, match="non-contiguous"):
        big = aligned(np.zeros((4, 16), np.float32))
        ctx.run([FakeCudaArray(big[:, ::2])], [FakeCudaArray(aligned(np.zeros((4, 8), np.float32)))])
    with pytest.raises(graphc.InvalidArgumentError, match="not 256-byte aligned"):
        ctx.run([FakeCudaArray(big.reshape(-1)[1:33].reshape(4, 8))], [FakeCudaArray(x)])


def test_dlpack_host_arrays_take_the_numpy_path(identity_engine):
    ctx = identity_engine.create_context()
    x = np.random.default_rng(4).uniform(-1, 1, (4, 8)).astype(np.float32)

    class DlpackOnly:  # a host DLPack producer that is not a NumPy array
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    np.testing.assert_array_equal(ctx.run([DlpackOnly(x)])["y"], x)


def test_contexts_on_threads(identity_engine):
    errors, rng = [], np.random.default_rng(5)
    inputs = [rng.uniform(-1, 1, (4, 8)).astype(np.float32) for _ in range(4)]

    def work(x):
        try:
            ctx = identity_engine.create_context()
            for _ in range(20):
                np.testing.assert_array_equal(ctx.run({"x": x})["y"], x)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_two_input_engine_runs_and_checks_order():
    engine = graphc.Engine(graphc.build(two_input_model(), arch="sm_90"))
    ctx = engine.create_context()
    a = np.ones((2, 16), np.float32)
    out = ctx.run({"b": a, "a": a})  # by name, any order
    assert list(out) == ["z"] and out["z"].shape == (2, 16) and out["z"].dtype == np.float32
    with pytest.raises(graphc.InvalidArgumentError, match="missing b"):
        ctx.run({"a": a})


def test_time_enqueue_baseline(identity_engine):
    ctx = identity_engine.create_context()
    x, y = aligned(np.zeros((4, 8), np.float32)), aligned(np.zeros((4, 8), np.float32))
    us = ctx.time_enqueue_us([FakeCudaArray(x)], [FakeCudaArray(y)], iterations=50)
    assert 0 < us < 1e5


def test_engines_with_shape_ranges_run_the_shapes_given():
    # The identity engine over a range: the output copy moves exactly each
    # shape's bytes, so the values prove the shapes the runtime used.
    model = identity_model(shape=("batch", 8))
    engine = graphc.Engine(graphc.build(model, arch="sm_90", profiles={"x": ((1, 8), (4, 8), (16, 8))}))
    assert engine.has_shape_ranges and engine.num_profiles == 1
    assert engine.input_range("x") == ((1, 8), (4, 8), (16, 8))
    assert engine.binding("y").shape == (16, 8)  # bindings: the largest shapes
    ctx = engine.create_context()
    for batch in (1, 5, 16, 5, 2):
        x = np.arange(batch * 8, dtype=np.float32).reshape(batch, 8) + batch
        y = ctx.run({"x": x})["y"]
        assert y.shape == (batch, 8)
        np.testing.assert_array_equal(y, x)
        out = np.empty((batch, 8), np.float32)  # caller outputs of this shape
        ctx.run([x], [out])
        np.testing.assert_array_equal(out, x)
    with pytest.raises(graphc.OutOfRangeError, match="dim 0 is 17, outside shape profile 0's range \\[1, 16\\]"):
        ctx.run({"x": np.zeros((17, 8), np.float32)})
    with pytest.raises(graphc.OutOfRangeError, match="fixes it at 8"):
        ctx.run({"x": np.zeros((2, 9), np.float32)})
    with pytest.raises(graphc.InvalidArgumentError, match="at the input shapes given"):
        ctx.run({"x": np.zeros((2, 8), np.float32)}, {"y": np.zeros((3, 8), np.float32)})
    # Device arrays: bound by address, at the shape they have.
    x = aligned(np.full((3, 8), 7.0, np.float32))
    y = aligned(np.zeros((3, 8), np.float32))
    ctx.run({"x": FakeCudaArray(x)}, {"y": FakeCudaArray(y)})
    np.testing.assert_array_equal(y, x)
