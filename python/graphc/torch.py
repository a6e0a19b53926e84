"""PyTorch integration: ``graphc.torch.compile`` and the ``torch.compile``
backend ``"graphc"``.

    import graphc.torch
    fast = graphc.torch.compile(model.eval().cuda(), (x,), precision="fp16")
    y = fast(x)

    compiled = torch.compile(model, backend="graphc")   # each FX graph Dynamo captures

Both export with ``torch.onnx.export``, build with :func:`graphc.build` for this
machine's GPU (``arch="native"`` unless given) and run the engine on CUDA
tensors on PyTorch's current stream. torch is imported only here, and only
when this module is used: ``import graphc`` never needs it.

The compiled module owns one context with static input and output buffers: it
copies the inputs in and returns copies of the outputs (two device copies), so
the engine's CUDA graph is captured once and replayed on every call, and the
tensors it returns are the caller's to keep. For the zero-copy path, use
:meth:`graphc.Context.run` with your own buffers.
"""

from __future__ import annotations

import io
import warnings
from typing import Any, Callable, List, Optional, Sequence

import graphc

_EXPORTERS = ("auto", "torchscript", "dynamo")


def _torch():
    import torch

    return torch


def export_onnx(module, example_inputs: Sequence[Any], *, exporter: str = "auto",
                opset: Optional[int] = None) -> bytes:
    """``torch.onnx.export`` of ``module`` on ``example_inputs`` to ONNX bytes;
    inputs named input_0, input_1, ... ``exporter``: "torchscript"
    (``dynamo=False``), "dynamo" (needs onnxscript) or "auto" (the first that works)."""
    torch = _torch()
    if exporter not in _EXPORTERS:
        raise graphc.InvalidArgumentError(f"exporter must be one of {', '.join(_EXPORTERS)}")
    names = [f"input_{i}" for i in range(len(example_inputs))]
    tried = ["torchscript", "dynamo"] if exporter == "auto" else [exporter]
    errors = []
    for kind in tried:
        buf = io.BytesIO()
        kwargs = dict(input_names=names, dynamo=(kind == "dynamo"))
        if opset is not None:
            kwargs["opset_version"] = opset
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = torch.onnx.export(module, tuple(example_inputs), buf, **kwargs)
            data = buf.getvalue()
            if not data and result is not None and hasattr(result, "model_proto"):
                data = result.model_proto.SerializeToString()
            if data:
                return data
            errors.append(f"{kind}: the exporter wrote nothing")
        except Exception as e:  # the exporters raise many kinds
            errors.append(f"{kind}: {type(e).__name__}: {e}")
    raise graphc.UnsupportedError("torch.onnx.export failed: " + "; ".join(errors))


class GraphcModule:
    """A graphc engine as a callable over CUDA tensors (see graphc.torch.compile)."""

    def __init__(self, engine: "graphc.Engine", input_positions: List[int]):
        torch = _torch()
        self.engine = engine
        self.context = engine.create_context()
        self._positions = input_positions  # argument index of each engine input
        device = torch.device("cuda", engine.device)
        self._inputs = [torch.empty(b.shape, dtype=getattr(torch, b.dtype), device=device)
                        for b in engine.inputs]
        self._outputs = [torch.empty(b.shape, dtype=getattr(torch, b.dtype), device=device)
                         for b in engine.outputs]

    def __call__(self, *args):
        torch = _torch()
        for buf, pos in zip(self._inputs, self._positions):
            buf.copy_(args[pos])  # on the current stream, as is the run below
        self.context.run(self._inputs, self._outputs)  # on torch's current stream
        outs = tuple(o.clone() for o in self._outputs)
        return outs[0] if len(outs) == 1 else outs

    forward = __call__


def _engine_input_positions(onnx_bytes: bytes, count: int) -> List[int]:
    """Which example inputs the exported graph kept (exporters drop unused ones)."""
    eng_inputs = graphc.inspect(onnx_bytes, optimize=False)["inputs"]
    positions = []
    for x in eng_inputs:
        name = x["name"]
        if not name.startswith("input_") or not name[6:].isdigit() or int(name[6:]) >= count:
            raise graphc.UnsupportedError(f"the exported model has an unexpected input '{name}'")
        positions.append(int(name[6:]))
    return positions


def compile(module, example_inputs: Sequence[Any], *, exporter: str = "auto",
            opset: Optional[int] = None, device: Optional[int] = None,
            **build_flags) -> GraphcModule:
    """Export ``module`` with torch.onnx, build it with graphc, load it.

    Args:
        module: a torch.nn.Module (or anything torch.onnx.export takes), in eval
            mode, its parameters on the GPU or CPU (they become engine weights).
        example_inputs: CUDA tensors of the shapes and dtypes every later call
            passes (engines have fixed shapes).
        exporter, opset: see :func:`export_onnx`.
        device: CUDA device for the engine (default: the first input's).
        **build_flags: :func:`graphc.build`'s keywords (precision="fp16", tune=True,
            arch=...; arch defaults to "native").

    Returns:
        a callable ``fn(*inputs)`` returning a tensor (one output) or a tuple.
    """
    torch = _torch()
    example_inputs = tuple(example_inputs)
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise graphc.InvalidArgumentError(f"example_inputs[{i}] is a {type(x).__name__}, not a tensor")
    if device is None:
        cuda = [x.device.index or 0 for x in example_inputs if x.is_cuda]
        device = cuda[0] if cuda else torch.cuda.current_device()
    build_flags.setdefault("arch", "native")
    onnx_bytes = export_onnx(module, example_inputs, exporter=exporter, opset=opset)
    positions = _engine_input_positions(onnx_bytes, len(example_inputs))
    engine = graphc.Engine(graphc.build(onnx_bytes, **build_flags), device=device)
    return GraphcModule(engine, positions)


def _is_weight_placeholder(name: str) -> bool:
    # Dynamo lifts module parameters and buffers into graph inputs named after
    # their path (L_self_modules_fc_parameters_weight_, ..._buffers_running_mean_).
    return "_parameters_" in name or "_buffers_" in name


def graphc_backend(gm, example_inputs, *, options=None, mode=None, **build_flags) -> Callable:
    """The ``torch.compile(model, backend="graphc")`` backend.

    Each FX graph Dynamo hands it is exported to ONNX and built with graphc;
    parameters and buffers Dynamo passes as inputs become engine weights (they
    are assumed not to change: inference). A graph graphc cannot take (CPU
    tensors, symbolic shapes, non-tensor outputs, an op graphc lacks, an
    export failure) runs in PyTorch, with a warning that says why.

    ``options``: torch.compile's ``options=`` dict, which torch hands a
    backend as one ``options=`` keyword: graphc.build keywords
    (``options={"precision": "fp16"}``); keywords given directly (a
    ``functools.partial`` of this function) are the same. ``mode``
    (torch.compile's ``mode=``) is accepted and ignored: graphc always
    replays the engine as one CUDA graph, what "reduce-overhead" asks for.
    """
    torch = _torch()
    del mode
    build_flags = {**(options or {}), **build_flags}
    try:
        placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        for i, x in enumerate(example_inputs):
            if not isinstance(x, torch.Tensor):
                raise graphc.UnsupportedError(f"input {i} is a {type(x).__name__} (symbolic shapes "
                                              "are not supported: graphc engines have fixed shapes)")
            if not x.is_cuda:
                raise graphc.UnsupportedError(f"input {i} is on {x.device}, not CUDA")
        weights = {i for i, x in enumerate(example_inputs)
                   if isinstance(x, torch.nn.Parameter)
                   or (i < len(placeholders) and _is_weight_placeholder(placeholders[i]))}
        dynamic = [i for i in range(len(example_inputs)) if i not in weights]
        with torch.no_grad():
            expected = gm(*example_inputs)
        as_tuple = isinstance(expected, (tuple, list))
        results = expected if as_tuple else (expected,)
        if not results or not all(isinstance(r, torch.Tensor) for r in results):
            raise graphc.UnsupportedError("the graph returns non-tensors or nothing")

        class _WithWeights(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gm = gm
                for i in weights:
                    self.register_buffer(f"w{i}", example_inputs[i].detach())

            def forward(self, *xs):
                args, it = [], iter(xs)
                for i in range(len(example_inputs)):
                    args.append(getattr(self, f"w{i}") if i in weights else next(it))
                out = self.gm(*args)
                return tuple(out) if isinstance(out, (tuple, list)) else out

        fn = compile(_WithWeights(), [example_inputs[i] for i in dynamic], **build_flags)
    except Exception as e:  # any failure: PyTorch runs this graph
        warnings.warn(f"graphc: this graph runs in PyTorch, not graphc: {type(e).__name__}: {e}",
                      RuntimeWarning, stacklevel=2)
        return gm.forward

    def run(*args):
        out = fn(*[args[i] for i in dynamic])
        out = out if isinstance(out, tuple) else (out,)
        return type(expected)(out) if as_tuple else out[0]

    return run


def register_backend() -> None:
    """Registers "graphc" with torch._dynamo (done on import of graphc.torch;
    an installed package also registers it through the torch_dynamo_backends
    entry point, so torch.compile(backend="graphc") works without importing graphc)."""
    from torch._dynamo.backends import registry

    fns = getattr(registry, "_COMPILER_FNS", {})
    if fns.get("graphc") is graphc_backend:
        return
    fns.pop("graphc", None)  # another copy's (a reloaded module): ours replaces it
    registry.register_backend(compiler_fn=graphc_backend, name="graphc")


try:  # only when torch is importable: graphc.torch itself must import without it
    import torch as _torch_module  # noqa: F401
except ImportError:
    pass
else:
    register_backend()
