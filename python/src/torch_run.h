// graphc._graphc.TorchRun: Context.run's fast path for PyTorch CUDA tensors
// (python/graphc/_runtime.py), in C++ because this call is the one whose
// host time counts (the goal: at most 10 µs over the C++ enqueue). One call
// reads every tensor's dtype, shape, device, contiguity and address, asks
// PyTorch for its current stream, enqueues with the GIL released and returns
// the outputs by name; anything else returns None and Python's general path
// runs, which also gives every error message. Nothing about torch is compiled
// in: Python hands over torch.Tensor, the dtypes, torch.empty and the stream
// query once per context, so the stand-in torch of the CPU tests drives it too.
#pragma once

#include <nanobind/nanobind.h>

namespace graphc::py {

void bind_torch_run(nanobind::module_& m);

}  // namespace graphc::py
