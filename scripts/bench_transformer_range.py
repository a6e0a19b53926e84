# Transformers built once for a shape range, run at several shapes against onnxruntime (fp32,
# CPU) and timed against static engines built for some of those shapes, in the same process.
# On the GPU machine (PyTorch, transformers, torchvision, onnxruntime there):
#   GRAPHC_PRECISION=fp16 /opt/torch/.venv/bin/python scripts/bench_transformer_range.py \
#       GRAPHC WORK_DIR OUT_DIR bert [roberta gpt2 vit_b_16 ...]
# Models (random weights, PyTorch's legacy exporter at opset 17, eager attention):
#   bert, roberta: input_ids + attention_mask, batch 1-32 x seq 16-512 (opt 8x128), padded tails;
#   gpt2: input_ids + attention_mask (causal), the same range;
#   vit_b_16: torchvision ViT-B/16 at 224x224, batch 1-32 (opt 8);
#   any other model of the zoo by its scripts/zoo_models.py name (deit_small, swin_s, albert, ...):
#   exported as the zoo does (dynamic batch), batch 1-32 (opt 8), the zoo's other dims.
# ORT_THREADS sets onnxruntime's intra-op threads (several benchmarks on one host).
# Per model the range engine's attention runs, per shape, the faster of cuDNN's SDPA (planned
# for that shape) and the generated kernel, measured at the shape's first run (`graphc inspect`
# of it is logged). Each shape runs with GRAPHC_SDPA_SYNC_PLANS=1 (the plan built at first use,
# so the choice is made from the first run) for rel_l2 and range_ms. FULL=1 adds, per shape:
# range_cudnn_ms (GRAPHC_SDPA_CHOICE=cudnn), the default run (plans in the background) with its
# first_run_ms (host time to the first result in a fresh process) and rel_l2_background, and the
# same range built with --attention generated (range_generated_ms). Results:
# OUT_DIR/<model>_range_<precision>.json, one per model, written as each finishes.
import json, os, subprocess, sys, time
import numpy as np

G = os.path.abspath(sys.argv[1]); W = sys.argv[2]; OUT = sys.argv[3]; NAMES = sys.argv[4:] or ["bert"]
PREC = os.environ.get("GRAPHC_PRECISION", "fp32")
FULL = os.environ.get("FULL") == "1"
os.makedirs(W, exist_ok=True); os.makedirs(OUT, exist_ok=True)

TEXT_SHAPES = [(8, 128), (17, 300), (32, 512), (3, 77), (1, 16), (1, 512), (32, 16), (5, 200)]
TEXT_STATIC = [(8, 128), (1, 16), (32, 512), (3, 77), (17, 300)]


def text_model(kind):
    import torch, transformers as tf
    if kind == "bert":
        cfg = tf.BertConfig(); cfg._attn_implementation = "eager"
        return tf.BertModel(cfg, add_pooling_layer=False), cfg.vocab_size
    if kind == "roberta":
        # roberta-base's 514 positions (two taken by the padding offset): seq 512 fits.
        cfg = tf.RobertaConfig(max_position_embeddings=514); cfg._attn_implementation = "eager"
        return tf.RobertaModel(cfg, add_pooling_layer=False), cfg.vocab_size
    cfg = tf.GPT2Config(use_cache=False); cfg._attn_implementation = "eager"
    return tf.GPT2Model(cfg), cfg.vocab_size


def export_text(kind, path):
    import torch
    torch.manual_seed(0)
    inner, vocab = text_model(kind)

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__(); self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    ids = torch.randint(2, vocab, (8, 128)); mask = torch.ones(8, 128, dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "last_hidden_state": {0: "batch", 1: "seq"}}
    with torch.no_grad():
        torch.onnx.export(Wrap(inner.eval()).eval(), (ids, mask), path, opset_version=17, dynamo=False,
                          input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamic_axes=axes, do_constant_folding=True)


def export_vit(path):
    # The zoo's exporter (nn.MultiheadAttention's fast path off, dynamic batch).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models
    got = export_models.export("vit_b_16", os.path.dirname(path))
    assert os.path.join(os.path.dirname(path), got["file"]) == path, got


def text_spec(kind, vocab):
    def inputs(shape, rng):
        b, s = shape
        ids = rng.integers(2, vocab, size=(b, s), dtype=np.int64)
        mask = np.ones((b, s), dtype=np.int64)
        if b > 1:
            mask[:, s - max(1, s // 5):] = 0  # padded tails where batched
        return {"input_ids": ids, "attention_mask": mask}

    def flag(shape):
        return f"input_ids:{shape[0]}x{shape[1]},attention_mask:{shape[0]}x{shape[1]}"
    return dict(export=lambda p: export_text(kind, p), inputs=inputs, flag=flag,
                range=((1, 16), (8, 128), (32, 512)), shapes=TEXT_SHAPES, static=TEXT_STATIC)


def vit_spec():
    def inputs(shape, rng):
        return {"input": rng.standard_normal((shape[0], 3, 224, 224)).astype(np.float32)}
    return dict(export=export_vit, inputs=inputs, flag=lambda s: f"input:{s[0]}x3x224x224",
                range=((1,), (8,), (32,)), shapes=[(8,), (1,), (32,), (3,), (17,), (5,)],
                static=[(8,), (1,), (32,), (3,), (17,)])


def zoo_spec(model):
    """Any model of the zoo (scripts/zoo_models.py, exported with a dynamic batch on every
    input by scripts/export_models.py) over batch 1-32 (opt 8), its other dims as the zoo's
    batch-1 configuration has them (text models: seq 128)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_common, dataclasses
    base = next(c for c in bench_common.CONFIGS.values() if c.model == model and c.inputs[0].shape[0] == 1)

    def export(path):
        import export_models
        got = export_models.export(model, os.path.dirname(path))
        assert os.path.join(os.path.dirname(path), got["file"]) == path, got

    def config(b):
        return dataclasses.replace(base, inputs=tuple(
            dataclasses.replace(i, shape=(b,) + tuple(i.shape[1:])) for i in base.inputs))

    def inputs(shape, rng):
        dtypes = dict(bench_common.onnx_io(os.path.join(W, model, f"{model}.onnx"))[0])
        return bench_common.make_inputs(config(shape[0]), dtypes, rng)
    return dict(export=export, inputs=inputs, flag=lambda s: ",".join(config(s[0]).shape_flags()),
                range=((1,), (8,), (32,)), shapes=[(8,), (1,), (32,), (3,), (17,), (5,)],
                static=[(8,), (1,), (32,), (3,), (17,)])


SPECS = {"bert": lambda: text_spec("bert", 30522), "roberta": lambda: text_spec("roberta", 50265),
         "gpt2": lambda: text_spec("gpt2", 50257), "vit_b_16": vit_spec}


def graphc(args, env=None):
    return subprocess.run([G] + args, capture_output=True, text=True, env=env)


def timed_run(engine, spec, shape, in_dir, names, json_path, out_dir=None, env_set=None, static=False):
    env = dict(os.environ)
    for k in ("GRAPHC_SDPA_SYNC_PLANS", "GRAPHC_SDPA_CHOICE"):
        env.pop(k, None)
    env.update(env_set or {})
    args = ["run", engine, "--iterations", "50", "--json", json_path]
    if not static:  # a static engine runs its one shape
        args += ["--shape", spec["flag"](shape)]
    for n in names:
        args += ["--input", f"{n}={os.path.join(in_dir, n + '.npy')}"]
    if out_dir:
        args += ["--output-dir", out_dir]
    r = graphc(args, env)
    if r.returncode != 0:
        return None, r
    return json.load(open(json_path)), r


def bench(name):
    spec = SPECS[name]() if name in SPECS else zoo_spec(name)
    res = {"model": name, "precision": PREC, "steps": []}
    out_json = os.path.join(OUT, f"{name}_range_{PREC}.json")

    def log(*a):
        print(f"[{name}]", *a, flush=True); res["steps"].append(" ".join(str(x) for x in a))
    d = os.path.join(W, name); os.makedirs(d, exist_ok=True)
    onnx_path = os.path.join(d, f"{name}.onnx")
    if not os.path.exists(onnx_path):
        t = time.time(); spec["export"](onnx_path); log("export s", round(time.time() - t, 1))
    lo, opt, hi = spec["range"]
    rflags = ["--min-shape", spec["flag"](lo), "--opt-shape", spec["flag"](opt), "--max-shape", spec["flag"](hi)]
    eng = os.path.join(d, f"range_{PREC}.engine")
    t = time.time()
    r = graphc(["build", onnx_path, "--precision", PREC] + rflags + ["-o", eng])
    log("range build rc", r.returncode, "s", round(time.time() - t, 1)); log(r.stderr[-4000:])
    if r.returncode != 0:
        json.dump(res, open(out_json, "w"), indent=1); return
    ins = graphc(["inspect", eng]).stdout
    at = ins.find("attention over the shape range")
    log("range engine attention:", ins[at:at + 1200] if at >= 0 else "(no attention with run-time sizes)")
    gen = None
    if FULL:
        gen = os.path.join(d, f"range_{PREC}_generated.engine")
        rg = graphc(["build", onnx_path, "--precision", PREC, "--attention", "generated"] + rflags + ["-o", gen])
        log("range build (--attention generated) rc", rg.returncode)
        gen = gen if rg.returncode == 0 else None
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(os.environ.get("ORT_THREADS", "0"))  # 0: onnxruntime's default
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    rows = []
    for shape in spec["shapes"]:
        tag = "x".join(map(str, shape))
        sd = os.path.join(d, f"in_{tag}"); os.makedirs(sd, exist_ok=True)
        feeds = spec["inputs"](shape, rng)
        for n, v in feeds.items():
            np.save(os.path.join(sd, n + ".npy"), v)
        want = sess.run(None, feeds)[0].astype(np.float64)

        def rel_l2(out_dir):
            got = np.load(os.path.join(out_dir, sorted(os.listdir(out_dir))[0])).astype(np.float64)
            return float(np.linalg.norm(got - want) / np.linalg.norm(want))
        row = {"shape": list(shape)}
        sync = {"GRAPHC_SDPA_SYNC_PLANS": "1"}
        rj, rr = timed_run(eng, spec, shape, sd, feeds, os.path.join(sd, "r.json"), os.path.join(sd, "out"), sync)
        if rj is None:
            log("run failed", tag, rr.stdout[-1500:], rr.stderr[-1500:]); row["error"] = rr.stderr[-300:]
            rows.append(row); continue
        row.update(rel_l2=rel_l2(os.path.join(sd, "out")), range_ms=rj["gpu_compute_ms"]["median"],
                   first_run_sync_ms=rj.get("load_ms", {}).get("first_run"))
        if "cuDNN refuses" in rr.stderr + rr.stdout:
            row["cudnn_refused"] = True  # this shape ran the generated attention kernel
        if FULL:
            cj, _ = timed_run(eng, spec, shape, sd, feeds, os.path.join(sd, "c.json"), None,
                              dict(sync, GRAPHC_SDPA_CHOICE="cudnn"))
            if cj:
                row["range_cudnn_ms"] = cj["gpu_compute_ms"]["median"]
            bj, br = timed_run(eng, spec, shape, sd, feeds, os.path.join(sd, "b.json"),
                               os.path.join(sd, "out_background"))
            if bj:
                row.update(first_run_ms=bj.get("load_ms", {}).get("first_run"),
                           rel_l2_background=rel_l2(os.path.join(sd, "out_background")),
                           range_background_ms=bj["gpu_compute_ms"]["median"])
            else:
                row["background_error"] = br.stderr[-300:]
            if gen:
                gj, _ = timed_run(gen, spec, shape, sd, feeds, os.path.join(sd, "g.json"))
                if gj:
                    row["range_generated_ms"] = gj["gpu_compute_ms"]["median"]
        if shape in spec["static"]:
            se = os.path.join(sd, f"static_{PREC}.engine")
            sb = graphc(["build", onnx_path, "--precision", PREC, "--shape", spec["flag"](shape), "-o", se])
            if sb.returncode == 0:
                sj, _ = timed_run(se, spec, shape, sd, feeds, os.path.join(sd, "s.json"), static=True)
                if sj:
                    row["static_ms"] = sj["gpu_compute_ms"]["median"]
                    row["ratio"] = row["range_ms"] / row["static_ms"]
            else:
                row["static_error"] = sb.stderr[-300:]
        log(json.dumps(row)); rows.append(row)
        res["rows"] = rows
        json.dump(res, open(out_json, "w"), indent=1)
    res["rows"] = rows
    json.dump(res, open(out_json, "w"), indent=1)


for n in NAMES:
    bench(n)
