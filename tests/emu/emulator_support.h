// What the kernel emulator's modes share (tests/emu/kernel_emulator.cpp,
// tests/emu/range_cases.cpp): compiling a generated kernel for the host, the
// lowering options it runs, and the comparison with the reference.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "emit/plan/gpu_plan.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::emu {

using Outputs = std::map<std::string, ir::Tensor>;

// The kernel source with its #include lines replaced by the host shim
// (cuda_host_shim.h) and `extra` appended, compiled once (by compiler and
// content hash) into a shared object and loaded.
// `shim`: the text in place of the includes (default: #include of cuda_host_shim.h).
Expected<void*> load_module(const std::string& source, const std::string& extra = "",
                            const std::string& shim = "");

// Runs `plan` (lowered from `graph`) on the host: each slot where the plan
// puts it (the arena and bindings start as garbage, as cuMemAlloc leaves
// them), the feeds copied in, every launch emulated, the outputs copied out.
// A plan for a shape range runs at `symbols` (the range's dims; empty for a
// static plan): its sizes, grids and binding shapes are evaluated there.
Expected<Outputs> run_plan(const emit::GpuPlan& plan, const ir::Graph& graph,
                           const std::vector<int64_t>& symbols, const Outputs& feeds);

// The emulator runs generated kernels on the host: gemms never go to
// cuBLASLt here, convolutions never to cuDNN.
emit::LowerOptions generated_gemms();

// Tolerances as tests/gpu/gpu_check.h (floats: 1e-5 + rtol |want|, float16/
// bfloat16 one storage ulp or `half_atol`; integers exact). "" when they agree.
std::string compare(const ir::Tensor& want, const ir::Tensor& got, double rtol_f32,
                    double half_atol);

}  // namespace graphc::emu
