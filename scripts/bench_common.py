"""What compare_models.py and bench.py share, none of it needing PyTorch or a GPU
(so scripts/test_bench_tools.py tests it on the CPU machine): the model
configurations, their random inputs, `graphc build` / `graphc run` through a
subprocess with a time limit, onnxruntime on the CPU, error metrics, latency
statistics, the elementwise-chain model, and a JSON result store that lets a
run stop at a time budget and a later run go on where it stopped.
"""
import dataclasses
import json
import math
import os
import re
import shlex
import subprocess
import tempfile
import time

import numpy as np

SEQ = 128
BERT_VOCAB = 30522  # transformers.BertConfig() default (bert-base-uncased)
GPT2_VOCAB = 50257  # transformers.GPT2Config() default (gpt2)

# Relative L2 error a precision must stay under against onnxruntime.
TOLERANCE = {"fp32": 1e-3, "fp16": 1e-2, "bf16": 5e-2}


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple
    kind: str  # "image" (randn), "ids" (randint over vocab), "mask" (ones, trailing zeros), "float", "int"
    vocab: int = 0


@dataclasses.dataclass(frozen=True)
class Config:
    name: str  # e.g. resnet50_b32
    model: str  # file stem in the models folder (scripts/export_models.py names)
    inputs: tuple  # of InputSpec

    def shape_flags(self):
        return [f"{i.name}:{'x'.join(str(d) for d in i.shape)}" for i in self.inputs]


def _image(batch, size=224):
    return (InputSpec("input", (batch, 3, size, size), "image"),)


def _bert(batch, seq=SEQ, vocab=BERT_VOCAB):
    return (InputSpec("input_ids", (batch, seq), "ids", vocab),
            InputSpec("attention_mask", (batch, seq), "mask"))


# The real-model run list (scripts/gpu_model_reports.sh uses the same shapes).
CONFIGS = {c.name: c for c in [
    Config("resnet50_b1", "resnet50", _image(1)),
    Config("resnet50_b32", "resnet50", _image(32)),
    Config("mobilenet_v2_b1", "mobilenet_v2", _image(1)),
    Config("vit_b_16_b1", "vit_b_16", _image(1)),
    Config("bert_b1", "bert", _bert(1)),
    Config("bert_b32", "bert", _bert(32)),
    Config("gpt2_b1", "gpt2", (InputSpec("input_ids", (1, SEQ), "ids", GPT2_VOCAB),)),
    # Attention at length: BERT-base at seq 512, a Whisper-base encoder over 30 s of audio
    # (80 mel bins x 3000 frames -> 1500 positions).
    Config("bert_b8_s512", "bert_s512", _bert(8, 512)),
    Config("whisper_base_enc_b1", "whisper_base_enc", (InputSpec("input_features", (1, 80, 3000), "float"),)),
]}

# The model zoo (scripts/zoo_models.py builds the models): every family at batch 1 and a
# serving batch where it matters. The benchmark from now on: scripts/gpu_zoo_session.sh.
ZOO_CONFIGS = {c.name: c for c in [
    Config("resnext50_b1", "resnext50", _image(1)),
    Config("mobilenet_v3_large_b1", "mobilenet_v3_large", _image(1)),
    Config("efficientnet_v2_s_b1", "efficientnet_v2_s", _image(1)),
    Config("convnext_small_b1", "convnext_small", _image(1)),
    Config("convnext_small_b32", "convnext_small", _image(32)),
    Config("regnet_y_400mf_b1", "regnet_y_400mf", _image(1)),
    Config("densenet121_b1", "densenet121", _image(1)),
    Config("inception_v3_b1", "inception_v3", _image(1, 299)),
    Config("deit_small_b1", "deit_small", _image(1)),
    Config("swin_s_b1", "swin_s", _image(1)),
    Config("clip_vit_b32_b1", "clip_vit_b32", _image(1)),
    Config("roberta_b1", "roberta", _bert(1, vocab=50265)),
    Config("albert_b1", "albert", _bert(1, vocab=30000)),
    Config("t5_base_enc_b1", "t5_base_enc", _bert(1, vocab=32128)),
    Config("bart_base_enc_b1", "bart_base_enc", _bert(1, vocab=50265)),
    Config("wav2vec2_base_b1", "wav2vec2_base", (InputSpec("input_values", (1, 16000), "float"),)),
    Config("deeplabv3_mbv3_b1", "deeplabv3_mbv3", _image(1, 520)),
    Config("fcn_resnet50_b1", "fcn_resnet50", _image(1, 520)),
    Config("unet_block_b1", "unet_block", (InputSpec("input", (1, 320, 32, 32), "float"),)),
]}
CONFIGS.update(ZOO_CONFIGS)
# The zoo's run list: the earlier configurations and the new ones (27).
ZOO_RUN = ["resnet50_b1", "resnet50_b32", "mobilenet_v2_b1", "vit_b_16_b1", "bert_b1", "bert_b32", "gpt2_b1",
           "whisper_base_enc_b1"] + list(ZOO_CONFIGS)


def config_from_json(d):
    """A configuration outside the run list (tests, new models): {"name", "model",
    "inputs": [{"name", "shape", "kind", "vocab"?}]}."""
    specs = tuple(InputSpec(i["name"], tuple(int(x) for x in i["shape"]), i["kind"], int(i.get("vocab", 0)))
                  for i in d["inputs"])
    return Config(d["name"], d["model"], specs)


def load_configs(names, extra_json=None):
    """The named configurations, from the run list and an optional JSON file of more."""
    table = dict(CONFIGS)
    if extra_json:
        with open(extra_json) as f:
            for d in json.load(f):
                c = config_from_json(d)
                table[c.name] = c
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(table)}")
    return [table[n] for n in names]


# ---------------------------------------------------------------- ONNX models and inputs

_ONNX_TO_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
                  9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def onnx_io(path):
    """([(name, numpy dtype)] of the graph inputs that are not initializers, [output names]),
    read without loading external weights."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    ins = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        et = v.type.tensor_type.elem_type
        if et not in _ONNX_TO_NUMPY:
            raise ValueError(f"{path}: input '{v.name}' has ONNX dtype {et}, which .npy cannot hold")
        ins.append((v.name, np.dtype(_ONNX_TO_NUMPY[et])))
    return ins, [v.name for v in m.graph.output]


def make_inputs(config, dtypes, rng):
    """Fresh random inputs for `config` as {name: array}, each of the dtype the model
    declares (dtypes: {name: numpy dtype}). Images and floats: standard normal; token
    ids: uniform over the vocabulary; attention masks: ones with 1..SEQ/4 trailing
    zeros per row (padding, so the masked path is exercised)."""
    missing = [i.name for i in config.inputs if i.name not in dtypes]
    if missing or len(dtypes) != len(config.inputs):
        raise ValueError(f"{config.name}: the model's inputs are {sorted(dtypes)}, the configuration "
                         f"names {[i.name for i in config.inputs]}")
    out = {}
    for spec in config.inputs:
        dt = dtypes[spec.name]
        if spec.kind in ("image", "float"):
            x = rng.standard_normal(spec.shape)
        elif spec.kind == "ids":
            if spec.vocab <= 0:
                raise ValueError(f"{config.name}: input '{spec.name}' of kind ids needs a vocabulary size")
            x = rng.integers(0, spec.vocab, size=spec.shape)
        elif spec.kind == "mask":
            x = np.ones(spec.shape)
            rows = x.reshape(-1, spec.shape[-1])
            for r in range(rows.shape[0]):
                pad = int(rng.integers(1, max(1, spec.shape[-1] // 4) + 1))
                rows[r, -pad:] = 0
        elif spec.kind == "int":
            x = rng.integers(0, 8, size=spec.shape)
        else:
            raise ValueError(f"{config.name}: unknown input kind '{spec.kind}'")
        out[spec.name] = np.ascontiguousarray(x.astype(dt))
    return out


def save_inputs(inputs, folder, cast_float_to=None):
    """Writes each input as FOLDER/NAME.npy (floats cast to `cast_float_to` when given, for
    an engine built with --convert-io); returns the `--input NAME=FILE` flags."""
    os.makedirs(folder, exist_ok=True)
    flags = []
    for i, (name, x) in enumerate(inputs.items()):
        if cast_float_to is not None and np.issubdtype(x.dtype, np.floating):
            x = x.astype(cast_float_to)
        path = os.path.join(folder, f"in{i}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.npy")
        np.save(path, x)
        flags += ["--input", f"{name}={path}"]
    return flags


def run_onnxruntime(path, inputs, threads=0, optimize=True):
    """The model's outputs on onnxruntime's CPU provider, as {output name: array};
    optimize=False turns its graph optimizations off (its fused kernels, e.g. QGemm, take
    no float8)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, inputs)))


def error_metrics(actual, expected):
    """Relative L2 error ||a - e|| / ||e|| (the absolute L2 error when e is all zeros)
    and max abs error, in float64; non-finite values or a shape mismatch fail."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        return {"shape_mismatch": f"graphc {list(a.shape)}, onnxruntime {list(e.shape)}",
                "rel_l2": math.inf, "max_abs": math.inf}
    a = a.astype(np.float64)
    e = e.astype(np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(a)))
    if nonfinite:
        return {"rel_l2": math.inf, "max_abs": math.inf, "nonfinite": nonfinite}
    diff = a - e
    norm = float(np.linalg.norm(e))
    err = float(np.linalg.norm(diff))
    return {"rel_l2": err / norm if norm > 0 else err, "max_abs": float(np.max(np.abs(diff))) if diff.size else 0.0,
            "ref_l2": norm}


# ---------------------------------------------------------------- subprocesses and graphc

@dataclasses.dataclass
class Proc:
    cmd: list
    rc: int  # 124 on timeout, 127 when the program cannot be started
    out: str
    seconds: float

    def tail(self, n=1500):
        text = self.out.strip()
        return text if len(text) <= n else "..." + text[-n:]

    def error(self, what):
        why = f"timed out after {self.seconds:.0f} s" if self.rc == 124 else f"exit {self.rc}"
        return f"{what} failed ({why}): {self.tail()}"


def run_process(cmd, timeout, log=None, env=None):
    """Runs cmd (stdout and stderr together) with a wall-clock limit; appends the command
    line and its output to the open file `log`. Never raises for the command's failure."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=max(1, timeout),
                           env=env, check=False)
        rc, out = p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out = 124, (e.stdout or b"").decode(errors="replace")
    except OSError as e:
        rc, out = 127, f"cannot start {cmd[0]}: {e}"
    proc = Proc(list(cmd), rc, out, time.monotonic() - t0)
    if log is not None:
        log.write(f"$ {shlex.join(str(c) for c in cmd)}\n{out}(exit {rc}, {proc.seconds:.2f} s)\n")
        log.flush()
    return proc


_WROTE_ENGINE = re.compile(r"wrote .*?: (\d+) kernels in (\d+) modules")
_CACHE = re.compile(r"NVRTC cache: (\d+) hits, (\d+) misses")
_PHASE = re.compile(r"build: (\w[\w ]*?) took (\d+) ms")


def graphc_build(graphc, model, engine, config, precision, timeout, log=None, extra=()):
    """`graphc build` for `config`: {"ok", "seconds", "engine_bytes", "kernels", "modules",
    "cache_hits", "cache_misses", "phases_ms", "error"?}. Seconds: the process's wall time."""
    # -v: the NVRTC cache line and the time of each build phase, for the report
    cmd = [graphc, "-v", "build", model, "--arch", "native", "-o", engine, "--precision", precision]
    for s in config.shape_flags():
        cmd += ["--shape", s]
    cmd += list(extra)
    p = run_process(cmd, timeout, log)
    rec = {"ok": p.rc == 0, "seconds": round(p.seconds, 2), "flags": cmd[3:]}
    if p.rc != 0:
        rec["error"] = p.error("graphc build")
        return rec
    m = _WROTE_ENGINE.search(p.out)
    if m:
        rec["kernels"], rec["modules"] = int(m.group(1)), int(m.group(2))
    m = _CACHE.search(p.out)
    if m:
        rec["cache_hits"], rec["cache_misses"] = int(m.group(1)), int(m.group(2))
    phases = {k: int(v) for k, v in _PHASE.findall(p.out)}
    if phases:
        rec["phases_ms"] = phases
    try:
        rec["engine_bytes"] = os.path.getsize(engine)
    except OSError as e:
        rec.update(ok=False, error=f"graphc build exited 0 but the engine is missing: {e}")
    return rec


def graphc_run(graphc, engine, input_flags, timeout, log=None, output_dir=None, json_path=None,
               iterations=1, warmup_ms=0, duration_s=0):
    """`graphc run`; returns (Proc, [output .npy paths in output order], parsed --json or None)."""
    cmd = [graphc, "run", engine, *input_flags, "--iterations", str(iterations), "--warmup-ms", str(warmup_ms)]
    if duration_s:
        cmd += ["--duration", str(duration_s)]
    if output_dir:
        cmd += ["--output-dir", output_dir]
    if json_path:
        cmd += ["--json", json_path]
    p = run_process(cmd, timeout, log)
    written = re.findall(r"^wrote\s+(\S.*?)\s*$", p.out, re.M) if p.rc == 0 else []
    report = None
    if p.rc == 0 and json_path:
        try:
            with open(json_path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            p.rc, p.out = 1, p.out + f"\ncannot read graphc run --json {json_path}: {e}"
    return p, written, report


# ---------------------------------------------------------------- statistics

def summarize(samples_ms):
    """min / median / mean / p90 / count of latency samples in ms (None for no samples)."""
    v = sorted(float(x) for x in samples_ms)
    if not v:
        return None
    n = len(v)
    med = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    p90 = v[min(n - 1, int(math.ceil(0.9 * n)) - 1)]
    return {"median_ms": med, "min_ms": v[0], "mean_ms": sum(v) / n, "p90_ms": p90, "runs": n}


def ratio(a, b):
    return a / b if a is not None and b and math.isfinite(a) and math.isfinite(b) else None


# ---------------------------------------------------------------- the elementwise chain

def chain_model(rows, cols, seed=0):
    """y = gelu_tanh((x + b) * s) + r in fp16: x, r [rows, cols] inputs; b, s [cols]
    initializers (a bias and a scale, as in a model), opset 20 (Gelu's approximate)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    b = numpy_helper.from_array(rng.standard_normal(cols).astype(np.float16), "b")
    s = numpy_helper.from_array((0.5 + rng.random(cols)).astype(np.float16), "s")
    fp16 = TensorProto.FLOAT16
    nodes = [helper.make_node("Add", ["x", "b"], ["xb"], name="bias_add"),
             helper.make_node("Mul", ["xb", "s"], ["xs"], name="scale"),
             helper.make_node("Gelu", ["xs"], ["g"], name="gelu_tanh", approximate="tanh"),
             helper.make_node("Add", ["g", "r"], ["y"], name="residual_add")]
    graph = helper.make_graph(nodes, "elementwise_chain",
                              [helper.make_tensor_value_info("x", fp16, [rows, cols]),
                               helper.make_tensor_value_info("r", fp16, [rows, cols])],
                              [helper.make_tensor_value_info("y", fp16, [rows, cols])], [b, s])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="graphc bench")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def chain_reference(x, r, model):
    """The chain in float32 numpy, from the model's own b and s."""
    from onnx import numpy_helper

    w = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in model.graph.initializer}
    v = (x.astype(np.float32) + w["b"]) * w["s"]
    g = 0.5 * v * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (v + np.float32(0.044715) * v * v * v)))
    return g + r.astype(np.float32)


def chain_bytes(rows, cols):
    """Bytes the chain must move at least: read x and r, write y (fp16)."""
    return 3 * rows * cols * 2


# ---------------------------------------------------------------- results that survive a stop

def _finite(v):
    """JSON has no inf/NaN: they become None (and the record says why elsewhere)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def write_text_atomic(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class ResultStore:
    """{"meta": {...}, "results": {key: record}} in one JSON file, rewritten atomically
    after every record so a run killed at its time limit keeps what it finished. A record
    whose "status" is "skipped" (time budget) is run again on resume; others are kept
    unless `redo` names their key."""

    def __init__(self, path, meta, resume=True):
        self.path = path
        self.data = {"meta": dict(meta), "results": {}}
        if resume and os.path.exists(path):
            with open(path) as f:
                old = json.load(f)
            self.data["results"] = old.get("results", {})
            self.data["meta"] = {**old.get("meta", {}), **meta, "resumed_runs": old.get("meta", {}).get(
                "resumed_runs", 0) + 1}

    def done(self, key):
        r = self.data["results"].get(key)
        return r is not None and r.get("status") != "skipped"

    def put(self, key, record):
        self.data["results"][key] = _finite(record)
        self.save()

    def save(self):
        write_text_atomic(self.path, json.dumps(self.data, indent=1, sort_keys=False) + "\n")

    @property
    def results(self):
        return self.data["results"]


class Deadline:
    """A wall-clock budget: `left()` seconds remain; `allows(n)` when n seconds fit."""

    def __init__(self, epoch=None):
        self.epoch = epoch

    def left(self):
        return math.inf if self.epoch is None else self.epoch - time.time()

    def allows(self, seconds):
        return self.left() >= seconds

    def limit(self, seconds):
        """A subprocess time limit: `seconds`, or less when the budget ends first."""
        return max(1, min(seconds, self.left()))


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"
