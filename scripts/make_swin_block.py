#!/usr/bin/env python3
"""Writes models/swin_block.onnx: one shifted-window Swin Transformer block, as
torchvision's SwinTransformerBlock exports it (onnx.helper, opset 17), small enough
for the reference executor and the kernel emulator.

x float32 [1, 100, 32] (a 10x10 feature map, C 32) -> y float32 [1, 100, 32]:
LayerNormalization; Reshape to [1, 10, 10, 32]; Pad H and W to 12 (window 4);
cyclic shift by -2 on H and W (torch.roll exported as Slice + Concat per axis);
window partition (Reshape -> Transpose -> Reshape to [9, 16, 32]); window attention,
2 heads of 16 (QKV MatMul + bias, Reshape/Transpose, Gather of q/k/v, scale,
Q @ K^T, relative position bias gathered from its table by a constant index,
the shift mask added per window, Softmax, @ V, merge heads, projection);
window reverse; reverse shift by +2; Slice off the padding; residual Add;
LayerNormalization; MLP 32 -> 128 -> 32 with erf GELU; residual Add.

Deterministic (numpy seed 4004, SerializeToString(deterministic=True)).
    .venv/bin/python scripts/make_swin_block.py [--out models/swin_block.onnx] [--check]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H = W = 10
C = 32
HEADS = 2
WIN = 4
SHIFT = 2
HIDDEN = 128
HP = (H + WIN - 1) // WIN * WIN  # 12
WP = (W + WIN - 1) // WIN * WIN
NW = (HP // WIN) * (WP // WIN)  # 9 windows
N = WIN * WIN  # 16 tokens per window
HD = C // HEADS


class Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.count = 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, name, values):
        return self.const(name, np.array(values, dtype=np.int64))

    def weight(self, name, shape, scale):
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op, inputs, name, **attrs):
        out = name + "_out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def roll(self, x, axis, dim, shift, name):
        s = shift % dim
        a = self.node("Slice", [x, self.ints(name + "_s0", [dim - s]), self.ints(name + "_e0", [dim]),
                                self.ints(name + "_a0", [axis])], name + "/Slice")
        b = self.node("Slice", [x, self.ints(name + "_s1", [0]), self.ints(name + "_e1", [dim - s]),
                                self.ints(name + "_a1", [axis])], name + "/Slice_1")
        return self.node("Concat", [a, b], name + "/Concat", axis=axis)


def relative_position_index():
    coords = np.stack(np.meshgrid(np.arange(WIN), np.arange(WIN), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0)
    rel[:, :, 0] += WIN - 1
    rel[:, :, 1] += WIN - 1
    rel[:, :, 0] *= 2 * WIN - 1
    return rel.sum(-1).reshape(-1).astype(np.int64)  # [N * N]


def shift_mask():
    img = np.zeros((HP, WP), dtype=np.float32)
    cnt = 0
    for hs in (slice(0, -WIN), slice(-WIN, -SHIFT), slice(-SHIFT, None)):
        for ws in (slice(0, -WIN), slice(-WIN, -SHIFT), slice(-SHIFT, None)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.reshape(HP // WIN, WIN, WP // WIN, WIN).transpose(0, 2, 1, 3).reshape(NW, N)
    diff = win[:, None, :] - win[:, :, None]
    return np.where(diff != 0, -100.0, 0.0).astype(np.float32).reshape(1, NW, 1, N, N)


def build():
    b = Builder(np.random.default_rng(4004))
    x = "x"
    ln1 = b.node("LayerNormalization", [x, b.const("ln1_w", b.rng.uniform(0.5, 1.5, C).astype(np.float32)),
                                        b.const("ln1_b", (b.rng.standard_normal(C) * 0.5).astype(np.float32))],
                 "/norm1/LayerNormalization", axis=-1, epsilon=1e-5)
    t = b.node("Reshape", [ln1, b.ints("shape_bhwc", [1, H, W, C])], "/Reshape")
    t = b.node("Pad", [t, b.ints("pads", [0, 0, 0, 0, 0, HP - H, WP - W, 0])], "/Pad", mode="constant")
    t = b.roll(t, 1, HP, -SHIFT, "/roll_h")
    t = b.roll(t, 2, WP, -SHIFT, "/roll_w")
    # window partition
    t = b.node("Reshape", [t, b.ints("shape_part", [1, HP // WIN, WIN, WP // WIN, WIN, C])], "/partition/Reshape")
    t = b.node("Transpose", [t], "/partition/Transpose", perm=[0, 1, 3, 2, 4, 5])
    t = b.node("Reshape", [t, b.ints("shape_win", [NW, N, C])], "/partition/Reshape_1")
    # window attention
    qkv = b.node("MatMul", [t, b.weight("qkv_w", (C, 3 * C), (2.0 / C) ** 0.5)], "/attn/qkv/MatMul")
    qkv = b.node("Add", [qkv, b.weight("qkv_b", (3 * C,), 0.5)], "/attn/qkv/Add")
    qkv = b.node("Reshape", [qkv, b.ints("shape_qkv", [NW, N, 3, HEADS, HD])], "/attn/Reshape")
    qkv = b.node("Transpose", [qkv], "/attn/Transpose", perm=[2, 0, 3, 1, 4])
    q = b.node("Gather", [qkv, b.const("i0", np.array(0, dtype=np.int64))], "/attn/Gather", axis=0)
    k = b.node("Gather", [qkv, b.const("i1", np.array(1, dtype=np.int64))], "/attn/Gather_1", axis=0)
    v = b.node("Gather", [qkv, b.const("i2", np.array(2, dtype=np.int64))], "/attn/Gather_2", axis=0)
    q = b.node("Mul", [q, b.const("scale", np.array(HD ** -0.5, dtype=np.float32))], "/attn/Mul")
    kt = b.node("Transpose", [k], "/attn/Transpose_1", perm=[0, 1, 3, 2])
    a = b.node("MatMul", [q, kt], "/attn/MatMul")
    table = b.weight("rel_table", ((2 * WIN - 1) ** 2, HEADS), 0.5)
    bias = b.node("Gather", [table, b.const("rel_index", relative_position_index())], "/attn/rel/Gather", axis=0)
    bias = b.node("Reshape", [bias, b.ints("shape_rel", [N, N, HEADS])], "/attn/rel/Reshape")
    bias = b.node("Transpose", [bias], "/attn/rel/Transpose", perm=[2, 0, 1])
    bias = b.node("Unsqueeze", [bias, b.ints("axes0", [0])], "/attn/rel/Unsqueeze")
    a = b.node("Add", [a, bias], "/attn/Add")
    a = b.node("Reshape", [a, b.ints("shape_mask_view", [1, NW, HEADS, N, N])], "/attn/Reshape_1")
    a = b.node("Add", [a, b.const("shift_mask", shift_mask())], "/attn/Add_1")
    a = b.node("Reshape", [a, b.ints("shape_scores", [NW, HEADS, N, N])], "/attn/Reshape_2")
    a = b.node("Softmax", [a], "/attn/Softmax", axis=-1)
    o = b.node("MatMul", [a, v], "/attn/MatMul_1")
    o = b.node("Transpose", [o], "/attn/Transpose_2", perm=[0, 2, 1, 3])
    o = b.node("Reshape", [o, b.ints("shape_merge", [NW, N, C])], "/attn/Reshape_3")
    o = b.node("MatMul", [o, b.weight("proj_w", (C, C), (2.0 / C) ** 0.5)], "/attn/proj/MatMul")
    o = b.node("Add", [o, b.weight("proj_b", (C,), 0.5)], "/attn/proj/Add")
    # window reverse, reverse shift, crop
    o = b.node("Reshape", [o, b.ints("shape_rev", [1, HP // WIN, WP // WIN, WIN, WIN, C])], "/reverse/Reshape")
    o = b.node("Transpose", [o], "/reverse/Transpose", perm=[0, 1, 3, 2, 4, 5])
    o = b.node("Reshape", [o, b.ints("shape_full", [1, HP, WP, C])], "/reverse/Reshape_1")
    o = b.roll(o, 1, HP, SHIFT, "/unroll_h")
    o = b.roll(o, 2, WP, SHIFT, "/unroll_w")
    o = b.node("Slice", [o, b.ints("crop_s", [0, 0]), b.ints("crop_e", [H, W]), b.ints("crop_a", [1, 2])], "/crop/Slice")
    o = b.node("Reshape", [o, b.ints("shape_tokens", [1, H * W, C])], "/Reshape_1")
    x1 = b.node("Add", [x, o], "/Add")
    # MLP
    m = b.node("LayerNormalization", [x1, b.const("ln2_w", b.rng.uniform(0.5, 1.5, C).astype(np.float32)),
                                      b.const("ln2_b", (b.rng.standard_normal(C) * 0.5).astype(np.float32))],
               "/norm2/LayerNormalization", axis=-1, epsilon=1e-5)
    m = b.node("MatMul", [m, b.weight("fc1_w", (C, HIDDEN), (2.0 / C) ** 0.5)], "/mlp/fc1/MatMul")
    m = b.node("Add", [m, b.weight("fc1_b", (HIDDEN,), 0.5)], "/mlp/fc1/Add")
    e = b.node("Div", [m, b.const("sqrt2", np.array(2 ** 0.5, dtype=np.float32))], "/mlp/act/Div")
    e = b.node("Erf", [e], "/mlp/act/Erf")
    e = b.node("Add", [e, b.const("one", np.array(1.0, dtype=np.float32))], "/mlp/act/Add")
    m = b.node("Mul", [m, e], "/mlp/act/Mul")
    m = b.node("Mul", [m, b.const("half", np.array(0.5, dtype=np.float32))], "/mlp/act/Mul_1")
    m = b.node("MatMul", [m, b.weight("fc2_w", (HIDDEN, C), (2.0 / HIDDEN) ** 0.5)], "/mlp/fc2/MatMul")
    m = b.node("Add", [m, b.weight("fc2_b", (C,), 0.5)], "/mlp/fc2/Add")
    b.nodes.append(helper.make_node("Add", [x1, m], ["y"], name="/Add_1"))
    graph = helper.make_graph(
        b.nodes, "swin_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, H * W, C])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, H * W, C])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="graphc make_swin_block.py")
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, "models", "swin_block.onnx"))
    ap.add_argument("--check", action="store_true", help="onnx.checker full_check, onnxruntime run")
    args = ap.parse_args()
    model = build()
    if args.check:
        onnx.checker.check_model(model, full_check=True)
    with open(args.out, "wb") as f:
        f.write(model.SerializeToString(deterministic=True))
    if args.check:
        import onnxruntime as ort
        x = np.random.default_rng(1).uniform(-2, 2, (1, H * W, C)).astype(np.float32)
        y = ort.InferenceSession(args.out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        print(f"onnxruntime: y {y.shape} sum {y.sum():.6f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
