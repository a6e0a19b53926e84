#!/usr/bin/env python3
"""RNN/GRU/LSTM and If/Loop/Scan on fresh random inputs against onnxruntime.

Builds small models with onnx.helper (every direction, both layouts,
sequence_lens, initial states, peepholes, clip, activation lists with
alpha/beta (every function in a list takes them, so positional and in-order
readings of the lists agree), GRU's linear_before_reset, a 2-layer LSTM as PyTorch exports it,
If on a run-time condition, Loop with a build-time trip count, Loop on a
run-time trip count and/or condition at several trip counts, Scan with
reversed directions and captured weights), writes each as an ONNX node-test
case whose expected outputs come from onnxruntime, and runs them through
`graphc conformance --backend reference` (rtol 1e-4, atol 1e-5: fp32 inputs,
graphc computes in double). Usage: test_recurrent_control_flow.py --graphc G
[--out DIR] (DIR keeps the cases; the lead can rerun them with --backend cuda).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(18)
F = TensorProto.FLOAT


def rand(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def run_ort(graph, feeds, opset):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return model, sess.run(None, feeds)


def save_case(root, name, graph, feeds, opset, expected=None):
    """expected: outputs computed elsewhere (onnxruntime on a layout-0 twin)."""
    if expected is None:
        model, outs = run_ort(graph, feeds, opset)
    else:
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        outs = expected
    case = os.path.join(root, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(case, "model.onnx"))
    for i, inp in enumerate(graph.input):
        t = numpy_helper.from_array(feeds[inp.name], inp.name)
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (out, value) in enumerate(zip(graph.output, outs)):
        t = numpy_helper.from_array(value, out.name)
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(t.SerializeToString())


def recurrent_case(root, name, op, seq=5, batch=3, inp=4, hidden=6, direction="forward",
                   layout=0, with_bias=True, with_lens=False, with_init=False, peephole=False,
                   opset=14, **attrs):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    dirs = 2 if direction == "bidirectional" else 1
    x_shape = [seq, batch, inp] if layout == 0 else [batch, seq, inp]
    state = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    feeds = {"X": rand(*x_shape, scale=1.0)}
    inits = [numpy_helper.from_array(rand(dirs, gates * hidden, inp), "W"),
             numpy_helper.from_array(rand(dirs, gates * hidden, hidden), "R")]
    names = ["X", "W", "R"]
    def opt(n, arr, as_input=False):
        if arr is None:
            names.append("")
            return
        names.append(n)
        if as_input:
            feeds[n] = arr
        else:
            inits.append(numpy_helper.from_array(arr, n))
    opt("B", rand(dirs, 2 * gates * hidden) if with_bias else None)
    lens = RNG.integers(1, seq + 1, size=batch).astype(np.int32) if with_lens else None
    if lens is not None:
        lens[0] = seq
    opt("sequence_lens", lens, as_input=True)
    opt("initial_h", rand(*state) if with_init else None, as_input=True)
    if op == "LSTM":
        opt("initial_c", rand(*state) if with_init else None, as_input=True)
        opt("P", rand(dirs, 3 * hidden) if peephole else None)
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=direction, **attrs)
    if opset >= 14:
        node.attribute.append(helper.make_attribute("layout", layout))
    y_shape = [seq, dirs, batch, hidden] if layout == 0 else [batch, seq, dirs, hidden]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else F,
                                            list(feeds[n].shape)) for n in names if n in feeds]
    outputs = [helper.make_tensor_value_info("Y", F, y_shape)] + [
        helper.make_tensor_value_info(o, F, state) for o in outs[1:]]
    graph = helper.make_graph([node], name, inputs, outputs, inits)
    expected = None
    if layout == 1:
        # onnxruntime runs only layout 0: run the twin on transposed data.
        twin = onnx.helper.make_graph([onnx.NodeProto()], name, [], [])
        twin.CopyFrom(graph)
        for a in twin.node[0].attribute:
            if a.name == "layout":
                a.i = 0
        tfeeds = {k: (v.transpose(1, 0, 2) if k != "sequence_lens" else v) for k, v in feeds.items()}
        for vi in list(twin.input) + list(twin.output):
            dims = vi.type.tensor_type.shape.dim
            if len(dims) == 3 and vi.name != "sequence_lens":
                dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
            elif len(dims) == 4:
                b, s_, d, h = [x.dim_value for x in dims]
                for x, v in zip(dims, (s_, d, b, h)):
                    x.dim_value = v
        _, touts = run_ort(twin, tfeeds, opset)
        expected = [touts[0].transpose(2, 0, 1, 3)] + [t.transpose(1, 0, 2) for t in touts[1:]]
    save_case(root, name, graph, feeds, opset, expected)


def two_layer_lstm(root):
    """A 2-layer LSTM the way torch.onnx exports nn.LSTM(num_layers=2)."""
    seq, batch, inp, hidden = 7, 2, 5, 8
    inits, nodes = [], []
    prev = "X"
    for layer in range(2):
        isz = inp if layer == 0 else hidden
        for n, arr in (("W", rand(1, 4 * hidden, isz)), ("R", rand(1, 4 * hidden, hidden)),
                       ("B", rand(1, 8 * hidden))):
            inits.append(numpy_helper.from_array(arr, f"{n}{layer}"))
        nodes.append(helper.make_node("LSTM", [prev, f"W{layer}", f"R{layer}", f"B{layer}", "",
                                               f"h0_{layer}", f"c0_{layer}"],
                                      [f"Y{layer}", f"Yh{layer}", f"Yc{layer}"], hidden_size=hidden))
        nodes.append(helper.make_node("Squeeze", [f"Y{layer}", "axis1"], [f"S{layer}"]))
        prev = f"S{layer}"
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    nodes.append(helper.make_node("Concat", ["Yh0", "Yh1"], ["h_n"], axis=0))
    feeds = {"X": rand(seq, batch, inp, scale=1.0)}
    inputs = [helper.make_tensor_value_info("X", F, [seq, batch, inp])]
    for layer in range(2):
        for n in ("h0", "c0"):
            feeds[f"{n}_{layer}"] = rand(1, batch, hidden)
            inputs.append(helper.make_tensor_value_info(f"{n}_{layer}", F, [1, batch, hidden]))
    outputs = [helper.make_tensor_value_info("S1", F, [seq, batch, hidden]),
               helper.make_tensor_value_info("h_n", F, [2, batch, hidden])]
    save_case(root, "lstm_two_layer_torch_style",
              helper.make_graph(nodes, "lstm2", inputs, outputs, inits), feeds, 14)


def if_case(root, cond_value):
    x = helper.make_tensor_value_info("x", F, [3, 4])
    w = numpy_helper.from_array(rand(3, 4), "w")
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [3, 4])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"]),
                                helper.make_node("Tanh", ["e"], ["e2"])], "else", [],
                               [helper.make_tensor_value_info("e2", F, [3, 4])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph([node], "if_capture",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []), x],
                              [helper.make_tensor_value_info("y", F, [3, 4])], [w])
    save_case(root, f"if_runtime_cond_{cond_value}", graph,
              {"c": np.array(cond_value), "x": rand(3, 4)}, 16)


def loop_case(root):
    """y = y * a + x[i] for i < M, with scan output y per step; a is captured."""
    m = numpy_helper.from_array(np.array(4, np.int64), "M")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
         helper.make_node("Mul", ["y_in", "a"], ["ya"]),
         helper.make_node("Add", ["ya", "xi"], ["y_out"]),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", F, [3]),
         helper.make_tensor_value_info("scan", F, [3])])
    node = helper.make_node("Loop", ["M", "", "y0"], ["y", "ys"], body=body)
    graph = helper.make_graph([node], "loop_capture",
                              [helper.make_tensor_value_info("y0", F, [3]),
                               helper.make_tensor_value_info("x", F, [4, 3]),
                               helper.make_tensor_value_info("a", F, [3])],
                              [helper.make_tensor_value_info("y", F, [3]),
                               helper.make_tensor_value_info("ys", F, [4, 3])], [m])
    save_case(root, "loop_build_time_trips", graph,
              {"y0": rand(3), "x": rand(4, 3), "a": rand(3)}, 16)


def runtime_loop_cases(root):
    """Loops on a run-time trip count and/or condition (the Loop stays a node:
    a CUDA graph WHILE node on the GPU), at several trip counts each."""
    I64, BOOL = TensorProto.INT64, TensorProto.BOOL
    vi = helper.make_tensor_value_info
    # for i < M: y = tanh(y * a + x) + 0.01 * i  (a, x captured; i the iteration number)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["y_in", "a"], ["ya"]),
         helper.make_node("Add", ["ya", "x"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["t"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["fi", "step"], ["di"]),
         helper.make_node("Add", ["t", "di"], ["y_out"])],
        "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("y_in", F, [2, 3])],
        [vi("cond_out", BOOL, []), vi("y_out", F, [2, 3])])
    step = numpy_helper.from_array(np.array(0.01, np.float32), "step")
    for trips in (0, 1, 4, 37):
        graph = helper.make_graph(
            [helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)], "loop_runtime_m",
            [vi("M", I64, []), vi("y0", F, [2, 3]), vi("x", F, [2, 3]), vi("a", F, [2, 3])],
            [vi("y", F, [2, 3])], [step])
        save_case(root, f"loop_runtime_m_{trips}", graph,
                  {"M": np.array(trips, np.int64), "y0": rand(2, 3), "x": rand(2, 3),
                   "a": rand(2, 3)}, 16)
    # while n < K: (p, q) = (q, p + q * w); n += 1  (a swap of two carried values, a counter)
    body = helper.make_graph(
        [helper.make_node("Add", ["n_in", "one"], ["n_out"]),
         helper.make_node("Less", ["n_out", "K"], ["cond_out"]),
         helper.make_node("Mul", ["q_in", "w"], ["qw"]),
         helper.make_node("Add", ["p_in", "qw"], ["q_out"]),
         helper.make_node("Identity", ["q_in"], ["p_out"])],
        "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("n_in", I64, []),
                 vi("p_in", F, [4]), vi("q_in", F, [4])],
        [vi("cond_out", BOOL, []), vi("n_out", I64, []), vi("p_out", F, [4]), vi("q_out", F, [4])])
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    for k, start in ((0, False), (1, True), (6, True), (25, True)):
        graph = helper.make_graph(
            [helper.make_node("Loop", ["", "c0", "n0", "p0", "q0"], ["n", "p", "q"], body=body)],
            "loop_runtime_cond",
            [vi("c0", BOOL, []), vi("K", I64, []), vi("n0", I64, []), vi("p0", F, [4]),
             vi("q0", F, [4]), vi("w", F, [4])],
            [vi("n", I64, []), vi("p", F, [4]), vi("q", F, [4])], [one])
        save_case(root, f"loop_runtime_cond_{k}", graph,
                  {"c0": np.array(start), "K": np.array(k, np.int64), "n0": np.array(0, np.int64),
                   "p0": rand(4), "q0": rand(4), "w": rand(4)}, 16)
    # for i < M while sum(y) < limit: y = y + |x|  (whichever ends first)
    body = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["ax"]),
         helper.make_node("Add", ["y_in", "ax"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("y_in", F, [5])],
        [vi("cond_out", BOOL, []), vi("y_out", F, [5])])
    for trips, limit in ((3, 100.0), (50, 6.0), (50, -1.0)):
        graph = helper.make_graph(
            [helper.make_node("Loop", ["M", "c0", "y0"], ["y"], body=body)], "loop_m_and_cond",
            [vi("M", I64, []), vi("c0", BOOL, []), vi("y0", F, [5]), vi("x", F, [5]),
             vi("limit", F, [])], [vi("y", F, [5])])
        save_case(root, f"loop_m_and_cond_{trips}_{int(limit)}", graph,
                  {"M": np.array(trips, np.int64), "c0": np.array(True), "y0": rand(5),
                   "x": rand(5), "limit": np.array(limit, np.float32)}, 16)


def scan_case(root):
    """A running h = tanh(h W + x_t) over axis 1 of x, reversed, outputs on axis 1."""
    w = numpy_helper.from_array(rand(4, 4), "w")
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["out"])],
        "body",
        [helper.make_tensor_value_info("h_in", F, [2, 4]),
         helper.make_tensor_value_info("xt", F, [2, 4])],
        [helper.make_tensor_value_info("h_out", F, [2, 4]),
         helper.make_tensor_value_info("out", F, [2, 4])])
    node = helper.make_node("Scan", ["h0", "x"], ["h", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])
    graph = helper.make_graph([node], "scan_capture",
                              [helper.make_tensor_value_info("h0", F, [2, 4]),
                               helper.make_tensor_value_info("x", F, [2, 5, 4])],
                              [helper.make_tensor_value_info("h", F, [2, 4]),
                               helper.make_tensor_value_info("ys", F, [2, 5, 4])], [w])
    save_case(root, "scan_reverse_axis1", graph, {"h0": rand(2, 4), "x": rand(2, 5, 4)}, 16)


def build_cases(root):
    recurrent_case(root, "rnn_forward", "RNN")
    recurrent_case(root, "rnn_bidir_lens_init", "RNN", direction="bidirectional", with_lens=True,
                   with_init=True, activations=["LeakyRelu", "Elu"], activation_alpha=[0.1, 0.6])
    recurrent_case(root, "rnn_reverse_layout1_clip", "RNN", direction="reverse", layout=1, clip=0.8)
    recurrent_case(root, "gru_forward", "GRU")
    recurrent_case(root, "gru_bidir_lbr_lens", "GRU", direction="bidirectional", with_lens=True,
                   with_init=True, linear_before_reset=1)
    recurrent_case(root, "gru_reverse_layout1", "GRU", direction="reverse", layout=1,
                   with_init=True)
    recurrent_case(root, "gru_activations", "GRU", activations=["HardSigmoid", "ScaledTanh"],
                   activation_alpha=[0.3, 0.9], activation_beta=[0.4, 0.8])
    recurrent_case(root, "lstm_forward_peephole", "LSTM", peephole=True, with_init=True)
    recurrent_case(root, "lstm_bidir_lens_layout1", "LSTM", direction="bidirectional", layout=1,
                   with_lens=True, with_init=True, peephole=True)
    recurrent_case(root, "lstm_reverse_clip", "LSTM", direction="reverse", clip=0.5)
    recurrent_case(root, "lstm_no_bias_opset7", "LSTM", with_bias=False, opset=7)
    recurrent_case(root, "lstm_activations", "LSTM", activations=["HardSigmoid", "ScaledTanh", "Elu"],
                   activation_alpha=[0.3, 0.9, 0.7], activation_beta=[0.4, 0.8])
    two_layer_lstm(root)
    if_case(root, True)
    if_case(root, False)
    loop_case(root)
    runtime_loop_cases(root)
    scan_case(root)


def refusals(root, graphc):
    """Models graphc must refuse with a message naming what is wrong (static shapes)."""
    failures = []
    then_g = helper.make_graph([helper.make_node("Constant", [], ["t"], value_floats=[1.0, 2.0])],
                               "then", [], [helper.make_tensor_value_info("t", F, [2])])
    else_g = helper.make_graph([helper.make_node("Constant", [], ["e"], value_floats=[1.0, 2.0, 3.0])],
                               "else", [], [helper.make_tensor_value_info("e", F, [3])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
                              "if_shapes", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", F, None)])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["x"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("scan", F, [2])])
    loop = helper.make_graph([helper.make_node("Loop", ["m", ""], ["ys"], body=body)], "loop_runtime_m",
                             [helper.make_tensor_value_info("m", TensorProto.INT64, []),
                              helper.make_tensor_value_info("x", F, [2])],
                             [helper.make_tensor_value_info("ys", F, None)])
    for g, want in ((graph, "with a run-time condition graphc needs both alike"),
                    (loop, "needs its trip count M known at build time")):
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
        path = os.path.join(root, g.name + ".onnx")
        onnx.save(model, path)
        r = subprocess.run([graphc, "build", path, "--arch", "sm_90", "-o", path + ".engine"], capture_output=True, text=True)
        if r.returncode == 0 or want not in r.stderr:
            failures.append(f"{g.name}: rc {r.returncode}, stderr {r.stderr[-400:]!r}, wanted {want!r}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--out")
    ap.add_argument("--backend", default="reference")
    args = ap.parse_args()
    root = args.out or tempfile.mkdtemp(prefix="graphc_rnn_cf_")
    build_cases(root)
    count = len([d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))])
    # Plain: the reference kernels. --optimize: the default pipeline first, so
    # lower-recurrent's and inline-control-flow's rewrites run on the CPU.
    if args.backend == "reference":
        bad = refusals(tempfile.mkdtemp(prefix="graphc_cf_bad_"), args.graphc)
        for b in bad:
            print("FAIL (refusal):", b)
        if bad:
            return 1
        print("OK: run-time-shaped If and Loop are refused with their reason")
    runs = [[]] if args.backend == "cuda" else [[], ["--optimize"]]
    for extra in runs:
        r = subprocess.run([args.graphc, "conformance", root, "--backend", args.backend, "--rtol",
                            "1e-4", "--atol", "1e-5", "--verbose"] + extra,
                           capture_output=True, text=True)
        print(r.stdout + r.stderr)
        # An If on a run-time condition runs both branches and a Where (inline-control-flow),
        # a Loop on a run-time count a CUDA graph WHILE node: on the GPU too, so nothing skips.
        skips = 0
        want = f"conformance: {count - skips} passed, 0 failed, {skips} skipped of {count}"
        if r.returncode != 0 or want not in r.stdout + r.stderr:
            print(f"FAIL ({' '.join(extra) or 'plain'}): expected '{want}'")
            return 1
        print(f"OK ({' '.join(extra) or 'plain'}): {count} cases match onnxruntime")
    return 0


if __name__ == "__main__":
    sys.exit(main())
