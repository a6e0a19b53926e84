#!/usr/bin/env python3
"""Checks the optimizer's promises on the exported real models, from their
`graphc inspect --json` reports (issue: optimizer):
  - ResNet-50 and MobileNetV2: no standalone elementwise kernel (every Relu/Clip and
    residual Add rides a conv epilogue or a fused kernel);
  - BERT and GPT-2: one kernel per LayerNormalization; each attention one
    `attention` kernel (fuse-attention), or else one softmax kernel carrying its
    scale and mask; GELU and bias adds inside GEMM epilogues or fused kernels
    (no standalone elementwise kernel);
  - ResNet-50 batch 1: planned arena <= 1.2x its lower bound.

  check_model_reports.py REPORT.json...   (file names start with the model name)
Prints one line per check and a summary; exit 1 if any check fails.
"""
import json
import os
import sys

results = []


def check(model, what, ok, detail=""):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {model}: {what}{' (' + detail + ')' if detail else ''}")


def kinds(rows):
    out = {}
    for r in rows:
        out[r["kind"]] = out.get(r["kind"], 0) + 1
    return out


for path in sys.argv[1:]:
    name = os.path.basename(path).split(".")[0]
    with open(path) as f:
        doc = json.load(f)
    fusion = doc["fusion"]
    rows = fusion["kernel_list"]
    standalone = [r for r in rows if r["kind"] == "elementwise"]
    print(f"== {name}: {fusion['onnx_nodes']} ONNX nodes -> {fusion['kernels']} kernels; "
          f"kinds {kinds(rows)}")
    if name.startswith(("resnet50", "mobilenet_v2")):
        check(name, "no standalone elementwise kernel", not standalone,
              ", ".join(f"{r['onnx_ops']} {r['name']}" for r in standalone[:5]))
        bad = [r for r in rows if r["kind"] == "fused elementwise"
               and any(op in ("Relu", "Clip", "Add") for op in r["onnx_ops"])]
        check(name, "every Relu/Clip/Add rides a conv, gemm, pool or reduction kernel", not bad,
              ", ".join(r["name"] for r in bad[:5]))
    if name.startswith("resnet50_b1") or name == "resnet50":
        plan = fusion["memory_plan"]
        ratio = plan["planned"] / plan["lower_bound"]
        check(name, "planned arena <= 1.2x lower bound", ratio <= 1.2,
              f"planned {plan['planned']} B, lower bound {plan['lower_bound']} B, ratio {ratio:.3f}")
    if name.startswith(("bert", "gpt2")):
        ops = {}
        for r in rows:
            for op in r["onnx_ops"]:
                ops[op] = ops.get(op, 0) + 1
        ln_kernels = [r for r in rows if "LayerNormalization" in r["onnx_ops"]]
        check(name, "one kernel per LayerNormalization",
              all(r["onnx_ops"].count("LayerNormalization") == 1 for r in ln_kernels)
              and len(ln_kernels) == ops.get("LayerNormalization", 0) and len(ln_kernels) > 0,
              f"{len(ln_kernels)} kernels for {ops.get('LayerNormalization', 0)} LayerNormalization")
        sm_kernels = [r for r in rows if "Softmax" in r["onnx_ops"]]
        attention = [r for r in rows if r["kind"] == "attention"]
        model_softmax = doc["ops"].get("Softmax", 0)
        check(name, "one attention or softmax kernel per Softmax",
              len(sm_kernels) + len(attention) == model_softmax > 0,
              f"{len(attention)} attention and {len(sm_kernels)} softmax kernels for "
              f"{model_softmax} Softmax")
        for note in fusion.get("attention_notes", []):
            print(f"INFO {name}: not fused: {note}")
        with_scale = [r for r in sm_kernels if any(op in ("Div", "Mul") for op in r["onnx_ops"])]
        with_mask = [r for r in sm_kernels if any(op in ("Add", "Where") for op in r["onnx_ops"])]
        check(name, "softmax kernels carry their scale and mask",
              len(with_scale) == len(sm_kernels) and len(with_mask) == len(sm_kernels),
              f"{len(with_scale)} with scale, {len(with_mask)} with mask of {len(sm_kernels)}: "
              + "; ".join(",".join(r["onnx_ops"]) for r in sm_kernels[:1]))
        gelu_alone = [r for r in rows if "Gelu" in r["onnx_ops"] and r["kind"] not in ("gemm", "fused elementwise")]
        check(name, "GELU inside GEMM epilogues or fused kernels", not gelu_alone and ops.get("Gelu", 0) > 0,
              f"{ops.get('Gelu', 0)} Gelu; outside: {[r['name'] for r in gelu_alone[:3]]}")
        gelu_standalone = [r for r in standalone if "Gelu" in r["onnx_ops"]]
        check(name, "no standalone GELU kernel", not gelu_standalone,
              ", ".join(r["name"] for r in gelu_standalone[:5]))
        for r in standalone:  # allowed (e.g. embedding sums, mask casts) but shown
            print(f"INFO {name}: standalone elementwise kernel {r['onnx_ops']} {r['name']} {r['output']}")

print(f"check_model_reports: {sum(results)} of {len(results)} checks pass")
sys.exit(0 if all(results) else 1)
