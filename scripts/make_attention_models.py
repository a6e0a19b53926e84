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
  bert_attention.onnx   a BERT self-attention block as Hugging Face exports it (Q/K/V
                        projections, head split, Kᵀ, / sqrt(D), (1 - attention_mask) * -100
                        over the keys, Softmax, ·V, head merge, output projection) with
                        symbolic batch and seq: built over a range (docs/dynamic-shapes.md),
                        e.g. --shape-profile x:1x16x128/4x64x128/8x256x128,
                        attention_mask:1x16/4x64/8x256 --gemm generated
                        (tests/attention_range_models.h is the same graph)
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


def bert_attention_model(hidden=128, heads=2):
    d = hidden // heads
    rng = np.random.default_rng(7)
    init = []

    def weight(name, shape, scale):
        init.append(numpy_helper.from_array(
            (scale * rng.uniform(-1, 1, shape)).astype(np.float32), name=name))

    nodes = [const("split_shape", np.array([0, 0, heads, d], dtype=np.int64)),
             const("merge_shape", np.array([0, 0, hidden], dtype=np.int64)),
             const("mask_axes", np.array([1, 2], dtype=np.int64)),
             const("one", np.array(1.0, dtype=np.float32)),
             const("neg", np.array(-100.0, dtype=np.float32)),
             const("sqrt_d", np.array(np.sqrt(d), dtype=np.float32))]
    for t in ("q", "k", "v", "o"):
        weight("w" + t, (hidden, hidden), 1.0 / np.sqrt(hidden))
        weight("b" + t, (hidden,), 0.1)
    for t in ("q", "k", "v"):
        perm = [0, 2, 3, 1] if t == "k" else [0, 2, 1, 3]
        nodes += [helper.make_node("MatMul", ["x", "w" + t], [t + "_mm"], name=t + "_proj"),
                  helper.make_node("Add", [t + "_mm", "b" + t], [t], name=t + "_bias"),
                  helper.make_node("Reshape", [t, "split_shape"], [t + "_4d"], name=t + "_split"),
                  helper.make_node("Transpose", [t + "_4d"], [t + "_t"], perm=perm, name=t + "_transpose")]
    nodes += [
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="qk"),
        helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"], name="scale"),
        helper.make_node("Sub", ["one", "attention_mask"], ["inv_mask"], name="mask_invert"),
        helper.make_node("Mul", ["inv_mask", "neg"], ["bias2d"], name="mask_bias"),
        helper.make_node("Unsqueeze", ["bias2d", "mask_axes"], ["bias4d"], name="mask_unsqueeze"),
        helper.make_node("Add", ["scaled", "bias4d"], ["masked"], name="mask_add"),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="pv"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="merge_transpose"),
        helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["merged"], name="merge"),
        helper.make_node("MatMul", ["merged", "wo"], ["o_mm"], name="o_proj"),
        helper.make_node("Add", ["o_mm", "bo"], ["y"], name="o_bias"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden]),
              helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "seq"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])]
    return helper.make_graph(nodes, "bert_attention", inputs, outputs, initializer=init)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for graph in (bool_mask_model(), gqa_causal_model(), bert_attention_model()):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="graphc scripts/make_attention_models.py")
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, graph.name + ".onnx"))


if __name__ == "__main__":
    main()
