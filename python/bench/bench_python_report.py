"""The markdown of python/bench/bench_python.py's results (its JSON document),
kept apart from the benchmark so the CPU tests check it without torch or a GPU
(python/tests/test_bench_report.py)."""

from __future__ import annotations


def _num(v, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float) and (abs(v) < 1e-2 and v != 0):
        return f"{v:.1e}"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _yes(v) -> str:
    return "—" if v is None else ("yes" if v else "**no**")


def _overhead(doc: dict) -> list:
    rows = doc.get("ctx_run_overhead") or {}
    lines = ["## `ctx.run`'s host overhead over the C++ enqueue (torch CUDA tensors)", ""]
    if "error" in rows:
        return lines + [f"Failed: `{rows['error']}`", ""]
    lines += ["| engine | C++ enqueue µs | `ctx.run` µs (lists) | overhead µs | ≤ 10 µs | "
              "dicts µs | `stream=` given µs | outputs made µs | fast path |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        run = r.get("run_us", {})
        lines.append(f"| {name} | {_num(r.get('cpp_enqueue_us'), 2)} | {_num(r.get('python_run_us'), 2)} | "
                     f"**{_num(r.get('overhead_us'), 2)}** | {_yes(r.get('check_le_10us'))} | "
                     f"{_num(run.get('dicts'), 2)} | {_num(run.get('stream_given'), 2)} | "
                     f"{_num(run.get('new_outputs'), 2)} | {_yes(r.get('torch_fast_path'))} |")
    return lines + [""]


def _compile(doc: dict) -> list:
    rows = doc.get("torch_compile") or {}
    lines = ['## `torch.compile(model, backend="graphc")` against eager and inductor', "",
             "Median ms per call (CUDA events); speed-up > 1: graphc is faster.", "",
             "| model | precision | inputs | eager | inductor | graphc | vs inductor | vs eager | "
             "rel L2 vs eager | matches eager | compiled whole | compile s (inductor / graphc) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name, e in rows.items():
        if "skipped" in e:
            lines.append(f"| {name} | {e.get('precision', '')} | | | | | | | | | | skipped: {e['skipped']} |")
            continue
        if "error" in e:
            notes.append(f"- **{name}** failed: `{e['error'].splitlines()[0][:400]}`")
        whole = e.get("compiled_whole")
        if e.get("graphc_fallbacks"):
            notes.append(f"- **{name}**: {len(e['graphc_fallbacks'])} graph(s) left to PyTorch: "
                         f"`{e['graphc_fallbacks'][0][:300]}`")
        if e.get("fx_graphs", 1) != 1:
            notes.append(f"- **{name}**: Dynamo made {e['fx_graphs']} FX graphs ({e.get('graph_breaks')} breaks)")
        lines.append(
            f"| {name} | {e.get('precision', '')} | {' '.join(e.get('inputs', []))} | "
            f"{_num(e.get('eager_ms'))} | {_num(e.get('inductor_ms'))} | {_num(e.get('graphc_ms'))} | "
            f"{_num(e.get('speedup_vs_inductor'), 2)} | {_num(e.get('speedup_vs_eager'), 2)} | "
            f"{_num(e.get('graphc_rel_l2_vs_eager'))} | {_yes(e.get('matches_eager'))} | {_yes(whole)} | "
            f"{_num(e.get('inductor_compile_s'), 1)} / {_num(e.get('graphc_compile_s'), 1)} |")
    return lines + [""] + notes + ([""] if notes else [])


def markdown(doc: dict) -> str:
    head = [f"# graphc's Python package on {doc.get('device', '?')}", "",
            f"{doc.get('date', '')} UTC, PyTorch {doc.get('torch', '?')}, Python {doc.get('python', '?')}: "
            "`python/bench/bench_python.py` (run by `scripts/gpu_python_session.sh`).", ""]
    method = ["## How it was measured", "", "```", (doc.get("method") or "").strip(), "```", ""]
    return "\n".join(head + _overhead(doc) + _compile(doc) + method)
