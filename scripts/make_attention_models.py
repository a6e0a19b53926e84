#!/usr/bin/env python3
"""Small attention models as exporters write them, for engine checks on the GPU
(`graphc run --check` against the CPU reference) of every attention kernel path:
  attn_bool_mask.onnx   Q·Kᵀ·scale, Where(bool mask, s, -inf), Softmax, ·V; cross
                        attention (77 queries, 93 keys), 8 heads of 64: cuDNN does not
                        take a boolean mask, so fp16/bf16 engines run the flash kernel
                        and fp32 ones the general kernel
  attn_gqa_causal.onnx  grouped-query attention (8 query heads, 2 key/value heads
                        repeated by Unsqueeze/Expand/Reshape), a causal Trilu-style
                        constant mask, 130 positions (odd: not a multiple of a tile)
  scripts/make_attention_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(array), name=name + "_value"))


def bool_mask_model():
    b, h, lq, lk, d = 2, 8, 77, 93, 64
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_transpose"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        const("scale", np.array(1.0 / np.sqrt(d), dtype=np.float32)),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul"),
        const("neg_inf", np.array(-np.inf, dtype=np.float32)),
        helper.make_node("Where", ["mask", "ss", "neg_inf"], ["sm"], name="mask_where"),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [b, h, lq, d]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [b, h, lk, d]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [b, h, lk, d]),
              helper.make_tensor_value_info("mask", TensorProto.BOOL, [b, 1, lq, lk])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, h, lq, d])]
    return helper.make_graph(nodes, "attn_bool_mask", inputs, outputs)


def gqa_causal_model():
    b, hq, hkv, n, d = 1, 8, 2, 130, 64
    g = hq // hkv
    tri = np.tril(np.ones((n, n), dtype=bool))
    nodes = [const("axes2", np.array([2], dtype=np.int64)),
             const("expand_shape", np.array([b, hkv, g, n, d], dtype=np.int64)),
             const("merged_shape", np.array([b, hq, n, d], dtype=np.int64))]
    for x in ("k", "v"):
        nodes += [helper.make_node("Unsqueeze", [x, "axes2"], [x + "_u"], name=x + "_unsqueeze"),
                  helper.make_node("Expand", [x + "_u", "expand_shape"], [x + "_e"], name=x + "_expand"),
                  helper.make_node("Reshape", [x + "_e", "merged_shape"], [x + "_r"], name=x + "_repeat")]
    nodes += [
        helper.make_node("Transpose", ["k_r"], ["kt"], perm=[0, 1, 3, 2], name="k_transpose"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        const("scale", np.array(1.0 / np.sqrt(d), dtype=np.float32)),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul"),
        const("causal", tri),
        const("neg_inf", np.array(-np.inf, dtype=np.float32)),
        helper.make_node("Where", ["causal", "ss", "neg_inf"], ["sm"], name="causal_where"),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v_r"], ["y"], name="pv"),
    ]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [b, hq, n, d]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [b, hkv, n, d]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [b, hkv, n, d])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, hq, n, d])]
    return helper.make_graph(nodes, "attn_gqa_causal", inputs, outputs)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for graph in (bool_mask_model(), gqa_causal_model()):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="graphc scripts/make_attention_models.py")
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, graph.name + ".onnx"))


if __name__ == "__main__":
    main()
