#!/usr/bin/env python3
"""A transformer-style block with a symbolic batch and sequence for the
shape-range benchmark (scripts/gpu_shape_range_session.sh): x [batch, seq, 256]
-> LayerNorm -> MatMul 256x512 + bias -> erf GELU -> MatMul 512x256 + bias ->
residual -> LayerNorm -> Softmax over the last axis. Random weights (seeded).
    scripts/make_shape_range_model.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(16)
D, F = 256, 512


def w(name, *shape, scale=0.05):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [w("g1", D, scale=1.0), w("b1", D), w("w1", D, F), w("c1", F), w("w2", F, D), w("c2", D),
         w("g2", D, scale=1.0), w("b2", D),
         numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array(1.0, np.float32), "one"),
         numpy_helper.from_array(np.array(1 / np.sqrt(2), np.float32), "rsqrt2")]
nodes = [
    helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["ln1"], axis=-1),
    helper.make_node("MatMul", ["ln1", "w1"], ["h"]), helper.make_node("Add", ["h", "c1"], ["hb"]),
    helper.make_node("Mul", ["hb", "rsqrt2"], ["hs"]), helper.make_node("Erf", ["hs"], ["he"]),
    helper.make_node("Add", ["he", "one"], ["h1"]), helper.make_node("Mul", ["hb", "h1"], ["hg"]),
    helper.make_node("Mul", ["hg", "half"], ["gelu"]),
    helper.make_node("MatMul", ["gelu", "w2"], ["o"]), helper.make_node("Add", ["o", "c2"], ["ob"]),
    helper.make_node("Add", ["ob", "x"], ["r"]),
    helper.make_node("LayerNormalization", ["r", "g2", "b2"], ["ln2"], axis=-1),
    helper.make_node("Softmax", ["ln2"], ["y"], axis=-1),
]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", D])
model = helper.make_model(helper.make_graph(nodes, "range_block", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
