#!/usr/bin/env python3
"""Where the QDQ (int8 and float8) engines' error against onnxruntime comes from, on the CPU.

Makes a BERT-shaped encoder with onnx.helper (the float embedding sum as input, then the
embedding LayerNormalization and N layers of Q/K/V projections, softmax attention with a
padding mask, output projection, residual + LayerNormalization, erf GELU feed-forward,
residual + LayerNormalization; transformers' BertModel initialisation: weights N(0, 0.02),
biases 0, LayerNorm gamma 1 and beta 0), quantizes it as scripts/bench_int8.py does
(int8: quant_pre_process + quantize_static, QDQ, asymmetric int8 activations, per-channel
int8 weights, 4 random calibration batches; fp8: scripts/fp8_qdq.py, per-tensor e4m3fn)
and compares, after every encoder layer (each layer's output is a graph output):

  ORT exact      onnxruntime, graph optimizations off: every Q, DQ and MatMul in float32,
                 the QDQ graph as ONNX defines it (the reference of every row)
  ORT fused      onnxruntime with its default optimizations (its own int8 kernels), the
                 oracle scripts/bench_int8.py checks int8 engines against; for float8, which
                 those reject, its basic optimizations (the float8 oracle is ORT exact)
  perturbed      ORT exact on the input perturbed by EPS relative L2 (how far the quantized
                 network carries a tiny difference), and the same for the float model
  float model    the unquantized model (the size of the quantization error itself)
  graphc CONFIG  graphc's reference executor on the QDQ graph as it is ("unoptimized"), and
                 on the graph each build configuration optimizes (graphc_kernel_emulator
                 qdq-model: the int8/fp8 GEMM rewrite, and under fp16 every value rounded to
                 the dtype the engine stores it in: what the GPU engine computes, up to the
                 order of float sums, which the kernel emulator and GPU tests check per kernel)

    .venv/bin/python scripts/qdq_error_study.py --out /tmp/qdq-study \\
        --emulator build/tests/graphc_kernel_emulator [--layers 1 2 12] [--quant int8 fp8] \\
        [--hidden 768 --heads 12 --seq 128 --batch 1]

Prints one markdown table per model (relative L2 against ORT exact after selected layers,
and the last layer against ORT fused) and writes OUT/qdq_error_study.json.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# What each graphc configuration is, for the table (the emulator's output folders).
GRAPHC_CONFIGS = {
    "unoptimized": "graphc reference, the QDQ graph as it is",
    "fp32_int8-gemm": "graphc fp32, --int8-gemm",
    "fp16": "graphc fp16",
    "fp16_int8-gemm": "graphc fp16, --int8-gemm (the benchmarked engine)",
    "fp16_int8-gemm_int8-precision-fp32": "graphc fp16, --int8-gemm --int8-precision fp32",
}


def make_bert(path, layers, hidden, heads, ffn, seq, batch, seed):
    """BERT-base's encoder from the embedding sum on; outputs hidden0 (the embedding
    LayerNorm) .. hidden{layers}."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x, name, k, n):
        w = const(f"{name}.w", (rng.standard_normal((k, n)) * 0.02).astype(np.float32))
        b = const(f"{name}.b", np.zeros(n, np.float32))
        return node("Add", [node("MatMul", [x, w], f"{name}.mm"), b], f"{name}.out")

    def layernorm(x, out):
        g = const(f"{out}.g", np.ones(hidden, np.float32))
        b = const(f"{out}.b", np.zeros(hidden, np.float32))
        return node("LayerNormalization", [x, g, b], out, axis=-1, epsilon=1e-12)

    dh = hidden // heads
    split = const("split_shape", np.array([batch, seq, heads, dh], np.int64))
    merge = const("merge_shape", np.array([batch, seq, hidden], np.int64))
    # transformers' padding mask: finfo(float32).min where attention_mask is 0.
    is_pad = node("Equal", ["attention_mask", const("zero_i64", np.array(0, np.int64))], "mask.pad")
    bias = node("Where", [is_pad, const("mask.min", np.array(np.finfo(np.float32).min, np.float32)),
                          const("mask.zero", np.array(0, np.float32))], "mask.bias2d")
    bias = node("Unsqueeze", [bias, const("mask.axes", np.array([1, 2], np.int64))], "mask.bias")
    x = layernorm("embeddings", "hidden0")
    for l in range(layers):
        p = f"l{l}"
        heads_of = {}
        for t in ("q", "k", "v"):
            y = node("Reshape", [linear(x, f"{p}.{t}", hidden, hidden), split], f"{p}.{t}.split")
            heads_of[t] = node("Transpose", [y], f"{p}.{t}.heads", perm=[0, 2, 3, 1] if t == "k" else [0, 2, 1, 3])
        s = node("MatMul", [heads_of["q"], heads_of["k"]], f"{p}.scores")
        s = node("Div", [s, const(f"{p}.sqrt_dh", np.array(np.sqrt(dh), np.float32))], f"{p}.scaled")
        s = node("Add", [s, bias], f"{p}.masked")
        probs = node("Softmax", [s], f"{p}.probs", axis=-1)
        ctx = node("MatMul", [probs, heads_of["v"]], f"{p}.ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], f"{p}.ctx.t", perm=[0, 2, 1, 3]), merge], f"{p}.ctx.m")
        h = layernorm(node("Add", [linear(ctx, f"{p}.o", hidden, hidden), x], f"{p}.res1"), f"{p}.ln1")
        f1 = linear(h, f"{p}.ffn1", hidden, ffn)
        # erf GELU as torch.onnx writes it: x * 0.5 * (1 + erf(x / sqrt 2))
        e = node("Erf", [node("Div", [f1, const(f"{p}.sqrt2", np.array(np.sqrt(2), np.float32))], f"{p}.gd")],
                 f"{p}.ge")
        e = node("Add", [e, const(f"{p}.one", np.array(1, np.float32))], f"{p}.g1")
        gelu = node("Mul", [node("Mul", [f1, e], f"{p}.gm"), const(f"{p}.half", np.array(0.5, np.float32))],
                    f"{p}.gelu")
        x = layernorm(node("Add", [linear(gelu, f"{p}.ffn2", ffn, hidden), h], f"{p}.res2"), f"hidden{l + 1}")
    outs = [helper.make_tensor_value_info(f"hidden{i}", TensorProto.FLOAT, [batch, seq, hidden])
            for i in range(layers + 1)]
    graph = helper.make_graph(nodes, "bert_encoder",
                              [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [batch, seq, hidden]),
                               helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, seq])],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="qdq_error_study.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def make_inputs(rng, batch, seq, hidden):
    """What scripts/bench_common.make_inputs gives BERT, after the embedding lookup: the sum
    of three N(0, 0.02) embeddings per token; a mask of ones with 1..seq/4 trailing zeros."""
    mask = np.ones((batch, seq), np.int64)
    for r in range(batch):
        mask[r, seq - int(rng.integers(1, max(1, seq // 4) + 1)):] = 0
    emb = (rng.standard_normal((batch, seq, hidden)) * 0.02 * np.sqrt(3)).astype(np.float32)
    return {"embeddings": emb, "attention_mask": mask}


def quantize(kind, src, dst, batches):
    if kind == "fp8":
        import fp8_qdq

        fp8_qdq.quantize_fp8(src, dst, batches, per_channel=False)
        return
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = list(batches)

        def get_next(self):
            return self.batches.pop() if self.batches else None

    pre = dst[:-len(".onnx")] + "-pre.onnx"
    quant_pre_process(src, pre, skip_optimization=False)
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul", "Gemm", "Conv"],
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})


def ort(path, feeds, optimize, level="ORT_ENABLE_ALL"):
    import onnxruntime as rt

    so = rt.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = getattr(rt.GraphOptimizationLevel, level if optimize else "ORT_DISABLE_ALL")
    s = rt.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def rel_l2(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def perturbed(feeds, eps, rng):
    """The input moved by `eps` relative L2 (Gaussian direction); the mask unchanged."""
    x = feeds["embeddings"].astype(np.float64)
    d = rng.standard_normal(x.shape)
    d *= eps * np.linalg.norm(x) / np.linalg.norm(d)
    return {**feeds, "embeddings": (x + d).astype(np.float32)}


def graphc_runs(emulator, model, feeds, out, configs):
    """{config: {output: array}} from graphc's reference executor per build configuration."""
    ins = os.path.join(out, "inputs")
    os.makedirs(ins, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(ins, f"{k}.npy"), v)
    outs = os.path.join(out, "graphc")
    p = subprocess.run([emulator, "qdq-model", model, ins, outs, *configs], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"graphc_kernel_emulator qdq-model {model} failed ({p.returncode}): {p.stderr[-2000:]}")
    sys.stdout.write(p.stdout)
    return {c: {f[:-4]: np.load(os.path.join(outs, c, f)) for f in os.listdir(os.path.join(outs, c))}
            for c in configs}


def study(args, layers, kind, rng):
    out = os.path.join(args.out, f"{kind}-{layers}l")
    os.makedirs(out, exist_ok=True)
    fp, q = os.path.join(out, "float.onnx"), os.path.join(out, f"{kind}.onnx")
    make_bert(fp, layers, args.hidden, args.heads, 4 * args.hidden, args.seq, args.batch, args.seed + layers)
    shape = (args.batch, args.seq, args.hidden)
    quantize(kind, fp, q, [make_inputs(rng, *shape) for _ in range(args.calibration_batches)])
    feeds = make_inputs(rng, *shape)
    exact = ort(q, feeds, optimize=False)
    runs, fused = {}, None
    # onnxruntime 1.23's extended optimizations reject float8 models (they move a
    # float8 QuantizeLinear past a Transpose): its basic ones are the other kernels there.
    for level, name in (("ORT_ENABLE_ALL", "ORT fused (default optimizations)"),
                        ("ORT_ENABLE_BASIC", "ORT basic optimizations")):
        try:
            fused = ort(q, feeds, optimize=True, level=level)
            runs[name] = fused
            break
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            print(f"{kind} {layers}l: onnxruntime {level} failed: {str(e)[:160]}")
    fused_ok = fused is not None
    for eps in args.eps:
        runs[f"ORT exact, input perturbed by {eps:g}"] = ort(q, perturbed(feeds, eps, rng), optimize=False)
    float_out = ort(fp, feeds, optimize=False)
    runs["float model (the quantization error)"] = float_out
    float_runs = {f"float model, input perturbed by {eps:g} (vs float model)": ort(fp, perturbed(feeds, eps, rng),
                                                                                   optimize=False)
                  for eps in args.eps}
    if args.emulator:
        t0 = time.monotonic()
        got = graphc_runs(args.emulator, q, feeds, out, list(GRAPHC_CONFIGS))
        for c, name in GRAPHC_CONFIGS.items():
            runs[name] = got[c]
        fgot = graphc_runs(args.emulator, fp, feeds, os.path.join(out, "float"), ["fp16"])
        float_runs["graphc fp16 on the float model (vs float model)"] = fgot["fp16"]
        print(f"{kind} {layers}l: graphc reference runs {time.monotonic() - t0:.0f} s")
    names = [f"hidden{i}" for i in range(layers + 1)]
    rec = {"layers": layers, "quant": kind, "shape": list(shape), "rows": {}}
    for name, y in runs.items():
        rec["rows"][name] = {"vs_exact": [rel_l2(y[n], exact[n]) for n in names]}
        if fused_ok:
            rec["rows"][name]["vs_fused"] = rel_l2(y[names[-1]], fused[names[-1]])
    for name, y in float_runs.items():
        rec["rows"][name] = {"vs_exact": [rel_l2(y[n], float_out[n]) for n in names]}
    return rec


def table(rec):
    layers = rec["layers"]
    cols = sorted({c for c in (1, 2, 6, layers) if c <= layers})
    head = " | ".join(f"after layer {c}" for c in cols)
    lines = [f"{rec['quant']}, {layers} layer(s), {rec['shape']}: relative L2 against ORT exact "
             f"(float rows: against the float model)", "",
             f"| run | {head} | last vs ORT optimized |", "|---|" + "---|" * (len(cols) + 1)]
    for name, r in rec["rows"].items():
        vals = " | ".join(f"{r['vs_exact'][c]:.2e}" for c in cols)
        fused = f"{r['vs_fused']:.2e}" if "vs_fused" in r else "-"
        lines.append(f"| {name} | {vals} | {fused} |")
    return "\n".join(lines)


def summary(records):
    """One row per model: the last layer's relative L2 of the runs that decide the question."""
    cols = [("ORT optimized", ("ORT fused (default optimizations)", "ORT basic optimizations"), "vs_exact"),
            ("ORT exact, input +1e-7", ("ORT exact, input perturbed by 1e-07",), "vs_exact"),
            ("ORT exact, input +1e-5", ("ORT exact, input perturbed by 1e-05",), "vs_exact"),
            ("ORT exact, input +1e-3", ("ORT exact, input perturbed by 0.001",), "vs_exact"),
            ("graphc reference, QDQ graph as is", ("graphc reference, the QDQ graph as it is",), "vs_exact"),
            ("graphc fp32 --int8-gemm", ("graphc fp32, --int8-gemm",), "vs_exact"),
            ("graphc fp16 --int8-gemm", ("graphc fp16, --int8-gemm (the benchmarked engine)",), "vs_exact"),
            ("same, vs ORT optimized", ("graphc fp16, --int8-gemm (the benchmarked engine)",), "vs_fused"),
            ("float model (quantization error)", ("float model (the quantization error)",), "vs_exact"),
            ("float model: graphc fp16", ("graphc fp16 on the float model (vs float model)",), "vs_exact")]
    lines = ["| model | " + " | ".join(c[0] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for rec in records:
        vals = []
        for _, names, key in cols:
            r = next((rec["rows"][n] for n in names if n in rec["rows"]), None)
            v = None if r is None or key not in r else (r[key][-1] if key == "vs_exact" else r[key])
            vals.append("-" if v is None else f"{v:.1e}")
        lines.append(f"| {rec['quant']} {rec['layers']}L | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--emulator", help="build/tests/graphc_kernel_emulator (without it: onnxruntime rows only)")
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2, 12])
    ap.add_argument("--quant", nargs="+", default=["int8", "fp8"], choices=["int8", "fp8"])
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--eps", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5, 1e-7])
    ap.add_argument("--calibration-batches", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    records = []
    for kind in args.quant:
        for layers in args.layers:
            rec = study(args, layers, kind, np.random.default_rng([args.seed, layers, len(kind)]))
            records.append(rec)
            print(table(rec) + "\n", flush=True)
            with open(os.path.join(args.out, "qdq_error_study.json"), "w") as fh:
                json.dump(records, fh, indent=1)
    print("After the last layer, relative L2 against ORT exact (the float model's fp16 row: against "
          "the float model):\n\n" + summary(records))


if __name__ == "__main__":
    main()
