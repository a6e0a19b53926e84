"""graphc.build and graphc.inspect: the CLI's ``graphc build`` and
``graphc inspect --json``, called in-process (the same C++ functions)."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Optional, Sequence, Union

from graphc import _errors

ModelLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]
ShapesLike = Union[Mapping[str, Sequence[int]], Sequence[str], str, None]

_PRECISIONS = ("fp32", "fp16", "bf16")
_LIBRARY_CHOICES = ("auto",)


def _ext():
    from graphc import _graphc  # the compiled extension

    return _graphc


def _model_source(model: ModelLike, what: str = "model"):
    src = _ext().ModelSource()
    if isinstance(model, (str, os.PathLike)):
        src.path = os.fspath(model)
        if not src.path:
            raise _errors.InvalidArgumentError(f"{what}: the path is empty")
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        if not data:
            raise _errors.InvalidArgumentError(f"{what}: the bytes are empty")
        src.bytes = data
    elif hasattr(model, "SerializeToString"):  # onnx.ModelProto (or any protobuf message)
        data = model.SerializeToString()
        if not data:
            raise _errors.InvalidArgumentError(f"{what}: the ModelProto serializes to nothing")
        src.bytes = data
        src.display_name = "<onnx.ModelProto>"
    else:
        raise _errors.InvalidArgumentError(
            f"{what} must be a path, bytes or an onnx.ModelProto, not {type(model).__name__}"
        )
    return src


def _shape_flags(shapes: ShapesLike) -> list:
    """{"x": (1, 3, 224, 224)} or ["x:1x3x224x224"] -> ["x:1x3x224x224"] (the CLI's --shape)."""
    if shapes is None:
        return []
    if isinstance(shapes, str):
        return [shapes]
    if isinstance(shapes, Mapping):
        out = []
        for name, dims in shapes.items():
            if isinstance(dims, str):
                out.append(f"{name}:{dims}")
                continue
            out.append(f"{name}:" + _dims_text(f"shapes[{name!r}]", dims))
        return out
    return [str(s) for s in shapes]


def _compile_flags(
    shapes: ShapesLike,
    precision: str,
    convert_io: bool,
    disable_passes: Sequence[str],
    optimize: bool,
    gemm: str,
    conv: str,
    attention: str,
    allow_tf32: bool,
):
    flags = _ext().CompileFlags()
    flags.shapes = _shape_flags(shapes)
    flags.precision = str(precision)
    flags.convert_io = bool(convert_io)
    flags.disable_passes = [str(p) for p in disable_passes]
    flags.no_optimize = not optimize
    flags.gemm, flags.conv, flags.attention = str(gemm), str(conv), str(attention)
    flags.allow_tf32 = bool(allow_tf32)
    return flags


def _dims_text(where: str, dims: Any) -> str:
    try:
        dims = [int(d) for d in dims]
    except (TypeError, ValueError):
        raise _errors.InvalidArgumentError(f"{where} must be a sequence of ints, not {dims!r}") from None
    return "x".join(str(d) for d in dims) if dims else "scalar"


def _apply_profiles(flags: Any, profiles: Any) -> None:
    """profiles= as the CLI's flags: one dict ``{name: (min, opt, max)}`` (or a
    list of them, one per profile; each shape a sequence of ints). Profile 0 is
    --min-shape/--opt-shape/--max-shape, each further one a --shape-profile."""
    if profiles is None:
        return
    if isinstance(profiles, Mapping):
        profiles = [profiles]
    if not isinstance(profiles, (list, tuple)) or not profiles:
        raise _errors.InvalidArgumentError(
            "profiles= takes {name: (min, opt, max)} or a non-empty list of such dicts")
    extra = []
    for p, profile in enumerate(profiles):
        if not isinstance(profile, Mapping) or not profile:
            raise _errors.InvalidArgumentError(
                f"profiles[{p}] must be a non-empty dict {{name: (min, opt, max)}}")
        entries = []
        for name, shapes in profile.items():
            if isinstance(shapes, str) or len(shapes) != 3:
                raise _errors.InvalidArgumentError(
                    f"profiles[{p}][{name!r}] must be (min, opt, max) shapes, not {shapes!r}")
            entries.append((name, [_dims_text(f"profiles[{p}][{name!r}][{k}]", shapes[k])
                                   for k in range(3)]))
        if p == 0:
            flags.min_shapes = [f"{n}:{t[0]}" for n, t in entries]
            flags.opt_shapes = [f"{n}:{t[1]}" for n, t in entries]
            flags.max_shapes = [f"{n}:{t[2]}" for n, t in entries]
        else:
            extra.append(",".join(f"{n}:{t[0]}/{t[1]}/{t[2]}" for n, t in entries))
    flags.profiles = extra


def build(
    model: ModelLike,
    output: Union[str, "os.PathLike[str]", None] = None,
    *,
    arch: Union[str, Sequence[str], None] = None,
    precision: str = "fp32",
    shapes: ShapesLike = None,
    profiles: Any = None,
    tune: bool = False,
    timing_cache: Union[str, "os.PathLike[str]", None] = None,
    convert_io: bool = False,
    disable_passes: Sequence[str] = (),
    optimize: bool = True,
    gemm: str = "auto",
    conv: str = "auto",
    attention: str = "auto",
    allow_tf32: bool = False,
    nvrtc_cache: bool = True,
    jobs: int = 0,
) -> Union[bytes, pathlib.Path]:
    """Compile an ONNX model into a graphc engine, as ``graphc build`` does.

    Args:
        model: the ONNX model: a file path, its bytes, or an ``onnx.ModelProto``
            (bytes and ModelProto cannot use external data: pass the path).
        output: where to write the engine (atomically: the old file or a complete
            engine, never a partial one). ``None``: return the engine's bytes.
        arch: target GPU architecture(s), e.g. ``"sm_90"`` or ``["sm_80", "sm_90"]``;
            ``None`` or ``"native"``: this machine's GPU (an error without one).
        precision: ``"fp32"``, ``"fp16"`` or ``"bf16"``.
        shapes: fixed input shapes for symbolic dims, ``{"x": (1, 3, 224, 224)}``
            or the CLI's ``["x:1x3x224x224"]``.
        profiles: shape ranges the engine serves, one dict per profile of
            ``{input: (min_shape, opt_shape, max_shape)}`` (a dict alone is one
            profile), as ``--min-shape/--opt-shape/--max-shape`` and
            ``--shape-profile``: ``profiles={"x": ((1, 64), (8, 64), (32, 64))}``.
            Models whose kernels cannot take run-time sizes yet raise with the
            kernel's name (docs/dynamic-shapes.md).
        tune: time cuBLASLt's algorithms on this machine's GPU (needs one).
        timing_cache: timing cache file (read; written back with new timings).
        convert_io, disable_passes, optimize, gemm, conv, attention, allow_tf32,
        nvrtc_cache, jobs: the CLI's ``--convert-io``, ``--disable-pass``,
            ``--no-optimize``, ``--gemm``, ``--conv``, ``--attention``,
            ``--allow-tf32``, ``--no-cache`` and ``--jobs`` (docs/cli.md).

    Returns:
        the engine's bytes, or the output path when ``output`` is given.

    Raises:
        graphc.Error: graphc's message, e.g. an unsupported op with its node name.
    """
    request = _ext().BuildRequest()
    request.model = _model_source(model)
    request.flags = _compile_flags(
        shapes, precision, convert_io, disable_passes, optimize, gemm, conv, attention, allow_tf32
    )
    _apply_profiles(request.flags, profiles)
    if arch is None:
        request.archs = []
    elif isinstance(arch, str):
        request.archs = [arch]
    else:
        request.archs = [str(a) for a in arch]
    if output is not None:
        request.output = os.fspath(output)
        if not request.output:
            raise _errors.InvalidArgumentError("output: the engine path is empty")
    request.tune = bool(tune)
    request.timing_cache = os.fspath(timing_cache) if timing_cache is not None else ""
    request.nvrtc_cache = bool(nvrtc_cache)
    request.jobs = int(jobs)
    engine = _ext().build(request)
    return pathlib.Path(request.output) if output is not None else engine


def inspect(
    model_or_engine: ModelLike,
    *,
    shapes: ShapesLike = None,
    profiles: Any = None,
    precision: str = "fp32",
    convert_io: bool = False,
    disable_passes: Sequence[str] = (),
    optimize: bool = True,
    gemm: str = "auto",
    conv: str = "auto",
    attention: str = "auto",
    allow_tf32: bool = False,
) -> dict:
    """What ``graphc inspect --json`` reports, as a dict (schemas: docs/inspect-json.md).

    Given a model (path, bytes or ``onnx.ModelProto``): its inputs, outputs, ops,
    parameters and, when every input shape is known (fixed or given by
    ``shapes``) or ranges are given by ``profiles``, and ``optimize`` is on, the
    fusion report of the engine that :func:`graphc.build` would compile with
    the same flags (over ranges: at the first profile's opt shapes). Given an engine
    (path or bytes, recognised by its magic): the header, code per
    architecture, bindings, memory and kernels. No GPU needed.
    """
    src = _model_source(model_or_engine, "model_or_engine")
    flags = _compile_flags(
        shapes, precision, convert_io, disable_passes, optimize, gemm, conv, attention, allow_tf32
    )
    _apply_profiles(flags, profiles)
    return json.loads(_ext().inspect_json(src, flags))
