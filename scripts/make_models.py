#!/usr/bin/env python3
"""Makes the small ONNX models that ship in models/ (see models/README.md).

Deterministic: fixed numpy seeds, onnx's helper API, no timestamps, so running
it again gives byte-identical files. Weights are random (never zeros).

    /work/main/.venv/bin/python scripts/make_models.py            # write models/*.onnx
    /work/main/.venv/bin/python scripts/make_models.py --check    # also run onnx.checker
    /work/main/.venv/bin/python scripts/make_models.py --print-ort [--batch 2]
        # print onnxruntime's outputs for a fixed-seed input (to compare with
        # graphc's reference executor)
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRODUCER = "graphc scripts/make_models.py"
MODELS_DIR = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))


def weight(rng, name, shape, fan_in=None, positive=False):
    """Random float32 initializer, scaled like He init; never all zeros."""
    if positive:
        data = rng.uniform(0.5, 1.5, size=shape)
    else:
        scale = np.sqrt(2.0 / fan_in) if fan_in else 0.5
        data = rng.normal(0.0, scale, size=shape)
    return numpy_helper.from_array(np.asarray(data, dtype=np.float32), name)


def const_i64(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def const_f32(name, value):
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def finish(graph, opset, doc):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name=PRODUCER, producer_version="1")
    model.doc_string = doc
    # IR version 8 is what onnxruntime 1.x and ONNX 1.12+ all read.
    model.ir_version = 8
    return model


def make_mlp():
    """3-layer MLP: (MatMul -> Add -> Relu) x2 -> MatMul -> Add. x: 4x64 -> y: 4x10."""
    rng = np.random.default_rng(1001)
    dims = [64, 128, 64, 10]
    inits, nodes = [], []
    cur = "x"
    for layer in range(3):
        w, b = f"fc{layer}.weight", f"fc{layer}.bias"
        inits.append(weight(rng, w, (dims[layer], dims[layer + 1]), fan_in=dims[layer]))
        inits.append(weight(rng, b, (dims[layer + 1],), fan_in=None))
        mm, add = f"fc{layer}/matmul_out", f"fc{layer}/add_out"
        nodes.append(helper.make_node("MatMul", [cur, w], [mm], name=f"fc{layer}/MatMul"))
        last = layer == 2
        nodes.append(helper.make_node("Add", [mm, b], ["y" if last else add], name=f"fc{layer}/Add"))
        if not last:
            relu = f"fc{layer}/relu_out"
            nodes.append(helper.make_node("Relu", [add], [relu], name=f"fc{layer}/Relu"))
            cur = relu
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        initializer=inits)
    return finish(graph, 13, "3-layer MLP, 64 -> 128 -> 64 -> 10, fixed batch 4")


def make_conv_block():
    """Residual block: Conv-BN-Relu-Conv-BN-Add(skip)-Relu on 1x16x32x32."""
    rng = np.random.default_rng(2002)
    c = 16
    inits = [
        weight(rng, "conv1.weight", (c, c, 3, 3), fan_in=c * 9),
        weight(rng, "conv2.weight", (c, c, 3, 3), fan_in=c * 9),
        weight(rng, "conv2.bias", (c,)),
    ]
    for bn in ("bn1", "bn2"):
        inits += [
            weight(rng, f"{bn}.scale", (c,), positive=True),
            weight(rng, f"{bn}.bias", (c,)),
            weight(rng, f"{bn}.mean", (c,)),
            weight(rng, f"{bn}.var", (c,), positive=True),  # variances must be > 0
        ]
    conv_attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    nodes = [
        # conv1 has no bias (the optional input is omitted), conv2 has one.
        helper.make_node("Conv", ["x", "conv1.weight"], ["c1"], name="conv1", **conv_attrs),
        helper.make_node("BatchNormalization",
                         ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["b1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
                         **conv_attrs),
        helper.make_node("BatchNormalization",
                         ["c2", "bn2.scale", "bn2.bias", "bn2.mean", "bn2.var"], ["b2"],
                         name="bn2", epsilon=1e-5),
        helper.make_node("Add", ["b2", "x"], ["sum"], name="skip_add"),
        helper.make_node("Relu", ["sum"], ["y"], name="relu_out"),
    ]
    graph = helper.make_graph(
        nodes, "conv_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 32, 32])],
        initializer=inits)
    return finish(graph, 15, "ResNet-style residual block, 16 channels, 3x3 convs, 1x16x32x32")


def make_transformer_block():
    """Pre-LN transformer encoder block, d_model 64, 4 heads, MLP 128, Erf GELU.

    x: [batch, 16, 64]; the head split uses Shape -> Gather -> Unsqueeze ->
    Concat -> Reshape, as PyTorch exports do, so the batch dim flows through
    shape arithmetic.
    """
    rng = np.random.default_rng(3003)
    d, heads, seq, hidden = 64, 4, 16, 128
    hd = d // heads
    inits = [
        weight(rng, "ln1.weight", (d,), positive=True),
        weight(rng, "ln1.bias", (d,)),
        weight(rng, "ln2.weight", (d,), positive=True),
        weight(rng, "ln2.bias", (d,)),
        weight(rng, "attn.q.weight", (d, d), fan_in=d),
        weight(rng, "attn.q.bias", (d,)),
        weight(rng, "attn.k.weight", (d, d), fan_in=d),
        weight(rng, "attn.k.bias", (d,)),
        weight(rng, "attn.v.weight", (d, d), fan_in=d),
        weight(rng, "attn.v.bias", (d,)),
        weight(rng, "attn.out.weight", (d, d), fan_in=d),
        weight(rng, "attn.out.bias", (d,)),
        weight(rng, "mlp.fc1.weight", (d, hidden), fan_in=d),
        weight(rng, "mlp.fc1.bias", (hidden,)),
        weight(rng, "mlp.fc2.weight", (hidden, d), fan_in=hidden),
        weight(rng, "mlp.fc2.bias", (d,)),
        const_i64("idx0", 0),
        const_i64("idx1", 1),
        const_i64("axes0", [0]),
        const_i64("heads_dims", [heads, hd]),
        const_i64("model_dim", [d]),
        const_f32("attn_scale", np.sqrt(hd)),
        const_f32("sqrt2", np.sqrt(2.0)),
        const_f32("one", 1.0),
        const_f32("half", 0.5),
    ]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1.weight", "ln1.bias"], ["ln1_out"], name="ln1",
          axis=-1, epsilon=1e-5),
        # Shape arithmetic: [B, S] from x's runtime shape.
        n("Shape", ["x"], ["x_shape"], name="shape"),
        n("Gather", ["x_shape", "idx0"], ["batch"], name="gather_batch", axis=0),
        n("Gather", ["x_shape", "idx1"], ["seq"], name="gather_seq", axis=0),
        n("Unsqueeze", ["batch", "axes0"], ["batch_1d"], name="unsqueeze_batch"),
        n("Unsqueeze", ["seq", "axes0"], ["seq_1d"], name="unsqueeze_seq"),
        n("Concat", ["batch_1d", "seq_1d", "heads_dims"], ["heads_shape"], name="concat_heads",
          axis=0),
        n("Concat", ["batch_1d", "seq_1d", "model_dim"], ["merge_shape"], name="concat_merge",
          axis=0),
    ]
    for p in ("q", "k", "v"):
        nodes += [
            n("MatMul", ["ln1_out", f"attn.{p}.weight"], [f"{p}_mm"], name=f"{p}_proj"),
            n("Add", [f"{p}_mm", f"attn.{p}.bias"], [f"{p}_lin"], name=f"{p}_bias"),
            n("Reshape", [f"{p}_lin", "heads_shape"], [f"{p}_heads"], name=f"{p}_split_heads"),
        ]
    nodes += [
        n("Transpose", ["q_heads"], ["q_t"], name="q_transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k_heads"], ["k_t"], name="k_transpose", perm=[0, 2, 3, 1]),
        n("Transpose", ["v_heads"], ["v_t"], name="v_transpose", perm=[0, 2, 1, 3]),
        n("MatMul", ["q_t", "k_t"], ["scores"], name="qk_matmul"),
        n("Div", ["scores", "attn_scale"], ["scores_scaled"], name="scale"),
        n("Softmax", ["scores_scaled"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "v_t"], ["ctx"], name="pv_matmul"),
        n("Transpose", ["ctx"], ["ctx_t"], name="ctx_transpose", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "merge_shape"], ["ctx_merged"], name="merge_heads"),
        n("MatMul", ["ctx_merged", "attn.out.weight"], ["o_mm"], name="out_proj"),
        n("Add", ["o_mm", "attn.out.bias"], ["attn_out"], name="out_bias"),
        n("Add", ["x", "attn_out"], ["h1"], name="residual1"),
        n("LayerNormalization", ["h1", "ln2.weight", "ln2.bias"], ["ln2_out"], name="ln2",
          axis=-1, epsilon=1e-5),
        n("MatMul", ["ln2_out", "mlp.fc1.weight"], ["fc1_mm"], name="fc1"),
        n("Add", ["fc1_mm", "mlp.fc1.bias"], ["fc1_out"], name="fc1_bias"),
        # GELU(u) = u * 0.5 * (1 + erf(u / sqrt(2)))
        n("Div", ["fc1_out", "sqrt2"], ["gelu_div"], name="gelu_div"),
        n("Erf", ["gelu_div"], ["gelu_erf"], name="gelu_erf"),
        n("Add", ["gelu_erf", "one"], ["gelu_add"], name="gelu_add"),
        n("Mul", ["fc1_out", "gelu_add"], ["gelu_mul"], name="gelu_mul"),
        n("Mul", ["gelu_mul", "half"], ["gelu_out"], name="gelu_half"),
        n("MatMul", ["gelu_out", "mlp.fc2.weight"], ["fc2_mm"], name="fc2"),
        n("Add", ["fc2_mm", "mlp.fc2.bias"], ["mlp_out"], name="fc2_bias"),
        n("Add", ["h1", "mlp_out"], ["y"], name="residual2"),
    ]
    graph = helper.make_graph(
        nodes, "transformer_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, d])],
        initializer=inits)
    return finish(graph, 17,
                  "pre-LN transformer encoder block: d_model 64, 4 heads, seq 16, MLP 128 "
                  "with Erf GELU; dynamic batch dim 'batch'")


MODELS = {
    "mlp": make_mlp,
    "conv_block": make_conv_block,
    "transformer_block": make_transformer_block,
}


def input_for(model, batch, seed):
    """A fixed-seed input for the model's single input ('batch' -> batch)."""
    rng = np.random.default_rng(seed)
    (inp,) = model.graph.input
    shape = [d.dim_value if d.HasField("dim_value") else batch
             for d in inp.type.tensor_type.shape.dim]
    return inp.name, rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)


def print_ort(path, model, batch, seed):
    import onnxruntime as ort

    name, x = input_for(model, batch, seed)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, {name: x})
    np.set_printoptions(precision=6, suppress=True, threshold=40, edgeitems=4)
    print(f"{os.path.basename(path)}: input {name} {list(x.shape)} "
          f"uniform(-2, 2), numpy default_rng({seed})")
    for meta, out in zip(sess.get_outputs(), outs):
        print(f"  output {meta.name} {list(out.shape)} sum={float(out.sum()):.6f} "
              f"mean_abs={float(np.abs(out).mean()):.6f}")
        print("  first values:", out.reshape(-1)[:8])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=MODELS_DIR, help="output folder (default: models/)")
    ap.add_argument("--check", action="store_true", help="run onnx.checker with full checks")
    ap.add_argument("--print-ort", action="store_true",
                    help="print onnxruntime outputs for a fixed-seed input")
    ap.add_argument("--batch", type=int, default=2, help="binding for symbolic 'batch' dims")
    ap.add_argument("--seed", type=int, default=7, help="seed of the --print-ort input")
    ap.add_argument("models", nargs="*", default=list(MODELS), help="which models (default all)")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (have: {', '.join(MODELS)})")
        model = MODELS[name]()
        if args.check:
            onnx.checker.check_model(model, full_check=True)
        path = os.path.join(args.out, f"{name}.onnx")
        data = model.SerializeToString(deterministic=True)
        assert len(data) < 1 << 20, f"{name} is {len(data)} bytes; models must stay < 1 MB"
        with open(path, "wb") as f:
            f.write(data)
        print(f"wrote {path} ({len(data)} bytes)")
        if args.print_ort:
            print_ort(path, model, args.batch, args.seed)


if __name__ == "__main__":
    main()
