#!/usr/bin/env python3
"""Quantizes an ONNX model's MatMul/Gemm layers to float8 e4m3fn in QDQ form.

onnxruntime's quantize_static has a QuantType.QFLOAT8E4M3FN (QDQ, Distribution
calibration), but onnxruntime 1.23 with onnx >= 1.18 fails in it (it imports
onnx.numpy_helper.float8e4m3_to_float32, which onnx removed). This script writes the
same form directly: for each MatMul/Gemm whose B is a 2-D float initializer,

    x -> QuantizeLinear(x, s_a, 0 e4m3fn) -> DequantizeLinear -> MatMul|Gemm
    W -> W_q (e4m3fn initializer) -> DequantizeLinear(W_q, s_w, 0 e4m3fn[, axis]) -^

with s_a = max|x| / 448 over the calibration batches (per tensor, what cuBLASLt's FP8
GEMM takes) and s_w = max|W| / 448 per tensor, or per output column with
--per-channel (graphc folds those into its generated epilogue). The model is converted
to opset 19 first (float8 QuantizeLinear/DequantizeLinear). Needs onnx, onnxruntime
(calibration) and ml_dtypes.

    python3 scripts/fp8_qdq.py model.onnx model-fp8.onnx --inputs calib.npz [--per-channel]

or from Python: quantize_fp8(src, dst, batches, per_channel=False), `batches` a list of
{input name: array}.
"""
import argparse
import sys

import numpy as np

E4M3_MAX = 448.0


def _to_e4m3(a):
    import ml_dtypes

    return np.clip(a, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn)


def _candidates(model):
    """(node, activation name, weight initializer, N axis of the weight) per quantizable layer."""
    inits = {i.name: i for i in model.graph.initializer}
    out = []
    for n in model.graph.node:
        if n.op_type not in ("MatMul", "Gemm") or len(n.input) < 2:
            continue
        w = inits.get(n.input[1])
        if w is None or len(w.dims) != 2 or w.data_type != 1:
            continue
        if n.op_type == "Gemm":
            attrs = {a.name: a for a in n.attribute}
            if "transA" in attrs and attrs["transA"].i:
                continue
            n_axis = 0 if "transB" in attrs and attrs["transB"].i else 1
        else:
            n_axis = 1
        out.append((n, n.input[0], w, n_axis))
    return out


def _calibrate(model, names, batches):
    """max |value| of each named tensor over the batches (onnxruntime on the float model)."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    known = {o.name for o in m.graph.output}
    for name in names:
        if name not in known:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    amax = dict.fromkeys(names, 0.0)
    for feeds in batches:
        values = dict(zip(outs, sess.run(None, feeds)))
        for name in names:
            amax[name] = max(amax[name], float(np.abs(values[name]).max()))
    return amax


def quantize_fp8(src, dst, batches, per_channel=False):
    import onnx
    from onnx import TensorProto, helper, numpy_helper, version_converter

    model = onnx.load(src)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 19:
        model = version_converter.convert_version(model, 19)
    layers = _candidates(model)
    amax = _calibrate(model, sorted({x for _, x, _, _ in layers}), batches)
    zero = numpy_helper.from_array(_to_e4m3(np.zeros((), np.float32)), "fp8_zero_point")
    model.graph.initializer.append(zero)
    new_nodes, quantized = {}, {}
    for node, x, w, n_axis in layers:
        if x not in quantized:  # one Q/DQ per activation, shared by its readers
            s = np.float32(max(amax[x], 1e-12) / E4M3_MAX)
            model.graph.initializer.append(numpy_helper.from_array(np.array(s, np.float32), f"{x}_fp8_scale"))
            q, dq = f"{x}_fp8", f"{x}_fp8_dq"
            new_nodes.setdefault(x, []).extend([
                helper.make_node("QuantizeLinear", [x, f"{x}_fp8_scale", zero.name], [q], name=f"{x}_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [q, f"{x}_fp8_scale", zero.name], [dq],
                                 name=f"{x}_DequantizeLinear")])
            quantized[x] = dq
        wf = numpy_helper.to_array(w).astype(np.float32)
        if per_channel:
            sw = np.abs(wf).max(axis=1 - n_axis) / E4M3_MAX
            sw = np.maximum(sw, 1e-12).astype(np.float32)
            wq = _to_e4m3(wf / (sw[None, :] if n_axis == 1 else sw[:, None]))
            zp = numpy_helper.from_array(_to_e4m3(np.zeros(sw.shape, np.float32)), f"{w.name}_fp8_zero_point")
            model.graph.initializer.append(zp)
            zp_name, dq_attrs = zp.name, {"axis": n_axis}
        else:
            sw = np.float32(max(float(np.abs(wf).max()), 1e-12) / E4M3_MAX)
            wq = _to_e4m3(wf / sw)
            zp_name, dq_attrs = zero.name, {}
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(sw, np.float32), f"{w.name}_fp8_scale"))
        model.graph.initializer.append(numpy_helper.from_array(wq, f"{w.name}_fp8"))
        wdq = f"{w.name}_fp8_dq_{node.name or id(node)}"
        new_nodes.setdefault(id(node), []).append(
            helper.make_node("DequantizeLinear", [f"{w.name}_fp8", f"{w.name}_fp8_scale", zp_name], [wdq],
                             name=f"{wdq}_DequantizeLinear", **dq_attrs))
        node.input[0] = quantized[x]
        node.input[1] = wdq
    # Each Q/DQ right after what it reads: the activation's producer (or the top for a
    # graph input), each weight DQ right before its layer.
    ordered = []
    for x in [i.name for i in model.graph.input] + [i.name for i in model.graph.initializer]:
        ordered += new_nodes.pop(x, [])
    for node in model.graph.node:
        ordered += new_nodes.pop(id(node), [])
        ordered.append(node)
        for out in node.output:
            ordered += new_nodes.pop(out, [])
    del model.graph.node[:]
    model.graph.node.extend(ordered)
    # The float weights nobody reads any more.
    used = {i for n in model.graph.node for i in n.input}
    keep = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    return len(layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--inputs", required=True, help=".npz of calibration inputs (one batch)")
    ap.add_argument("--per-channel", action="store_true", dest="per_channel")
    args = ap.parse_args()
    feeds = dict(np.load(args.inputs))
    print(f"{quantize_fp8(args.src, args.dst, [feeds], args.per_channel)} layers quantized to float8 e4m3fn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
