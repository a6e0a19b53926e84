"""graphc.Engine and graphc.Context: running engines from Python, on NumPy
arrays (host: copied in and out) or on CUDA arrays (PyTorch, CuPy, JAX, ...:
bound by address, never copied), on a stream of the caller's choosing, with
the GIL released while graphc works."""

from __future__ import annotations

import collections.abc
import os
import sys
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from graphc import _arrays, _errors
from graphc._build import _model_source

EngineLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
Arrays = Union[Mapping[str, Any], Sequence[Any], Any]


class Binding(NamedTuple):
    """One input or output of an engine (fixed dtype and shape)."""

    name: str
    is_input: bool
    dtype: str  # "float32", "float16", "int64", ...
    shape: Tuple[int, ...]
    bytes: int


def _bindings(raw) -> List[Binding]:
    return [
        Binding(b.name, b.is_input, _arrays.ONNX_DTYPES.get(b.dtype, f"onnx_dtype_{b.dtype}"),
                tuple(b.shape), b.bytes)
        for b in raw
    ]


def engine_bindings(engine: EngineLike) -> List[Binding]:
    """An engine's bindings, read from the file or bytes without a GPU."""
    from graphc import _graphc

    return _bindings(_graphc.engine_bindings(_model_source(engine, "engine")))


# CUDA's handle of the legacy default stream. A caller's stream 0 means that
# stream (PyTorch's default stream has handle 0); graphc's own "0" means the
# context's own stream, so 0 is passed on as CU_STREAM_LEGACY.
_CU_STREAM_LEGACY = 0x1


def _stream_handle(stream: Any) -> int:
    value = stream
    if not isinstance(value, int):
        for attr in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy Stream, ...
            value = getattr(stream, attr, None)
            if isinstance(value, int):
                break
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value != 0 else _CU_STREAM_LEGACY
    raise _errors.InvalidArgumentError(
        f"stream must be a CUstream handle (int) or an object with .cuda_stream (torch.cuda.Stream) "
        f"or .ptr (cupy), not {type(stream).__name__}"
    )


def _stream_handle_or_none(stream: Any) -> Optional[int]:
    try:
        return _stream_handle(stream)
    except _errors.InvalidArgumentError:
        return None


class Engine:
    """An engine loaded on one GPU: code modules, weights. Immutable, so any
    number of contexts and threads share it.

    ``Engine(path_or_bytes, device=0)`` reads and validates the engine (a bad
    file fails the same way with or without a GPU), then loads it on CUDA
    device ``device``. Raises :class:`graphc.NoDeviceError` without a CUDA
    driver or GPU, :class:`graphc.InvalidEngineError` for a corrupt engine or one
    built for another GPU.
    """

    def __init__(self, engine: EngineLike, device: int = 0):
        from graphc import _graphc

        self._engine = _graphc.Engine.load(_model_source(engine, "engine"), int(device))
        self._bindings = _bindings(self._engine.bindings)
        self._index = {b.name: i for i, b in enumerate(self._bindings)}

    @property
    def bindings(self) -> List[Binding]:
        """Inputs (graph order), then outputs."""
        return list(self._bindings)

    @property
    def inputs(self) -> List[Binding]:
        return [b for b in self._bindings if b.is_input]

    @property
    def outputs(self) -> List[Binding]:
        return [b for b in self._bindings if not b.is_input]

    def binding(self, name: str) -> Binding:
        try:
            return self._bindings[self._index[name]]
        except KeyError:
            raise _errors.NotFoundError(
                f"the engine has no binding '{name}' (it has: {', '.join(self._index)})"
            ) from None

    @property
    def device(self) -> int:
        return self._engine.device

    @property
    def device_name(self) -> str:
        return self._engine.device_name

    @property
    def weights_bytes(self) -> int:
        return self._engine.weights_bytes

    @property
    def arena_bytes(self) -> int:
        return self._engine.arena_bytes

    @property
    def has_shape_ranges(self) -> bool:
        """Whether the engine serves shape ranges (built with ``profiles=``): its
        bindings then give each binding's largest shape, and ``Context.run``
        takes any input shapes within the context's profile."""
        return bool(self._engine.has_shape_ranges)

    @property
    def num_profiles(self) -> int:
        """How many shape profiles the engine has (1 for fixed shapes)."""
        return int(self._engine.num_profiles)

    def input_range(self, name: str, profile: int = 0) -> Tuple[Tuple[int, ...], ...]:
        """Input ``name``'s ``(min, opt, max)`` shapes in ``profile``."""
        return tuple(tuple(s) for s in self._engine.input_range(name, profile))

    def create_context(self) -> "Context":
        """A new execution context (own arena, own CUDA graph): one per thread."""
        return Context(self)

    def __repr__(self) -> str:
        ins = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in self.inputs)
        outs = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in self.outputs)
        return f"<graphc.Engine on {self.device_name}: ({ins}) -> ({outs})>"


class Context:
    """Per-thread execution state of an engine (``engine.create_context()``).

    Not for two threads at once (graphc refuses a context entered from a second
    thread while the first is inside it); make one context per thread: they
    share the engine's weights.
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self._ctx = engine._engine.create_context()
        b = engine._bindings
        self._inputs = [x for x in b if x.is_input]
        self._outputs = [x for x in b if not x.is_input]
        self._ranges = engine.has_shape_ranges
        self._device = engine.device
        # Per binding, the shape it has now (fixed engines: the bindings').
        self._shapes = [tuple(x.shape) for x in self._inputs + self._outputs]
        # run()'s PyTorch fast path (_graphc.TorchRun), made once torch is
        # imported; engines with shape ranges take the general path.
        self._torch_run = None

    # -- argument handling -------------------------------------------------
    def _by_binding(self, arrays: Arrays, bindings: List[Binding], what: str) -> List[Any]:
        if isinstance(arrays, (dict, collections.abc.Mapping)):  # dict first: the ABC check is slow
            known = {x.name for x in bindings}
            for name in arrays:
                if name not in known:
                    raise _errors.NotFoundError(
                        f"{what}: the engine has no {what[:-1]} '{name}' "
                        f"(its {what}: {', '.join(x.name for x in bindings)})"
                    )
            missing = [x.name for x in bindings if x.name not in arrays]
            if missing:
                raise _errors.InvalidArgumentError(f"{what}: missing {', '.join(missing)}")
            return [arrays[x.name] for x in bindings]
        if isinstance(arrays, (list, tuple)):
            if len(arrays) != len(bindings):
                raise _errors.InvalidArgumentError(
                    f"{what}: expected {len(bindings)} arrays "
                    f"({', '.join(x.name for x in bindings)}), got {len(arrays)}"
                )
            return list(arrays)
        if len(bindings) == 1:
            return [arrays]
        raise _errors.InvalidArgumentError(
            f"{what}: give a dict by name or a list in order ({', '.join(x.name for x in bindings)})"
        )

    def _check(self, info: _arrays.ArrayInfo, b: Binding, what: str, shape: Tuple[int, ...]) -> None:
        if info.dtype != b.dtype:
            raise _errors.InvalidArgumentError(
                f"{what} '{b.name}': dtype {info.dtype}, the engine's is {b.dtype}"
            )
        if tuple(info.shape) != tuple(shape):
            hint = ("at the input shapes given" if self._ranges
                    else "(engines have fixed shapes: build with shapes=... or profiles=...)")
            raise _errors.InvalidArgumentError(
                f"{what} '{b.name}': shape {list(info.shape)}, the engine's is {list(shape)} {hint}"
            )

    def set_profile(self, profile: int) -> None:
        """The shape profile the context runs in (engines with several); its
        inputs return to the profile's opt shapes."""
        self._ctx.set_profile(int(profile))
        self._shapes = [tuple(s) for s in self._ctx.binding_shapes()]

    def _set_input_shapes(self, infos) -> None:
        """Engines with shape ranges: the inputs' shapes from the arrays given
        (checked against the profile: graphc.OutOfRangeError names the dim and
        range), and the outputs' shapes they give."""
        shapes = [tuple(int(d) for d in i.shape) for i in infos]
        if shapes != self._shapes[:len(shapes)]:
            self._ctx.set_input_shapes([list(s) for s in shapes])
            self._shapes = [tuple(s) for s in self._ctx.binding_shapes()]

    def _new_output(self, b: Binding, like: Any, info: Optional[_arrays.ArrayInfo],
                    shape: Tuple[int, ...]):
        if info is None or not info.on_device:
            return np.empty(shape, dtype=_arrays.numpy_dtype(b.dtype))
        if info.kind == "torch":
            torch = sys.modules["torch"]
            return torch.empty(shape, dtype=getattr(torch, b.dtype), device=like.device)
        if type(like).__module__.startswith("cupy"):
            cupy = sys.modules["cupy"]
            return cupy.empty(shape, dtype=_arrays.numpy_dtype(b.dtype))
        raise _errors.InvalidArgumentError(
            f"output '{b.name}': give outputs= (graphc allocates CUDA outputs only for PyTorch "
            "and CuPy inputs)"
        )

    # -- running -----------------------------------------------------------
    def run(self, inputs: Arrays, outputs: Optional[Arrays] = None, *,
            stream: Any = None) -> Dict[str, Any]:
        """Run the engine once; returns the outputs by name.

        Args:
            inputs: one array per input, as a dict by name or a list in the
                engine's input order (one array alone for a one-input engine).
                Either all host arrays (NumPy or anything ``np.asarray`` takes)
                or all CUDA arrays (PyTorch tensors, ``__cuda_array_interface__``
                or DLPack), with the binding's dtype and shape, contiguous.
            outputs: caller buffers to write into (same forms; on the same side
                as the inputs). ``None``: new NumPy arrays, or for CUDA inputs
                new tensors of the inputs' library (PyTorch or CuPy).
            stream: CUDA arrays only: the stream to run on, as a handle (int) or
                a ``torch.cuda.Stream`` / CuPy stream. ``None``: PyTorch's
                current stream for torch tensors (returns at once, like any
                PyTorch op), else the context's own stream, waited for before
                returning.

        CUDA arrays are bound by address (zero copies); the context's CUDA graph
        is re-captured only when an address changes, so reusing the same buffers
        is fastest. Host arrays are copied in and out and the call waits.
        Contiguous torch CUDA tensors as the engine binds them run in one C++
        call (a few µs of host time: docs/python.md, "Per-call host time").
        """
        if not self._ranges:
            fast = self._torch_run or self._make_torch_run()
            if fast is not None:
                # None: not torch CUDA tensors as the engine binds them, or a
                # stream not understood; the general path says what is wrong.
                if stream is None:
                    result = fast(inputs, outputs)
                else:
                    handle = _stream_handle_or_none(stream)
                    result = None if handle is None else fast(inputs, outputs, handle)
                if result is not None:
                    return result
        ins = self._by_binding(inputs, self._inputs, "inputs")
        infos = [_arrays.describe(x, f"input '{b.name}'") for x, b in zip(ins, self._inputs)]
        on_device = infos[0].on_device if infos else False
        for info, b in zip(infos, self._inputs):
            if info.on_device != on_device:
                raise _errors.InvalidArgumentError(
                    "inputs: mix of host and CUDA arrays; give all on one side")
        if self._ranges:
            self._set_input_shapes(infos)
        n_in = len(self._inputs)
        for info, b, shape in zip(infos, self._inputs, self._shapes):
            self._check(info, b, "input", shape)
        like = ins[0] if ins else None
        if outputs is None:
            outs = [self._new_output(b, like, infos[0] if infos else None, shape)
                    for b, shape in zip(self._outputs, self._shapes[n_in:])]
        else:
            outs = self._by_binding(outputs, self._outputs, "outputs")
        out_infos = [_arrays.describe(x, f"output '{b.name}'") for x, b in zip(outs, self._outputs)]
        for info, b, arr, shape in zip(out_infos, self._outputs, outs, self._shapes[n_in:]):
            if info.on_device != on_device:
                raise _errors.InvalidArgumentError(
                    f"output '{b.name}': on the {'GPU' if info.on_device else 'host'} but the "
                    f"inputs are on the {'GPU' if on_device else 'host'}")
            self._check(info, b, "output", shape)
            if not info.contiguous:
                raise _errors.InvalidArgumentError(f"output '{b.name}' is not contiguous")
            if info.kind == "numpy" and not (isinstance(arr, np.ndarray) and arr.flags.writeable):
                raise _errors.InvalidArgumentError(
                    f"output '{b.name}': a writable NumPy array is needed")
        if on_device:
            self._run_device(infos, out_infos, stream)
        else:
            if stream is not None:
                raise _errors.InvalidArgumentError(
                    "stream= applies to CUDA arrays; host arrays run on the context's own stream")
            held = []  # keeps contiguous copies of host inputs alive during the call
            addresses = []
            for x, info in zip(ins, infos):
                if not info.contiguous or info.kind != "numpy":
                    x = _arrays.host_array(x)
                    held.append(x)
                    info = _arrays.describe(x, "input")
                addresses.append(info.address)
            self._ctx.run_host(addresses + [i.address for i in out_infos])
        return {b.name: arr for b, arr in zip(self._outputs, outs)}

    def _make_torch_run(self):
        """The PyTorch fast path for this context (None until torch is imported:
        no tensor can exist before). It takes contiguous torch CUDA tensors of
        the bindings' dtypes and shapes on the engine's device, on PyTorch's
        current stream, in one C++ call (python/src/torch_run.cpp); for
        anything else it returns None and the general path runs."""
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        from graphc import _graphc

        b = self._inputs + self._outputs
        raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        if raw is None:  # an older torch: the public spelling
            def raw(device, _current=torch.cuda.current_stream):
                return _current(device).cuda_stream
        runner = _graphc.TorchRun(
            self._ctx, torch.Tensor, [x.name for x in self._inputs], [x.name for x in self._outputs],
            [getattr(torch, x.dtype, None) for x in b], [list(x.shape) for x in b], self._device,
            torch.device("cuda", self._device), torch.empty, raw)
        self._torch_run = runner.__call__  # the bound method: calls skip the type's __call__ lookup
        return self._torch_run

    def _run_device(self, infos, out_infos, stream) -> None:
        device = self._device
        for info, b in zip(infos + out_infos, self._inputs + self._outputs):
            if not info.contiguous:
                raise _errors.InvalidArgumentError(
                    f"'{b.name}': a non-contiguous CUDA array (graphc binds memory as is: "
                    "make it contiguous first)")
            if info.device >= 0 and info.device != device:
                raise _errors.InvalidArgumentError(
                    f"'{b.name}' is on CUDA device {info.device}, the engine on device {device}")
        synchronize = False
        if stream is None:
            if infos and infos[0].kind == "torch":
                handle = _stream_handle(sys.modules["torch"].cuda.current_stream(device).cuda_stream)
            else:
                handle, synchronize = 0, True
        else:
            handle = _stream_handle(stream)
        self._ctx.run_device([i.address for i in infos] + [i.address for i in out_infos],
                             handle, synchronize)

    def synchronize(self) -> None:
        """Wait for the last run's GPU work."""
        self._ctx.synchronize()

    @property
    def stream(self) -> int:
        """The context's own CUstream handle."""
        return self._ctx.stream

    def time_enqueue_us(self, inputs: Arrays, outputs: Arrays, *, stream: Any = None,
                        iterations: int = 1000) -> float:
        """Mean host microseconds of the C++ enqueue alone (the baseline for
        ``run``'s Python overhead), on the given CUDA buffers and stream
        (``None``: the context's own)."""
        ins = self._by_binding(inputs, self._inputs, "inputs")
        outs = self._by_binding(outputs, self._outputs, "outputs")
        addresses = [_arrays.describe(x, "array").address for x in ins + outs]
        handle = 0 if stream is None else _stream_handle(stream)
        return self._ctx.time_enqueue_us(addresses, handle, int(iterations))
