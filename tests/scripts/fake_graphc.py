#!/usr/bin/env python3
"""A stand-in `graphc` for the CPU tests of scripts/compare_models.py and bench.py:
`build` writes a small JSON "engine" naming the model and precision and prints
graphc's summary line; `run` computes the outputs with onnxruntime, adds noise of a
chosen relative L2 size, and writes .npy files and a --json report in graphc's format.
  FAKE_GRAPHC_NOISE_FP32 / _FP16   relative L2 error of the outputs (default 0)
  FAKE_GRAPHC_FAIL_BUILD           a model file stem whose build fails
  FAKE_GRAPHC_NAN                  set: the first value of each output is NaN
"""
import argparse
import json
import os
import sys

import numpy as np


def build(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--arch", action="append", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--convert-io", action="store_true")
    ap.add_argument("--disable-pass", action="append", default=[])
    a = ap.parse_args(argv)
    stem = os.path.basename(a.model).rsplit(".onnx", 1)[0]
    if os.environ.get("FAKE_GRAPHC_FAIL_BUILD") == stem:
        print(f"graphc: error: {a.model}: fake build failure", file=sys.stderr)
        return 1
    with open(a.output, "w") as f:
        json.dump({"model": os.path.abspath(a.model), "precision": a.precision}, f)
    print("[graphc info] build: compile took 12 ms")
    print(f"[graphc info] build: NVRTC cache: 3 hits, 4 misses of 7 compilations (7 kernel modules x 1 architectures)")
    print(f"wrote {a.output} (1.0 KiB): 9 kernels in 7 modules for sm_90 (CUBIN + PTX), arena 1.0 KiB, "
          "weights 1.0 KiB; built in 0.01 s")
    return 0


def run(argv):
    import onnxruntime as ort

    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup-ms", type=float, default=200)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--output-dir")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    with open(a.engine) as f:
        eng = json.load(f)
    feeds = {}
    for spec in a.input:
        name, path = spec.split("=", 1)
        feeds[name] = np.load(path)
    sess = ort.InferenceSession(eng["model"], providers=["CPUExecutionProvider"])
    noise = float(os.environ.get("FAKE_GRAPHC_NOISE_" + eng["precision"].upper(), "0"))
    rng = np.random.default_rng(0)
    # An engine built with --convert-io takes fp16 where the model says fp32.
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
    for i in sess.get_inputs():
        if i.name in feeds and i.type in types:
            feeds[i.name] = feeds[i.name].astype(types[i.type])
    outs = sess.run(None, feeds)
    print(f"engine       {a.engine}")
    if a.output_dir:
        os.makedirs(a.output_dir, exist_ok=True)
        for o, y in zip(sess.get_outputs(), outs):
            e = rng.standard_normal(y.shape)
            y = (y + e * (noise * np.linalg.norm(y) / np.linalg.norm(e))).astype(y.dtype)
            if os.environ.get("FAKE_GRAPHC_NAN"):
                y.flat[0] = np.nan
            path = os.path.join(a.output_dir, o.name + ".npy")
            np.save(path, y)
            print(f"wrote        {path}")
    if a.json:
        s = {"min": 0.1, "mean": 0.12, "median": 0.11, "p90": 0.13, "p95": 0.14, "p99": 0.15}
        with open(a.json, "w") as f:
            json.dump({"schema_version": 1, "engine": a.engine, "device": "fake", "iterations": a.iterations, "wall_s": 0.1,
                       "warmup_ms": a.warmup_ms, "cuda_graph": True, "data_transfers": True, "seed": 1, "gpu_compute_ms": s, "h2d_ms": s,
                       "d2h_ms": s, "enqueue_host_ms": s, "throughput_per_s": 1, "compute_throughput_per_s": 1,
                       "device_memory_bytes": {"total": 1, "weights": 1, "arena": 0, "io": 0}, "check": []}, f)
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "-v":  # graphc's global --verbose
        del sys.argv[1]
    if len(sys.argv) < 2 or sys.argv[1] not in ("build", "run"):
        print("fake graphc: build|run ...", file=sys.stderr)
        return 2
    return (build if sys.argv[1] == "build" else run)(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
