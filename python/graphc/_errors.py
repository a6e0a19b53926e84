"""graphc's errors as Python exceptions.

Every failure inside graphc (a bad model, a bad flag, a corrupt engine, no GPU,
a CUDA error) is raised as a subclass of :class:`graphc.Error` whose message is
graphc's own (the same text the ``graphc`` CLI prints after ``error:``).
The subclasses also derive from the closest built-in exception, so
``except ValueError`` catches a bad argument and ``except OSError`` a file
that cannot be written.
"""

from __future__ import annotations


class Error(RuntimeError):
    """Base class of every graphc error. ``code`` is graphc's error code name."""

    code = "internal"


class InvalidArgumentError(Error, ValueError):
    """Bad user input: flags, shapes, binding names, array dtypes or shapes."""

    code = "invalid_argument"


class NotFoundError(Error, LookupError):
    """A missing file, input or binding."""

    code = "not_found"


class InvalidModelError(Error, ValueError):
    """The ONNX model is malformed or inconsistent."""

    code = "invalid_model"


class UnsupportedError(Error, NotImplementedError):
    """Valid input that graphc does not handle (yet): an op, a flag combination,
    a kernel that cannot take run-time sizes in an engine built with ``profiles=``."""

    code = "unsupported"


class NoDeviceError(UnsupportedError):
    """No CUDA driver or no CUDA device on this machine."""

    code = "no_device"


class InvalidEngineError(Error, ValueError):
    """The engine is not a graphc engine, is corrupt, newer, or built for another GPU."""

    code = "invalid_engine"


class IoError(Error, OSError):
    """The file system said no."""

    code = "io"


class OutOfRangeError(Error, ValueError):
    """A limit was exceeded (tensor sizes, counts)."""

    code = "out_of_range"


class DeviceError(Error):
    """A CUDA, cuBLASLt or cuDNN call failed."""

    code = "device"


class InternalError(Error):
    """A graphc bug: please report it with the message."""

    code = "internal"


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        NotFoundError,
        InvalidModelError,
        UnsupportedError,
        NoDeviceError,
        InvalidEngineError,
        IoError,
        OutOfRangeError,
        DeviceError,
        InternalError,
    )
}


def error_class(code: str) -> type[Error]:
    """The exception class for graphc's error code name (the extension calls this)."""
    return _BY_CODE.get(code, Error)
