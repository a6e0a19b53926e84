"""graphc: compile ONNX models into NVIDIA GPU engines and run them.

    import graphc
    engine_bytes = graphc.build("model.onnx", arch="sm_90", precision="fp16")
    report = graphc.inspect("model.onnx")              # `graphc inspect --json`
    engine = graphc.Engine(engine_bytes)               # device 0
    ctx = engine.create_context()                      # one per thread
    outputs = ctx.run({"x": x})                        # NumPy, or CUDA tensors (no copies)

Building and inspecting need no GPU. ``graphc.torch`` adds
``graphc.torch.compile(module, example_inputs)`` and the ``torch.compile``
backend ``"graphc"`` (imported only when used: graphc does not need PyTorch).
Errors are :class:`graphc.Error` subclasses carrying graphc's messages.
Guide: docs/python.md.
"""

from graphc._build import build, inspect
from graphc._errors import (
    DeviceError,
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidEngineError,
    InvalidModelError,
    IoError,
    NoDeviceError,
    NotFoundError,
    OutOfRangeError,
    UnsupportedError,
)
from graphc._runtime import Binding, Context, Engine, engine_bindings

__version__ = "0.1.0"

__all__ = [
    "build", "inspect", "Engine", "Context", "Binding", "engine_bindings",
    "Error", "InvalidArgumentError", "NotFoundError", "InvalidModelError", "UnsupportedError",
    "NoDeviceError", "InvalidEngineError", "IoError", "OutOfRangeError", "DeviceError",
    "InternalError",
]
