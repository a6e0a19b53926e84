"""The installed package: its API, type information and torch.compile entry point."""

from __future__ import annotations

import importlib.metadata
import pathlib

import pytest

import graphc


def test_public_api_and_types_are_installed():
    for name in graphc.__all__:
        assert hasattr(graphc, name), name
    pkg = pathlib.Path(graphc.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_graphc.pyi").exists()
    assert issubclass(graphc.UnsupportedError, NotImplementedError)
    assert issubclass(graphc.NoDeviceError, graphc.UnsupportedError)
    assert issubclass(graphc.IoError, OSError) and issubclass(graphc.InvalidArgumentError, ValueError)
    assert all(issubclass(getattr(graphc, n), graphc.Error) for n in graphc.__all__ if n.endswith("Error"))


def test_torch_compile_backend_entry_point():
    try:
        dist = importlib.metadata.distribution("graphc")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("graphc is not installed as a distribution")
    eps = [e for e in dist.entry_points if e.group == "torch_dynamo_backends"]
    assert [(e.name, e.value) for e in eps] == [("graphc", "graphc.torch:graphc_backend")]
