"""graphc's Python runtime on a real GPU: results against onnxruntime (NumPy
path) and PyTorch CUDA tensors bound without copies."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import graphc

pytestmark = pytest.mark.gpu

# (model, input shape) of the shipped models; fp32 engines vs onnxruntime (CPU).
MODELS = [("mlp.onnx", (4, 64)), ("conv_block.onnx", (1, 16, 32, 32)),
          ("transformer_block.onnx", (2, 16, 64))]


def rel_l2(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def ort_run(path, x):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module", params=MODELS, ids=[m for m, _ in MODELS])
def built(request, models):
    name, shape = request.param
    engine = graphc.Engine(graphc.build(models / name, arch="native", shapes={"x": shape}))
    x = np.random.default_rng(11).uniform(-2, 2, shape).astype(np.float32)
    return engine, x, ort_run(models / name, x)


def test_numpy_matches_onnxruntime(built):
    engine, x, expected = built
    y = engine.create_context().run({"x": x})["y"]
    assert y.shape == expected.shape
    assert rel_l2(y, expected) < 1e-3


def test_torch_cuda_tensors_are_bound_without_copies(built):
    torch = pytest.importorskip("torch")
    engine, x, expected = built
    ctx = engine.create_context()
    xt = torch.from_numpy(x).cuda()
    yt = torch.empty(engine.binding("y").shape, device="cuda")
    x_ptr, y_ptr = xt.data_ptr(), yt.data_ptr()
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated()
    out = ctx.run({"x": xt}, {"y": yt})
    torch.cuda.synchronize()
    assert out["y"] is yt and yt.data_ptr() == y_ptr and xt.data_ptr() == x_ptr
    assert torch.cuda.memory_allocated() == allocated  # nothing allocated: no staging copies
    assert rel_l2(yt.cpu().numpy(), expected) < 1e-3
    # outputs allocated by graphc as torch tensors on the input's device
    y2 = ctx.run([xt])["y"]
    torch.cuda.synchronize()
    assert isinstance(y2, torch.Tensor) and y2.is_cuda
    assert rel_l2(y2.cpu().numpy(), expected) < 1e-3


def test_cuda_array_interface_and_dlpack_paths(built):
    torch = pytest.importorskip("torch")
    engine, x, expected = built
    ctx = engine.create_context()
    xt = torch.from_numpy(x).cuda()
    yt = torch.zeros(engine.binding("y").shape, device="cuda")

    class CAI:  # only __cuda_array_interface__ (as CuPy/Numba arrays)
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__

    class DL:  # only DLPack (as JAX arrays)
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    torch.cuda.synchronize()
    ctx.run([CAI(xt)], [CAI(yt)])  # own stream, waited for
    assert rel_l2(yt.cpu().numpy(), expected) < 1e-3
    yt.zero_()
    torch.cuda.synchronize()
    ctx.run([DL(xt)], [DL(yt)])
    assert rel_l2(yt.cpu().numpy(), expected) < 1e-3


def test_torch_stream_and_threads(built):
    torch = pytest.importorskip("torch")
    engine, x, expected = built
    xt = torch.from_numpy(x).cuda()
    s = torch.cuda.Stream()
    yt = torch.empty(engine.binding("y").shape, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        engine.create_context().run([xt], [yt])  # the current stream: s
    s.synchronize()
    assert rel_l2(yt.cpu().numpy(), expected) < 1e-3
    ctx = engine.create_context()
    ctx.run([xt], [yt], stream=s)  # a torch.cuda.Stream given
    s.synchronize()
    ref = yt.cpu().numpy().copy()
    results, errors = {}, []

    def work(i):
        try:
            c = engine.create_context()
            out = np.stack([c.run({"x": x})["y"] for _ in range(10)])
            results[i] = out
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors
    for out in results.values():
        for y in out:
            np.testing.assert_array_equal(y, ref)  # bit-identical to the serial run


def test_gil_is_released_during_runs(built):
    engine, x, _ = built
    ctx = engine.create_context()
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    for _ in range(50):
        ctx.run({"x": x})
    done.set()
    t.join()
    assert ticks[0] > 0


def test_torch_fast_path_leaves_every_other_case_to_the_checked_path(built):
    # ctx.run's fast path takes only contiguous CUDA tensors of the engine's
    # dtype and shape; anything else must reach the general path and its errors.
    torch = pytest.importorskip("torch")
    engine, x, expected = built
    ctx = engine.create_context()
    shape = engine.binding("x").shape
    with pytest.raises(graphc.InvalidArgumentError, match="shape"):
        ctx.run([torch.zeros((1,) + tuple(shape), device="cuda")])
    with pytest.raises(graphc.InvalidArgumentError, match="dtype"):
        ctx.run([torch.from_numpy(x).cuda().half()])
    with pytest.raises(graphc.InvalidArgumentError, match="contiguous"):
        wide = torch.from_numpy(np.concatenate([x, x], axis=-1)).cuda()
        ctx.run([wide[..., : x.shape[-1]]])
    with pytest.raises(graphc.NotFoundError):
        ctx.run({"not_an_input": torch.from_numpy(x).cuda()})
    y = ctx.run([torch.from_numpy(x)])["y"]  # a CPU tensor: the host path, copied
    assert rel_l2(np.asarray(y), expected) < 1e-3
    yt = ctx.run({"x": torch.from_numpy(x).cuda()})["y"]  # the fast path, dict in, outputs made
    torch.cuda.synchronize()
    assert rel_l2(yt.cpu().numpy(), expected) < 1e-3
