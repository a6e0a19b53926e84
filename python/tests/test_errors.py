"""graphc's errors become graphc.Error subclasses carrying graphc's messages."""

from __future__ import annotations

import pytest

import graphc
from conftest import run_python


def test_missing_model_file_names_it(tmp_path):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(graphc.Error) as e:
        graphc.build(missing, arch="sm_90")
    assert str(missing) in str(e.value)
    assert isinstance(e.value, (graphc.NotFoundError, graphc.IoError))


def test_garbage_bytes_are_an_invalid_model():
    with pytest.raises(graphc.InvalidModelError):
        graphc.build(b"\x08\x07garbage that is not a model", arch="sm_90")
    with pytest.raises(graphc.InvalidArgumentError, match="empty"):
        graphc.build(b"", arch="sm_90")
    with pytest.raises(graphc.InvalidArgumentError, match="onnx.ModelProto"):
        graphc.build(12345, arch="sm_90")


def test_bad_flags_are_invalid_arguments(models, tmp_path):
    mlp = models / "mlp.onnx"
    with pytest.raises(graphc.InvalidArgumentError, match="precision") as e:
        graphc.build(mlp, arch="sm_90", precision="fp8")
    assert isinstance(e.value, ValueError)
    with pytest.raises(graphc.Error, match="sm_12"):
        graphc.build(mlp, arch="sm_12")
    with pytest.raises(graphc.Error, match="nosuchpass"):
        graphc.build(mlp, arch="sm_90", disable_passes=["nosuchpass"])
    with pytest.raises(graphc.Error, match="nosuchinput"):
        graphc.build(mlp, arch="sm_90", shapes={"nosuchinput": (1, 2)})


def test_unwritable_output_is_an_io_error(models, tmp_path):
    with pytest.raises(graphc.IoError, match="does not exist") as e:
        graphc.build(models / "mlp.onnx", tmp_path / "no" / "dir" / "m.engine", arch="sm_90")
    assert isinstance(e.value, OSError)
    with pytest.raises(graphc.IoError, match="folder"):
        graphc.build(models / "mlp.onnx", tmp_path, arch="sm_90")


def test_corrupt_engine_is_an_invalid_engine(models):
    engine = bytearray(graphc.build(models / "mlp.onnx", arch="sm_90"))
    engine[len(engine) // 2] ^= 0xFF
    with pytest.raises(graphc.InvalidEngineError):
        graphc.engine_bindings(bytes(engine))
    with pytest.raises(graphc.InvalidEngineError):
        graphc.inspect(bytes(engine))


def test_no_driver_is_a_no_device_error(models):
    code = (
        "import graphc\n"
        f"e = graphc.build({str(models / 'mlp.onnx')!r}, arch='sm_90')\n"
        "try:\n    graphc.Engine(e)\nexcept graphc.NoDeviceError as err:\n    print('NODEVICE', err)\n"
    )
    r = run_python(code, {"LD_LIBRARY_PATH": "/nonexistent"})
    if "NODEVICE" not in r.stdout and "libcuda" not in r.stderr and r.returncode == 0:
        pytest.skip("a CUDA driver is installed here")
    assert r.returncode == 0, r.stderr
    assert "NODEVICE" in r.stdout and "no CUDA" in r.stdout


def test_build_without_arch_or_gpu_says_how_to_name_one(models):
    code = ("import graphc\ntry:\n    graphc.build(%r)\nexcept graphc.InvalidArgumentError as e:\n"
            "    print('NOARCH', e)\n" % str(models / "mlp.onnx"))
    r = run_python(code, {"LD_LIBRARY_PATH": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    if "NOARCH" not in r.stdout:
        pytest.skip("a GPU is present")
    assert "--arch sm_90" in r.stdout


def test_torch_is_optional():
    r = run_python("import sys, graphc, graphc.torch\nprint('torch' in sys.modules)", {})
    assert r.returncode == 0, r.stderr
