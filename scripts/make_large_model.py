#!/usr/bin/env python3
"""A synthetic large-weights ONNX model with external data, for build- and
load-memory measurements: a stack of LAYERS blocks
y = Relu(x @ W_i + b_i) with W_i [WIDTH, WIDTH] fp32 of random values, the
weights in one external-data file next to the model (written tensor by tensor,
so making a 3 GB model needs about one tensor of memory).

    make_large_model.py OUT.onnx --gb 3.1 [--width 4096] [--batch 1] [--seed 0]

--gb picks LAYERS so the weights total about that many GB (GPT-2 large: 3.1,
a 7B decoder: 28). The model is deterministic for a seed.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--gb", type=float, default=1.0, help="weights size in GB (1e9 bytes)")
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    w = a.width
    layer_bytes = 4 * (w * w + w)
    layers = max(1, round(a.gb * 1e9 / layer_bytes))
    out_dir = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(out_dir, exist_ok=True)
    data_name = os.path.basename(a.out) + ".data"
    data_path = os.path.join(out_dir, data_name)
    rng = np.random.default_rng(a.seed)
    inits, nodes = [], []
    x = "x"
    with open(data_path, "wb") as f:
        for i in range(layers):
            for name, shape, scale in ((f"W{i}", (w, w), 1.0 / np.sqrt(w)), (f"b{i}", (w,), 0.1)):
                arr = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
                offset = f.tell()
                f.write(arr.tobytes())
                tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape))
                tensor.data_location = TensorProto.EXTERNAL
                for k, v in (("location", data_name), ("offset", str(offset)), ("length", str(arr.nbytes))):
                    e = tensor.external_data.add()
                    e.key, e.value = k, v
                inits.append(tensor)
                del arr
            nodes.append(helper.make_node("MatMul", [x, f"W{i}"], [f"m{i}"], name=f"matmul{i}"))
            nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"))
            y = "y" if i == layers - 1 else f"h{i}"
            nodes.append(helper.make_node("Relu", [f"a{i}"], [y], name=f"relu{i}"))
            x = y
    graph = helper.make_graph(
        nodes, "large_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [a.batch, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [a.batch, w])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, a.out)  # the initializers reference the data file already
    total = os.path.getsize(data_path)
    print(f"{a.out}: {layers} layers of {w}x{w}, {total / 1e9:.2f} GB of weights in {data_name}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
