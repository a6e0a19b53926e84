"""Tiny ONNX models made in the tests (onnx's helper API), beside models/."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def identity_model(shape=(4, 8), dtype=TensorProto.FLOAT) -> onnx.ModelProto:
    """y = Identity(x): the engine is one output copy, which the stand-in
    driver really performs, so data flowing x -> y proves the addresses used."""
    x = helper.make_tensor_value_info("x", dtype, list(shape))
    y = helper.make_tensor_value_info("y", dtype, list(shape))
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def two_input_model(shape=(2, 16)) -> onnx.ModelProto:
    """z = Relu(a * b + c) with a constant c: a real fused kernel."""
    rng = np.random.default_rng(7)
    c = numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), "c")
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, list(shape))
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, list(shape))
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, list(shape))
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Add", ["ab", "c"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"])]
    graph = helper.make_graph(nodes, "two_input", [a, b], [z], initializer=[c])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
