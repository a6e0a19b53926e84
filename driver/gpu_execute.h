// Runs an optimized graph on the GPU in-process, as an engine would: lower to
// launches, compile with NVRTC for this device's architecture, load, run once.
// The cuda backend of `graphc conformance` and the GPU tests use it.
#pragma once

#include <map>
#include <string>

#include "emit/plan/gpu_plan.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::driver {

// "sm_90" for device 0; an error when no CUDA driver/device is present.
Expected<std::string> device_arch();

// Lowers `graph` (shape-inferred and optimized), compiles for device 0 and
// returns every graph output by name. Kernels without a GPU lowering are an
// kUnsupported error naming them. `options` picks cuBLASLt or generated gemms
// and cuDNN or generated convolutions.
Expected<std::map<std::string, ir::Tensor>> execute_on_gpu(
    const ir::Graph& graph, const std::map<std::string, ir::Tensor>& feeds,
    const emit::LowerOptions& options = {});

}  // namespace graphc::driver
