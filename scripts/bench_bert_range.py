# BERT-base built once for batch 1-32 x seq 16-512, run at 8 shapes against onnxruntime
# (fp32, CPU) and timed against static engines built for some of those shapes. On the GPU machine:
#   /opt/torch/.venv/bin/python scripts/bench_bert_range.py GRAPHC WORK_DIR OUT_DIR
#   GRAPHC_PRECISION=fp16 /opt/torch/.venv/bin/python scripts/bench_bert_range.py ...
# GRAPHC_PRECISION (default fp32) is the engines' --precision; the results go to
# OUT_DIR/bert_range_<precision>.json. The range engine's attention runs cuDNN's SDPA per shape
# where cuDNN takes it (fp16/bf16; `graphc inspect` of it is logged); a second range engine
# built with --attention generated runs the generated kernel, timed alongside
# (range_generated_ms). A shape's cuDNN plan is built in the background on first use (the
# generated kernel runs meanwhile), so each shape is run twice: with GRAPHC_SDPA_SYNC_PLANS=1
# (plans built at first use: cuDNN from the first run) for rel_l2 and range_ms, and as users run
# it by default for first_run_ms, the host time of the first run at a shape new to the process
# (the plan queued, the generated kernel run, the CUDA graph captured); first_run_sync_ms is
# that with the plan built synchronously. rel_l2_background checks the default run's output.
import json, os, subprocess, sys, time
import numpy as np
G = os.path.abspath(sys.argv[1]); W = sys.argv[2]; OUT = sys.argv[3]
os.makedirs(W, exist_ok=True); os.makedirs(OUT, exist_ok=True)
onnx_path = os.path.join(W, "bert.onnx")
PREC = os.environ.get("GRAPHC_PRECISION", "fp32")
res = {"steps": [], "precision": PREC}
def log(*a):
    print(*a, flush=True); res["steps"].append(" ".join(str(x) for x in a))
if not os.path.exists(onnx_path):
    import torch, transformers
    torch.manual_seed(0)
    cfg = transformers.BertConfig(); cfg._attn_implementation = "eager"
    inner = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__(); self.m = m
        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    model = Wrap(inner).eval()
    ids = torch.randint(0, cfg.vocab_size, (8, 128)); mask = torch.ones(8, 128, dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "last_hidden_state": {0: "batch", 1: "seq"}}
    t = time.time()
    torch.onnx.export(model, (ids, mask), onnx_path, opset_version=17, dynamo=False,
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes=axes, do_constant_folding=True)
    log("export s", round(time.time() - t, 1))
eng = os.path.join(W, f"bert_range_{PREC}.engine")
t = time.time()
r = subprocess.run([G, "build", onnx_path, "--precision", PREC,
                    "--min-shape", "input_ids:1x16,attention_mask:1x16",
                    "--opt-shape", "input_ids:8x128,attention_mask:8x128",
                    "--max-shape", "input_ids:32x512,attention_mask:32x512", "-o", eng],
                   capture_output=True, text=True)
log("range build rc", r.returncode, "s", round(time.time() - t, 1)); log(r.stdout[-3000:]); log(r.stderr[-6000:])
if r.returncode == 0:
    ins = subprocess.run([G, "inspect", eng], capture_output=True, text=True).stdout
    at = ins.find("attention over the shape range")
    log("range engine attention:", ins[at:at + 1500] if at >= 0 else "(no attention with run-time sizes)")
gen = os.path.join(W, f"bert_range_{PREC}_generated.engine")
rg = subprocess.run([G, "build", onnx_path, "--precision", PREC, "--attention", "generated",
                     "--min-shape", "input_ids:1x16,attention_mask:1x16",
                     "--opt-shape", "input_ids:8x128,attention_mask:8x128",
                     "--max-shape", "input_ids:32x512,attention_mask:32x512", "-o", gen],
                    capture_output=True, text=True)
log("range build (--attention generated) rc", rg.returncode)
if r.returncode == 0:
    import onnxruntime as ort
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    shapes = [(8, 128), (17, 300), (32, 512), (3, 77), (1, 16), (1, 512), (32, 16), (5, 200)]
    rows = []
    for b, s in shapes:
        ids = rng.integers(0, 30522, size=(b, s), dtype=np.int64)
        mask = np.ones((b, s), dtype=np.int64)
        mask[:, s - max(1, s // 5):] = 0 if b > 1 else 1  # padded tails where batched
        d = os.path.join(W, f"in_{b}x{s}"); os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "ids.npy"), ids); np.save(os.path.join(d, "mask.npy"), mask)
        od = os.path.join(d, "out")
        def run_range(out_dir, json_name, sync):
            env = dict(os.environ)
            env.pop("GRAPHC_SDPA_SYNC_PLANS", None)
            if sync:
                env["GRAPHC_SDPA_SYNC_PLANS"] = "1"
            return subprocess.run([G, "run", eng, "--shape", f"input_ids:{b}x{s},attention_mask:{b}x{s}",
                                   "--input", f"input_ids={d}/ids.npy", "--input", f"attention_mask={d}/mask.npy",
                                   "--output-dir", out_dir, "--iterations", "50", "--json", os.path.join(d, json_name)],
                                  capture_output=True, text=True, env=env)
        rr = run_range(od, "r.json", True)
        if rr.returncode != 0:
            log("run failed", b, s, rr.stdout[-1500:], rr.stderr[-1500:]); rows.append({"shape": [b, s], "error": rr.stderr[-300:]}); continue
        want = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0].astype(np.float64)
        def rel_l2(out_dir):
            got = np.load(os.path.join(out_dir, os.listdir(out_dir)[0])).astype(np.float64)
            return float(np.linalg.norm(got - want) / np.linalg.norm(want))
        rel = rel_l2(od)
        rj = json.load(open(os.path.join(d, "r.json")))
        ms = rj["gpu_compute_ms"]["median"]
        row = {"shape": [b, s], "rel_l2": rel, "range_ms": ms,
               "first_run_sync_ms": rj.get("load_ms", {}).get("first_run")}
        obg = os.path.join(d, "out_background")
        rb = run_range(obg, "rb.json", False)
        if rb.returncode == 0:
            rbj = json.load(open(os.path.join(d, "rb.json")))
            row["first_run_ms"] = rbj.get("load_ms", {}).get("first_run")
            row["rel_l2_background"] = rel_l2(obg)
            row["range_background_ms"] = rbj["gpu_compute_ms"]["median"]  # kernel, then cuDNN
        else:
            row["background_error"] = rb.stderr[-300:]
        if "cuDNN refuses" in rr.stderr + rr.stdout:
            row["cudnn_refused"] = True  # this shape ran the generated attention kernel
        if rg.returncode == 0:
            gr = subprocess.run([G, "run", gen, "--shape", f"input_ids:{b}x{s},attention_mask:{b}x{s}",
                                 "--iterations", "50", "--json", os.path.join(d, "g.json")],
                                capture_output=True, text=True)
            if gr.returncode == 0:
                row["range_generated_ms"] = json.load(open(os.path.join(d, "g.json")))["gpu_compute_ms"]["median"]
        if (b, s) in [(8, 128), (1, 16), (32, 512), (3, 77), (17, 300)]:
            se = os.path.join(d, f"static_{PREC}.engine")
            sb = subprocess.run([G, "build", onnx_path, "--precision", PREC, "--shape",
                                 f"input_ids:{b}x{s},attention_mask:{b}x{s}", "-o", se], capture_output=True, text=True)
            if sb.returncode == 0:
                sr = subprocess.run([G, "run", se, "--iterations", "50", "--json", os.path.join(d, "s.json")], capture_output=True, text=True)
                if sr.returncode == 0:
                    row["static_ms"] = json.load(open(os.path.join(d, "s.json")))["gpu_compute_ms"]["median"]
                    row["ratio"] = ms / row["static_ms"]
            else:
                row["static_error"] = sb.stderr[-300:]
        log(json.dumps(row)); rows.append(row)
    res["rows"] = rows
json.dump(res, open(os.path.join(OUT, f"bert_range_{PREC}.json"), "w"), indent=1)
