#!/usr/bin/env python3
"""Where the int8 (QDQ) engines' difference from onnxruntime comes from, without a GPU.

Makes a small BERT-like encoder with onnx.helper (embeddings-free: input [B, S, H], per
layer Q/K/V and output projections, softmax attention, erf GELU feed-forward, residuals,
LayerNormalization; random weights of BERT's initializer, std 0.02), quantizes it with
onnxruntime's quantize_static as scripts/bench_int8.py does (QDQ, int8 asymmetric
activations, per-channel symmetric int8 weights, random calibration batches, MatMul
only), then compares on the same fresh random inputs:

  - onnxruntime with its graph optimizations off (ORT_DISABLE_ALL: the QDQ graph as ONNX
    defines it, every DQ/MatMul/Q in float32: the reference for the others);
  - onnxruntime with its default optimizations (the QDQ groups fused into its own int8
    kernels, what scripts/bench_int8.py compares graphc's engines with);
  - the QDQ graph with graphc's fp16 roundings applied one kind at a time as ONNX ops
    (rounded_variants: the dequantize scale, the activation before QuantizeLinear,
    QuantizeLinear's own arithmetic), run by onnxruntime without optimizations;
  - graphc's reference executor on the graph each build configuration optimizes
    (`graphc_kernel_emulator qdq-model`: every intermediate rounded to the dtype the
    engine stores it in, the int8 GEMM rewrite included), for --precision fp32 / fp16,
    with the int8 GEMMs on and off, and with --int8-precision fp32.

    .venv/bin/python scripts/int8_accuracy.py --out /tmp/int8acc \\
        [--emulator build/tests/graphc_kernel_emulator] [--layers 4 --hidden 256 --seq 64 --batch 2]

Prints one table (relative L2 of each against the exact QDQ graph and against onnxruntime's
fused run) and writes OUT/int8_accuracy.json.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def make_encoder(path, layers, hidden, heads, ffn, seq, seed=0, batch="batch"):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def linear(x, name, k, n):
        w = const(f"{name}.w", (rng.standard_normal((k, n)) * 0.02).astype(np.float32))
        b = const(f"{name}.b", (rng.standard_normal(n) * 0.02).astype(np.float32))
        nodes.append(helper.make_node("MatMul", [x, w], [f"{name}.mm"]))
        nodes.append(helper.make_node("Add", [f"{name}.mm", b], [f"{name}.out"]))
        return f"{name}.out"

    def layernorm(x, name):
        g = const(f"{name}.g", (1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        b = const(f"{name}.b", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
        nodes.append(helper.make_node("LayerNormalization", [x, g, b], [f"{name}.out"], axis=-1, epsilon=1e-12))
        return f"{name}.out"

    dh = hidden // heads
    split_shape = const("split_shape", np.array([0, seq, heads, dh], np.int64))
    merge_shape = const("merge_shape", np.array([0, seq, hidden], np.int64))
    scale = const("attn_scale", np.array(1 / np.sqrt(dh), np.float32))
    x = "x"
    for l in range(layers):
        p = f"l{l}"
        heads_of = {}
        for t in ("q", "k", "v"):
            y = linear(x, f"{p}.{t}", hidden, hidden)
            nodes.append(helper.make_node("Reshape", [y, split_shape], [f"{p}.{t}.split"]))
            perm = [0, 2, 3, 1] if t == "k" else [0, 2, 1, 3]
            nodes.append(helper.make_node("Transpose", [f"{p}.{t}.split"], [f"{p}.{t}.heads"], perm=perm))
            heads_of[t] = f"{p}.{t}.heads"
        nodes.append(helper.make_node("MatMul", [heads_of["q"], heads_of["k"]], [f"{p}.scores"]))
        nodes.append(helper.make_node("Mul", [f"{p}.scores", scale], [f"{p}.scaled"]))
        nodes.append(helper.make_node("Softmax", [f"{p}.scaled"], [f"{p}.probs"], axis=-1))
        nodes.append(helper.make_node("MatMul", [f"{p}.probs", heads_of["v"]], [f"{p}.ctx"]))
        nodes.append(helper.make_node("Transpose", [f"{p}.ctx"], [f"{p}.ctx.t"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"{p}.ctx.t", merge_shape], [f"{p}.ctx.m"]))
        o = linear(f"{p}.ctx.m", f"{p}.o", hidden, hidden)
        nodes.append(helper.make_node("Add", [o, x], [f"{p}.res1"]))
        h = layernorm(f"{p}.res1", f"{p}.ln1")
        f1 = linear(h, f"{p}.ffn1", hidden, ffn)
        # erf GELU spelled out (opset 17 has no Gelu): x * 0.5 * (1 + erf(x / sqrt 2))
        nodes.append(helper.make_node("Div", [f1, const(f"{p}.sqrt2", np.array(np.sqrt(2), np.float32))],
                                      [f"{p}.gd"]))
        nodes.append(helper.make_node("Erf", [f"{p}.gd"], [f"{p}.ge"]))
        nodes.append(helper.make_node("Add", [f"{p}.ge", const(f"{p}.one", np.array(1, np.float32))], [f"{p}.g1"]))
        nodes.append(helper.make_node("Mul", [f1, f"{p}.g1"], [f"{p}.gm"]))
        nodes.append(helper.make_node("Mul", [f"{p}.gm", const(f"{p}.half", np.array(0.5, np.float32))],
                                      [f"{p}.gelu"]))
        f2 = linear(f"{p}.gelu", f"{p}.ffn2", ffn, hidden)
        nodes.append(helper.make_node("Add", [f2, h], [f"{p}.res2"]))
        x = layernorm(f"{p}.res2", f"{p}.ln2")
    nodes.append(helper.make_node("Identity", [x], ["output"]))
    graph = helper.make_graph(nodes, "int8_encoder",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, seq, hidden])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="int8_accuracy.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def quantize(src, dst, shape, batches, rng):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(batches)]

        def get_next(self):
            return self.batches.pop() if self.batches else None

    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})


def rounded_variants(src, out_dir):
    """The QDQ model with graphc's --precision fp16 roundings applied, one kind at a time, as
    ONNX ops onnxruntime runs exactly (float32 elsewhere); name -> path. What each costs,
    without graphc:
      dequantize-scale-fp16  the int8 GEMM's dequantize scale s_a * s_w[n] rounded to fp16
                             (what convert-precision did to fuse-qdq-matmul's DequantizeLinear)
      activation-fp16        each quantized activation rounded to fp16 before QuantizeLinear
                             (the fp16 op that computes it stores fp16)
      quantize-fp16          QuantizeLinear's scale and quotient x / scale in fp16
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    base = onnx.load(src)
    inits = {i.name: i for i in base.graph.initializer}

    def f16(a):
        return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)

    def variant(kinds):
        m = onnx.ModelProto()
        m.CopyFrom(base)
        g = m.graph
        init = {i.name: i for i in g.initializer}
        prod = {o: n for n in g.node for o in n.output}
        nodes = []
        for n in g.node:
            if n.op_type == "QuantizeLinear" and n.input[0] not in init:
                x = n.input[0]
                if "activation-fp16" in kinds:
                    nodes += [helper.make_node("Cast", [x], [x + "/h"], to=TensorProto.FLOAT16),
                              helper.make_node("Cast", [x + "/h"], [x + "/r"], to=TensorProto.FLOAT)]
                    x = x + "/r"
                if "quantize-fp16" in kinds:
                    s = numpy_helper.to_array(init[n.input[1]])
                    g.initializer.append(numpy_helper.from_array(f16(s), n.name + "/s16"))
                    g.initializer.append(numpy_helper.from_array(np.array(1, np.float32), n.name + "/one"))
                    nodes += [helper.make_node("Cast", [x], [x + "/q16"], to=TensorProto.FLOAT16),
                              helper.make_node("Cast", [x + "/q16"], [x + "/q32"], to=TensorProto.FLOAT),
                              helper.make_node("Div", [x + "/q32", n.name + "/s16"], [x + "/d"]),
                              helper.make_node("Cast", [x + "/d"], [x + "/dh"], to=TensorProto.FLOAT16),
                              helper.make_node("Cast", [x + "/dh"], [x + "/dr"], to=TensorProto.FLOAT)]
                    q = helper.make_node("QuantizeLinear", [x + "/dr", n.name + "/one"] + list(n.input[2:]),
                                         list(n.output), name=n.name)
                    nodes.append(q)
                    continue
                q = onnx.NodeProto()
                q.CopyFrom(n)
                q.input[0] = x
                nodes.append(q)
                continue
            if n.op_type == "MatMul" and "dequantize-scale-fp16" in kinds:
                a, b = prod.get(n.input[0]), prod.get(n.input[1])
                if (a is not None and b is not None and a.op_type == b.op_type == "DequantizeLinear"
                        and b.input[0] in init and a.input[1] in init):
                    sa = numpy_helper.to_array(init[a.input[1]]).astype(np.float64)
                    sw = numpy_helper.to_array(init[b.input[1]]).astype(np.float64)
                    # s_w' with s_a * s_w' = fp16(s_a * s_w): the product the GEMM used.
                    sw2 = (f16(sa * sw).astype(np.float64) / sa).astype(np.float32)
                    init[b.input[1]].CopyFrom(numpy_helper.from_array(sw2, b.input[1]))
            nodes.append(n)
        del g.node[:]
        g.node.extend(nodes)
        return m

    out = {}
    for name, kinds in [("dequantize-scale-fp16", {"dequantize-scale-fp16"}),
                        ("activation-fp16", {"activation-fp16"}),
                        ("quantize-fp16", {"quantize-fp16"}),
                        ("activation-fp16 + quantize-fp16", {"activation-fp16", "quantize-fp16"}),
                        ("all three", {"dequantize-scale-fp16", "activation-fp16", "quantize-fp16"})]:
        path = os.path.join(out_dir, "rounded-" + name.replace(" + ", "+").replace(" ", "-") + ".onnx")
        onnx.save(variant(kinds), path)
        out[name] = path
    return out


def ort(path, x, optimize):
    import onnxruntime as rt

    so = rt.SessionOptions()
    if not optimize:
        so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = rt.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def rel_l2(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emulator", help="build/tests/graphc_kernel_emulator (without: onnxruntime and the "
                                       "rounding variants only)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--calibration-batches", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    shape = (args.batch, args.seq, args.hidden)
    fp = os.path.join(args.out, "encoder.onnx")
    q = os.path.join(args.out, "encoder-qdq.onnx")
    make_encoder(fp, args.layers, args.hidden, args.heads, 4 * args.hidden, args.seq, args.seed,
                 batch=args.batch)  # a fixed batch: the emulator binds no shapes
    quantize(fp, q, shape, args.calibration_batches, rng)
    x = rng.standard_normal(shape).astype(np.float32)
    inputs = os.path.join(args.out, "inputs")
    os.makedirs(inputs, exist_ok=True)
    np.save(os.path.join(inputs, "x.npy"), x)
    exact = ort(q, x, optimize=False)
    results = {"onnxruntime fused (default)": ort(q, x, optimize=True), "float model (onnxruntime)": ort(fp, x, True)}
    for name, path in rounded_variants(q, args.out).items():
        results[f"QDQ graph, {name} (onnxruntime)"] = ort(path, x, optimize=False)
    if args.emulator:
        outs = os.path.join(args.out, "graphc")
        p = subprocess.run([args.emulator, "qdq-model", q, inputs, outs], capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            sys.exit(f"graphc_kernel_emulator qdq-model failed ({p.returncode})")
        for cfg in sorted(os.listdir(outs)):
            results[f"graphc reference executor, {cfg.replace('_', ' ')}"] = np.load(
                os.path.join(outs, cfg, "output.npy"))
    fused = results["onnxruntime fused (default)"]
    rows, record = [], {"shape": list(shape), "layers": args.layers, "results": {}}
    for name, y in results.items():
        e, f = rel_l2(y, exact), rel_l2(y, fused)
        record["results"][name] = {"vs_exact_qdq": e, "vs_onnxruntime_fused": f}
        rows.append(f"| {name} | {e:.2e} | {f:.2e} |")
    print("| run | rel L2 vs the exact QDQ graph (ORT, no optimizations) | vs ORT default (fused int8) |")
    print("|---|---|---|")
    print("\n".join(rows))
    with open(os.path.join(args.out, "int8_accuracy.json"), "w") as fh:
        json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
