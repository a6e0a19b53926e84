"""Device memory and streams of graphc's stand-in driver (tests/fake_cuda), for
tests and timings on the CPU machine: there, device pointers are host pointers,
so a NumPy view of a cuMemAlloc'd buffer is the 'device' array itself. Needs
GRAPHC_FAKE_CUDA_DIR (conftest.py loads that libcuda.so.1 first)."""

from __future__ import annotations

import ctypes
import os

import numpy as np

_KEEP = {}  # driver entry points, and fake device allocations: live for the process


def _driver_function(name: str, proto):
    """A stand-in driver entry point by name (cuGetProcAddress, as the runtime finds them)."""
    if name not in _KEEP:
        lib = ctypes.CDLL(os.path.join(os.environ["GRAPHC_FAKE_CUDA_DIR"], "libcuda.so.1"))
        pfn = ctypes.c_void_p()
        lib.cuGetProcAddress_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]
        assert lib.cuGetProcAddress_v2(name.encode(), ctypes.byref(pfn), 12000, 0, None) == 0
        _KEEP[name] = proto(pfn.value)
    return _KEEP[name]


def aligned(array: np.ndarray) -> np.ndarray:
    """`array` copied into the stand-in driver's device memory (cuMemAlloc:
    host memory there, 256-byte aligned), as a NumPy view of it."""
    alloc = _driver_function("cuMemAlloc", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                                                            ctypes.c_size_t))
    ptr = ctypes.c_uint64(0)
    assert alloc(ctypes.byref(ptr), max(array.nbytes, 1)) == 0
    raw = (ctypes.c_uint8 * max(array.nbytes, 1)).from_address(ptr.value)
    out = np.frombuffer(raw, dtype=array.dtype, count=array.size).reshape(array.shape)
    out[...] = array
    return out


def new_stream() -> int:
    """A stream of the stand-in driver (its CUstream handle)."""
    create = _driver_function("cuStreamCreate", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                                                 ctypes.c_uint))
    handle = ctypes.c_void_p()
    assert create(ctypes.byref(handle), 1) == 0
    return handle.value


class FakeCudaArray:
    """A CUDA array per __cuda_array_interface__ whose 'device' memory is a NumPy
    buffer: on the stand-in driver device pointers are host pointers."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (array.ctypes.data, False),
            "version": 3, "strides": None if array.flags.c_contiguous else array.strides,
        }
