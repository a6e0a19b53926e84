#!/usr/bin/env python3
"""LSTM/GRU: graphc's engine against PyTorch's cuDNN RNN on the same GPU.

For each configuration it builds an nn.LSTM / nn.GRU (random weights, eval,
cudnn.benchmark on), times PyTorch eager with CUDA events (median of N after
warm-up), exports the module with torch.onnx.export (opset 17), builds it
with `graphc build` (fp32, and fp16 with --precision fp16), times it with
`graphc run --json` (gpu_compute_ms median) and checks graphc's output
against PyTorch's on the same input (relative L2). Writes a markdown table
and JSON to --out. Run where torch and a GPU are:

    python scripts/bench_lstm.py --graphc build/graphc --out /tmp/lstm-bench
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

CONFIGS = [  # (name, cell, layers, seq, batch, input, hidden, bidirectional)
    ("lstm_l1_s32_b16_h256", "LSTM", 1, 32, 16, 256, 256, False),
    ("lstm_l2_s64_b32_h512", "LSTM", 2, 64, 32, 512, 512, False),
    ("lstm_l1_s128_b64_h256_bidir", "LSTM", 1, 128, 64, 256, 256, True),
    ("gru_l2_s64_b32_h512", "GRU", 2, 64, 32, 512, 512, False),
]


def time_torch(torch, module, x, iters):
    with torch.no_grad():
        for _ in range(10):
            module(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            module(x)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    return float(np.median(times))


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {(p.stderr or p.stdout)[-2000:]}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--only", help="configurations whose name contains this")
    args = ap.parse_args()
    import torch
    torch.backends.cudnn.benchmark = True
    os.makedirs(args.out, exist_ok=True)
    results = []
    for name, cell, layers, seq, batch, inp, hidden, bidir in CONFIGS:
        if args.only and args.only not in name:
            continue
        rec = {"name": name, "cell": cell, "layers": layers, "seq": seq, "batch": batch,
               "input": inp, "hidden": hidden, "bidirectional": bidir}
        try:
            torch.manual_seed(0)
            cls = torch.nn.LSTM if cell == "LSTM" else torch.nn.GRU
            module = cls(inp, hidden, num_layers=layers, bidirectional=bidir).cuda().eval()
            x = torch.randn(seq, batch, inp, device="cuda")
            rec["torch_cudnn_ms"] = time_torch(torch, module, x, args.iterations)
            with torch.no_grad():
                want = module(x)[0].float().cpu().numpy()
            onnx_path = os.path.join(args.out, f"{name}.onnx")
            torch.onnx.export(module.cpu(), (x.cpu(),), onnx_path, opset_version=17,
                              input_names=["x"], output_names=["y"], dynamo=False)
            xin = os.path.join(args.out, f"{name}-x.npy")
            np.save(xin, x.cpu().numpy())
            for prec in ("fp32", "fp16"):
                engine = os.path.join(args.out, f"{name}-{prec}.engine")
                flags = ["--precision", "fp16"] if prec == "fp16" else []
                t0 = time.time()
                run([args.graphc, "build", onnx_path, "--arch", "native", "-o", engine] + flags, 540)
                rec[f"graphc_{prec}_build_s"] = round(time.time() - t0, 1)
                out_dir = os.path.join(args.out, f"{name}-{prec}-out")
                js = os.path.join(args.out, f"{name}-{prec}-run.json")
                run([args.graphc, "run", engine, "--input", f"x={xin}", "--iterations",
                     str(args.iterations), "--output-dir", out_dir, "--json", js], 300)
                report = json.load(open(js))
                rec[f"graphc_{prec}_ms"] = report["gpu_compute_ms"]["median"]
                got = np.load(os.path.join(out_dir, sorted(os.listdir(out_dir))[0])).astype(np.float32)
                rec[f"graphc_{prec}_rel_l2"] = float(np.linalg.norm(got.reshape(want.shape) - want) /
                                                     np.linalg.norm(want))
        except Exception as e:  # one configuration's failure does not stop the rest
            rec["error"] = str(e)[-2000:]
        results.append(rec)
        print(json.dumps(rec), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "results": results},
              open(os.path.join(args.out, "lstm-bench.json"), "w"), indent=1)
    lines = ["| config | PyTorch cuDNN ms | graphc fp32 ms | graphc fp16 ms | rel L2 fp32 / fp16 |",
             "|---|---|---|---|---|"]
    for r in results:
        if "error" in r and "graphc_fp32_ms" not in r:
            lines.append(f"| {r['name']} | {r.get('torch_cudnn_ms', '-')} | error: {r['error'][:120]} | | |")
            continue
        lines.append(f"| {r['name']} | {r['torch_cudnn_ms']:.3f} | {r.get('graphc_fp32_ms', float('nan')):.3f} | "
                     f"{r.get('graphc_fp16_ms', float('nan')):.3f} | {r.get('graphc_fp32_rel_l2', float('nan')):.2e} / "
                     f"{r.get('graphc_fp16_rel_l2', float('nan')):.2e} |")
    open(os.path.join(args.out, "lstm-bench.md"), "w").write(
        f"LSTM/GRU on {torch.cuda.get_device_name()}: median of {args.iterations}\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
