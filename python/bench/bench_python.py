#!/usr/bin/env python3
"""graphc's Python API on a GPU, measured (issue 20's checks):

1. ctx.run overhead: host µs per ``ctx.run`` with torch CUDA tensors (bound by
   address, PyTorch's current stream, no synchronize) against the C++
   ``ExecutionContext::enqueue`` loop on the same buffers and stream
   (``Context.time_enqueue_us``), on a small engine so the host, not the GPU,
   is the bottleneck. The check: ≤ 10 µs more per call.
2. torch.compile(backend="graphc") against eager PyTorch and torch.compile's
   default backend (inductor) on the three small models of python/tests/gpu/zoo.py
   and on zoo models (--zoo, from scripts/zoo_models.py: a CNN, a vision and a
   text transformer by default), fp32 with TF32 off: median GPU-synchronized ms
   per call and the result's relative L2 error against eager.

    python python/bench/bench_python.py --out python-bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python" / "tests" / "gpu"))


def overhead(iterations: int) -> dict:
    import torch

    import graphc
    sys.path.insert(0, str(REPO / "python" / "tests"))
    from models import identity_model, two_input_model

    out = {}
    for name, model in (("identity_4x8", identity_model()), ("fused_mul_add_relu_2x16", two_input_model())):
        engine = graphc.Engine(graphc.build(model, arch="native"))
        ctx = engine.create_context()
        ins = [torch.randn(b.shape, device="cuda") for b in engine.inputs]
        outs = [torch.empty(b.shape, device="cuda") for b in engine.outputs]
        stream = torch.cuda.current_stream().cuda_stream
        for _ in range(100):  # warm-up: CUDA graph captured
            ctx.run(ins, outs)
        torch.cuda.synchronize()
        cpp_us, py_us = [], []
        for _ in range(5):
            cpp_us.append(ctx.time_enqueue_us(ins, outs, stream=stream, iterations=iterations))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iterations):
                ctx.run(ins, outs)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            py_us.append((t1 - t0) * 1e6 / iterations)
        cpp, py = statistics.median(cpp_us), statistics.median(py_us)
        out[name] = {"cpp_enqueue_us": round(cpp, 3), "python_run_us": round(py, 3),
                     "overhead_us": round(py - cpp, 3), "iterations": iterations, "repeats": 5,
                     "check_le_10us": (py - cpp) <= 10.0}
        print(f"overhead {name}: C++ enqueue {cpp:.2f} µs, ctx.run {py:.2f} µs, "
              f"overhead {py - cpp:.2f} µs", flush=True)
    return out


def time_ms(fn, args, iterations: int) -> float:
    import torch

    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def zoo_model(name: str):
    """A model of the benchmark zoo (scripts/zoo_models.py: torchvision, timm,
    transformers; random weights) as (module, CUDA args), batch 1, SDPA attention
    as PyTorch users run it."""
    import torch

    sys.path.insert(0, str(REPO / "scripts"))
    import zoo_models

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, args, _, _ = zoo_models.build(name, attn="sdpa")
    return model.cuda().eval(), tuple(a.cuda() for a in args)


def compile_bench(iterations: int, save, results: dict, zoo_names=()) -> dict:
    import torch

    import graphc.torch  # noqa: F401  (registers the backend)
    from zoo import ZOO, make

    for name in list(ZOO) + list(zoo_names):
        entry = {}
        try:
            if name in ZOO:
                model, x = make(name)
                args = (x,)
            else:
                model, args = zoo_model(name)
                entry["source"] = "zoo (scripts/zoo_models.py)"
            with torch.no_grad():
                expected = model(*args)
                entry["eager_ms"] = time_ms(model, args, iterations)
                torch._dynamo.reset()
                inductor = torch.compile(model)
                entry["inductor_ms"] = time_ms(inductor, args, iterations)
                torch._dynamo.reset()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    compiled = torch.compile(model, backend="graphc")
                    got = compiled(*args)
                    entry["graphc_compile_s"] = round(time.perf_counter() - t0, 2)
                entry["graphc_fallbacks"] = [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)]
                entry["graphc_ms"] = time_ms(compiled, args, iterations)
                err = float((got.double() - expected.double()).norm() / expected.double().norm())
                entry["graphc_rel_l2_vs_eager"] = err
                entry["matches_eager"] = err < 1e-3
                entry["faster_than_inductor"] = entry["graphc_ms"] < entry["inductor_ms"]
        except Exception as e:  # recorded, the others go on
            entry["error"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc()
        results[name] = entry
        save()
        print(f"compile {name}: {json.dumps({k: v for k, v in entry.items() if k != 'traceback'})}", flush=True)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iterations", type=int, default=2000, help="ctx.run calls per overhead sample")
    ap.add_argument("--model-iterations", type=int, default=100)
    ap.add_argument("--zoo", default="resnext50,deit_small,roberta",
                    help="zoo models (scripts/zoo_models.py) for the torch.compile comparison")
    args = ap.parse_args()
    import torch

    doc = {"schema_version": 1, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "python": platform.python_version(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "method": __doc__}
    try:
        doc["ctx_run_overhead"] = overhead(args.iterations)
    except Exception as e:
        doc["ctx_run_overhead"] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(doc["ctx_run_overhead"]["traceback"], flush=True)
    pathlib.Path(args.out).write_text(json.dumps(doc, indent=2))
    doc["torch_compile"] = {}

    def save():
        pathlib.Path(args.out).write_text(json.dumps(doc, indent=2))

    compile_bench(args.model_iterations, save, doc["torch_compile"],
                  [z for z in args.zoo.split(",") if z])
    save()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
