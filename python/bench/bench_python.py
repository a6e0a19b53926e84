#!/usr/bin/env python3
"""graphc's Python API on a GPU, measured (the Python package's performance checks):

1. ctx.run's host overhead: host µs per ``ctx.run`` with torch CUDA tensors
   (bound by address, PyTorch's current stream, no synchronize: the PyTorch
   fast path, python/src/torch_run.cpp) against the C++
   ``ExecutionContext::enqueue`` loop on the same buffers and stream
   (``Context.time_enqueue_us``), on two tiny engines so the host, not the GPU,
   is the bottleneck. Samples of --iterations calls (few enough that the GPU's
   launch queue never fills), the C++ loop and each ``ctx.run`` form
   interleaved, --repeats samples each, medians. The check: ≤ 10 µs more per
   call (the lists form). Also timed: dicts by name, ``stream=`` given, and
   outputs made by graphc (adds ``torch.empty`` per output).
2. ``torch.compile(model, backend="graphc")`` against eager PyTorch and
   torch.compile's default backend (inductor), in one process, on zoo models
   (--zoo; scripts/export_models.py's modules, as scripts/bench.py times them:
   random but realistic weights, SDPA attention, batch 1) in fp16 (the
   model and inputs ``.half()``; graphc builds with ``options={"precision":
   "fp16"}``: fp16 weights and activations, fp32 accumulation),
   ``cudnn.benchmark`` on: median ms per call over --model-iterations calls,
   each between two CUDA events and synchronized; compile time = the first
   call; relative L2 error against eager fp16 (match: < 1e-2, the project's
   fp16 bound) and against an fp32 eager reference; how many FX graphs
   Dynamo made and how many graphc let PyTorch run (a model compiled whole:
   one graph, none left to PyTorch).
3. The same on the three small models of python/tests/gpu/zoo.py, fp32 with
   TF32 off (match: < 1e-3), as the first GPU session measured them; then
   --zoo-extra models while the time budget lasts.

    python python/bench/bench_python.py --out OUT/python-bench.json [--budget-s 360]

Writes the JSON after every step and OUT/python-bench.md (the tables, and this
text) beside it; every model's failure is recorded and the others go on.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import sys
import time
import traceback
import warnings

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python" / "tests" / "gpu"))
sys.path.insert(0, str(REPO / "python" / "tests"))
sys.path.insert(0, str(HERE))

import bench_python_report  # noqa: E402

FP16_MATCH, FP32_MATCH = 1e-2, 1e-3
MIN_SECONDS = {"zoo": 75, "small": 20}  # the least time one more model needs


def overhead(iterations: int, repeats: int) -> dict:
    import torch

    import graphc
    from models import identity_model, two_input_model

    out = {}
    for name, model in (("identity_4x8", identity_model()), ("fused_mul_add_relu_2x16", two_input_model())):
        engine = graphc.Engine(graphc.build(model, arch="native"))
        ctx = engine.create_context()
        # New outputs each call come from PyTorch's allocator: on a context of
        # their own, so the other forms never see a rebound address (a re-capture).
        ctx_new = engine.create_context()
        ins = [torch.randn(b.shape, device="cuda") for b in engine.inputs]
        outs = [torch.empty(b.shape, device="cuda") for b in engine.outputs]
        ins_d = {b.name: t for b, t in zip(engine.inputs, ins)}
        outs_d = {b.name: t for b, t in zip(engine.outputs, outs)}
        current = torch.cuda.current_stream()
        paths = {
            "lists": lambda: ctx.run(ins, outs),
            "dicts": lambda: ctx.run(ins_d, outs_d),
            "stream_given": lambda: ctx.run(ins, outs, stream=current),
            "new_outputs": lambda: ctx_new.run(ins),
        }
        for fn in paths.values():
            for _ in range(100):  # warm-up: CUDA graph captured, caches filled
                fn()
        torch.cuda.synchronize()
        samples = {"cpp_enqueue": [], **{k: [] for k in paths}}
        for _ in range(repeats):  # interleaved, so drift hits every form alike
            samples["cpp_enqueue"].append(
                ctx.time_enqueue_us(ins, outs, stream=current.cuda_stream, iterations=iterations))
            for key, fn in paths.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(iterations):
                    fn()
                t1 = time.perf_counter()
                samples[key].append((t1 - t0) * 1e6 / iterations)
            torch.cuda.synchronize()
        med = {k: statistics.median(v) for k, v in samples.items()}
        cpp, py = med["cpp_enqueue"], med["lists"]
        out[name] = {"cpp_enqueue_us": round(cpp, 3), "python_run_us": round(py, 3),
                     "overhead_us": round(py - cpp, 3), "check_le_10us": (py - cpp) <= 10.0,
                     "run_us": {k: round(v, 3) for k, v in med.items() if k != "cpp_enqueue"},
                     # the fast path takes these tensors itself (None: it would fall back)
                     "torch_fast_path": ctx._torch_run is not None and ctx._torch_run(ins, outs) is not None,
                     "iterations": iterations, "repeats": repeats}
        print(f"overhead {name}: C++ enqueue {cpp:.2f} µs, ctx.run {py:.2f} µs, overhead {py - cpp:.2f} µs; "
              + ", ".join(f"{k} {v:.2f}" for k, v in med.items()), flush=True)
    return out


def time_ms(fn, args, iterations: int) -> float:
    import torch

    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iterations):
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def rel_l2(a, b) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def first_tensor(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def dynamo_counts() -> dict:
    """Dynamo's running counts of FX graphs made and graph breaks (informational)."""
    try:
        from torch._dynamo.utils import counters

        return {"graphs": int(counters["stats"]["unique_graphs"]),
                "breaks": int(sum(counters["graph_break"].values()))}
    except Exception:  # noqa: BLE001 - older/newer torch: left out
        return {}


def zoo_case(name: str):
    """(fp16 module, fp16 args, fp32 eager reference output): scripts/export_models.py's
    module with SDPA attention, as scripts/bench.py times it."""
    import torch

    sys.path.insert(0, str(REPO / "scripts"))
    import export_models

    module, args = export_models.module(name, attn="sdpa")[:2]
    module = module.cuda().eval()
    args = tuple(a.cuda() for a in args)
    with torch.no_grad():
        reference = first_tensor(module(*args)).float()
    module.half()
    return module, tuple(a.half() if a.is_floating_point() else a for a in args), reference


def small_case(name: str):
    from zoo import make

    model, x = make(name)  # fp32, TF32 off
    return model, (x,), None


def compare(name: str, kind: str, iterations: int) -> dict:
    """One model: eager, inductor, graphc backend (see the module's text)."""
    import torch

    entry = {"kind": kind}
    if kind == "zoo":
        entry.update(precision="fp16", source="scripts/export_models.py (sdpa)", match_bound=FP16_MATCH)
        options = {"precision": "fp16"}
    else:
        entry.update(precision="fp32 (TF32 off)", source="python/tests/gpu/zoo.py", match_bound=FP32_MATCH)
        options = {}
    model = None
    try:
        import graphc.torch  # noqa: F401  (registers the backend)

        model, args, reference = (zoo_case if kind == "zoo" else small_case)(name)
        entry["inputs"] = [f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}" for a in args]
        with torch.no_grad():
            expected = first_tensor(model(*args))
            entry["eager_ms"] = time_ms(model, args, iterations)
            if reference is not None:
                entry["eager_rel_l2_vs_fp32"] = rel_l2(expected, reference)

            torch._dynamo.reset()
            inductor = torch.compile(model)
            t0 = time.perf_counter()
            first = first_tensor(inductor(*args))
            torch.cuda.synchronize()
            entry["inductor_compile_s"] = round(time.perf_counter() - t0, 2)
            entry["inductor_ms"] = time_ms(inductor, args, iterations)
            entry["inductor_rel_l2_vs_eager"] = rel_l2(first, expected)
            del inductor
            torch._dynamo.reset()

            before = dynamo_counts()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                compiled = torch.compile(model, backend="graphc", options=options or None)
                t0 = time.perf_counter()
                got = first_tensor(compiled(*args))
                torch.cuda.synchronize()
                entry["graphc_compile_s"] = round(time.perf_counter() - t0, 2)
            after = dynamo_counts()
            if before and after:
                entry["fx_graphs"] = after["graphs"] - before["graphs"]
                entry["graph_breaks"] = after["breaks"] - before["breaks"]
            entry["graphc_fallbacks"] = [str(w.message) for w in caught if "runs in PyTorch" in str(w.message)]
            entry["compiled_whole"] = not entry["graphc_fallbacks"] and entry.get("fx_graphs", 1) == 1
            entry["graphc_ms"] = time_ms(compiled, args, iterations)
            entry["graphc_rel_l2_vs_eager"] = rel_l2(got, expected)
            if reference is not None:
                entry["graphc_rel_l2_vs_fp32"] = rel_l2(got, reference)
            entry["matches_eager"] = entry["graphc_rel_l2_vs_eager"] < entry["match_bound"]
            entry["speedup_vs_inductor"] = round(entry["inductor_ms"] / entry["graphc_ms"], 3)
            entry["speedup_vs_eager"] = round(entry["eager_ms"] / entry["graphc_ms"], 3)
            del compiled
    except Exception as e:  # recorded, the others go on
        entry["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
        entry["traceback"] = traceback.format_exc()[-4000:]
    finally:
        del model
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return entry


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON; the markdown goes beside it (.md)")
    ap.add_argument("--iterations", type=int, default=200, help="ctx.run calls per overhead sample")
    ap.add_argument("--repeats", type=int, default=51, help="overhead samples per form")
    ap.add_argument("--model-iterations", type=int, default=100)
    ap.add_argument("--zoo", default="resnet50,deit_small,bert",
                    help="zoo models (scripts/export_models.py names) for the torch.compile comparison")
    ap.add_argument("--small", default="mlp,resnet_block,transformer", help="python/tests/gpu/zoo.py models")
    ap.add_argument("--zoo-extra", default="vit_b_16,resnext50,roberta",
                    help="more zoo models, run last while the budget lasts")
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting models after this (0: no limit)")
    args = ap.parse_args()
    started = time.monotonic()
    import torch

    torch.backends.cudnn.benchmark = True  # PyTorch as scripts/bench.py runs it
    out = pathlib.Path(args.out)
    md = out.with_suffix(".md")
    doc = {"schema_version": 2, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
           "method": __doc__, "ctx_run_overhead": {}, "torch_compile": {}}

    def save():
        out.write_text(json.dumps(doc, indent=2))
        md.write_text(bench_python_report.markdown(doc))

    try:
        doc["ctx_run_overhead"] = overhead(args.iterations, args.repeats)
    except Exception as e:
        doc["ctx_run_overhead"] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(doc["ctx_run_overhead"]["traceback"], flush=True)
    save()

    plan = [(n, "zoo") for n in args.zoo.split(",") if n] + [(n, "small") for n in args.small.split(",") if n]
    plan += [(n, "zoo") for n in args.zoo_extra.split(",") if n and n not in args.zoo.split(",")]
    for name, kind in plan:
        left = args.budget_s - (time.monotonic() - started) if args.budget_s else float("inf")
        if left < MIN_SECONDS[kind]:
            entry = {"kind": kind, "skipped": f"time budget ({left:.0f} s left)"}
        else:
            entry = compare(name, kind, args.model_iterations)
        doc["torch_compile"][name] = entry
        save()
        print(f"compile {name}: {json.dumps({k: v for k, v in entry.items() if k != 'traceback'})}", flush=True)
    print(f"wrote {out} and {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
