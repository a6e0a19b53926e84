"""graphc.build and graphc.inspect on the CPU machine (no GPU needed)."""

from __future__ import annotations

import json
import subprocess

import onnx
import pytest

import graphc
from models import two_input_model

ENGINE_MAGIC = b"GRAPHC"


def test_build_from_path_bytes_and_modelproto_give_one_engine(models, tmp_path):
    path = models / "mlp.onnx"
    from_path = graphc.build(path, arch="sm_90")
    from_bytes = graphc.build(path.read_bytes(), arch="sm_90")
    from_proto = graphc.build(onnx.load(str(path)), arch="sm_90")
    assert from_path[: len(ENGINE_MAGIC)] == ENGINE_MAGIC
    assert from_path == from_bytes == from_proto  # deterministic, whatever the source
    out = graphc.build(path, tmp_path / "mlp.engine", arch="sm_90")
    assert out == tmp_path / "mlp.engine"
    assert out.read_bytes() == from_path
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.engine"]  # no temporary left


def test_build_matches_the_cli_byte_for_byte(models, tmp_path, graphc_cli):
    cli_engine = tmp_path / "cli.engine"
    subprocess.run([graphc_cli, "build", str(models / "conv_block.onnx"), "--arch", "sm_90",
                    "--precision", "fp16", "-o", str(cli_engine)], check=True, capture_output=True)
    assert graphc.build(models / "conv_block.onnx", arch="sm_90", precision="fp16") == cli_engine.read_bytes()


def test_build_binds_symbolic_dims_with_shapes(models):
    with pytest.raises(graphc.InvalidArgumentError, match="batch"):
        graphc.build(models / "transformer_block.onnx", arch="sm_90")
    a = graphc.build(models / "transformer_block.onnx", arch="sm_90", shapes={"x": (2, 16, 64)})
    b = graphc.build(models / "transformer_block.onnx", arch="sm_90", shapes=["x:2x16x64"])
    assert a == b
    (x,) = [b for b in graphc.engine_bindings(a) if b.is_input]
    assert x.shape == (2, 16, 64) and x.dtype == "float32" and x.bytes == 2 * 16 * 64 * 4


def test_engine_bindings_without_a_gpu(models):
    engine = graphc.build(two_input_model(), arch=["sm_80", "sm_90"])
    bindings = graphc.engine_bindings(engine)
    assert [(b.name, b.is_input, b.dtype, b.shape) for b in bindings] == [
        ("a", True, "float32", (2, 16)), ("b", True, "float32", (2, 16)),
        ("z", False, "float32", (2, 16))]


def test_inspect_is_the_cli_json(models, graphc_cli, tmp_path):
    for name in ("mlp.onnx", "conv_block.onnx"):
        cli = subprocess.run([graphc_cli, "inspect", str(models / name), "--json"], check=True,
                             capture_output=True, text=True).stdout
        assert graphc.inspect(models / name) == json.loads(cli)
    engine = tmp_path / "mlp.engine"
    graphc.build(models / "mlp.onnx", engine, arch="sm_90")
    cli = subprocess.run([graphc_cli, "inspect", str(engine), "--json"], check=True,
                         capture_output=True, text=True).stdout
    assert graphc.inspect(engine) == json.loads(cli)


def test_inspect_model_and_engine_documents(models):
    doc = graphc.inspect(models / "transformer_block.onnx")
    assert doc["shapes_inferred"] is False and doc["fusion"] is None
    assert doc["inputs"][0]["shape"] == ["batch", 16, 64]
    doc = graphc.inspect(models / "transformer_block.onnx", shapes={"x": [3, 16, 64]}, precision="fp16")
    assert doc["shapes_inferred"] is True and doc["fusion"]["precision"] == "fp16"
    assert doc["fusion"]["kernels"] > 0
    assert graphc.inspect(models / "mlp.onnx", optimize=False)["fusion"] is None
    engine = graphc.build(models / "mlp.onnx", arch="sm_90")
    edoc = graphc.inspect(engine)
    assert edoc["schema_version"] == 1 and edoc["file_bytes"] == len(engine)
    assert edoc["archs"] == ["sm_90"]
    assert [b["name"] for b in edoc["inputs"] + edoc["outputs"]] == ["x", "y"]


def test_profiles_build_engines_that_serve_a_range():
    from models import identity_model

    model = identity_model(shape=("batch", 8))
    engine = graphc.build(model, arch="sm_90", profiles={"x": ((1, 8), (4, 8), (16, 8))})
    doc = graphc.inspect(engine)
    assert doc["min_reader_version"] == 4
    assert doc["symbols"] == ["batch"]
    assert doc["profiles"] == [{"inputs": {"x": {"min": [1, 8], "opt": [4, 8], "max": [16, 8]}}}]
    # Two profiles: the second one is recorded too.
    two = graphc.inspect(graphc.build(model, arch="sm_90", profiles=[
        {"x": ((1, 8), (2, 8), (4, 8))}, {"x": ((8, 8), (12, 8), (16, 8))}]))
    assert [p["inputs"]["x"]["max"] for p in two["profiles"]] == [[4, 8], [16, 8]]
    # A model over the range: the profiles and the range engine's fusion report.
    mdoc = graphc.inspect(model, profiles={"x": ((1, 8), (4, 8), (16, 8))})
    assert mdoc["profiles"] == doc["profiles"]
    assert mdoc["fusion"] is not None and mdoc["fusion"]["kernels"] >= 0


def test_profiles_errors(models):
    # A GEMM with N at most 8 (the skinny kernel) cannot take run-time sizes yet.
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    w = numpy_helper.from_array(np.ones((16, 8), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
                              "proj", [x], [y], initializer=[w])
    matmul = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(graphc.UnsupportedError, match="take a run-time M yet"):
        graphc.build(matmul, arch="sm_90", gemm="generated",
                     profiles=[{"x": ((1, 16), (4, 16), (8, 16))}])
    with pytest.raises(graphc.InvalidArgumentError, match=r"profiles\[0\]\['x'\] must be \(min, opt, max\)"):
        graphc.build(models / "mlp.onnx", arch="sm_90", profiles={"x": ((1, 64), (4, 64))})
    with pytest.raises(graphc.InvalidArgumentError, match="non-empty"):
        graphc.build(models / "mlp.onnx", arch="sm_90", profiles=[])
    with pytest.raises(graphc.InvalidArgumentError, match="opt 1 is below min 4"):
        graphc.build(models / "mlp.onnx", arch="sm_90", profiles={"x": ((4, 64), (1, 64), (8, 64))})
    # inspect of a model checks a range against the model as build does.
    with pytest.raises(graphc.InvalidArgumentError, match="the model fixes it at 4, the range is 1..8"):
        graphc.inspect(models / "mlp.onnx", profiles={"x": ((1, 64), (4, 64), (8, 64))})


def test_inspect_triages_unsupported_operators_and_build_refuses(tmp_path):
    # Relu, then a custom-domain op graphc cannot compile: inspect reports the
    # part it can compile (the Relu, whose output the Foo node reads); build raises.
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Foo", ["r"], ["y"], name="foo", domain="com.example")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.example", 1)])
    path = tmp_path / "foo.onnx"
    onnx.save(model, str(path))
    report = graphc.inspect(str(path))
    assert [u["node"] for u in report["unsupported"]] == ["foo"]
    assert report["cut_values"] == ["r"]
    assert report["not_compiled_outputs"] == [{"name": "y", "after": "foo"}]
    assert report["fusion"]["kernels"] == 1
    with pytest.raises(graphc.UnsupportedError, match="unsupported operator Foo"):
        graphc.build(str(path), arch=["sm_90"])
