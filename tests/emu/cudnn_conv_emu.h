// cuDNN's convolution (engine_format/conv_params.h) on the host for the
// kernel emulator: y = act(conv(x, w) + bias + residual), NCHW or NHWC,
// groups, strides, dilations, symmetric pads, accumulated in double, float32
// operands. A call over a shape range runs at the sizes its LibraryCall
// records, evaluated at the emulated shape, so the plan's conv calls (their
// operands, sizes and epilogues) are checked against the reference as its
// generated kernels are.
#pragma once

#include <cstdint>
#include <vector>

#include "emit/plan/gpu_plan.h"
#include "support/status.h"

namespace graphc::emu {

// Runs conv launch `l` of `plan` with slot addresses `ptr` at `symbols` (empty
// for a static plan).
Status run_cudnn_conv(const emit::GpuPlan& plan, const emit::LaunchPlan& l,
                      const std::vector<uint8_t*>& ptr, const std::vector<int64_t>& symbols);

}  // namespace graphc::emu
