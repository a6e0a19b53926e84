#!/usr/bin/env python3
"""int8 (QDQ) engines against fp16 engines on real models.

For each configuration: the float ONNX model (exported with scripts/export_models.py
when MODELS_DIR lacks it: needs PyTorch), quantized with onnxruntime's quantize_static
(QDQ format, int8 activations and per-channel int8 weights, a few random calibration
batches), then

  - `graphc build --precision fp16` of the float model (the baseline engine) and of the
    quantized one (the int8 engine: each QDQ MatMul/Gemm becomes one int8 tensor-core
    GEMM with the dequantize fused, the rest runs in fp16 as TensorRT's --int8 --fp16);
  - `graphc inspect` of the quantized model: how many int8 GEMM and int8 conv kernels,
    and why each GEMM/conv took its path;
  - accuracy: the int8 engine against onnxruntime (CPU) running the same quantized model
    on the same fresh random inputs (relative L2), the fp16 engine against onnxruntime on
    the float model; judged against the larger of --int8-tolerance and twice onnxruntime's
    own spread on the quantized model (its fused int8 kernels against its unfused QDQ run:
    rounding differences grow over many quantized layers, docs/int8.md);
  - speed: both engines timed as scripts/bench.py does (`graphc run --json`'s GPU compute
    median after a warm-up).

`graphc build` keeps the int8 GEMMs off by default (the generated int8 GEMM measured 7-13x
slower than fp16 on BERT-base, bench/results/nvidia-h100-80gb-hbm3-2026-11-26-int8.md), so
without flags the "int8" engine is the quantized model's dequantize + float GEMMs and the
int8 GEMM column reads 0. `--int8-gemm` builds (and inspects) the quantized model with
graphc's --int8-gemm (cuBLASLt's int8 GEMM where it takes the layer, and each QDQ conv
with groups = 1 as the generated int8 tensor-core conv, docs/int8.md; `--float-convs`
keeps the convs float);
`--int8-precision fp32` passes graphc's --int8-precision fp32 (activations quantized from
fp32). The flags are recorded in int8.json and the table's title.

Run on the GPU machine (PyTorch, onnx, onnxruntime):

  python3 scripts/bench_int8.py --graphc build/graphc --models-dir /tmp/models --out OUT \\
      [--models resnet50_b1 bert_b1 ...]

`--fp8` quantizes MatMul/Gemm layers to float8 e4m3fn instead (scripts/fp8_qdq.py: per-tensor
scales from calibration, `--per-channel` weight scales; onnxruntime's own QFLOAT8E4M3FN
quantize_static fails with onnx >= 1.18) and builds the quantized model with --int8-gemm, which
makes each float8 QDQ layer cuBLASLt's FP8 GEMM (sm_89+) with a generated epilogue
(docs/int8.md); onnxruntime checks it with its graph optimizations off (its CPU QGemm fusion
takes no float8). Writes fp8.json / fp8.md; the columns keep the int8 names.

  python3 scripts/bench_int8.py --graphc build/graphc --models-dir /tmp/models --out OUT \\
      --fp8 --int8-gemm --models bert_b1 bert_b32 vit_b_16_b1

Without a GPU (or with --arch sm_90) everything up to the builds runs, and the run stage
is recorded as skipped. `--mlp` adds a small MLP made here with onnx.helper (no PyTorch),
which is how the quantize and build stages are tested on the CPU machine.
Writes OUT/int8.json (every record) and OUT/int8.md (the table).
"""
import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402

DEFAULT_MODELS = ["resnet50_b1", "resnet50_b32", "bert_b1", "bert_b32"]
MLP = bc.Config("mlp_int8_b64", "mlp_int8", (bc.InputSpec("x", (64, 256), "float"),))
INT8_REASON = "int8 tensor-core GEMM"  # the words inspect gives an int8 GEMM's path
INT8_CONV_REASON = "int8 tensor-core conv"  # ... and an int8 conv's
FP8_REASON = "float8 tensor-core GEMM"  # ... and a float8 GEMM's (--fp8)


def make_mlp(path, seed=0):
    """A float MLP (MatMul+Add+Relu, MatMul+Add+Relu, Gemm transB) with random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    dims = [256, 512, 384, 96]
    inits, nodes = [], []
    x = "x"
    for i in range(2):
        w = (rng.standard_normal((dims[i], dims[i + 1])) * np.sqrt(2 / dims[i])).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, dims[i + 1]).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"]),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"add{i}"]),
                  helper.make_node("Relu", [f"add{i}"], [f"h{i}"])]
        x = f"h{i}"
    w = (rng.standard_normal((dims[3], dims[2])) * np.sqrt(2 / dims[2])).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, dims[3]).astype(np.float32)
    inits += [numpy_helper.from_array(w, "w2"), numpy_helper.from_array(b, "b2")]
    nodes.append(helper.make_node("Gemm", [x, "w2", "b2"], ["output"], transB=1))
    graph = helper.make_graph(nodes, "mlp_int8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", dims[3]])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench_int8.py")
    model.ir_version = 8  # what onnxruntime of any recent version loads
    onnx.checker.check_model(model)
    onnx.save(model, path)


def float_model(config, models_dir, log):
    """The float ONNX file of `config`: made here (the MLP), found, or exported (PyTorch)."""
    path = os.path.join(models_dir, f"{config.model}.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(models_dir, exist_ok=True)
    if config.model == MLP.model:
        make_mlp(path)
        return path
    import export_models  # needs torch: only on the GPU machine

    log.write(f"exporting {config.model}\n")
    export_models.export(config.model, models_dir)
    return path


def quantize(config, src, dst, args, rng):
    """quantize_static in QDQ format: int8 activations (asymmetric) and per-channel int8
    weights (symmetric), calibrated on `args.calibration_batches` random batches; with
    --fp8, float8 e4m3fn Q/DQ pairs around the MatMul/Gemm layers (scripts/fp8_qdq.py)."""
    dtypes = dict(bc.onnx_io(src)[0])
    if args.fp8:
        import fp8_qdq

        t0 = time.monotonic()
        batches = [bc.make_inputs(config, dtypes, rng) for _ in range(args.calibration_batches)]
        fp8_qdq.quantize_fp8(src, dst, batches, per_channel=args.per_channel)
        return round(time.monotonic() - t0, 1)
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = [bc.make_inputs(config, dtypes, rng) for _ in range(args.calibration_batches)]

        def get_next(self):
            return self.batches.pop() if self.batches else None

    pre = dst[:-len(".onnx")] + "-pre.onnx"
    try:
        quant_pre_process(src, pre, skip_optimization=False)
    except Exception as e:  # noqa: BLE001 - shape inference fails on some exports: quantize as is
        print(f"{config.name}: quant_pre_process failed ({type(e).__name__}: {str(e)[:200]}); quantizing as is")
        pre = src
    t0 = time.monotonic()
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    op_types_to_quantize=args.op_types, use_external_data_format=args.external_data,
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    return round(time.monotonic() - t0, 1)


def int8_flags(args):
    """graphc's int8 flags for the quantized model's build and inspect."""
    return (["--int8-gemm"] if args.int8_gemm else []) + (
        ["--disable-pass", "fuse-qdq-conv"] if args.int8_gemm and args.float_convs else []) + (
        ["--int8-precision", args.int8_precision] if args.int8_precision != "same" else [])


def build(args, model, engine, config, log, extra=()):
    cmd = [args.graphc, "-v", "build", model, "--arch", args.arch, "-o", engine, "--precision", "fp16", *extra]
    for s in config.shape_flags():
        cmd += ["--shape", s]
    p = bc.run_process(cmd, args.build_timeout, log)
    rec = {"ok": p.rc == 0, "seconds": round(p.seconds, 2)}
    if p.rc != 0:
        rec["error"] = p.error("graphc build")
    else:
        rec["engine_bytes"] = os.path.getsize(engine)
    return rec


def inspect_int8(args, model, config, log):
    """How many GEMM kernels of the quantized model run on int8 tensor cores, and the
    reasons `graphc inspect` gives for the others."""
    cmd = [args.graphc, "inspect", model, "--precision", "fp16", *int8_flags(args)]
    for s in config.shape_flags():
        cmd += ["--shape", s]
    p = bc.run_process(cmd, args.build_timeout, log)
    if p.rc != 0:
        return {"error": p.error("graphc inspect")}
    lines = p.out.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("library lowering")), None)
    paths = []
    for l in lines[start + 1:] if start is not None else []:
        if not l.startswith("  "):
            break
        paths.append(l.strip())
    int8 = [l for l in paths if INT8_REASON in l or FP8_REASON in l]
    convs = [l for l in paths if INT8_CONV_REASON in l]
    return {"gemm_kernels": len(paths) - len(convs), "int8_gemm_kernels": len(int8), "int8_conv_kernels": len(convs),
            "paths": paths}


def run_engine(args, engine, flags, out_dir, json_path, log, timed):
    proc, written, report = bc.graphc_run(args.graphc, engine, flags, args.run_timeout, log, output_dir=out_dir,
                                          json_path=json_path, iterations=args.min_runs if timed else 1,
                                          warmup_ms=int(args.warmup_s * 1000) if timed else 0,
                                          duration_s=args.min_s if timed else 0)
    return proc, [np.load(w) for w in written], report


def no_gpu(proc):
    return re.search(r"no CUDA (driver|device)|libcuda\.so", proc.out or "") is not None


def bench_config(config, args, log, rng):
    work = os.path.join(args.out, "work", config.name)
    os.makedirs(work, exist_ok=True)
    rec = {"config": config.name, "int8_flags": int8_flags(args)}
    src = float_model(config, args.models_dir, log)
    qdq = os.path.join(work, f"{config.model}-qdq.onnx")
    rec["quantize_seconds"] = quantize(config, src, qdq, args, rng)
    rec["inspect"] = inspect_int8(args, qdq, config, log)
    engines = {"fp16": (src, os.path.join(work, "fp16.engine")), "int8": (qdq, os.path.join(work, "int8.engine"))}
    for name, (model, engine) in engines.items():
        rec[f"build_{name}"] = build(args, model, engine, config, log, int8_flags(args) if name == "int8" else ())
    if not all(rec[f"build_{n}"]["ok"] for n in engines):
        rec["status"] = "build failed"
        return rec
    dtypes = dict(bc.onnx_io(src)[0])
    inputs = bc.make_inputs(config, dtypes, rng)
    flags = bc.save_inputs(inputs, os.path.join(work, "inputs"))
    if not args.fp8:
        # onnxruntime's own spread on the quantized model: its fused int8 kernels (graph
        # optimizations on) against its unfused QDQ run. Over many quantized layers rounding
        # differences grow (docs/int8.md: 5.7e-2 on BERT-base), so a correct engine is judged
        # against this rather than a fixed bound alone.
        fused = bc.run_onnxruntime(qdq, inputs)
        plain = bc.run_onnxruntime(qdq, inputs, optimize=False)
        rec["ort_spread"] = max(bc.error_metrics(a, b)["rel_l2"] for a, b in zip(fused.values(), plain.values()))
    for name, (model, engine) in engines.items():
        want = bc.run_onnxruntime(model, inputs, optimize=not (args.fp8 and name == "int8"))
        proc, got, _ = run_engine(args, engine, flags, os.path.join(work, f"out-{name}"), None, log, timed=False)
        if proc.rc != 0:
            rec["status"] = "skipped: no GPU" if no_gpu(proc) else "run failed"
            rec[f"run_{name}"] = {"error": proc.error("graphc run")}
            return rec
        rec[f"accuracy_{name}"] = [bc.error_metrics(g, w) for g, w in zip(got, want.values())]
        proc, _, report = run_engine(args, engine, flags, os.path.join(work, f"out-{name}"),
                                     os.path.join(work, f"run-{name}.json"), log, timed=True)
        if proc.rc != 0 or not report:
            rec[f"run_{name}"] = {"error": proc.error("graphc run")}
            rec["status"] = "run failed"
            return rec
        g = report["gpu_compute_ms"]
        rec[f"latency_{name}"] = {"median_ms": g["median"], "min_ms": g["min"], "p90_ms": g["p90"],
                                  "runs": report["iterations"]}
    rec["speedup_int8_over_fp16"] = bc.ratio(rec["latency_fp16"]["median_ms"], rec["latency_int8"]["median_ms"])
    worst = max(a["rel_l2"] for a in rec["accuracy_int8"])
    bound = max(args.int8_tolerance, 2 * rec.get("ort_spread", 0.0))
    rec["int8_bound"] = bound
    rec["status"] = "ok" if worst < bound else f"int8 rel L2 {worst:.3g} >= {bound:.3g}"
    return rec


def markdown(records, args):
    rows = ["| config | int8 GEMMs | int8 convs | fp16 ms | int8 ms | int8 speed-up | int8 vs ORT (rel L2) | ORT's own spread "
            "| fp16 vs ORT | status |",
            "|---|---|---|---|---|---|---|---|---|---|"]

    def ms(r, k):
        v = r.get(f"latency_{k}")
        return f"{v['median_ms']:.3f}" if v else "-"

    def err(r, k):
        v = r.get(f"accuracy_{k}")
        return f"{max(a['rel_l2'] for a in v):.2e}" if v else "-"

    def spread(r):
        return f"{r['ort_spread']:.2e}" if "ort_spread" in r else "-"

    for r in records:
        ins = r.get("inspect", {})
        gemms = f"{ins.get('int8_gemm_kernels', '-')} of {ins.get('gemm_kernels', '-')}"
        sp = r.get("speedup_int8_over_fp16")
        rows.append(f"| {r['config']} | {gemms} | {ins.get('int8_conv_kernels', '-')} | {ms(r, 'fp16')} | {ms(r, 'int8')} | "
                    f"{f'{sp:.2f}x' if sp else '-'} | {err(r, 'int8')} | {spread(r)} | {err(r, 'fp16')} | "
                    f"{r.get('status', '-')} |")
    flags = " ".join(int8_flags(args)) or "none (dequantize + fp16 GEMMs)"
    if args.fp8:
        return ("# float8 e4m3fn (QDQ) against fp16 engines\n\n"
                f"graphc flags for the quantized model: {flags}. The int8 columns are the float8 engine's.\n\n"
                f"scripts/fp8_qdq.py: float8 e4m3fn activations (per tensor) and "
                f"{'per-channel' if args.per_channel else 'per-tensor'} weights around each MatMul/Gemm with a "
                f"constant 2-D weight, {args.calibration_batches} random calibration batches. Both engines "
                "`--precision fp16`; times: `graphc run --json` GPU compute median. Accuracy: relative L2 against "
                "onnxruntime (CPU, graph optimizations off for the float8 model) on the same fresh random "
                "inputs.\n\n" + "\n".join(rows) + "\n")
    return ("# int8 (QDQ) against fp16 engines\n\n"
            f"graphc int8 flags for the quantized model: {flags}.\n\n"
            f"quantize_static: QDQ, int8 activations (asymmetric), per-channel int8 weights, "
            f"{args.calibration_batches} random calibration batches, op types {args.op_types}. Both engines "
            "`--precision fp16`; times: `graphc run --json` GPU compute median. Accuracy: relative L2 against "
            "onnxruntime (CPU) on the same model (the quantized one for int8) and the same fresh random inputs.\n\n"
            + "\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--models-dir", required=True, help="float models (exported here when missing)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS, help="configurations (scripts/bench_common.py)")
    ap.add_argument("--mlp", action="store_true", help="add the small MLP made with onnx.helper")
    ap.add_argument("--arch", default="native", help="graphc build --arch (sm_90 without a GPU)")
    ap.add_argument("--op-types", nargs="*", default=["MatMul", "Gemm", "Conv"], dest="op_types")
    ap.add_argument("--int8-gemm", action="store_true", dest="int8_gemm",
                    help="build the quantized model with graphc's --int8-gemm (int8 GEMMs on)")
    ap.add_argument("--float-convs", action="store_true", dest="float_convs",
                    help="with --int8-gemm: keep QDQ convs float (--disable-pass fuse-qdq-conv), to time the "
                         "int8 convs against the int8 GEMMs alone")
    ap.add_argument("--int8-precision", choices=["same", "fp32"], default="same", dest="int8_precision",
                    help="graphc's --int8-precision for the quantized model")
    ap.add_argument("--fp8", action="store_true",
                    help="quantize MatMul/Gemm layers to float8 e4m3fn (scripts/fp8_qdq.py) instead of int8")
    ap.add_argument("--per-channel", action="store_true", dest="per_channel",
                    help="with --fp8: per-output-column weight scales (else per tensor)")
    ap.add_argument("--calibration-batches", type=int, default=4)
    ap.add_argument("--external-data", action="store_true", help="quantized weights in an external file (> 2 GB)")
    ap.add_argument("--int8-tolerance", type=float, default=2e-2,
                    help="relative L2 the int8 engine may differ from onnxruntime on the quantized model "
                         "(fp16 parts and rounding ties); the bound is the larger of this and twice "
                         "onnxruntime's own spread (its fused int8 kernels against its unfused run)")
    ap.add_argument("--build-timeout", type=float, default=600)
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--min-runs", type=int, default=100)
    ap.add_argument("--min-s", type=float, default=2.0)
    ap.add_argument("--warmup-s", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    configs = ([MLP] if args.mlp else []) + [bc.CONFIGS[m] for m in args.models]
    rng = np.random.default_rng(args.seed)
    records = []
    stem = "fp8" if args.fp8 else "int8"
    with open(os.path.join(args.out, f"{stem}.log"), "a") as log:
        for config in configs:
            try:
                rec = bench_config(config, args, log, rng)
            except Exception as e:  # noqa: BLE001 - one model's failure is recorded, the others go on
                rec = {"config": config.name, "status": f"failed: {type(e).__name__}: {str(e)[:500]}"}
            records.append(rec)
            print(f"{config.name}: {rec.get('status')}", flush=True)
            bc.write_text_atomic(os.path.join(args.out, f"{stem}.json"), json.dumps(records, indent=1))
            bc.write_text_atomic(os.path.join(args.out, f"{stem}.md"), markdown(records, args))
    print(markdown(records, args))
    return 0 if all(r.get("status") in ("ok", "skipped: no GPU") for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
