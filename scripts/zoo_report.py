#!/usr/bin/env python3
"""Merges the model zoo's shard results (scripts/gpu_zoo_session.sh) into one report:
OUT/zoo.json, zoo.md (a row per configuration: exporter, accuracy against onnxruntime,
latency of eager / torch.compile default / reduce-overhead / graphc, graphc against the
best torch.compile mode and against eager, the geometric means) and zoo.png.

  zoo_report.py --out DIR SESSION_OUT [SESSION_OUT ...]

Each SESSION_OUT holds shard*/compare/real-models.json, shard*/bench/*.json and
shard*/export-manifest.json; later folders win where they have a finished record.
Needs no PyTorch or GPU (tests/zoo_report_test.py runs it on made-up shards).
"""
import argparse
import glob
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common as bc  # noqa: E402
import png_chart  # noqa: E402

VARIANTS = ("eager", "compile", "compile_ro", "graphc")
FINISHED_COMPARE = {"pass", "fail"}


def _median(rec, variant):
    v = (rec or {}).get(variant) or {}
    return (v.get("latency") or {}).get("median_ms") if v.get("status") == "ok" else None


def best_compile(rec):
    """(ms, mode) of the faster torch.compile mode, or (None, None)."""
    found = [(_median(rec, v), v) for v in ("compile", "compile_ro") if _median(rec, v)]
    return min(found) if found else (None, None)


def merge(folders):
    """{config: {"bench": rec, "compare": {precision: rec}, "export": manifest entry}}, meta list."""
    out, metas = {}, []
    for folder in folders:
        for shard in sorted(glob.glob(os.path.join(folder, "shard*"))):
            if not os.path.isdir(shard):
                continue
            exports = {}
            try:
                exports = {m["name"]: m for m in json.load(open(os.path.join(shard, "export-manifest.json")))}
            except (OSError, ValueError):
                pass
            path = os.path.join(shard, "compare", "real-models.json")
            if os.path.exists(path):
                for rec in json.load(open(path)).get("results", {}).values():
                    slot = out.setdefault(rec.get("config"), {}).setdefault("compare", {})
                    old = slot.get(rec.get("precision"))
                    if old is None or rec.get("status") in FINISHED_COMPARE or old.get("status") not in FINISHED_COMPARE:
                        slot[rec.get("precision")] = rec
            for path in sorted(glob.glob(os.path.join(shard, "bench", "*.json")), key=os.path.getmtime):
                data = json.load(open(path))
                metas.append({**data.get("meta", {}), "shard": os.path.relpath(shard, folder), "folder": folder})
                for name, rec in data.get("results", {}).items():
                    if name == "elementwise_chain":
                        continue
                    entry = out.setdefault(name, {})
                    old = entry.get("bench")
                    if old is None or rec.get("status") == "done" or old.get("status") != "done":
                        entry["bench"] = rec
            for name, entry in out.items():
                model = (entry.get("bench") or {}).get("model") or next(
                    (r.get("model") for r in (entry.get("compare") or {}).values()), None)
                if model in exports:
                    entry["export"] = exports[model]
    return out, metas


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _f(v, fmt):
    return "—" if v is None else fmt.format(v)


def accuracy_cell(entry, precision):
    rec = (entry.get("compare") or {}).get(precision)
    if not rec:
        return "—"
    if rec.get("status") not in FINISHED_COMPARE:
        return f"{rec.get('status')}"
    outputs = rec.get("outputs", [{}])
    worst = max((o.get("rel_l2") or 0.0) for o in outputs)
    torch_err = [o["torch_fp16_rel_l2"] for o in outputs if o.get("torch_fp16_rel_l2") is not None]
    # PyTorch's own fp16 error on the same inputs, which sets the fp16 bound where it is larger.
    own = f" (PyTorch {max(torch_err):.1e})" if torch_err else ""
    return f"{worst:.1e}{own}" + ("" if rec["status"] == "pass" else " **FAIL**")


def report(configs, metas):
    rows, speed_best, speed_eager = [], [], []
    failures = []
    for name in [c for c in bc.ZOO_RUN if c in configs] + sorted(c for c in configs if c not in bc.ZOO_RUN):
        e = configs[name]
        b = e.get("bench") or {}
        g = _median(b, "graphc")
        best, mode = best_compile(b)
        eager = _median(b, "eager")
        vs_best = best / g if g and best else None  # > 1: graphc faster
        vs_eager = eager / g if g and eager else None
        speed_best.append(vs_best)
        speed_eager.append(vs_eager)
        ex = e.get("export") or {}
        rows.append({"config": name, "exporter": f"{ex.get('exporter', '?')} {ex.get('opset', '')}".strip(),
                     "fp32": accuracy_cell(e, "fp32"), "fp16": accuracy_cell(e, "fp16"),
                     **{v: _median(b, v) for v in VARIANTS}, "best_compile_mode": mode,
                     "speedup_vs_best_compile": vs_best, "speedup_vs_eager": vs_eager})
        for v in VARIANTS:
            s = (b.get(v) or {}).get("status")
            if s not in (None, "ok"):
                failures.append(f"- {name} {v}: {s}: {str((b.get(v) or {}).get('error', ''))[:400]}")
        for p, rec in (e.get("compare") or {}).items():
            if rec.get("status") not in FINISHED_COMPARE:
                failures.append(f"- {name} {p} accuracy: {rec.get('status')}: {str(rec.get('error', ''))[:400]}")
        if not b:
            failures.append(f"- {name}: not benchmarked yet")
    gm_best, gm_eager = geomean(speed_best), geomean(speed_eager)
    measured = [r for r in rows if r["speedup_vs_best_compile"]]
    slower = [r["config"] for r in measured if r["speedup_vs_best_compile"] < 1.0]
    devices = sorted({m.get("device", "?") for m in metas})
    meta0 = metas[0] if metas else {}
    md = [f"# The model zoo: graphc vs PyTorch on {', '.join(devices) or '?'}", "",
          f"PyTorch {meta0.get('torch', '?')}, CUDA {meta0.get('cuda', '?')}, driver {meta0.get('driver', '?')}, "
          f"graphc `{meta0.get('graphc_version', '?')}`; dates (UTC): "
          f"{', '.join(sorted({m.get('date_utc', '?') for m in metas}))}. Made by `scripts/gpu_zoo_session.sh` "
          "(one shard per GPU of one machine, each its own process) and `scripts/zoo_report.py`.", "",
          "Latency: fp16, median ms (CUDA events around each inference, synchronized; `scripts/bench.py`'s "
          "method, which its own reports state in full); PyTorch with its defaults (SDPA attention, "
          "`cudnn.benchmark`), torch.compile `default` and `reduce-overhead`. Accuracy: relative L2 error of "
          "graphc against onnxruntime (CPU) on fresh random inputs, the worst output; bounds fp32 < 1e-3, "
          "fp16 < max(1e-2, 3x PyTorch's own fp16 error on the same inputs, shown in brackets) "
          "(`scripts/compare_models.py`). Speed-up > 1: graphc is faster.", "",
          f"**{len(measured)} of {len(rows)} configurations measured. Geometric mean speed-up: "
          f"{_f(gm_best, '{:.2f}')}x against the best torch.compile mode, {_f(gm_eager, '{:.2f}')}x against "
          f"eager. Slower than the best torch.compile mode: {', '.join(slower) or 'none'}.**", "",
          "| configuration | exporter | fp32 rel L2 | fp16 rel L2 | eager | compile | compile-RO | graphc | "
          "vs best compile | vs eager |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sp = r["speedup_vs_best_compile"]
        md.append("| " + " | ".join([
            r["config"], r["exporter"], r["fp32"], r["fp16"], *[_f(r[v], "{:.3f}") for v in VARIANTS],
            "—" if sp is None else (f"**{sp:.2f}**" if sp < 1 else f"{sp:.2f}"),
            _f(r["speedup_vs_eager"], "{:.2f}")]) + " |")
    if failures:
        md += ["", "## Not measured or failed", ""] + failures
    doc = {"schema_version": 1, "meta": {"devices": devices, "shards": metas},
           "summary": {"configurations": len(rows), "measured": len(measured),
                       "geomean_speedup_vs_best_compile": gm_best, "geomean_speedup_vs_eager": gm_eager,
                       "slower_than_best_compile": slower},
           "rows": rows, "configs": configs}
    return doc, "\n".join(md) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--png-backend", default="auto", choices=["auto", "builtin", "matplotlib"])
    a = ap.parse_args()
    configs, metas = merge(a.folders)
    doc, md = report(configs, metas)
    os.makedirs(a.out, exist_ok=True)
    bc.write_text_atomic(os.path.join(a.out, "zoo.json"), json.dumps(doc, indent=1))
    bc.write_text_atomic(os.path.join(a.out, "zoo.md"), md)
    items = [(r["config"], 1.0 / r["speedup_vs_best_compile"]) for r in doc["rows"] if r["speedup_vs_best_compile"]]
    if items:
        png_chart.write_ratio_chart(os.path.join(a.out, "zoo.png"), items,
                                    "graphc time / best torch.compile time (lower is better)", backend=a.png_backend)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
