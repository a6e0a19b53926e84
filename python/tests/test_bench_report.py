"""python/bench/bench_python_report.py: the GPU benchmark's markdown, from a
made-up result document (no torch, no GPU)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))

import bench_python_report  # noqa: E402

DOC = {
    "device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "python": "3.12.3", "date": "2026-11-27 10:00",
    "method": "how it was measured",
    "ctx_run_overhead": {
        "identity_4x8": {"cpp_enqueue_us": 1.44, "python_run_us": 3.1, "overhead_us": 1.66,
                         "check_le_10us": True, "torch_fast_path": True,
                         "run_us": {"lists": 3.1, "dicts": 3.3, "stream_given": 3.6, "new_outputs": 9.8}},
        "fused": {"cpp_enqueue_us": 1.4, "python_run_us": 12.0, "overhead_us": 10.6, "check_le_10us": False,
                  "torch_fast_path": False, "run_us": {}},
    },
    "torch_compile": {
        "resnet50": {"kind": "zoo", "precision": "fp16", "inputs": ["float16[1, 3, 224, 224]"],
                     "eager_ms": 3.9, "inductor_ms": 2.0, "graphc_ms": 0.5, "speedup_vs_inductor": 4.0,
                     "speedup_vs_eager": 7.8, "graphc_rel_l2_vs_eager": 0.0008, "matches_eager": True,
                     "compiled_whole": True, "fx_graphs": 1, "graphc_fallbacks": [],
                     "inductor_compile_s": 30.2, "graphc_compile_s": 12.5},
        "bert": {"kind": "zoo", "precision": "fp16", "inputs": ["int64[1, 128]", "int64[1, 128]"],
                 "eager_ms": 5.0, "inductor_ms": 2.6, "graphc_ms": 2.7, "speedup_vs_inductor": 0.96,
                 "graphc_rel_l2_vs_eager": 0.02, "matches_eager": False, "compiled_whole": False,
                 "fx_graphs": 2, "graph_breaks": 1,
                 "graphc_fallbacks": ["graphc: this graph runs in PyTorch, not graphc: UnsupportedError: op X"]},
        "deit_small": {"kind": "zoo", "precision": "fp16", "error": "RuntimeError: no timm\nmore"},
        "roberta": {"kind": "zoo", "skipped": "time budget (20 s left)"},
    },
}


def test_report_has_every_row_and_says_what_failed():
    md = bench_python_report.markdown(DOC)
    lines = md.splitlines()
    assert lines[0] == "# graphc's Python package on NVIDIA H100 80GB HBM3"
    row = next(x for x in lines if x.startswith("| identity_4x8 |"))
    assert "| 1.44 | 3.10 | **1.66** | yes | 3.30 | 3.60 | 9.80 | yes |" in row
    assert "**10.60** | **no** |" in next(x for x in lines if x.startswith("| fused |"))
    r50 = next(x for x in lines if x.startswith("| resnet50 |"))
    assert "| fp16 | float16[1, 3, 224, 224] | 3.900 | 2.000 | 0.500 | 4.00 | 7.80 | 8.0e-04 | yes | yes |" in r50
    assert r50.endswith("| 30.2 / 12.5 |")
    bert = next(x for x in lines if x.startswith("| bert |"))
    assert "| **no** | **no** |" in bert
    assert any("**bert**: 1 graph(s) left to PyTorch" in x and "op X" in x for x in lines)
    assert any("**bert**: Dynamo made 2 FX graphs (1 breaks)" in x for x in lines)
    assert any(x == "- **deit_small** failed: `RuntimeError: no timm`" for x in lines)
    assert any(x.startswith("| roberta |") and "skipped: time budget" in x for x in lines)
    # every table row has its header's column count
    for table_head in ("| engine |", "| model |"):
        start = next(i for i, x in enumerate(lines) if x.startswith(table_head))
        cols = lines[start].count("|")
        body = []
        for x in lines[start + 2:]:
            if not x.startswith("|"):
                break
            body.append(x)
        assert body and all(x.count("|") == cols for x in body), body
    assert "how it was measured" in md


def test_a_failed_overhead_stage_is_reported():
    md = bench_python_report.markdown({"ctx_run_overhead": {"error": "RuntimeError: boom"}, "torch_compile": {}})
    assert "Failed: `RuntimeError: boom`" in md
