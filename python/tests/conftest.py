"""Shared set-up of the graphc Python tests.

CPU machine: the runtime tests use graphc's stand-in driver (tests/fake_cuda:
host memory, real copies, kernels that do nothing). Set GRAPHC_FAKE_CUDA_DIR
to the folder holding its libcuda.so.1 (ctest does); it is loaded here before
graphc's runtime asks for "libcuda.so.1", so the runtime gets it.
GPU machine: leave GRAPHC_FAKE_CUDA_DIR unset; tests marked `gpu` run.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MODELS = REPO / "models"
FAKE_CUDA_DIR = os.environ.get("GRAPHC_FAKE_CUDA_DIR", "")

if FAKE_CUDA_DIR:
    ctypes.CDLL(os.path.join(FAKE_CUDA_DIR, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)


def _real_gpu() -> bool:
    if FAKE_CUDA_DIR:
        return False
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


HAS_GPU = _real_gpu()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (tests/gpu run on the GPU machine)")
    skip_fake = pytest.mark.skip(reason="needs the stand-in driver: set GRAPHC_FAKE_CUDA_DIR")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip_gpu)
        if "fake_driver" in item.keywords and not FAKE_CUDA_DIR:
            item.add_marker(skip_fake)


def pytest_configure(config):
    config.addinivalue_line("markers", "fake_driver: runs on graphc's stand-in libcuda")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU")


@pytest.fixture(scope="session")
def models():
    return MODELS


@pytest.fixture(scope="session")
def graphc_cli():
    """The graphc CLI built from this tree (GRAPHC_BIN, else build/graphc), or skip."""
    path = os.environ.get("GRAPHC_BIN") or str(REPO / "build" / "graphc")
    if not os.access(path, os.X_OK):
        pytest.skip("the graphc CLI is not built (set GRAPHC_BIN)")
    return path


def run_python(code: str, env_update: dict) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (for driver states one process cannot undo)."""
    env = dict(os.environ)
    env.pop("GRAPHC_FAKE_CUDA_DIR", None)
    env.update(env_update)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
