#!/usr/bin/env python3
"""Real models end to end: for each configuration, `graphc build` fp32 and
fp16 (--precision fp16; inputs and outputs keep their ONNX dtype) for this machine's
GPU, one `graphc run` on fresh random inputs, and onnxruntime (CPU) on the same
inputs; relative L2 and max abs error per output. Pass: fp32 < 1e-3, fp16 <
max(1e-2, 3x PyTorch's own fp16 error on the same inputs) where PyTorch and a GPU are here
(the exporting module run in fp16 against onnxruntime's fp32 outputs; else fp16 < 1e-2).

  python3 scripts/compare_models.py --graphc build/graphc --models-dir /tmp/graphc-real-models \\
      --out /tmp/compare [--models resnet50_b1 bert_b32 ...] [--precisions fp32 fp16]

Writes OUT/real-models.json (every record, the seed, versions) and OUT/real-models.md
(the table for docs/reports/real-models.md), OUT/compare.log (every command and its
output). One failing model is recorded with its error and the others go on. With
--deadline EPOCH, configurations that no longer fit are recorded as skipped and a
later run with the same --out does only those (and the ones not yet run).
"""
import argparse
import os
import platform
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402
import bench_report  # noqa: E402

# The least time a configuration needs (two builds of a large model and two runs);
# below that it is left for the next run instead of being killed half-way.
MIN_SECONDS_PER_CONFIG = 60
# A pass also needs the outputs of two random inputs to differ by this many
# times the bound (relative L2): else any output near that constant would pass.
SENSITIVITY_FACTOR = 5
# An fp16 engine may be off by this many times PyTorch's own fp16 error on the same inputs
# (when that is above the flat bound): some models lose that much to fp16 whoever runs them.
TORCH_FP16_FACTOR = 3


def torch_fp16_errors(config, inputs, expected, out_names):
    """{output: rel L2 of scripts/export_models.py's module run in fp16 on the GPU against
    onnxruntime's fp32 outputs}, or {} where PyTorch, a GPU or the module is not here."""
    try:
        import torch
        if not torch.cuda.is_available():
            return {}
        import export_models
        module = export_models.module(config.model)[0].half().cuda().eval()
        xs = []
        for spec in config.inputs:
            t = torch.from_numpy(inputs[spec.name]).cuda()
            xs.append(t.half() if t.is_floating_point() else t)
        with torch.no_grad():
            got = module(*xs)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        if len(got) != len(out_names):
            return {}
        errors = {n: bc.error_metrics(g.float().cpu().numpy(), expected[n])["rel_l2"]
                  for n, g in zip(out_names, got)}
        del module
        torch.cuda.empty_cache()
        return errors
    except Exception as e:  # noqa: BLE001 - no PyTorch reference: the flat bound applies
        print(f"{config.name}: no PyTorch fp16 reference ({type(e).__name__}: {str(e)[:200]})", flush=True)
        return {}


def compare_config(config, args, work, log, deadline):
    """Records for (config, precision) in args.precisions; ORT runs once per config."""
    model = os.path.join(args.models_dir, f"{config.model}.onnx")
    base = {"config": config.name, "model": config.model, "shapes": config.shape_flags()}
    if not os.path.exists(model):
        return {p: {**base, "precision": p, "status": "failed",
                    "error": f"no model {model} (export failed or not run)"} for p in args.precisions}
    seed = args.seed if args.seed is not None else int(time.time_ns() % (2**31))
    try:
        in_dtypes, out_names = bc.onnx_io(model)
        inputs = bc.make_inputs(config, dict(in_dtypes), np.random.default_rng(seed))
        flags = bc.save_inputs(inputs, os.path.join(work, config.name, "inputs"))
        t0 = time.monotonic()
        expected = bc.run_onnxruntime(model, inputs, args.ort_threads)
        ort_seconds = time.monotonic() - t0
        # How much the outputs change for another random input: a check whose
        # outputs barely depend on the inputs cannot fail (random weights can give
        # near-constant outputs), so it must exceed the bound many times over.
        other = bc.run_onnxruntime(model, bc.make_inputs(config, dict(in_dtypes),
                                                         np.random.default_rng(seed + 1)),
                                   args.ort_threads)
        sensitivity = {n: bc.error_metrics(other[n], expected[n])["rel_l2"] for n in out_names}
    except Exception as e:  # noqa: BLE001 - any failure is this model's, recorded
        return {p: {**base, "precision": p, "seed": seed, "status": "failed",
                    "error": f"inputs or onnxruntime: {type(e).__name__}: {str(e)[:1000]}"}
                for p in args.precisions}
    torch_fp16 = torch_fp16_errors(config, inputs, expected, out_names) if "fp16" in args.precisions else {}
    records = {}
    for precision in args.precisions:
        rec = {**base, "precision": precision, "seed": seed, "ort_seconds": round(ort_seconds, 2),
               "tolerance_rel_l2": bc.TOLERANCE[precision], "min_sensitivity": SENSITIVITY_FACTOR * bc.TOLERANCE[precision]}
        records[precision] = rec
        engine = os.path.join(work, config.name, f"{precision}.engine")
        build = bc.graphc_build(args.graphc, model, engine, config, precision, deadline.limit(args.build_timeout),
                                log, extra=args.build_flag)
        rec["build"] = build
        if not build["ok"]:
            rec.update(status="failed", error=build["error"])
            continue
        out_dir = os.path.join(work, config.name, f"out-{precision}")
        shutil.rmtree(out_dir, ignore_errors=True)
        proc, written, _ = bc.graphc_run(args.graphc, engine, flags, deadline.limit(args.run_timeout), log,
                                         output_dir=out_dir)
        rec["run_seconds"] = round(proc.seconds, 2)
        if proc.rc != 0:
            rec.update(status="failed", error=proc.error("graphc run"))
            continue
        if len(written) != len(out_names):
            rec.update(status="failed", error=f"graphc run wrote {len(written)} outputs, the model has "
                       f"{len(out_names)} ({', '.join(out_names)})")
            continue
        rec["outputs"] = []
        for name, path in zip(out_names, written):
            m = bc.error_metrics(np.load(path), expected[name])
            m["output"] = name
            m["input_sensitivity"] = sensitivity[name]
            m["discriminating"] = bool(sensitivity[name] is not None and
                                       sensitivity[name] >= SENSITIVITY_FACTOR * bc.TOLERANCE[precision])
            bound = bc.TOLERANCE[precision]
            if precision == "fp16" and torch_fp16.get(name) is not None:
                m["torch_fp16_rel_l2"] = torch_fp16[name]
                bound = max(bound, TORCH_FP16_FACTOR * torch_fp16[name])
            m["bound_rel_l2"] = bound
            m["pass"] = bool(m["rel_l2"] < bound and m["discriminating"])
            rec["outputs"].append(m)
        rec["status"] = "pass" if all(o["pass"] for o in rec["outputs"]) else "fail"
        if not args.keep_engines:
            os.remove(engine)
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--models-dir", required=True, help="folder of scripts/export_models.py's .onnx files")
    ap.add_argument("--out", required=True, help="results folder (resumed when it holds real-models.json)")
    ap.add_argument("--models", nargs="*", default=list(bc.CONFIGS), help="configurations (default: all)")
    ap.add_argument("--configs-json", help="more configurations: [{name, model, inputs: [{name, shape, kind}]}]")
    ap.add_argument("--precisions", nargs="*", default=["fp32", "fp16"], choices=sorted(bc.TOLERANCE))
    ap.add_argument("--seed", type=int, help="input seed (default: a fresh one per run, recorded)")
    ap.add_argument("--build-timeout", type=float, default=300)
    ap.add_argument("--run-timeout", type=float, default=120)
    ap.add_argument("--ort-threads", type=int, default=0, help="onnxruntime intra-op threads (0: all cores)")
    ap.add_argument("--build-flag", action="append", default=[], help="extra `graphc build` flag (repeatable)")
    ap.add_argument("--deadline", type=float, help="epoch seconds after which no configuration starts")
    ap.add_argument("--redo", action="store_true", help="run the configurations even if already recorded")
    ap.add_argument("--keep-engines", action="store_true", help="keep OUT/work/*/*.engine")
    args = ap.parse_args()
    configs = bc.load_configs(args.models, args.configs_json)
    import onnxruntime

    meta = {"graphc": os.path.abspath(args.graphc), "models_dir": os.path.abspath(args.models_dir),
            "host": platform.node(), "onnxruntime": onnxruntime.__version__, "numpy": np.__version__,
            "tolerance_rel_l2": {p: bc.TOLERANCE[p] for p in args.precisions},
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    store = bc.ResultStore(os.path.join(args.out, "real-models.json"), meta, resume=not args.redo)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    deadline = bc.Deadline(args.deadline)
    with open(os.path.join(args.out, "compare.log"), "a") as log:
        for config in configs:
            keys = [f"{config.name}/{p}" for p in args.precisions]
            if not args.redo and all(store.done(k) for k in keys):
                print(f"{config.name}: recorded already (--redo to run again)", flush=True)
                continue
            if not deadline.allows(MIN_SECONDS_PER_CONFIG):
                for k, p in zip(keys, args.precisions):
                    if not store.done(k):
                        store.put(k, {"config": config.name, "precision": p, "status": "skipped",
                                      "error": f"time budget: {deadline.left():.0f} s left"})
                print(f"{config.name}: skipped (time budget)", flush=True)
                continue
            for p, rec in compare_config(config, args, work, log, deadline).items():
                store.put(f"{config.name}/{p}", rec)
                print(bench_report.compare_line(rec), flush=True)
    bc.write_text_atomic(os.path.join(args.out, "real-models.md"), bench_report.compare_markdown(store.data))
    bad = [k for k, r in store.results.items() if r.get("status") != "pass"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
