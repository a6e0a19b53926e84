#!/usr/bin/env python3
"""CPU tests of the real-model and benchmark scripts (scripts/bench_common.py,
bench_report.py, png_chart.py, compare_models.py, fp8_qdq.py): everything but PyTorch and the GPU.

  python3 tests/scripts/test_bench_tools.py [--graphc build/graphc --fake-cuda-dir build/tests/fake_cuda]

With --graphc and --fake-cuda-dir, the real `graphc build --arch native` and `graphc
run` run on the stand-in libcuda (no kernels), which checks that the scripts read
graphc's real output formats. Needs numpy, onnx and onnxruntime (the .venv).
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_common as bc  # noqa: E402
import bench_report  # noqa: E402
import png_chart  # noqa: E402

GRAPHC = None  # set by --graphc
FAKE_CUDA_DIR = None
MODELS = os.path.join(ROOT, "models")


def tiny_configs():
    return [
        {"name": "mlp_b4", "model": "mlp", "inputs": [{"name": "x", "shape": [4, 64], "kind": "float"}]},
        {"name": "block_b3", "model": "transformer_block",
         "inputs": [{"name": "x", "shape": [3, 16, 64], "kind": "float"}]},
        {"name": "conv_b1", "model": "conv_block", "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "float"}]},
        {"name": "absent_b1", "model": "no_such_model", "inputs": [{"name": "x", "shape": [1], "kind": "float"}]},
    ]


class InputsTest(unittest.TestCase):
    def test_real_model_inputs(self):
        bert = bc.CONFIGS["bert_b32"]
        x = bc.make_inputs(bert, {"input_ids": np.dtype(np.int64), "attention_mask": np.dtype(np.int64)},
                           np.random.default_rng(3))
        ids, mask = x["input_ids"], x["attention_mask"]
        self.assertEqual(ids.shape, (32, 128))
        self.assertEqual(ids.dtype, np.int64)
        self.assertGreaterEqual(ids.min(), 0)
        self.assertLess(ids.max(), bc.BERT_VOCAB)
        self.assertGreater(len(np.unique(ids)), 3000)  # spread over the vocabulary, not a few values
        for row in mask:
            zeros = int((row == 0).sum())
            self.assertTrue(1 <= zeros <= 32, zeros)
            self.assertTrue((row[:128 - zeros] == 1).all() and (row[128 - zeros:] == 0).all(), "trailing zeros")
        self.assertGreater(len({int((r == 0).sum()) for r in mask}), 5)  # rows differ
        img = bc.make_inputs(bc.CONFIGS["resnet50_b1"], {"input": np.dtype(np.float32)}, np.random.default_rng(0))
        img = img["input"]
        self.assertEqual((img.shape, img.dtype), ((1, 3, 224, 224), np.float32))
        self.assertAlmostEqual(float(img.std()), 1.0, delta=0.02)
        self.assertAlmostEqual(float(img.mean()), 0.0, delta=0.02)

    def test_seeded_and_checked(self):
        c = bc.CONFIGS["gpt2_b1"]
        a = bc.make_inputs(c, {"input_ids": np.dtype(np.int64)}, np.random.default_rng(7))
        b = bc.make_inputs(c, {"input_ids": np.dtype(np.int64)}, np.random.default_rng(7))
        d = bc.make_inputs(c, {"input_ids": np.dtype(np.int64)}, np.random.default_rng(8))
        self.assertTrue((a["input_ids"] == b["input_ids"]).all())
        self.assertFalse((a["input_ids"] == d["input_ids"]).all())
        self.assertLess(a["input_ids"].max(), bc.GPT2_VOCAB)
        with self.assertRaises(ValueError):  # the model's inputs differ from the configuration's
            bc.make_inputs(c, {"ids": np.dtype(np.int64)}, np.random.default_rng(0))

    def test_onnx_io_and_npy(self):
        ins, outs = bc.onnx_io(os.path.join(MODELS, "mlp.onnx"))
        self.assertEqual(ins, [("x", np.dtype(np.float32))])
        self.assertEqual(outs, ["y"])
        with tempfile.TemporaryDirectory() as d:
            x = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.arange(4, dtype=np.int64)}
            flags = bc.save_inputs(x, d, cast_float_to=np.float16)
            self.assertEqual(flags[0::2], ["--input", "--input"])
            got = {f.split("=", 1)[0]: np.load(f.split("=", 1)[1]) for f in flags[1::2]}
            self.assertEqual(got["x"].dtype, np.float16)
            self.assertEqual(got["ids"].dtype, np.int64)  # ints are never cast
            self.assertTrue((got["x"] == x["x"]).all())

    def test_configs_cover_the_benchmark(self):
        self.assertEqual(list(bc.CONFIGS)[:9], ["resnet50_b1", "resnet50_b32", "mobilenet_v2_b1", "vit_b_16_b1",
                                                "bert_b1", "bert_b32", "gpt2_b1", "bert_b8_s512",
                                                "whisper_base_enc_b1"])
        # The zoo: >= 24 configurations, every one known, every model built by export_models/zoo_models.
        self.assertGreaterEqual(len(bc.ZOO_RUN), 24)
        self.assertEqual(len(set(bc.ZOO_RUN)), len(bc.ZOO_RUN))
        self.assertEqual([c.name for c in bc.load_configs(bc.ZOO_RUN)], bc.ZOO_RUN)
        self.assertEqual(bc.CONFIGS["inception_v3_b1"].shape_flags(), ["input:1x3x299x299"])
        self.assertEqual(bc.CONFIGS["fcn_resnet50_b1"].shape_flags(), ["input:1x3x520x520"])
        self.assertEqual(bc.CONFIGS["bert_b32"].shape_flags(), ["input_ids:32x128", "attention_mask:32x128"])
        self.assertEqual(bc.CONFIGS["bert_b8_s512"].shape_flags(), ["input_ids:8x512", "attention_mask:8x512"])
        self.assertEqual(bc.CONFIGS["whisper_base_enc_b1"].shape_flags(), ["input_features:1x80x3000"])
        with self.assertRaises(SystemExit):
            bc.load_configs(["resnet50_b64"])


class MetricsTest(unittest.TestCase):
    def test_errors(self):
        e = np.array([3.0, 4.0], dtype=np.float32)
        self.assertEqual(bc.error_metrics(e, e)["rel_l2"], 0.0)
        m = bc.error_metrics(np.array([3.0, 4.5]), e)
        self.assertAlmostEqual(m["rel_l2"], 0.5 / 5.0)
        self.assertAlmostEqual(m["max_abs"], 0.5)
        self.assertEqual(bc.error_metrics(np.array([3.0, np.nan]), e)["rel_l2"], math.inf)
        self.assertEqual(bc.error_metrics(np.array([3.0, np.inf]), e)["nonfinite"], 1)
        self.assertIn("shape_mismatch", bc.error_metrics(np.zeros(3), e))
        self.assertAlmostEqual(bc.error_metrics(np.array([0.0, 2.0]), np.zeros(2))["rel_l2"], 2.0)  # absolute

    def test_summarize(self):
        s = bc.summarize([5, 1, 3, 2, 4])
        self.assertEqual((s["median_ms"], s["min_ms"], s["runs"]), (3, 1, 5))
        self.assertEqual(bc.summarize([4, 1, 3, 2])["median_ms"], 2.5)
        self.assertEqual(bc.summarize(list(range(1, 101)))["p90_ms"], 90)
        self.assertIsNone(bc.summarize([]))
        self.assertEqual(bc.ratio(1.0, 2.0), 0.5)
        self.assertIsNone(bc.ratio(None, 2.0))
        self.assertIsNone(bc.ratio(1.0, 0.0))

    def test_slug(self):
        self.assertEqual(bc.slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3")


class ChainTest(unittest.TestCase):
    def test_chain_matches_onnxruntime(self):
        """The benchmark's chain model means y = gelu_tanh((x + b) * s) + r, as checked by
        onnxruntime against the numpy formula bench.py checks graphc with."""
        rows, cols = 64, 1024
        model = bc.chain_model(rows, cols, seed=1)
        rng = np.random.default_rng(2)
        x = (3 * rng.standard_normal((rows, cols))).astype(np.float16)
        r = rng.standard_normal((rows, cols)).astype(np.float16)
        with tempfile.TemporaryDirectory() as d:
            import onnx

            path = os.path.join(d, "chain.onnx")
            onnx.save(model, path)
            got = bc.run_onnxruntime(path, {"x": x, "r": r})["y"]
        self.assertEqual(got.dtype, np.float16)
        ref = bc.chain_reference(x, r, model)
        m = bc.error_metrics(got, ref)
        self.assertLess(m["rel_l2"], 2e-3, m)
        # tanh GELU, not erf (in fp16 the two are within rounding of each other, so the node says it).
        gelu = [n for n in model.graph.node if n.op_type == "Gelu"]
        self.assertEqual([a.s for a in gelu[0].attribute if a.name == "approximate"], [b"tanh"])
        self.assertEqual(bc.chain_bytes(rows, cols), 3 * rows * cols * 2)


def read_png(data):
    """(width, height, rows of RGB tuples), checking the signature and every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "signature"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"CRC of {kind}"
        chunks.append((kind, body))
        pos += 12 + n
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color, interlace) == (8, 2, 0)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == h * (1 + 3 * w)
    rows = []
    for y in range(h):
        line = raw[y * (1 + 3 * w):(y + 1) * (1 + 3 * w)]
        assert line[0] == 0, "filter type"
        rows.append([tuple(line[1 + 3 * x:4 + 3 * x]) for x in range(w)])
    return w, h, rows


class PngTest(unittest.TestCase):
    def test_font(self):
        for ch, rows in png_chart._FONT.items():
            bits = [int(r, 16) for r in rows.split()]
            self.assertEqual(len(bits), 7, ch)
            self.assertTrue(all(0 <= b < 32 for b in bits), ch)
            self.assertTrue(any(bits) or ch == " ", ch)
        for ch in "abcdefghijklmnopqrstuvwxyz0123456789_./()%":
            self.assertIn(ch.upper(), png_chart._FONT)
        self.assertNotEqual(png_chart.glyph("B"), png_chart.glyph("8"))

    def test_chart(self):
        items = [("resnet50_b1", 0.5), ("bert_b32", 1.5), ("gpt2_b1", None), ("vit_b_16_b1", 9.0)]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.png")
            self.assertEqual(png_chart.write_ratio_chart(path, items, "graphc / torch.compile", backend="builtin"),
                             "builtin")
            with open(path, "rb") as f:
                w, h, rows = read_png(f.read())
        canvas = png_chart.ratio_chart(items, "graphc / torch.compile")
        self.assertEqual((w, h), (canvas.width, canvas.height))
        colors = {p for row in rows for p in row}
        self.assertIn(png_chart.GREEN, colors)  # 0.5: under 1.0
        self.assertIn(png_chart.RED, colors)  # 1.5 and 9.0: over
        self.assertIn(png_chart.BLUE, colors)  # the line at 1.0
        self.assertIn(png_chart.BLACK, colors)  # text

        def bar_pixels(i):
            # row i's bar: count the coloured pixels across the middle of its band
            scale = 2
            plot_top = 2 * 6 * scale + 7 * scale + 6 * scale
            y = plot_top + i * 16 * scale + 8 * scale
            return sum(1 for p in rows[y] if p in (png_chart.GREEN, png_chart.RED))

        self.assertGreater(bar_pixels(1), 2.5 * bar_pixels(0))  # 1.5 vs 0.5 (the grid may cut a pixel)
        self.assertEqual(bar_pixels(2), 0)  # no value: no bar
        self.assertGreater(bar_pixels(3), bar_pixels(1))  # clipped at the axis end, still the longest


class StoreTest(unittest.TestCase):
    def test_resume(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            s = bc.ResultStore(path, {"a": 1})
            s.put("x", {"status": "pass", "v": math.inf})
            s.put("y", {"status": "skipped"})
            with open(path) as f:
                self.assertIsNone(json.load(f)["results"]["x"]["v"])  # valid JSON, no Infinity
            s2 = bc.ResultStore(path, {"a": 2})
            self.assertTrue(s2.done("x"))
            self.assertFalse(s2.done("y"))  # skipped for time: done again
            self.assertEqual(s2.data["meta"]["a"], 2)
            self.assertEqual(s2.data["meta"]["resumed_runs"], 1)
            self.assertFalse(bc.ResultStore(path, {}, resume=False).done("x"))

    def test_deadline(self):
        self.assertTrue(bc.Deadline().allows(1e9))
        past = bc.Deadline(1.0)
        self.assertFalse(past.allows(0))
        self.assertEqual(past.limit(300), 1)


class ReportTest(unittest.TestCase):
    def test_bench_markdown(self):
        ok = lambda ms, **kw: {"status": "ok", "latency": {"median_ms": ms, "runs": 50}, **kw}  # noqa: E731
        data = {"meta": {"device": "NVIDIA H100", "torch": "2.11", "method": {"min_runs": 50}},
                "results": {
                    "resnet50_b1": {"eager": ok(3.0), "compile": ok(2.0, compile_s=40.0),
                                    "compile_ro": ok(1.0, compile_s=50.0),
                                    "graphc": ok(1.5, build={"seconds": 12.5})},
                    "bert_b32": {"eager": ok(30.0), "compile": {"status": "failed", "error": "InductorError: boom"},
                                 "graphc": ok(25.0)},
                    "gpt2_b1": {"eager": ok(5.0), "compile": ok(2.0), "graphc": ok(3.0)},
                    "elementwise_chain": {"status": "ok", "shape": [65536, 1024], "elements": 2**26,
                                          "bytes": 3 * 2**27, "copy": ok(0.14, gbps=2900.0),
                                          "graphc": ok(0.16, gbps=2500.0, check={"rel_l2": 1e-4, "max_abs": 1e-3}),
                                          "ratio_to_copy": 2500 / 2900, "floor": True}}}
        md = bench_report.bench_markdown(data)
        self.assertIn("| resnet50_b1 | 3.000 | 2.000 | 1.000 | 1.500 | 0.75 | 40.0, 50.0 | 12.5 |", md)
        self.assertIn("| gpt2_b1 | 5.000 | 2.000 | — | 3.000 | **1.50** |", md)  # slower than compile: bold
        self.assertIn("bert_b32 compile: InductorError: boom", md)
        self.assertIn("warm-up", md)
        self.assertIn("CUDA graph", md)
        self.assertIn("Floor (graphc ≥ 80% of the copy bandwidth): **holds**", md)
        self.assertIn("| graphc engine | 0.1600 | 2500 | 86.2% |", md)
        summary = bench_report.bench_summary(data)
        self.assertIn("resnet50_b1: eager=3.000 compile=2.000 compile_ro=1.000 graphc=1.500 graphc/compile=0.75",
                      summary)
        self.assertIn("chain: graphc 2500 GB/s, copy 2900 GB/s, ratio 0.862 floor ok", summary)


def fake_graphc(folder):
    """An executable running tests/scripts/fake_graphc.py with this Python."""
    path = os.path.join(folder, "graphc")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" "{os.path.join(ROOT, "tests", "scripts", "fake_graphc.py")}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def run_compare(graphc, out, configs, env=None, extra=()):
    cfg = os.path.join(out, "configs.json")
    os.makedirs(out, exist_ok=True)
    with open(cfg, "w") as f:
        json.dump(tiny_configs(), f)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare_models.py"), "--graphc", graphc,
                        "--models-dir", MODELS, "--out", out, "--configs-json", cfg, "--models", *configs,
                        "--seed", "5", *extra], capture_output=True, text=True, env={**os.environ, **(env or {})},
                       timeout=600)
    with open(os.path.join(out, "real-models.json")) as f:
        return p, json.load(f)


class CompareModelsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="compare-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_pass_fail_and_failures_are_recorded(self):
        graphc = fake_graphc(self.dir)
        out = os.path.join(self.dir, "out")
        env = {"FAKE_GRAPHC_NOISE_FP32": "5e-3", "FAKE_GRAPHC_NOISE_FP16": "5e-3", "FAKE_GRAPHC_FAIL_BUILD": "conv_block"}
        p, data = run_compare(graphc, out, ["mlp_b4", "conv_b1", "absent_b1", "block_b3"], env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # not everything passed
        r = data["results"]
        self.assertEqual(r["mlp_b4/fp32"]["status"], "fail")  # 5e-3 > 1e-3
        self.assertEqual(r["mlp_b4/fp16"]["status"], "pass")  # 5e-3 < 1e-2
        self.assertAlmostEqual(r["mlp_b4/fp32"]["outputs"][0]["rel_l2"], 5e-3, delta=1e-4)
        self.assertEqual(r["block_b3/fp16"]["status"], "pass")  # after the failures: went on
        self.assertEqual(r["conv_b1/fp32"]["status"], "failed")
        self.assertIn("fake build failure", r["conv_b1/fp32"]["error"])
        self.assertEqual(r["absent_b1/fp16"]["status"], "failed")
        self.assertIn("no model", r["absent_b1/fp16"]["error"])
        b = r["mlp_b4/fp32"]["build"]
        self.assertEqual((b["kernels"], b["modules"], b["cache_hits"], b["cache_misses"]), (9, 7, 3, 4))
        self.assertEqual(b["phases_ms"], {"compile": 12})
        self.assertEqual(r["mlp_b4/fp32"]["seed"], 5)
        with open(os.path.join(out, "real-models.md")) as f:
            md = f.read()
        self.assertIn("| mlp_b4 | fp32 |", md)
        self.assertIn("**NO**", md)
        self.assertIn("**failed**: graphc build failed (exit 1)", md)
        self.assertIn("onnxruntime", md)

        # Resume: recorded configurations are not run again, unless --redo.
        p2, _ = run_compare(graphc, out, ["mlp_b4"], env)
        self.assertIn("mlp_b4: recorded already", p2.stdout)
        p3, data3 = run_compare(graphc, out, ["mlp_b4"], {"FAKE_GRAPHC_NOISE_FP32": "1e-5"}, ["--redo"])
        self.assertEqual(p3.returncode, 0, p3.stdout + p3.stderr)
        self.assertEqual(data3["results"]["mlp_b4/fp32"]["status"], "pass")

    def test_outputs_that_ignore_the_inputs_do_not_pass(self):
        # y = x * 0 + c: every graphc output near c would match; the check must say it cannot tell.
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        models = os.path.join(self.dir, "models")
        os.makedirs(models)
        c = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32), "c")
        zero = numpy_helper.from_array(np.zeros((1,), np.float32), "zero")
        g = helper.make_graph([helper.make_node("Mul", ["x", "zero"], ["t"]), helper.make_node("Add", ["t", "c"], ["y"])],
                              "constant", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [c, zero])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                  os.path.join(models, "constant.onnx"))
        shutil.copy(os.path.join(MODELS, "mlp.onnx"), os.path.join(models, "mlp.onnx"))
        cfg = os.path.join(self.dir, "configs.json")
        with open(cfg, "w") as f:
            json.dump([{"name": "constant_b4", "model": "constant", "inputs": [{"name": "x", "shape": [4, 8], "kind": "float"}]},
                       tiny_configs()[0]], f)
        out = os.path.join(self.dir, "out")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare_models.py"), "--graphc",
                            fake_graphc(self.dir), "--models-dir", models, "--out", out, "--configs-json", cfg,
                            "--models", "constant_b4", "mlp_b4", "--seed", "5"], capture_output=True, text=True,
                           env={**os.environ, "FAKE_GRAPHC_NOISE_FP32": "1e-6", "FAKE_GRAPHC_NOISE_FP16": "1e-6"},
                           timeout=600)
        with open(os.path.join(out, "real-models.json")) as f:
            r = json.load(f)["results"]
        self.assertIn("outputs", r["constant_b4/fp32"], r["constant_b4/fp32"])
        const = r["constant_b4/fp32"]["outputs"][0]
        self.assertLess(const["rel_l2"], 1e-3)  # right, but it could not have been wrong
        self.assertLess(const["input_sensitivity"], 1e-9)
        self.assertFalse(const["discriminating"])
        self.assertEqual(r["constant_b4/fp32"]["status"], "fail")
        mlp = r["mlp_b4/fp32"]["outputs"][0]
        self.assertTrue(mlp["discriminating"])
        self.assertGreater(mlp["input_sensitivity"], 5e-3)
        self.assertEqual(r["mlp_b4/fp32"]["status"], "pass", p.stdout + p.stderr)
        with open(os.path.join(out, "real-models.md")) as f:
            self.assertIn("outputs barely depend on the inputs", f.read())

    def test_time_budget_skips_then_resumes(self):
        graphc = fake_graphc(self.dir)
        out = os.path.join(self.dir, "out")
        _, data = run_compare(graphc, out, ["mlp_b4"], extra=["--deadline", "1"])
        self.assertEqual(data["results"]["mlp_b4/fp32"]["status"], "skipped")
        p, data = run_compare(graphc, out, ["mlp_b4"])
        self.assertEqual(data["results"]["mlp_b4/fp32"]["status"], "pass", p.stdout + p.stderr)
        self.assertEqual(data["meta"]["resumed_runs"], 1)


class BenchScriptTest(unittest.TestCase):
    """scripts/bench.py's control flow on a stand-in torch (tests/scripts/fake_torch) and
    graphc: fail-soft variants, resume of partial records, the time budget, the reports."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-test-")
        self.models = os.path.join(self.dir, "models")
        os.makedirs(self.models)
        shutil.copy(os.path.join(MODELS, "conv_block.onnx"), os.path.join(self.models, "resnet50.onnx"))
        self.cfg = os.path.join(self.dir, "configs.json")
        with open(self.cfg, "w") as f:
            json.dump([{"name": "tiny_b1", "model": "resnet50",
                        "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "image"}]},
                       {"name": "absent_b1", "model": "gpt2", "inputs": [{"name": "x", "shape": [1], "kind": "ids"}]}], f)
        self.graphc = fake_graphc(self.dir)
        self.out = os.path.join(self.dir, "results")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def bench(self, *extra, env=None):
        env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "tests", "scripts", "fake_torch"), **(env or {})}
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench.py"), "--graphc", self.graphc,
                            "--models-dir", self.models, "--out-dir", self.out, "--work", os.path.join(self.dir, "w"),
                            "--configs-json", self.cfg, "--models", "tiny_b1", "absent_b1", "--chain-elements", "8192",
                            "--min-runs", "5", "--min-s", "0", "--warmup-runs", "1", "--warmup-s", "0",
                            "--png-backend", "builtin", *extra], capture_output=True, text=True, env=env, timeout=300)
        files = sorted(os.listdir(self.out)) if os.path.isdir(self.out) else []
        jsons = [f for f in files if f.endswith(".json")]
        self.assertEqual(len(jsons), 1, (files, p.stdout, p.stderr))
        with open(os.path.join(self.out, jsons[0])) as f:
            return p, json.load(f), os.path.join(self.out, jsons[0])

    def test_bench_flow(self):
        p, data, path = self.bench(env={"FAKE_TORCH_COMPILE_FAIL": "reduce-overhead"})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.basename(path).startswith("fake-gpu-80gb-20"), path)
        r = data["results"]
        tiny = r["tiny_b1"]
        self.assertEqual(tiny["status"], "done")
        self.assertEqual(tiny["eager"]["status"], "ok")
        self.assertGreater(tiny["eager"]["latency"]["median_ms"], 0.1)  # the stand-in model sleeps 0.2 ms
        self.assertGreaterEqual(tiny["eager"]["latency"]["runs"], 5)
        self.assertIn("compile_s", tiny["compile"])
        self.assertEqual(tiny["compile_ro"]["status"], "failed")  # fail soft: recorded, the rest went on
        self.assertIn("fake inductor failure", tiny["compile_ro"]["error"])
        g = tiny["graphc"]
        self.assertEqual((g["status"], g["io"], g["latency"]["median_ms"]), ("ok", "fp16 (--convert-io)", 0.11))
        self.assertIn("--convert-io", g["build"]["flags"])
        self.assertAlmostEqual(tiny["graphc_over_compile"], 0.11 / tiny["compile"]["latency"]["median_ms"])
        self.assertEqual(r["absent_b1"]["status"], "failed")
        chain = r["elementwise_chain"]
        self.assertEqual(chain["status"], "ok", chain)
        self.assertLess(chain["graphc"]["check"]["rel_l2"], 1e-2)  # the engine's output was checked
        self.assertEqual(chain["copy"]["bytes"], chain["bytes"])
        self.assertAlmostEqual(chain["ratio_to_copy"], chain["graphc"]["gbps"] / chain["copy"]["gbps"])
        self.assertIn("before", data["meta"]["gpu_state"])
        self.assertIn("after", data["meta"]["gpu_state"])
        with open(path[:-5] + ".md") as f:
            md = f.read()
        self.assertIn("| tiny_b1 |", md)
        self.assertIn("tiny_b1 compile_ro: RuntimeError: fake inductor failure", md)
        self.assertIn("absent_b1 (failed): no model", md)
        self.assertIn("## Elementwise chain", md)
        with open(path[:-5] + ".png", "rb") as f:
            read_png(f.read())
        self.assertIn("tiny_b1: eager=", p.stdout)  # the summary
        self.assertIn("absent_b1: eager=— compile=— compile_ro=— graphc=— graphc/compile=— | failed: no model", p.stdout)

        # Resume: a partial record keeps its measured variants and gets the missing ones.
        data["results"]["tiny_b1"]["status"] = "partial"
        eager = data["results"]["tiny_b1"]["eager"]
        del data["results"]["tiny_b1"]["compile_ro"], data["results"]["tiny_b1"]["graphc"]
        with open(path, "w") as f:
            json.dump(data, f)
        p, data, _ = self.bench()
        tiny = data["results"]["tiny_b1"]
        self.assertEqual(tiny["eager"], eager)
        self.assertEqual((tiny["compile_ro"]["status"], tiny["graphc"]["status"], tiny["status"]), ("ok", "ok", "done"))
        self.assertIn("absent_b1: recorded already", p.stdout)
        self.assertEqual(data["meta"]["resumed_runs"], 1)

    def test_nan_engine_is_not_a_timing(self):
        p, data, _ = self.bench("--no-chain", "--variants", "eager", "graphc", env={"FAKE_GRAPHC_NAN": "1"})
        g = data["results"]["tiny_b1"]["graphc"]
        self.assertEqual(g["status"], "wrong", p.stdout + p.stderr)
        self.assertIn("1 non-finite output values", g["error"])
        self.assertNotIn("latency", g)
        self.assertNotIn("compile", data["results"]["tiny_b1"])  # --variants

    def test_time_budget(self):
        p, data, _ = self.bench("--deadline", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(data["results"]["tiny_b1"]["status"], "skipped")
        self.assertEqual(data["results"]["elementwise_chain"]["status"], "skipped")
        p, data, _ = self.bench("--no-chain")
        self.assertEqual(data["results"]["tiny_b1"]["status"], "done", p.stdout + p.stderr)


class SessionScriptTest(unittest.TestCase):
    """scripts/gpu_models_session.sh end to end on the stand-ins: stages, budget, summary."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="session-test-")
        self.models = os.path.join(self.dir, "models")
        os.makedirs(self.models)
        shutil.copy(os.path.join(MODELS, "conv_block.onnx"), os.path.join(self.models, "resnet50.onnx"))
        with open(os.path.join(self.models, "manifest.json"), "w") as f:
            json.dump([{"name": "resnet50"}], f)  # exported already: the export stage has nothing to do
        self.cfg = os.path.join(self.dir, "configs.json")
        with open(self.cfg, "w") as f:
            json.dump([{"name": "tiny_b1", "model": "resnet50",
                        "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "image"}]}], f)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def session(self, budget, reserve=30, out="out", work="work", **more_env):
        out = os.path.join(self.dir, out)
        env = {**os.environ, **more_env, "PYTHON": sys.executable, "PYTHONPATH": os.path.join(ROOT, "tests", "scripts", "fake_torch"),
               "BUDGET_S": str(budget), "BENCH_RESERVE_S": str(reserve), "MODELS": "tiny_b1", "CONFIGS_JSON": self.cfg,
               "MODELS_DIR": self.models, "WORK_DIR": os.path.join(self.dir, work),
               "BENCH_ARGS": "--chain-elements 8192 --min-runs 5 --min-s 0 --warmup-runs 1 --warmup-s 0 "
                             "--png-backend builtin"}
        p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu_models_session.sh"), fake_graphc(self.dir), out],
                           capture_output=True, text=True, env=env, timeout=300)
        return p, out

    def test_session(self):
        p, out = self.session(budget=200)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("export: all of resnet50 already in", p.stdout)
        self.assertIn("tiny_b1 fp32: PASS rel_l2 0", p.stdout)  # the summary at the end
        self.assertIn("tiny_b1 fp16: PASS", p.stdout)
        self.assertIn("tiny_b1: eager=", p.stdout)
        self.assertIn("chain: graphc", p.stdout)
        for f in ("summary.txt", "versions.txt", "compare.txt", "bench.txt", "compare/real-models.json",
                  "compare/real-models.md"):
            self.assertTrue(os.path.exists(os.path.join(out, f)), f)
        self.assertEqual(sorted(os.path.splitext(f)[1] for f in os.listdir(os.path.join(out, "bench"))),
                         [".json", ".log", ".md", ".png"])
        # A fresh machine (new WORK_DIR) resumes from the earlier call's OUT: nothing is run again.
        p2, out2 = self.session(budget=200, out="out2", work="work2", RESUME_FROM=out)
        self.assertEqual(p2.returncode, 0, p2.stdout + p2.stderr)
        with open(os.path.join(out2, "compare.txt")) as f:
            self.assertIn("tiny_b1: recorded already", f.read())
        with open(os.path.join(out2, "bench.txt")) as f:
            self.assertIn("tiny_b1: recorded already", f.read())
        self.assertIn("tiny_b1 fp16: PASS", p2.stdout)

    def test_no_time_left(self):
        p, out = self.session(budget=50, reserve=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("compare: no time left", p.stdout)
        self.assertIn("bench: no time left", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "work", "compare")))


class ZooSessionTest(unittest.TestCase):
    """scripts/gpu_zoo_session.sh on the stand-ins: two shards (two "GPUs"), the merged
    report, and a second call resuming from the first that runs nothing again."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="zoo-test-")
        self.cfg = os.path.join(self.dir, "configs.json")
        with open(self.cfg, "w") as f:
            json.dump([{"name": "tiny_b1", "model": "resnet50",
                        "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "image"}]},
                       {"name": "tiny_again_b1", "model": "resnet50",
                        "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "image"}]},
                       {"name": "other_b1", "model": "mobilenet_v2",
                        "inputs": [{"name": "x", "shape": [1, 16, 32, 32], "kind": "image"}]}], f)
        # Each shard has its own models folder (/tmp/graphc-zoo-models-N in the script): pre-seed them.
        self.seeded = []
        for i in range(2):
            d = f"/tmp/graphc-zoo-models-{i}"
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            self.seeded.append(d)
            for stem in ("resnet50", "mobilenet_v2"):
                shutil.copy(os.path.join(MODELS, "conv_block.onnx"), os.path.join(d, stem + ".onnx"))
            with open(os.path.join(d, "manifest.json"), "w") as f:
                json.dump([{"name": "resnet50", "exporter": "torchscript", "opset": 17},
                           {"name": "mobilenet_v2", "exporter": "dynamo", "opset": 18}], f)

    def tearDown(self):
        if not os.environ.get("KEEP_ZOO_TEST"):
            shutil.rmtree(self.dir, ignore_errors=True)
        for d in self.seeded + [f"/tmp/graphc-zoo-work-{i}" for i in range(2)]:
            shutil.rmtree(d, ignore_errors=True)

    def zoo(self, out, **more_env):
        out = os.path.join(self.dir, out)
        env = {**os.environ, **more_env, "PYTHON": sys.executable,
               "PYTHONPATH": os.path.join(ROOT, "tests", "scripts", "fake_torch"), "NGPU": "2", "BUDGET_S": "200",
               "BENCH_RESERVE_S": "60", "ZOO": "tiny_b1 tiny_again_b1 other_b1", "CONFIGS_JSON": self.cfg,
               "BENCH_ARGS": "--no-chain --min-runs 5 --min-s 0 --warmup-runs 1 --warmup-s 0 --png-backend builtin"}
        p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu_zoo_session.sh"), fake_graphc(self.dir), out],
                           capture_output=True, text=True, env=env, timeout=600)
        return p, out

    def test_two_shards_merge_and_resume(self):
        p, out = self.zoo("out")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(out, "zoo-session.txt")) as f:
            text = f.read()
        self.assertIn("shard 0: tiny_b1 tiny_again_b1", text)  # one model's configurations stay together
        self.assertIn("shard 1: other_b1", text)
        with open(os.path.join(out, "zoo", "zoo.json")) as f:
            doc = json.load(f)
        rows = {r["config"]: r for r in doc["rows"]}
        self.assertEqual(sorted(rows), ["other_b1", "tiny_again_b1", "tiny_b1"])
        self.assertEqual(doc["summary"]["measured"], 3, json.dumps(doc["summary"]))
        self.assertEqual(rows["other_b1"]["exporter"], "dynamo 18")
        self.assertEqual(rows["tiny_b1"]["fp32"], "0.0e+00")
        for r in rows.values():
            self.assertGreater(r["speedup_vs_best_compile"], 0)
            self.assertIn(r["best_compile_mode"], ("compile", "compile_ro"))
        self.assertTrue(os.path.exists(os.path.join(out, "zoo", "zoo.png")))
        with open(os.path.join(out, "zoo", "zoo.md")) as f:
            self.assertIn("3 of 3 configurations measured", f.read())
        # A fresh machine resumes: everything was finished, so no shard runs, and the report is the same.
        p2, out2 = self.zoo("out2", RESUME_FROM=out)
        self.assertEqual(p2.returncode, 0, p2.stdout + p2.stderr)
        self.assertFalse(os.path.exists(os.path.join(out2, "shard0.log")))
        with open(os.path.join(out2, "zoo", "zoo.json")) as f:
            self.assertEqual(json.load(f)["summary"]["measured"], 3)


@unittest.skipUnless(GRAPHC or "--graphc" in sys.argv, "needs --graphc and --fake-cuda-dir")
class RealGraphcTest(unittest.TestCase):
    """The real graphc binary on the stand-in driver: real engines, real output
    formats; the outputs are not computed (no kernels), so the check must fail."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="compare-real-")
        self.env = {"LD_LIBRARY_PATH": FAKE_CUDA_DIR}
        self.old_path = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = FAKE_CUDA_DIR  # for bc.graphc_run's direct calls

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.old_path is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = self.old_path

    def test_compare_reads_graphc(self):
        out = os.path.join(self.dir, "out")
        # --attention generated: cuDNN (the fp16 attention's default) needs a real GPU to start.
        p, data = run_compare(GRAPHC, out, ["block_b3"], self.env,
                              ["--precisions", "fp32", "fp16", "--build-flag=--attention=generated"])
        self.assertEqual(p.returncode, 1)
        for prec in ("fp32", "fp16"):
            rec = data["results"][f"block_b3/{prec}"]
            self.assertEqual(rec["status"], "fail", rec)  # ran, compared, and (no kernels) wrong
            self.assertGreater(rec["build"]["kernels"], 1)
            self.assertGreater(rec["build"]["engine_bytes"], 1000)
            self.assertEqual(rec["build"]["cache_hits"] + rec["build"]["cache_misses"], rec["build"]["modules"])
            self.assertIn("compile", rec["build"]["phases_ms"])
            self.assertEqual(rec["outputs"][0]["output"], "y")
            self.assertIsNotNone(rec["outputs"][0]["max_abs"])

    def test_run_json_and_chain_engine(self):
        """graphc accepts the chain model, and bench.py's reading of `graphc run --json` holds."""
        import onnx

        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import bench

        path = os.path.join(self.dir, "chain.onnx")
        model = bc.chain_model(8, 1024)
        onnx.save(model, path)
        cfg = bc.Config("chain", "chain", (bc.InputSpec("x", (8, 1024), "float"), bc.InputSpec("r", (8, 1024), "float")))
        engine = os.path.join(self.dir, "chain.engine")
        build = bc.graphc_build(GRAPHC, path, engine, cfg, "fp16", 120)
        self.assertTrue(build["ok"], build)
        self.assertGreaterEqual(build["kernels"], 1)
        x = np.ones((8, 1024), np.float16)
        flags = bc.save_inputs({"x": x, "r": x}, self.dir)
        proc, written, report = bc.graphc_run(GRAPHC, engine, flags, 120, output_dir=os.path.join(self.dir, "o"),
                                              json_path=os.path.join(self.dir, "run.json"), iterations=3,
                                              warmup_ms=0)
        self.assertEqual(proc.rc, 0, proc.out)
        self.assertEqual([os.path.basename(w) for w in written], ["y.npy"])
        self.assertEqual(np.load(written[0]).shape, (8, 1024))
        lat = bench.graphc_latency(report)
        self.assertEqual(lat["runs"], 3)
        self.assertGreater(lat["median_ms"], 0)
        self.assertIn("median", report["h2d_ms"])
        # A mismatched input dtype is graphc's error, recorded, not a crash.
        bad = bc.save_inputs({"x": x.astype(np.float32), "r": x}, os.path.join(self.dir, "bad"))
        proc, written, _ = bc.graphc_run(GRAPHC, engine, bad, 120)
        self.assertNotEqual(proc.rc, 0)
        self.assertIn("graphc run failed (exit", proc.error("graphc run"))


class Fp8QdqTest(unittest.TestCase):
    """scripts/fp8_qdq.py (bench_int8.py --fp8's quantizer) on bench_int8.py's MLP: float8 e4m3fn
    Q/DQ pairs around every MatMul/Gemm that onnxruntime runs, and that graphc --int8-gemm makes
    cuBLASLt FP8 GEMMs."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fp8_qdq_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_quantize_mlp(self):
        import onnx
        import onnxruntime as ort

        import bench_int8
        import fp8_qdq

        src = os.path.join(self.dir, "mlp.onnx")
        bench_int8.make_mlp(src)
        rng = np.random.default_rng(3)
        batches = [{"x": rng.standard_normal((64, 256)).astype(np.float32)} for _ in range(2)]
        x = {"x": rng.standard_normal((64, 256)).astype(np.float32)}
        want = bc.run_onnxruntime(src, x)["output"]
        for per_channel in (False, True):
            dst = os.path.join(self.dir, f"mlp-fp8-{per_channel}.onnx")
            self.assertEqual(fp8_qdq.quantize_fp8(src, dst, batches, per_channel=per_channel), 3)
            m = onnx.load(dst)
            self.assertGreaterEqual(next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 19)
            ops = [n.op_type for n in m.graph.node]
            self.assertEqual(ops.count("QuantizeLinear"), 3)
            self.assertEqual(ops.count("DequantizeLinear"), 6)
            fp8 = [i for i in m.graph.initializer if i.data_type == onnx.TensorProto.FLOAT8E4M3FN]
            self.assertGreaterEqual(len(fp8), 4)  # 3 weights and the zero point
            self.assertFalse([i for i in m.graph.initializer if i.name in ("w0", "w1", "w2")])
            got = bc.run_onnxruntime(dst, x, optimize=False)["output"]
            rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            self.assertGreater(rel, 0)  # quantized, so not the float model's bits
            self.assertLess(rel, 0.15)  # e4m3's 3 mantissa bits, three layers
            if GRAPHC:
                p = subprocess.run([GRAPHC, "inspect", dst, "--int8-gemm", "--shape", "x:64x256"],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.count("cuBLASLt float8 tensor-core GEMM"), 3, p.stdout)


def main():
    global GRAPHC, FAKE_CUDA_DIR
    argv = list(sys.argv)
    for flag in ("--graphc", "--fake-cuda-dir"):
        if flag in argv:
            i = argv.index(flag)
            value = os.path.abspath(argv[i + 1])
            del argv[i:i + 2]
            if flag == "--graphc":
                GRAPHC = value
            else:
                FAKE_CUDA_DIR = value
    if GRAPHC and not FAKE_CUDA_DIR:
        raise SystemExit("--graphc needs --fake-cuda-dir (the stand-in libcuda.so.1)")
    unittest.main(argv=argv, verbosity=2)


if __name__ == "__main__":
    main()
