# ResNet-50 and MobileNetV3-Large (torchvision, random weights, batch exported
# symbolic) built once for batch 1-32 (opt 8), run at batch 1, 8, 13 and 32 against
# onnxruntime (fp32, CPU) and timed against static engines built for each of those
# batches. On the GPU machine:
#   /opt/torch/.venv/bin/python scripts/bench_cnn_range.py GRAPHC WORK_DIR OUT_DIR
#   GRAPHC_PRECISION=fp16 /opt/torch/.venv/bin/python scripts/bench_cnn_range.py ...
# GRAPHC_PRECISION (default fp32) is the engines' --precision; models are exported
# into WORK_DIR by scripts/export_models.py when missing; results go to
# OUT_DIR/cnn_range_<precision>.json (per model and batch: relative L2 against
# onnxruntime, range and static median GPU ms, their ratio).
import json, os, subprocess, sys, time
import numpy as np
G = os.path.abspath(sys.argv[1]); W = os.path.abspath(sys.argv[2]); OUT = sys.argv[3]
os.makedirs(W, exist_ok=True); os.makedirs(OUT, exist_ok=True)
PREC = os.environ.get("GRAPHC_PRECISION", "fp32")
MODELS = ["resnet50", "mobilenet_v3_large"]
BATCHES = [1, 8, 13, 32]
HERE = os.path.dirname(os.path.abspath(__file__))
res = {"steps": [], "precision": PREC, "models": {}}
def log(*a):
    print(*a, flush=True); res["steps"].append(" ".join(str(x) for x in a))
missing = [m for m in MODELS if not os.path.exists(os.path.join(W, m + ".onnx"))]
if missing:
    t = time.time()
    r = subprocess.run([sys.executable, os.path.join(HERE, "export_models.py"), "--out", W,
                        "--models", *missing], capture_output=True, text=True)
    log("export rc", r.returncode, "s", round(time.time() - t, 1), r.stderr[-2000:])
def median_ms(engine, extra, json_path):
    r = subprocess.run([G, "run", engine, *extra, "--iterations", "100", "--json", json_path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr[-500:] + r.stdout[-500:]
    return json.load(open(json_path))["gpu_compute_ms"]["median"], None
for name in MODELS:
    onnx_path = os.path.join(W, name + ".onnx")
    rows = []
    res["models"][name] = rows
    if not os.path.exists(onnx_path):
        log(name, "not exported"); continue
    eng = os.path.join(W, f"{name}_range_{PREC}.engine")
    t = time.time()
    r = subprocess.run([G, "build", onnx_path, "--precision", PREC,
                        "--min-shape", "input:1x3x224x224", "--opt-shape", "input:8x3x224x224",
                        "--max-shape", "input:32x3x224x224", "-o", eng], capture_output=True, text=True)
    log(name, "range build rc", r.returncode, "s", round(time.time() - t, 1))
    if r.returncode != 0:
        log(r.stdout[-3000:], r.stderr[-6000:]); continue
    import onnxruntime as ort
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for b in BATCHES:
        x = rng.standard_normal((b, 3, 224, 224)).astype(np.float32)
        d = os.path.join(W, f"{name}_in_{b}"); os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "x.npy"), x)
        od = os.path.join(d, "out")
        rr = subprocess.run([G, "run", eng, "--shape", f"input:{b}x3x224x224", "--input",
                             f"input={d}/x.npy", "--output-dir", od, "--iterations", "100",
                             "--json", os.path.join(d, "r.json")], capture_output=True, text=True)
        if rr.returncode != 0:
            log(name, "run failed", b, rr.stdout[-1500:], rr.stderr[-1500:])
            rows.append({"batch": b, "error": rr.stderr[-300:]}); continue
        got = np.load(os.path.join(od, os.listdir(od)[0])).astype(np.float64)
        want = sess.run(None, {"input": x})[0].astype(np.float64)
        rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        ms = json.load(open(os.path.join(d, "r.json")))["gpu_compute_ms"]["median"]
        row = {"batch": b, "rel_l2": rel, "range_ms": ms}
        se = os.path.join(d, f"static_{PREC}.engine")
        sb = subprocess.run([G, "build", onnx_path, "--precision", PREC, "--shape",
                             f"input:{b}x3x224x224", "-o", se], capture_output=True, text=True)
        if sb.returncode == 0:
            row["static_ms"], err = median_ms(se, [], os.path.join(d, "s.json"))
            if row["static_ms"]:
                row["ratio"] = ms / row["static_ms"]
            else:
                row["static_error"] = err
        else:
            row["static_error"] = sb.stderr[-300:]
        log(name, json.dumps(row)); rows.append(row)
json.dump(res, open(os.path.join(OUT, f"cnn_range_{PREC}.json"), "w"), indent=1)
