#!/usr/bin/env python3
"""Fused attention: graphc's kernel against PyTorch's SDPA backends, same GPU, same run.

Times torch.nn.functional.scaled_dot_product_attention with each backend
(FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION via
torch.nn.attention.sdpa_kernel) over the sweep that graphc_attention_bench
lists (--list-shapes), merges graphc's JSON lines (every tile variant; the
best and the default tile per shape) and writes OUT/attention-sweep.json and
OUT/attention-sweep.md. The short table is printed last.

  python3 scripts/bench_attention.py --bench BUILD/graphc_attention_bench --out OUT
        [--graphc-json FILE.jsonl]   (graphc's sweep already run: skip running it)
        [--quick] [--no-torch]

Timing as graphc's bench: CUDA events around batches of calls (~2 ms each),
warm-up first, the median of up to 9 batches, inputs rotated over enough sets
that one pass exceeds 256 MiB. FLOPs 4*B*H*Lq*Lk*D, halved for causal.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

BACKENDS = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"]
SHORT = {"FLASH_ATTENTION": "flash", "CUDNN_ATTENTION": "cudnn", "EFFICIENT_ATTENTION": "efficient"}


def flops(s):
    f = 4.0 * s["batch"] * s["heads"] * s["q_len"] * s["kv_len"] * s["head_dim"]
    return f / 2 if s["causal"] else f


def key(s):
    return (s["batch"], s["heads"], s["q_len"], s["kv_len"], s["head_dim"], bool(s["causal"]))


def time_torch(shapes, log):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    out = []
    for s in shapes:
        b, h, lq, lk, d, causal = key(s)
        set_bytes = b * h * (lq + 2 * lk) * d * 2 + b * h * lq * d * 2
        nsets = max(2, min(24, (256 << 20) // set_bytes + 1))
        try:
            sets = [
                tuple(torch.randn(b, h, n, d, device=dev, dtype=torch.float16) for n in (lq, lk, lk))
                for _ in range(nsets)
            ]
        except torch.OutOfMemoryError:
            log(f"torch {key(s)}: out of memory")
            continue
        for be in BACKENDS:
            rec = dict(s, impl="torch-" + SHORT[be], dtype="fp16")
            try:
                with sdpa_kernel(getattr(SDPBackend, be)):
                    def call(i):
                        q, k, v = sets[i % nsets]
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    call(0)
                    torch.cuda.synchronize()
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    for i in range(3):
                        call(i)
                    e1.record()
                    e1.synchronize()
                    one = max(1e-3, e0.elapsed_time(e1) / 3)
                    iters = int(min(200, max(1, 2.0 / one)))
                    batches = int(min(9, max(3, 400 / (one * iters))))
                    times = []
                    n = 0
                    for _ in range(batches):
                        e0.record()
                        for _ in range(iters):
                            call(n)
                            n += 1
                        e1.record()
                        e1.synchronize()
                        times.append(e0.elapsed_time(e1) / iters)
                ms = statistics.median(times)
                rec.update(ms=ms, ms_min=min(times), tflops=flops(s) / (ms * 1e-3) / 1e12)
            except Exception as e:  # a backend that does not take the shape
                rec.update(ms=None, tflops=None, error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
            out.append(rec)
            log(json.dumps(rec))
        del sets
        torch.cuda.empty_cache()
    return out


def fmt(x, nd=0):
    return "—" if x is None else f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", help="graphc_attention_bench binary")
    ap.add_argument("--graphc-json", help="graphc's sweep (JSON lines) if already run")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--log", help="progress log (default OUT/bench_attention.log)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    logf = open(args.log or os.path.join(args.out, "bench_attention.log"), "a")

    def log(msg):
        logf.write(msg + "\n")
        logf.flush()

    quick = ["--quick"] if args.quick else []
    if args.bench:
        shapes = [json.loads(l) for l in subprocess.check_output([args.bench, "--list-shapes", *quick], text=True).splitlines() if l.strip()]
    elif args.graphc_json:
        seen = {}
        for l in open(args.graphc_json):
            if l.strip():
                r = json.loads(l)
                seen.setdefault(key(r), {k: r[k] for k in ("batch", "heads", "q_len", "kv_len", "head_dim", "causal")})
        shapes = list(seen.values())
    else:
        sys.exit("need --bench or --graphc-json")

    graphc = []
    if args.graphc_json and os.path.exists(args.graphc_json):
        graphc = [json.loads(l) for l in open(args.graphc_json) if l.strip()]
    elif args.bench:
        path = os.path.join(args.out, "graphc.jsonl")
        subprocess.run([args.bench, "--out", path, *quick], check=True, stdout=subprocess.DEVNULL)
        graphc = [json.loads(l) for l in open(path) if l.strip()]

    torch_recs = []
    versions = {}
    if not args.no_torch:
        import torch

        versions = {"torch": torch.__version__, "cuda": torch.version.cuda,
                    "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()}
        t0 = time.time()
        torch_recs = time_torch(shapes, log)
        log(f"torch sweep {time.time() - t0:.1f} s")

    rows = []
    for s in shapes:
        k = key(s)
        g = [r for r in graphc if key(r) == k and r.get("mismatch", 0) < 5e-3]
        bad = [r["tile"] for r in graphc if key(r) == k and r.get("mismatch", 0) >= 5e-3]
        best = max(g, key=lambda r: r["tflops"], default=None)
        dflt = next((r for r in g if r.get("default")), None)
        t = {r["impl"]: r for r in torch_recs if key(r) == k}
        row = dict(s, graphc_best=best and best["tflops"], graphc_best_tile=best and best["tile"],
                   graphc_default=dflt and dflt["tflops"], graphc_default_tile=dflt and dflt["tile"],
                   mismatching_tiles=bad)
        for be in BACKENDS:
            row[SHORT[be]] = t.get("torch-" + SHORT[be], {}).get("tflops")
        fastest = max([row[SHORT[b]] for b in BACKENDS if row[SHORT[b]]] or [0]) or None
        row["vs_flash"] = best and row["flash"] and best["tflops"] / row["flash"]
        row["vs_fastest"] = best and fastest and best["tflops"] / fastest
        rows.append(row)

    with open(os.path.join(args.out, "attention-sweep.json"), "w") as f:
        json.dump({"versions": versions, "rows": rows, "graphc": graphc, "torch": torch_recs}, f, indent=1)
    hdr = ("| B | H | L | D | causal | graphc best (tile) | graphc default | flash | cuDNN | mem-eff | best/flash | best/fastest |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        lines.append(
            f"| {r['batch']} | {r['heads']} | {r['q_len']} | {r['head_dim']} | {'yes' if r['causal'] else 'no'} | "
            f"{fmt(r['graphc_best'])} ({r['graphc_best_tile'] or '—'}) | {fmt(r['graphc_default'])} | {fmt(r['flash'])} | "
            f"{fmt(r['cudnn'])} | {fmt(r['efficient'])} | {fmt(r['vs_flash'], 2)} | {fmt(r['vs_fastest'], 2)} |")
    bad = [r for r in rows if r["mismatching_tiles"]]
    md = ["# Fused attention sweep: graphc vs PyTorch SDPA backends (TFLOP/s, fp16)", "",
          f"versions: {json.dumps(versions)}", "", hdr + "\n".join(lines), ""]
    if bad:
        md.append("Tiles whose output differed from the default tile's (excluded): " +
                  "; ".join(f"{key(r)}: {r['mismatching_tiles']}" for r in bad))
    # Best tile per (head dim, causal, length bucket): the table the default chooser should follow.
    wins = {}
    for r in rows:
        if r["graphc_best_tile"]:
            b = (r["head_dim"], r["causal"], "short" if r["q_len"] < 1024 else "long")
            wins.setdefault(b, {}).setdefault(r["graphc_best_tile"], 0)
            wins[b][r["graphc_best_tile"]] += 1
    md.append("")
    md.append("Best tile counts by (head dim, causal, length < 1024 or not): " +
              "; ".join(f"{k}: {dict(sorted(v.items(), key=lambda x: -x[1]))}" for k, v in sorted(wins.items())))
    with open(os.path.join(args.out, "attention-sweep.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    # Short table last: the reference points and the geometric means.
    print("shape                         graphc(best)  default  flash  cudnn  memeff  best/flash")
    for r in rows:
        if (r["batch"], r["heads"], r["q_len"], r["head_dim"]) in ((2, 16, 4096, 128), (8, 12, 512, 64)):
            print(f"{r['batch']}x{r['heads']}x{r['q_len']}x{r['head_dim']}{' causal' if r['causal'] else '       '}"
                  f"          {fmt(r['graphc_best']):>6} {fmt(r['graphc_default']):>8} {fmt(r['flash']):>6} "
                  f"{fmt(r['cudnn']):>6} {fmt(r['efficient']):>7} {fmt(r['vs_flash'], 2):>10}  {r['graphc_best_tile']}")
    ratios = [r["vs_flash"] for r in rows if r["vs_flash"]]
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"geomean best/flash over {len(ratios)} shapes: {gm:.2f}; min {min(ratios):.2f}; "
              f"shapes below flash: {sum(1 for x in ratios if x < 1)}")
    long_ = [r["vs_fastest"] for r in rows if r["vs_fastest"] and r["q_len"] >= 1024]
    if long_:
        print(f"lengths >= 1024: best/fastest min {min(long_):.2f}, below 0.9: {sum(1 for x in long_ if x < 0.9)} of {len(long_)}")


if __name__ == "__main__":
    main()
