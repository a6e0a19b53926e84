#!/usr/bin/env python3
"""A walk through graphc's Python API (docs/python.md).

    python examples/python/walkthrough.py [models/mlp.onnx]

Building and inspecting work anywhere; running needs a CUDA GPU (without one,
the script says so and stops there).
"""

import sys

import numpy as np

import graphc

model = sys.argv[1] if len(sys.argv) > 1 else "models/mlp.onnx"

# 1. What graphc makes of the model: the `graphc inspect --json` document.
report = graphc.inspect(model)
print("inputs:", [(i["name"], i["dtype"], i["shape"]) for i in report["inputs"]])
if report["fusion"]:
    print(f"{report['fusion']['onnx_nodes']} ONNX nodes -> {report['fusion']['kernels']} kernels")

# 2. Build an engine for H100 and A100 (no GPU needed), in memory or to a file.
engine_bytes = graphc.build(model, arch=["sm_80", "sm_90"])
print(f"engine: {len(engine_bytes)} bytes;", graphc.engine_bindings(engine_bytes))

# 3. Errors carry graphc's message.
try:
    graphc.build(model, arch="sm_90", precision="fp8")
except graphc.InvalidArgumentError as e:
    print("as expected:", e)

# 4. Run it (needs a GPU).
try:
    engine = graphc.Engine(engine_bytes)
except graphc.NoDeviceError as e:
    print("no GPU here, stopping before the run:", e)
    sys.exit(0)
ctx = engine.create_context()
inputs = {b.name: np.random.default_rng(0).uniform(-1, 1, b.shape).astype(b.dtype)
          for b in engine.inputs}
for name, value in ctx.run(inputs).items():
    print(name, value.shape, value.ravel()[:4])

# 5. With PyTorch CUDA tensors: bound by address, no copies, on torch's current stream.
try:
    import torch
except ImportError:
    sys.exit(0)
xs = {n: torch.from_numpy(v).cuda() for n, v in inputs.items()}
ys = {b.name: torch.empty(b.shape, device="cuda") for b in engine.outputs}
ctx.run(xs, ys)
torch.cuda.synchronize()
print("torch:", {n: t.flatten()[:4].tolist() for n, t in ys.items()})
