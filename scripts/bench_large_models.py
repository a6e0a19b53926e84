#!/usr/bin/env python3
"""Large-model benchmark, run on the GPU machine: build time and
peak memory, engine size, time to the first result and peak host memory of
`graphc run`, and latency, for

  synthetic3   scripts/make_large_model.py --gb 3.1 (GPT-2-large-sized weights)
  synthetic6   scripts/make_large_model.py --gb 6   (an engine past 4 GiB in fp32)
  gpt2_large   GPT-2 large (36 layers, 1280 wide, 20 heads; random weights, seq 128)
               exported with transformers + torch.onnx (external data past 2 GB);
               also timed in PyTorch eager and torch.compile (fp16) for comparison
  llama3b      a Llama-shaped decoder stack of 3.4B parameters (open_llama_3b's shape:
               26 layers, 3200 wide, 32 heads, MLP 8640, vocab 32000; random weights,
               batch 1, seq 128), exported the same way (13.7 GB of fp32 weights);
               also timed in PyTorch eager and torch.compile

each built --precision fp16 and fp32 (--arch native). Memory is the peak RSS
(getrusage's ru_maxrss of the command); "time to first result" is the wall time of
`graphc run ENGINE --iterations 1 --warmup-ms 0` (process start to exit: reading
the engine, loading it, one run), the median of three runs with the engine
evicted from the page cache (posix_fadvise DONTNEED; "cold") after one such run
that also reads the libraries (cuBLASLt, cuDNN: from disk only in a machine's
first GPU process; its time is kept as first_result_cold_libraries_s), and one
run right after ("warm"). "first output" is the same runs' time from the spawn
to graphc's first outputs on the host (`load_ms.first_result_unix` of its
--json), process exit excluded.
Goals: build peak <= max(engine + 1 GB, 2 GB); time to the
first result <= engine size / 2 GB/s + 0.5 s; run peak <= 1 GB + staging.

    scripts/bench_large_models.py --graphc build/graphc [--work /tmp/graphc-large]
        [--models synthetic3 synthetic6 gpt2_large] [--precisions fp16 fp32]
        [--out-dir bench/results]

Results go to OUT_DIR/<device>-<date>-large-models.{json,md}, rewritten after
every step, so a run cut short keeps what it measured; a later run the same day
adds its rows to them (replacing a model and precision measured again), and
with the same --work reuses exported models and built engines.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STAGING_BYTES = 2 * (64 << 20)  # runtime/weights_upload.h: two 64 MiB pinned buffers
GB = 1e9


# Runs argv[1:] and prints its peak RSS (the kernel's ru_maxrss of the one
# child), so no GNU time is needed on the GPU machine.
RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.call(sys.argv[1:])\n"
    "print('graphc-bench max rss kb:', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
    " file=sys.stderr)\n"
    "sys.exit(rc)\n")


def timed(cmd, log):
    """Runs cmd; returns (rc, wall seconds, peak RSS bytes of cmd)."""
    with open(log, "w") as f:
        t0 = time.time()
        rc = subprocess.call([sys.executable, "-c", RSS_WRAPPER] + cmd, stdout=f,
                             stderr=subprocess.STDOUT)
        wall = time.time() - t0
    m = re.search(r"graphc-bench max rss kb: (\d+)", open(log).read())
    return rc, wall, int(m.group(1)) * 1024 if m else None


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def device_name():
    try:
        out = subprocess.check_output(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                      text=True)
        return out.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - no GPU: the file name says so
        return "no-gpu"


def make_model(name, work):
    path = os.path.join(work, name, f"{name}.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if name.startswith("synthetic"):
        gb = {"synthetic3": 3.1, "synthetic6": 6.0}[name]
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_large_model.py"), path,
                               "--gb", str(gb)])
        return path
    if name in TRANSFORMERS:
        import torch
        torch.manual_seed(0)
        model, vocab = transformers_model(name)
        model = model.eval()
        ids = torch.randint(0, vocab, (1, 128))
        with torch.no_grad():
            try:
                torch.onnx.export(model, (ids,), path, opset_version=17, dynamo=False,
                                  input_names=["input_ids"], output_names=["output"],
                                  do_constant_folding=True)
            except Exception as e:  # noqa: BLE001 - e.g. transformers' masks use aten::diff
                print(f"{name}: legacy exporter failed ({type(e).__name__}: {str(e)[:200]}); "
                      "trying the dynamo exporter at opset 18", flush=True)
                prog = torch.onnx.export(model, (ids,), dynamo=True, opset_version=18,
                                         input_names=["input_ids"], output_names=["output"])
                prog.save(path, external_data=True)
        return path
    raise SystemExit(f"unknown model {name}")


TRANSFORMERS = ("gpt2_large", "llama3b")


def transformers_model(name):
    """(module returning the last hidden state, vocabulary size), random weights."""
    import transformers
    if name == "gpt2_large":
        config = transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20, use_cache=False)
        config._attn_implementation = "eager"
        return GptLastHidden(transformers.GPT2Model(config)), config.vocab_size
    config = transformers.LlamaConfig(hidden_size=3200, intermediate_size=8640,
                                      num_hidden_layers=26, num_attention_heads=32,
                                      num_key_value_heads=32, vocab_size=32000,
                                      max_position_embeddings=2048, use_cache=False)
    config._attn_implementation = "eager"
    return GptLastHidden(transformers.LlamaModel(config)), config.vocab_size


class GptLastHidden:  # replaced by a torch.nn.Module subclass when torch is imported
    pass


def _define_torch_wrapper():
    global GptLastHidden
    try:
        import torch
    except ImportError:
        return

    class _Gpt(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids).last_hidden_state

    GptLastHidden = _Gpt


def torch_latency(name, precision):
    """The model in PyTorch eager and torch.compile (median ms over 50 runs)."""
    import torch
    torch.manual_seed(0)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    model, vocab = transformers_model(name)
    model = model.eval().to(dtype).cuda()
    ids = torch.randint(0, vocab, (1, 128), device="cuda")
    out = {}
    for label, fn in (("eager", model), ("torch.compile", torch.compile(model))):
        with torch.no_grad():
            for _ in range(5):
                fn(ids)
            torch.cuda.synchronize()
            times = []
            for _ in range(50):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(ids)
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e))
        out[label] = sorted(times)[len(times) // 2]
    return out


def files_bytes(onnx_path):
    d = os.path.dirname(onnx_path)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if not f.endswith(".engine") and not f.endswith(".log") and not f.endswith(".json"))


def bench_one(graphc, model, onnx_path, precision, logs):
    r = {"model": model, "precision": precision, "onnx_bytes": files_bytes(onnx_path)}
    engine = os.path.join(os.path.dirname(onnx_path), f"{model}_{precision}.engine")
    rc, wall, rss = timed([graphc, "build", onnx_path, "--arch", "native", "--precision",
                           precision, "-o", engine], os.path.join(logs, f"{model}_{precision}_build.log"))
    r.update(build_rc=rc, build_s=round(wall, 2), build_peak_bytes=rss)
    if rc != 0:
        r["error"] = "build failed (see the log)"
        return r
    size = os.path.getsize(engine)
    r["engine_bytes"] = size
    r["goal_build_peak_bytes"] = max(size + GB, 2 * GB)
    # The libraries (cuBLASLt, cuDNN) are read once from disk by the first GPU
    # process after boot, whatever the engine: one run first, so that the
    # cold runs measure the engine, then three cold runs and one warm.
    first_runs = {"cold": [], "warm": []}
    for i, cache in enumerate(("libraries", "cold", "cold", "cold", "warm")):
        if cache in ("libraries", "cold"):
            evict(engine)
        first_json = os.path.join(logs, f"{model}_{precision}_first_{cache}{i}.json")
        t0 = time.time()
        rc, wall, rss = timed([graphc, "run", engine, "--iterations", "1", "--warmup-ms", "0",
                               "--json", first_json],
                              os.path.join(logs, f"{model}_{precision}_first_{cache}{i}.log"))
        if rc != 0:
            r["error"] = f"run ({cache}) failed (see the log)"
            return r
        load = json.load(open(first_json)).get("load_ms")
        run = {"wall_s": round(wall, 3),
               # graphc's own clock: from the spawn to the first outputs on the host
               "first_result_s": round(load["first_result_unix"] / 1000 - t0, 3),
               "peak_bytes": rss, "load_ms": load}
        if cache == "libraries":
            r["first_result_cold_libraries_s"] = run["wall_s"]
        else:
            first_runs[cache].append(run)
    for cache, runs in first_runs.items():
        ordered = sorted(runs, key=lambda x: x["wall_s"])
        median = ordered[len(ordered) // 2]
        r[f"first_result_{cache}_s"] = median["wall_s"]
        r[f"first_result_{cache}_runs_s"] = [x["wall_s"] for x in runs]
        r[f"first_output_{cache}_s"] = median["first_result_s"]
        r[f"run_peak_{cache}_bytes"] = max(x["peak_bytes"] or 0 for x in runs)
        r[f"load_{cache}_ms"] = median["load_ms"]
    r["goal_first_result_s"] = round(size / (2 * GB) + 0.5, 3)
    r["goal_run_peak_bytes"] = GB + STAGING_BYTES
    js = os.path.join(logs, f"{model}_{precision}_latency.json")
    rc, _, _ = timed([graphc, "run", engine, "--iterations", "50", "--json", js],
                     os.path.join(logs, f"{model}_{precision}_latency.log"))
    if rc == 0:
        r["latency_median_ms"] = json.load(open(js))["gpu_compute_ms"]["median"]
    if model in TRANSFORMERS:
        try:
            r["torch_ms"] = torch_latency(model, precision)
        except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
            r["torch_error"] = f"{type(e).__name__}: {e}"[:300]
    return r


def verdict(ok):
    return "yes" if ok else "**no**"


def write_report(results, meta, base):
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"# Large models on {meta['device']} ({meta['date']})", "",
             "Made by `scripts/bench_large_models.py` (how each number is taken: its docstring). "
             "Memory is peak RSS (ru_maxrss); first result = wall time of "
             "`graphc run --iterations 1` from process start to exit, engine evicted from the "
             "page cache (cold: median of 3) or not (warm); first output = from the spawn to "
             "the outputs on the host (exit excluded), cold median; first run = the cold run "
             "before those, which in a machine's first GPU process reads cuBLASLt/cuDNN "
             "from disk too.", "",
             "| model | prec | build s | build peak GB (goal) | engine GB | first result s cold / warm "
             "(goal) | first output s cold | first run s | run peak GB (goal) | latency ms "
             "| torch eager / compile ms |",
             "|---|---|---:|---|---:|---|---:|---:|---|---:|---|"]
    for r in results:
        if "engine_bytes" not in r:
            lines.append(f"| {r['model']} | {r['precision']} | {r.get('build_s', '')} | "
                         f"{r.get('error', '')} | | | | | | | |")
            continue
        g = lambda k: r.get(k) or 0  # noqa: E731
        first_ok = g("first_result_cold_s") <= g("goal_first_result_s")
        torch_ms = r.get("torch_ms", {})
        lines.append(
            f"| {r['model']} | {r['precision']} | {r['build_s']} | "
            f"{g('build_peak_bytes') / GB:.2f} ({g('goal_build_peak_bytes') / GB:.2f}, "
            f"{verdict(g('build_peak_bytes') <= g('goal_build_peak_bytes'))}) | "
            f"{r['engine_bytes'] / GB:.2f} | {r.get('first_result_cold_s', '')} / "
            f"{r.get('first_result_warm_s', '')} ({r.get('goal_first_result_s', '')}, "
            f"{verdict(first_ok)}) | {r.get('first_output_cold_s', '')} | "
            f"{r.get('first_result_cold_libraries_s', '')} | {g('run_peak_cold_bytes') / GB:.2f} "
            f"({g('goal_run_peak_bytes') / GB:.2f}, "
            f"{verdict(g('run_peak_cold_bytes') <= g('goal_run_peak_bytes'))}) | "
            f"{r.get('latency_median_ms', '')} | "
            f"{torch_ms.get('eager', '')} / {torch_ms.get('torch.compile', '')} |")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--work", default="/tmp/graphc-large")
    ap.add_argument("--models", nargs="*", default=["synthetic3", "synthetic6", "gpt2_large", "llama3b"])
    ap.add_argument("--precisions", nargs="*", default=["fp16", "fp32"])
    ap.add_argument("--out-dir", default=os.path.join(HERE, "..", "bench", "results"))
    a = ap.parse_args()
    _define_torch_wrapper()
    graphc = os.path.abspath(a.graphc)
    os.makedirs(a.work, exist_ok=True)
    logs = os.path.join(a.work, "logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(a.out_dir, exist_ok=True)
    device = device_name()
    date = datetime.date.today().isoformat()
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    base = os.path.join(a.out_dir, f"{slug}-{date}-large-models")
    meta = {"device": device, "date": date, "graphc": graphc, "staging_bytes": STAGING_BYTES}
    results = []
    if os.path.exists(base + ".json"):  # a later call on the same day adds to it
        results = json.load(open(base + ".json")).get("results", [])
    for model in a.models:
        try:
            t0 = time.time()
            onnx_path = make_model(model, a.work)
            print(f"{model}: model ready ({time.time() - t0:.0f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
            results.append({"model": model, "precision": "-", "error": f"export: {e}"[:300]})
            write_report(results, meta, base)
            continue
        for precision in a.precisions:
            r = bench_one(graphc, model, onnx_path, precision, logs)
            print(json.dumps(r), flush=True)
            results = [x for x in results
                       if (x.get("model"), x.get("precision")) != (model, precision)] + [r]
            write_report(results, meta, base)
    print(f"wrote {base}.json and {base}.md")


if __name__ == "__main__":
    main()
