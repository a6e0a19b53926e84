"""Arrays in and out of an engine: NumPy arrays (host) and CUDA arrays through
PyTorch, ``__cuda_array_interface__`` (CuPy, Numba, PyTorch) or DLPack (JAX,
CuPy, ...). Only the address, dtype and shape are taken: CUDA data is never
copied. PyTorch tensors are read through ``data_ptr()`` (the cheapest path);
torch is never imported here, only recognised when the caller passes a tensor.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Tuple

import numpy as np

from graphc import _errors

# ONNX TensorProto dtype numbers -> graphc's names (ir::dtype_name).
ONNX_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
}

_NUMPY_NAMES = {
    "float32": "float32", "float16": "float16", "float64": "float64", "int8": "int8",
    "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "bool": "bool", "bfloat16": "bfloat16",
}

# __cuda_array_interface__ typestr (without byte order) -> name.
_TYPESTR = {
    "f4": "float32", "f2": "float16", "f8": "float64", "i1": "int8", "i2": "int16",
    "i4": "int32", "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "b1": "bool",
}

# DLPack (type code, bits) -> name. Codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_DLPACK = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
    (6, 8): "bool", (1, 1): "bool",
}
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


class ArrayInfo(NamedTuple):
    address: int
    on_device: bool  # CUDA memory (else host)
    device: int  # CUDA device ordinal; -1 on the host
    dtype: str  # graphc's dtype name
    shape: Tuple[int, ...]
    contiguous: bool
    kind: str  # "torch", "cuda_array_interface", "dlpack" or "numpy"


def _is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def describe(obj: Any, what: str) -> ArrayInfo:
    """Address, place, dtype and shape of an array; `what` names it in errors."""
    if _is_torch_tensor(obj):
        dev = obj.device
        on_device = dev.type == "cuda"
        if not on_device and dev.type != "cpu":
            raise _errors.InvalidArgumentError(f"{what}: a torch tensor on {dev}, not CUDA or CPU")
        dtype = str(obj.dtype).replace("torch.", "")
        return ArrayInfo(obj.data_ptr(), on_device, dev.index if on_device else -1, dtype,
                         tuple(obj.shape), obj.is_contiguous(), "torch")
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        dtype = _TYPESTR.get(typestr[1:], typestr)
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 0
        strides = cai.get("strides")
        contiguous = strides is None or tuple(strides) == _contiguous_strides(shape, itemsize)
        return ArrayInfo(int(cai["data"][0]), True, -2, dtype, shape, contiguous,
                         "cuda_array_interface")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        from graphc import _graphc

        try:
            address, dev_type, dev_id, shape, strides, (code, bits, lanes) = _graphc.dlpack_info(obj)
        except TypeError as e:
            raise _errors.InvalidArgumentError(f"{what}: DLPack import failed: {e}") from None
        if dev_type in (_DL_CUDA, _DL_CUDA_MANAGED):
            contiguous = tuple(strides) == _contiguous_strides(shape, 1)
            dtype = _DLPACK.get((code, bits), f"dlpack(code={code}, bits={bits})") if lanes == 1 else "vector"
            return ArrayInfo(address, True, dev_id, dtype, tuple(shape), contiguous, "dlpack")
        if dev_type not in (_DL_CPU, _DL_CUDA_HOST):
            raise _errors.InvalidArgumentError(f"{what}: DLPack device type {dev_type} is not CUDA or host memory")
        obj = np.from_dlpack(obj)  # host memory: a NumPy view of it
    arr = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
    name = _NUMPY_NAMES.get(arr.dtype.name, arr.dtype.name)
    return ArrayInfo(arr.__array_interface__["data"][0], False, -1, name, arr.shape,
                     arr.flags.c_contiguous, "numpy")


def host_array(obj: Any) -> np.ndarray:
    """A C-contiguous NumPy array of host data (a view when it already is one)."""
    if isinstance(obj, np.ndarray):
        arr = obj
    elif _is_torch_tensor(obj):
        arr = obj.detach().numpy()
    elif hasattr(obj, "__dlpack__"):
        arr = np.from_dlpack(obj)
    else:
        arr = np.asarray(obj)
    return np.ascontiguousarray(arr)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a graphc dtype name (bfloat16 needs ml_dtypes)."""
    if name == "bfloat16":
        try:
            import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)

            return np.dtype(ml_dtypes.bfloat16)
        except ImportError:
            raise _errors.UnsupportedError(
                "a bfloat16 binding as a NumPy array needs the ml_dtypes package"
            ) from None
    return np.dtype(name)
