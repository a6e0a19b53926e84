#!/usr/bin/env python3
"""Checks `graphc inspect --json` against docs/inspect-json.md on the shipped models:
every documented key with its type, and the report's own invariants (kernel count,
byte totals, naive >= planned >= lower bound). Usage: check_inspect_json.py GRAPHC REPO"""
import json
import subprocess
import sys

graphc, repo = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def typed(obj, key, types, where):
    check(key in obj, f"{where}: missing key '{key}'")
    if key in obj:
        check(isinstance(obj[key], types), f"{where}.{key}: {type(obj[key]).__name__}")
    return obj.get(key)


def check_value(v, where):
    typed(v, "name", str, where)
    typed(v, "dtype", str, where)
    shape = v.get("shape")
    check(shape is None or all(isinstance(d, (int, str)) or d is None for d in shape), where + ".shape")


KINDS = {"fused elementwise", "elementwise", "reduction", "gemm", "conv", "pool", "attention",
         "data movement", "view (no kernel)"}

runs = [("mlp", []), ("conv_block", []), ("transformer_block", ["--shape", "x:2x16x64"]),
        ("transformer_block", []), ("conv_block", ["--precision", "fp16"]),
        ("transformer_block", ["--shape", "x:2x16x64", "--gpu", "a100"])]
MATHS = {"", "fp64", "fp32", "fp16", "bf16", "int8", "tf32-tc", "fp16-tc", "bf16-tc", "int8-tc"}
HBM_GB_PER_S = {"h100": 3350, "h200": 4800, "a100": 2039, "l4": 300}
for name, extra in runs:
    where = f"{name} {' '.join(extra)}".strip()
    out = subprocess.run([graphc, "inspect", f"{repo}/models/{name}.onnx", "--json", *extra],
                         capture_output=True, text=True)
    if out.returncode != 0:
        failures.append(f"{where}: exit {out.returncode}: {out.stderr}")
        continue
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"{where}: not JSON: {e}")
        continue
    check(next(iter(doc), None) == "schema_version", where + ": schema_version is not the first key")
    check(typed(doc, "schema_version", int, where) == 1, where + ": schema_version != 1")
    typed(doc, "model", str, where)
    typed(doc, "opset", int, where)
    typed(doc, "producer", str, where)
    for k in ("inputs", "outputs"):
        for v in typed(doc, k, list, where) or []:
            check_value(v, f"{where}.{k}")
    inferred = typed(doc, "shapes_inferred", bool, where)
    typed(doc, "node_count", int, where)
    ops = typed(doc, "ops", dict, where) or {}
    check(all(isinstance(n, int) for n in ops.values()), where + ".ops")
    for k in ("unsupported", "not_compiled", "not_compiled_outputs", "cut_values"):
        check(typed(doc, k, list, where) == [], f"{where}.{k}: a shipped model compiles whole")
    params = typed(doc, "parameters", dict, where) or {}
    for k in ("count", "bytes"):
        typed(params, k, int, where + ".parameters")
    typed(params, "by_dtype", dict, where + ".parameters")
    check("fusion" in doc, where + ": missing key 'fusion'")
    fusion = doc.get("fusion")
    profiles = typed(doc, "profiles", list, where) or []
    if not inferred and not profiles:
        check(fusion is None, where + ": fusion must be null without inferred shapes or a range")
        continue
    check(isinstance(fusion, dict), where + ": fusion must be an object when shapes are inferred")
    if not isinstance(fusion, dict):
        continue
    w = where + ".fusion"
    for k in ("onnx_nodes", "kernels", "views"):
        typed(fusion, k, int, w)
    hbm = typed(fusion, "hbm_bytes", dict, w) or {}
    plan = typed(fusion, "memory_plan", dict, w) or {}
    for k in ("unfused", "fused"):
        typed(hbm, k, int, w + ".hbm_bytes")
    for k in ("naive", "planned", "lower_bound"):
        typed(plan, k, int, w + ".memory_plan")
    typed(fusion, "parameter_bytes", dict, w)
    precision = typed(fusion, "precision", str, w)
    check(precision in ("fp32", "fp16", "bf16"), w + ".precision")
    notes = typed(fusion, "precision_notes", list, w) or []
    check(all(isinstance(n, str) for n in notes), w + ".precision_notes")
    notes = typed(fusion, "attention_notes", list, w) or []
    check(all(isinstance(n, str) for n in notes), w + ".attention_notes")
    rows = typed(fusion, "kernel_list", list, w) or []
    for i, row in enumerate(rows):
        rw = f"{w}.kernel_list[{i}]"
        check(typed(row, "kind", str, rw) in KINDS, rw + ".kind unknown")
        typed(row, "name", str, rw)
        typed(row, "output", str, rw)
        typed(row, "hbm_bytes_fused", int, rw)
        typed(row, "hbm_bytes_unfused", int, rw)
        check(len(typed(row, "onnx_nodes", list, rw) or []) >= 1, rw + ": covers no ONNX node")
        check(len(typed(row, "onnx_ops", list, rw) or []) == len(row.get("onnx_nodes", [])),
              rw + ": onnx_ops and onnx_nodes differ in length")
        check(row.get("hbm_bytes_fused", 0) <= row.get("hbm_bytes_unfused", 0), rw + ": fused > unfused")
        flops = typed(row, "flops", int, rw) or 0
        math = typed(row, "math", str, rw)
        check(math in MATHS, rw + f".math unknown: {math}")
        check((flops > 0) == (math != ""), rw + ": math without flops or flops without math")
        check(typed(row, "roofline_bound", str, rw) in ("compute", "memory"), rw + ".roofline_bound")
        roof_us = typed(row, "roofline_us", (int, float), rw) or 0
        gbps = HBM_GB_PER_S.get((fusion.get("roofline") or {}).get("gpu"), 0)
        if gbps:  # never faster than the bytes at the HBM bandwidth
            check(roof_us >= row.get("hbm_bytes_fused", 0) / (gbps * 1e3) * (1 - 1e-9),
                  rw + ": roofline below the memory time")
    roof = typed(fusion, "roofline", dict, w) or {}
    gpu = typed(roof, "gpu", str, w + ".roofline")
    check(gpu in HBM_GB_PER_S, w + f".roofline.gpu unknown: {gpu}")
    typed(roof, "gpu_name", str, w + ".roofline")
    check(typed(roof, "hbm_gb_per_s", (int, float), w + ".roofline") == HBM_GB_PER_S.get(gpu),
          w + ".roofline.hbm_gb_per_s")
    check(typed(roof, "flops", int, w + ".roofline") == sum(r.get("flops", 0) for r in rows),
          w + ": flops total")
    total_us = typed(roof, "roofline_us", (int, float), w + ".roofline") or 0
    check(abs(total_us - sum(r.get("roofline_us", 0) for r in rows)) <= 1e-6 * max(1, total_us),
          w + ": roofline total")
    check(any(r.get("flops", 0) > 0 for r in rows), w + ": no kernel with modelled flops")
    if "--gpu" in extra:
        check(gpu == extra[extra.index("--gpu") + 1], w + ": --gpu not reported")
    launched = sum(1 for r in rows if r.get("kind") != "view (no kernel)")
    check(fusion.get("kernels") == launched, f"{w}: kernels {fusion.get('kernels')} != {launched} rows")
    check(fusion.get("views") == len(rows) - launched, w + ": views != view rows")
    check(hbm.get("fused") == sum(r.get("hbm_bytes_fused", 0) for r in rows), w + ": fused total")
    check(hbm.get("unfused") == sum(r.get("hbm_bytes_unfused", 0) for r in rows), w + ": unfused total")
    check(plan.get("naive", 0) >= plan.get("planned", 0) >= plan.get("lower_bound", 0) > 0,
          f"{w}: memory plan order {plan}")
    if "--precision" in extra:
        check(precision == extra[extra.index("--precision") + 1], w + ": precision not reported")

for f in failures:
    print("FAIL", f)
print(f"check_inspect_json: {len(runs)} runs, {len(failures)} failures")
sys.exit(1 if failures else 0)
