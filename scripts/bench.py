#!/usr/bin/env python3
"""graphc against PyTorch on this GPU, in one run: per configuration,
PyTorch eager (fp16), torch.compile (default and mode="reduce-overhead", compile
time = the first call) and the graphc engine (fp16, `graphc run --json`'s GPU
compute median, inputs already on the GPU) plus its build time; and the elementwise
chain y = gelu_tanh((x + b) * s) + r on 64M fp16 elements against a device-to-device
copy of the same bytes (graphc must reach >= 80% of the copy's bandwidth).

  python3 scripts/bench.py --graphc build/graphc --models-dir /tmp/graphc-real-models \\
      [--out-dir bench/results] [--models resnet50_b1 bert_b32 ...] [--no-chain] [--deadline EPOCH]

Writes OUT_DIR/<device>-<date>.json (every timing, versions, GPU state before and
after), .md (the table and how it was measured) and .png (graphc / torch.compile per
model). Results are saved after every variant; a later run with the same --out-dir
goes on with what is missing (a failed variant is kept as failed; --redo runs all).
"""
import argparse
import glob
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common as bc  # noqa: E402
import bench_report  # noqa: E402
import png_chart  # noqa: E402

VARIANTS = ["eager", "compile", "compile_ro", "graphc"]
# The least time one more configuration needs (two torch.compile runs and a build).
MIN_SECONDS_PER_CONFIG = 90
MIN_SECONDS_CHAIN = 45


def nvidia_smi_state():
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=False).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    return dict(zip(q.split(","), (v.strip() for v in out[0].split(",")))) if out else {"error": "no output"}


def error_text(e):
    """The exception and the last frames, short enough for the JSON and the summary."""
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return (f"{type(e).__name__}: {str(e)[:1500]} | " + "".join(tb[-3:])[-800:]).strip()


class Timer:
    """CUDA-event latency of fn(): warm-up, then one sample per call, each synchronized."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def __call__(self, fn):
        a, torch = self.args, self.torch
        t0, n = time.perf_counter(), 0
        while n < a.warmup_runs or time.perf_counter() - t0 < a.warmup_s:
            fn()
            n += 1
        torch.cuda.synchronize()
        samples, t0 = [], time.perf_counter()
        while (len(samples) < a.min_runs or time.perf_counter() - t0 < a.min_s) and len(samples) < a.max_runs:
            self.start.record()
            fn()
            self.end.record()
            self.end.synchronize()
            samples.append(self.start.elapsed_time(self.end))
        return bc.summarize(samples)


def torch_inputs(torch, config, arrays):
    """The configuration's inputs on the GPU, floats as fp16 (the half model's dtype)."""
    xs = []
    for spec in config.inputs:
        t = torch.from_numpy(arrays[spec.name]).cuda()
        xs.append(t.half() if t.is_floating_point() else t)
    return xs


def cudagraph_skips():
    """Inductor's count of graphs it ran without CUDA graphs (None where this torch has none)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:  # noqa: BLE001 - informational only
        return None


def time_torch_variant(torch, variant, model, xs, timer):
    """eager / compile / compile_ro on one model: {"status", "latency", "compile_s"?}."""
    rec = {}
    try:
        with torch.inference_mode():
            if variant == "eager":
                fn = model
            else:
                torch._dynamo.reset()
                skips = cudagraph_skips()
                mode = "reduce-overhead" if variant == "compile_ro" else None
                fn = torch.compile(model, mode=mode, dynamic=False)
                t0 = time.perf_counter()
                fn(*xs)
                torch.cuda.synchronize()
                rec["compile_s"] = round(time.perf_counter() - t0, 2)
            rec["latency"] = timer(lambda: fn(*xs))
            if variant == "compile_ro" and skips is not None and cudagraph_skips() is not None:
                # > 0: Inductor fell back to no CUDA graph for part of the model
                rec["cudagraph_skips"] = cudagraph_skips() - skips
        rec["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - fail soft: record and go on
        rec.update(status="failed", error=error_text(e))
    finally:
        if variant != "eager":
            torch._dynamo.reset()
        torch.cuda.empty_cache()
    return rec


def graphc_variant(config, onnx_path, arrays, args, work, log, deadline):
    """Build (fp16, --convert-io; without it if that fails) and `graphc run --json`."""
    os.makedirs(work, exist_ok=True)
    engine = os.path.join(work, f"{config.name}-fp16.engine")
    extra = ["--no-cache"] if args.graphc_no_cache else []
    build = bc.graphc_build(args.graphc, onnx_path, engine, config, "fp16", deadline.limit(args.build_timeout), log,
                            extra=extra + ["--convert-io"])
    rec = {"build": build, "io": "fp16 (--convert-io)"}
    if not build["ok"]:
        first_error = build["error"]
        build = bc.graphc_build(args.graphc, onnx_path, engine, config, "fp16", deadline.limit(args.build_timeout),
                                log, extra=extra)
        rec.update(build=build, io=f"as in the model (--convert-io failed: {first_error[:300]})")
        if not build["ok"]:
            rec.update(status="failed", error=build["error"])
            return rec
    cast = np.float16 if "--convert-io" in build["flags"] else None
    flags = bc.save_inputs(arrays, os.path.join(work, f"{config.name}-inputs"), cast_float_to=cast)
    out_dir = os.path.join(work, f"{config.name}-outputs")
    proc, written, report = bc.graphc_run(args.graphc, engine, flags, deadline.limit(args.run_timeout), log,
                                          output_dir=out_dir, json_path=os.path.join(work, f"{config.name}-run.json"),
                                          iterations=args.min_runs, warmup_ms=int(args.warmup_s * 1000),
                                          duration_s=args.min_s)
    if proc.rc != 0:
        rec.update(status="failed", error=proc.error("graphc run"))
        return rec
    # A fast engine that computes NaN is no result (correctness itself is compare_models.py's).
    nonfinite = sum(int(np.count_nonzero(~np.isfinite(np.load(w).astype(np.float32)))) for w in written)
    if nonfinite or not written:
        rec.update(status="wrong", error=f"{nonfinite} non-finite output values ({len(written)} outputs)")
        return rec
    rec.update(status="ok", latency=graphc_latency(report), cuda_graph=report.get("cuda_graph"),
               h2d_ms_median=report["h2d_ms"]["median"], enqueue_host_ms_median=report["enqueue_host_ms"]["median"],
               device_memory_bytes=report.get("device_memory_bytes"))
    if not args.keep_engines:
        os.remove(engine)
    return rec


def graphc_latency(report):
    g = report["gpu_compute_ms"]
    return {"median_ms": g["median"], "min_ms": g["min"], "mean_ms": g["mean"], "p90_ms": g["p90"],
            "runs": report["iterations"]}


def bench_config(torch, config, args, store, timer, log, deadline):
    """Every variant of one configuration, saved after each (a resumed partial record
    keeps the variants it has)."""
    key = config.name
    rec = dict(store.results.get(key) or {})  # a resumed record keeps its measured variants
    rec.pop("error", None)
    rec.update(config=config.name, model=config.model, shapes=config.shape_flags(), status="partial")
    onnx_path = os.path.join(args.models_dir, f"{config.model}.onnx")
    if not os.path.exists(onnx_path):
        rec.update(status="failed", error=f"no model {onnx_path} (export failed or not run)")
        store.put(key, rec)
        return
    seed = rec.setdefault("seed", args.seed if args.seed is not None else int(time.time_ns() % (2**31)))
    arrays = bc.make_inputs(config, dict(bc.onnx_io(onnx_path)[0]), np.random.default_rng(seed))
    model = None
    for variant in args.variants:
        if variant in rec:
            continue
        if variant == "graphc":
            rec[variant] = graphc_variant(config, onnx_path, arrays, args, os.path.join(args.work, "engines"),
                                          log, deadline)
        else:
            if variant != "eager" and not deadline.allows(45):
                rec["status"] = "skipped"
                rec["error"] = f"time budget: {deadline.left():.0f} s left before {variant}"
                break
            if model is None:
                try:
                    model = build_torch_model(torch, config)
                except Exception as e:  # noqa: BLE001
                    for v in [v for v in args.variants if v != "graphc"]:
                        rec[v] = {"status": "failed", "error": "model construction: " + error_text(e)}
                    store.put(key, rec)
                    continue
            rec[variant] = time_torch_variant(torch, variant, model, torch_inputs(torch, config, arrays), timer)
        print(f"  {config.name} {variant}: {summary_cell(rec[variant])}", flush=True)
        store.put(key, rec)
    if rec["status"] == "partial":
        rec["status"] = "done"
        rec["graphc_over_compile"] = bench_report.bench_ratio(rec)
    store.put(key, rec)
    del model
    torch.cuda.empty_cache()


def summary_cell(v):
    if v.get("status") != "ok":
        return f"{v.get('status')}: {str(v.get('error', ''))[:300]}"
    s = f"median {v['latency']['median_ms']:.4f} ms over {v['latency']['runs']} runs"
    if "compile_s" in v:
        s += f", compile {v['compile_s']} s"
    if "build" in v:
        s += f", build {v['build']['seconds']} s"
    return s


_MODULE_CACHE = {}


def build_torch_model(torch, config):
    """scripts/export_models.py's module (the ONNX file's architecture), fp16 on the GPU."""
    if config.model not in _MODULE_CACHE:
        _MODULE_CACHE.clear()  # one model on the GPU at a time
        import export_models

        try:
            # PyTorch's default attention (SDPA), the same weights as the ONNX file.
            module = export_models.module(config.model, attn="sdpa")[0]
        except SystemExit as e:  # export_models' "unknown model"
            raise RuntimeError(f"scripts/export_models.py cannot build '{config.model}': {e}") from None
        _MODULE_CACHE[config.model] = module.half().cuda().eval()
    return _MODULE_CACHE[config.model]


def bench_chain(torch, args, store, timer, log, deadline):
    """The elementwise chain: graphc, a copy of the same bytes, torch eager and compile."""
    key = "elementwise_chain"
    cols = 1024
    rows = args.chain_elements // cols
    n = rows * cols
    nbytes = bc.chain_bytes(rows, cols)
    rec = {"shape": [rows, cols], "elements": n, "bytes": nbytes, "status": "partial"}
    work = os.path.join(args.work, "chain")
    os.makedirs(work, exist_ok=True)
    import onnx

    model = bc.chain_model(rows, cols)
    path = os.path.join(work, "chain.onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(args.seed if args.seed is not None else time.time_ns() % (2**31))
    x = rng.standard_normal((rows, cols), dtype=np.float32).astype(np.float16)
    r = rng.standard_normal((rows, cols), dtype=np.float32).astype(np.float16)
    flags = bc.save_inputs({"x": x, "r": r}, work)
    config = bc.Config("elementwise_chain", "chain", (bc.InputSpec("x", (rows, cols), "float"),
                                                      bc.InputSpec("r", (rows, cols), "float")))
    engine = os.path.join(work, "chain.engine")
    build = bc.graphc_build(args.graphc, path, engine, config, "fp16", deadline.limit(args.build_timeout), log)
    g = {"build": build}
    if build["ok"]:
        out_dir = os.path.join(work, "out")
        proc, written, report = bc.graphc_run(args.graphc, engine, flags, deadline.limit(args.run_timeout), log,
                                              output_dir=out_dir, json_path=os.path.join(work, "run.json"),
                                              iterations=args.min_runs, warmup_ms=int(args.warmup_s * 1000),
                                              duration_s=args.min_s)
        if proc.rc == 0 and len(written) == 1:
            g.update(status="ok", latency=graphc_latency(report))
            g["check"] = bc.error_metrics(np.load(written[0]), bc.chain_reference(x, r, model))
            if not g["check"]["rel_l2"] < 1e-2:
                g.update(status="wrong", error=f"output differs from numpy: relative L2 {g['check']['rel_l2']}")
        else:
            g.update(status="failed", error=proc.error("graphc run"))
    else:
        g.update(status="failed", error=build["error"])
    rec["graphc"] = g
    store.put(key, rec)

    xt = torch.from_numpy(x).cuda()
    rt = torch.from_numpy(r).cuda()
    from onnx import numpy_helper

    w = {t.name: torch.from_numpy(numpy_helper.to_array(t)).cuda() for t in model.graph.initializer}
    bt, st = w["b"], w["s"]
    src = torch.empty(nbytes // 2 // 2, dtype=torch.float16, device="cuda").normal_()
    dst = torch.empty_like(src)
    rec["copy"] = {"status": "ok", "latency": timer(lambda: dst.copy_(src)), "bytes": 2 * src.numel() * 2}

    def chain(a, b, s, res):
        return torch.nn.functional.gelu((a + b) * s, approximate="tanh") + res

    with torch.inference_mode():
        try:
            rec["eager"] = {"status": "ok", "latency": timer(lambda: chain(xt, bt, st, rt))}
        except Exception as e:  # noqa: BLE001
            rec["eager"] = {"status": "failed", "error": error_text(e)}
        try:
            torch._dynamo.reset()
            cf = torch.compile(chain, dynamic=False)
            t0 = time.perf_counter()
            cf(xt, bt, st, rt)
            torch.cuda.synchronize()
            rec["compile"] = {"status": "ok", "compile_s": round(time.perf_counter() - t0, 2),
                              "latency": timer(lambda: cf(xt, bt, st, rt))}
        except Exception as e:  # noqa: BLE001
            rec["compile"] = {"status": "failed", "error": error_text(e)}
        torch._dynamo.reset()
    for v in ("copy", "graphc", "eager", "compile"):
        lat = (rec.get(v) or {}).get("latency")
        if lat and rec[v].get("status") == "ok":
            moved = rec[v].get("bytes", nbytes)
            rec[v]["gbps"] = moved / (lat["median_ms"] * 1e-3) / 1e9
    rec["ratio_to_copy"] = bc.ratio((rec["graphc"] or {}).get("gbps"), rec["copy"].get("gbps"))
    rec["floor"] = rec["ratio_to_copy"] is not None and rec["ratio_to_copy"] >= 0.8
    rec["status"] = "ok" if g.get("status") == "ok" else "failed"
    if g.get("status") != "ok":
        rec["error"] = g.get("error")
    store.put(key, rec)
    del xt, rt, src, dst
    torch.cuda.empty_cache()


def results_path(out_dir, device_slug, resume):
    """OUT_DIR/<device>-<date>.json; on resume the newest one of this device."""
    if resume:
        old = sorted(glob.glob(os.path.join(out_dir, f"{device_slug}-20*.json")), key=os.path.getmtime)
        if old:
            return old[-1]
    return os.path.join(out_dir, f"{device_slug}-{time.strftime('%Y-%m-%d', time.gmtime())}.json")


def write_reports(store, json_path, args):
    base = json_path[:-len(".json")]
    bc.write_text_atomic(base + ".md", bench_report.bench_markdown(store.data))
    items = [(name, bench_report.bench_ratio(rec)) for name, rec in store.results.items()
             if name != "elementwise_chain"]
    if items:
        store.data["meta"]["png_backend"] = png_chart.write_ratio_chart(
            base + ".png", items, "graphc time / torch.compile time (lower is better)", backend=args.png_backend)
        store.save()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(HERE), "bench", "results"))
    ap.add_argument("--work", default="/tmp/graphc-bench-work", help="engines, .npy inputs, the chain model")
    ap.add_argument("--models", nargs="*", default=list(bc.CONFIGS))
    ap.add_argument("--configs-json")
    ap.add_argument("--variants", nargs="*", default=VARIANTS, choices=VARIANTS)
    ap.add_argument("--no-chain", action="store_true", help="skip the elementwise chain")
    ap.add_argument("--chain-only", action="store_true", help="only the elementwise chain")
    ap.add_argument("--chain-elements", type=int, default=64 * 2**20)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--warmup-runs", type=int, default=10)
    ap.add_argument("--warmup-s", type=float, default=0.5)
    ap.add_argument("--min-runs", type=int, default=50)
    ap.add_argument("--min-s", type=float, default=2.0)
    ap.add_argument("--max-runs", type=int, default=20000)
    ap.add_argument("--build-timeout", type=float, default=300)
    ap.add_argument("--run-timeout", type=float, default=120)
    ap.add_argument("--graphc-no-cache", action="store_true",
                    help="time a cold `graphc build` (--no-cache; default: the NVRTC cache, hits recorded)")
    ap.add_argument("--keep-engines", action="store_true")
    ap.add_argument("--png-backend", default="auto", choices=["auto", "builtin", "matplotlib"])
    ap.add_argument("--deadline", type=float, help="epoch seconds after which nothing new starts")
    ap.add_argument("--redo", action="store_true", help="ignore earlier results in --out-dir")
    args = ap.parse_args()
    configs = [] if args.chain_only else bc.load_configs(args.models, args.configs_json)

    import torch

    if not torch.cuda.is_available():
        print("bench.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    deadline = bc.Deadline(args.deadline)
    device = torch.cuda.get_device_name()
    smi = nvidia_smi_state()
    graphc_version = bc.run_process([args.graphc, "--version"], 30).out.strip()
    inductor_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        "/tmp", f"torchinductor_{os.environ.get('USER', 'root')}")
    inductor_state = "non-empty" if os.path.isdir(inductor_dir) and os.listdir(inductor_dir) else "empty"
    meta = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "driver": smi.get("driver_version"),
            "graphc": os.path.abspath(args.graphc), "graphc_version": graphc_version,
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "inductor_cache_dir": inductor_dir,
            "inductor_cache_state": inductor_state,
            "method": {"warmup_runs": args.warmup_runs, "warmup_s": args.warmup_s, "min_runs": args.min_runs,
                       "min_s": args.min_s, "graphc_no_cache": args.graphc_no_cache,
                       "timing": "CUDA events around each inference, synchronized after each"}}
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = results_path(args.out_dir, bc.slug(device), not args.redo)
    store = bc.ResultStore(json_path, meta, resume=not args.redo)
    store.data["meta"].setdefault("gpu_state", {})["before"] = smi
    store.save()
    timer = Timer(torch, args)
    os.makedirs(args.work, exist_ok=True)
    with open(os.path.join(args.work, "bench.log"), "a") as log:
        for config in configs:
            if store.done(config.name) and store.results[config.name].get("status") != "partial":
                print(f"{config.name}: recorded already", flush=True)
                continue
            if not deadline.allows(MIN_SECONDS_PER_CONFIG):
                old = store.results.get(config.name) or {}
                store.put(config.name, {**old, "config": config.name, "status": "skipped",
                                        "error": f"time budget: {deadline.left():.0f} s left"})
                print(f"{config.name}: skipped (time budget)", flush=True)
                continue
            print(f"{config.name}:", flush=True)
            try:
                bench_config(torch, config, args, store, timer, log, deadline)
            except Exception as e:  # noqa: BLE001 - one model never stops the others
                old = store.results.get(config.name) or {}
                store.put(config.name, {**old, "config": config.name, "status": "failed", "error": error_text(e)})
            write_reports(store, json_path, args)
        if not args.no_chain and not store.done("elementwise_chain"):
            if deadline.allows(MIN_SECONDS_CHAIN):
                try:
                    bench_chain(torch, args, store, timer, log, deadline)
                except Exception as e:  # noqa: BLE001
                    store.put("elementwise_chain", {"status": "failed", "error": error_text(e)})
            else:
                store.put("elementwise_chain", {"status": "skipped", "error": "time budget"})
    store.data["meta"]["gpu_state"]["after"] = nvidia_smi_state()
    store.save()
    write_reports(store, json_path, args)
    print(bench_report.bench_summary(store.data), flush=True)
    print(f"wrote {json_path} and its .md/.png", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
