#!/usr/bin/env python3
"""Host µs per ``ctx.run`` on the CPU machine, against the C++ enqueue, with
graphc's stand-in driver (tests/fake_cuda: kernels do nothing, copies are
memcpy) and a stand-in torch (python/tests/fake_torch.py), so the Python-side
cost of each run path can be compared without a GPU. The GPU figure (real torch
CUDA tensors, real driver) is python/bench/bench_python.py's.

    GRAPHC_FAKE_CUDA_DIR=build/tests/fake_cuda .venv/bin/python python/bench/host_overhead_fake.py

Per engine (the GPU bench's two tiny ones) and path: the median over --repeats
samples of the mean µs per call over --iterations calls.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pathlib
import statistics
import sys
import time

import numpy as np

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
ctypes.CDLL(os.path.join(os.environ["GRAPHC_FAKE_CUDA_DIR"], "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)

import fake_torch  # noqa: E402
from fake_device import FakeCudaArray, aligned  # noqa: E402
from models import identity_model, two_input_model  # noqa: E402

import graphc  # noqa: E402


def per_call_us(fn, iterations: int, repeats: int) -> float:
    for _ in range(200):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        samples.append((time.perf_counter() - t0) * 1e6 / iterations)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    torch = fake_torch.install()
    rng = np.random.default_rng(0)
    print(f"graphc from {pathlib.Path(graphc.__file__).parent}")
    print("| engine | path | µs per call | over the C++ enqueue |")
    print("|---|---|---|---|")
    for name, model in (("identity_4x8", identity_model()), ("fused_mul_add_relu_2x16", two_input_model())):
        engine = graphc.Engine(graphc.build(model, arch="sm_90"))
        ctx = engine.create_context()
        dev_in = [aligned(rng.uniform(-1, 1, b.shape).astype(np.float32)) for b in engine.inputs]
        dev_out = [aligned(np.zeros(b.shape, np.float32)) for b in engine.outputs]
        t_in, t_out = [torch.Tensor(a) for a in dev_in], [torch.Tensor(a) for a in dev_out]
        t_in_d = {b.name: t for b, t in zip(engine.inputs, t_in)}
        t_out_d = {b.name: t for b, t in zip(engine.outputs, t_out)}
        c_in, c_out = [FakeCudaArray(a) for a in dev_in], [FakeCudaArray(a) for a in dev_out]
        h_in = [np.array(a) for a in dev_in]
        h_out = [np.zeros_like(a) for a in dev_out]
        stream = torch.current_stream_handle
        ctx.run(t_in, t_out)
        ctx.synchronize()
        assert all(np.isfinite(o).all() for o in dev_out)
        cpp = statistics.median(ctx.time_enqueue_us(t_in, t_out, stream=stream, iterations=args.iterations)
                                for _ in range(args.repeats))
        paths = [
            ("C++ enqueue (time_enqueue_us)", None),
            ("torch tensors, lists", lambda: ctx.run(t_in, t_out)),
            ("torch tensors, dicts", lambda: ctx.run(t_in_d, t_out_d)),
            ("torch tensors, lists, stream= given", lambda: ctx.run(t_in, t_out, stream=stream)),
            ("__cuda_array_interface__ (own stream, waits)", lambda: ctx.run(c_in, c_out)),
            ("NumPy host arrays (copies, waits)", lambda: ctx.run(h_in, h_out)),
        ]
        for label, fn in paths:
            us = cpp if fn is None else per_call_us(fn, args.iterations, args.repeats)
            print(f"| {name} | {label} | {us:.2f} | {us - cpp:+.2f} |", flush=True)
        ctx.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
