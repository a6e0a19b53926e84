"""Markdown tables and one-line summaries of compare_models.py's and bench.py's JSON
results (pure functions of the JSON, so a lead can regenerate them from a results
file: `python3 scripts/bench_report.py FILE.json`)."""
import json
import math
import sys


def _num(v, fmt="{:.3g}"):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _mib(b):
    return "—" if b is None else f"{b / 2**20:.1f} MiB"


def _why(rec, n=160):
    e = " ".join(str(rec.get("error", "")).split())
    return (e[:n] + "…") if len(e) > n else e


# ---------------------------------------------------------------- compare_models.py

def compare_line(rec):
    """One line per (config, precision) for the log and the session summary."""
    head = f"{rec.get('config')} {rec.get('precision')}: {rec.get('status', '?').upper()}"
    if rec.get("status") in ("pass", "fail"):
        worst = max(rec["outputs"], key=lambda o: o["rel_l2"] if o["rel_l2"] is not None else math.inf)
        b = rec.get("build", {})
        return (f"{head} rel_l2 {_num(worst['rel_l2'])} max_abs {_num(worst['max_abs'])} "
                f"(tol {rec['tolerance_rel_l2']:g}); build {b.get('seconds')} s, {b.get('kernels')} kernels")
    return f"{head}: {_why(rec, 300)}"


def compare_markdown(data):
    meta = data.get("meta", {})
    tol = meta.get("tolerance_rel_l2", {})
    lines = [
        "# Real models: graphc against onnxruntime",
        "",
        f"Date (UTC): {meta.get('date_utc', '?')}. Host: {meta.get('host', '?')}. onnxruntime "
        f"{meta.get('onnxruntime', '?')} (CPU provider) is the reference. Made by `scripts/compare_models.py` "
        "(through `scripts/gpu_models_session.sh`).",
        "",
        "Each configuration gets fresh random inputs (the seed is in the JSON): images standard normal, token ids "
        "uniform over the vocabulary, attention masks ones with 1 to 32 trailing zeros per row. The same inputs "
        "go to graphc (`graphc run --input NAME=FILE.npy`) and onnxruntime. Engines are built with "
        "`--arch native`; fp16 is `--precision fp16` (weights and compute fp16, reductions and GEMM accumulation "
        "fp32; inputs and outputs keep their fp32/int64 dtype). Relative L2 error = ‖graphc − ort‖₂ / ‖ort‖₂ "
        "over the whole output; pass: "
        + ", ".join(f"{p} < {t:g}" for p, t in tol.items()) + ". Weights are random (scripts/export_models.py).",
        "",
        "Input sensitivity = ‖ort(x₁) − ort(x₂)‖₂ / ‖ort(x₁)‖₂ for two random inputs: a pass also needs it "
        "at least 5x the bound, else the check could not tell a wrong output from the right one.",
        "",
        "| model | precision | build s | NVRTC cache hits/misses | engine size | kernels | output | rel L2 | "
        "max abs | input sensitivity | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, rec in data.get("results", {}).items():
        b = rec.get("build", {})
        cache = f"{b['cache_hits']}/{b['cache_misses']}" if "cache_hits" in b else "—"
        row = [rec.get("config", key), rec.get("precision", "?"), _num(b.get("seconds"), "{:.1f}"), cache,
               _mib(b.get("engine_bytes")), str(b.get("kernels", "—"))]
        if rec.get("status") in ("pass", "fail"):
            for o in rec["outputs"]:
                verdict = ("yes" if o["pass"] else
                           "**NO** (outputs barely depend on the inputs)" if not o.get("discriminating", True)
                           else "**NO**")
                lines.append("| " + " | ".join(row + [o["output"], _num(o["rel_l2"], "{:.2e}"),
                                                       _num(o["max_abs"], "{:.2e}"),
                                                       _num(o.get("input_sensitivity"), "{:.2e}"), verdict]) + " |")
        else:
            lines.append("| " + " | ".join(row + ["—", "—", "—", "—", f"**{rec.get('status', '?')}**: {_why(rec)}"])
                         + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- bench.py

def _median(rec, variant):
    v = rec.get(variant) or {}
    return (v.get("latency") or {}).get("median_ms")


def bench_ratio(rec):
    """graphc time / torch.compile (default) time, or None."""
    g, c = _median(rec, "graphc"), _median(rec, "compile")
    return g / c if g and c else None


def _cell(rec, variant):
    v = rec.get(variant)
    if v is None:
        return "—"
    if v.get("status") != "ok":
        return f"{v.get('status', 'failed')}"
    return _num(_median(rec, variant), "{:.3f}")


METHOD_NOTES = """\
How these numbers were taken (what a reviewer would ask):

- **Latency** is the median of per-inference CUDA-event timings, each inference followed by a device
  synchronize (isolated latency, not pipelined throughput), after a warm-up of at least {warmup_runs} runs and
  {warmup_s} s; at least {min_runs} timed runs and {min_s} s per variant. graphc's number is `graphc run --json`'s
  `gpu_compute_ms.median`: events around the engine's enqueue with the inputs already on the GPU (its H2D/D2H
  copies are timed separately and not included).
- **Same inputs, same precision.** PyTorch and graphc get the same arrays (graphc through `.npy` files). PyTorch
  runs `model.half()` under `torch.inference_mode()`; graphc engines are `--precision fp16 --convert-io` (fp16
  inputs and outputs like the half model; reductions and GEMM accumulation fp32). Token ids and masks stay int64.
  Images are NCHW contiguous on both sides (no `channels_last` for PyTorch: the default a user gets).
- **Same architecture.** The PyTorch modules come from `scripts/export_models.py`'s `build()` (the ONNX files'
  source) with the same weights; the ONNX files are exported with transformers' eager attention (MatMul +
  Softmax, as users export), while PyTorch runs its default attention: transformers' SDPA implementation
  (`torch.nn.functional.scaled_dot_product_attention`), and ViT's `nn.MultiheadAttention` with its
  default inference path. Weights are random on both sides (timing only; correctness is
  docs/reports/real-models.md).
- **CUDA graphs.** graphc replays one CUDA graph per inference. Eager and torch.compile's default mode launch
  kernel by kernel (their CPU launch cost is in the latency, visible at batch 1); `reduce-overhead` uses CUDA
  graphs and is the like-for-like column for launch overhead (`cudagraph_skips` > 0 in the JSON: Inductor ran
  part of that model without them).
- **torch.compile** is `torch.compile(model, mode=..., dynamic=False)` after `torch._dynamo.reset()`, one
  compile per configuration and mode; compile time is the first call (synchronized). Inductor's caches:
  `{inductor_cache}` ({inductor_cache_state} at the start); a warm cache makes compile times shorter, not
  latencies. `torch.backends.cudnn.benchmark = True` for every PyTorch variant.
- **graphc build time** is one `graphc build` process (`--arch native`, {graphc_cache}); how many kernel
  modules came from the cache is shown next to it. The cold build times (the first build of each model, cache
  misses) are in docs/reports/real-models.md.
- **Clocks** are not locked (the device settings are not ours to change); GPU clocks, temperature and power
  from nvidia-smi before and after the run are in the JSON `meta.gpu_state`. Variants of one model run back to
  back in the order eager, compile, compile-RO, graphc.
"""


def _build_cell(build):
    s = _num(build.get("seconds"), "{:.1f}")
    if "cache_hits" in build:
        s += f" ({build['cache_hits']} of {build['cache_hits'] + build['cache_misses']} modules cached)"
    return s


def bench_markdown(data):
    meta = data.get("meta", {})
    m = meta.get("method", {})
    notes = METHOD_NOTES.format(
        warmup_runs=m.get("warmup_runs", "?"), warmup_s=m.get("warmup_s", "?"), min_runs=m.get("min_runs", "?"),
        min_s=m.get("min_s", "?"), inductor_cache=meta.get("inductor_cache_dir", "?"),
        inductor_cache_state=meta.get("inductor_cache_state", "?"),
        graphc_cache="NVRTC cache off (`--no-cache`): a cold build" if m.get("graphc_no_cache")
        else "NVRTC cache on, warmed by compare_models.py's builds of the same model")
    lines = [
        f"# graphc vs PyTorch on {meta.get('device', '?')}",
        "",
        f"Date (UTC): {meta.get('date_utc', '?')}. PyTorch {meta.get('torch', '?')}, CUDA {meta.get('cuda', '?')}, "
        f"driver {meta.get('driver', '?')}, graphc `{meta.get('graphc_version', '?')}`. Made by `scripts/bench.py`. "
        "Latencies in ms (median); fp16.",
        "",
        notes,
        "| model | eager | compile | compile-RO | graphc | graphc / compile | compile time s (default, RO) | "
        "graphc build s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    failures = []
    for name, rec in data.get("results", {}).items():
        if name == "elementwise_chain":
            continue
        r = bench_ratio(rec)
        ct = [_num((rec.get(v) or {}).get("compile_s"), "{:.1f}") for v in ("compile", "compile_ro")]
        build = (rec.get("graphc") or {}).get("build", {})
        lines.append("| " + " | ".join([
            name, _cell(rec, "eager"), _cell(rec, "compile"), _cell(rec, "compile_ro"), _cell(rec, "graphc"),
            "—" if r is None else (f"**{r:.2f}**" if r > 1 else f"{r:.2f}"), ", ".join(ct),
            _build_cell(build)]) + " |")
        for v in ("eager", "compile", "compile_ro", "graphc"):
            if (rec.get(v) or {}).get("status") not in (None, "ok"):
                failures.append(f"- {name} {v}: {_why(rec[v], 400)}")
        if rec.get("status") in ("skipped", "failed"):
            failures.append(f"- {name} ({rec['status']}): {_why(rec, 400)}")
    chain = data.get("results", {}).get("elementwise_chain")
    if chain:
        lines += ["", "## Elementwise chain", "", chain_markdown(chain)]
    if failures:
        lines += ["", "## Failures", ""] + failures
    return "\n".join(lines) + "\n"


def chain_markdown(chain):
    if chain.get("status") != "ok" and "graphc" not in chain:
        return f"Not measured: {_why(chain, 400)}\n"
    n = chain.get("elements")
    lines = [f"y = gelu_tanh((x + b) * s) + r, fp16, x and r {chain.get('shape')} ({n} elements), b and s "
             f"[{chain.get('shape', [0, 0])[-1]}]. Bytes moved at least: {chain.get('bytes', 0) / 1e6:.1f} MB "
             "(read x, r; write y). The ceiling: `dst.copy_(src)` of the same byte count (half read, half "
             "written). Bandwidth = bytes / median time.", "",
             "| variant | median ms | GB/s | of copy |", "|---|---|---|---|"]
    copy_bw = (chain.get("copy") or {}).get("gbps")
    for v, label in (("copy", "device-to-device copy"), ("graphc", "graphc engine"), ("eager", "torch eager"),
                     ("compile", "torch.compile")):
        r = chain.get(v) or {}
        if r.get("status") != "ok":
            if r:
                lines.append(f"| {label} | {r.get('status')}: {_why(r, 120)} | | |")
            continue
        frac = r["gbps"] / copy_bw if copy_bw else None
        lines.append(f"| {label} | {r['latency']['median_ms']:.4f} | {r['gbps']:.0f} | "
                     f"{_num(frac and 100 * frac, '{:.1f}')}% |")
    g = chain.get("graphc") or {}
    if "check" in g:
        lines += ["", f"graphc's output against float32 numpy: relative L2 {_num(g['check'].get('rel_l2'), '{:.2e}')}"
                  f", max abs {_num(g['check'].get('max_abs'), '{:.2e}')}."]
    floor = chain.get("floor")
    if floor is not None:
        lines += ["", f"Floor (graphc ≥ 80% of the copy bandwidth): **{'holds' if floor else 'MISSED'}**."]
    return "\n".join(lines) + "\n"


def bench_summary(data):
    """The compact lines the session prints at its end."""
    out = []
    for name, rec in data.get("results", {}).items():
        if name == "elementwise_chain":
            g, c = rec.get("graphc") or {}, rec.get("copy") or {}
            out.append(f"chain: graphc {_num(g.get('gbps'), '{:.0f}')} GB/s, copy {_num(c.get('gbps'), '{:.0f}')} "
                       f"GB/s, ratio {_num(rec.get('ratio_to_copy'), '{:.3f}')} floor "
                       f"{'ok' if rec.get('floor') else 'MISSED'}" + (f" ({_why(rec, 200)})" if rec.get("error") else ""))
            continue
        r = bench_ratio(rec)
        cells = " ".join(f"{v}={_cell(rec, v)}" for v in ("eager", "compile", "compile_ro", "graphc"))
        err = "; ".join(f"{v}: {_why(rec[v], 150)}" for v in ("eager", "compile", "compile_ro", "graphc")
                        if (rec.get(v) or {}).get("status") not in (None, "ok"))
        out.append(f"{name}: {cells} graphc/compile={_num(r, '{:.2f}')}" + (f" | {err}" if err else "")
                   + (f" | {rec['status']}: {_why(rec, 150)}" if rec.get("status") in ("skipped", "failed") else ""))
    return "\n".join(out)


def main(argv):
    """Regenerates the markdown of a results JSON (bench or compare) on stdout."""
    if len(argv) != 2:
        print("usage: bench_report.py RESULTS.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    is_bench = "torch" in data.get("meta", {})
    sys.stdout.write(bench_markdown(data) if is_bench else compare_markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
