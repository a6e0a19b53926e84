// The direct 2-D convolution kernels for depthwise and small-group convs,
// NCHW and channels-last (cuda_conv_direct.cpp; which convs:
// target/cuda/direct_conv_rules.h).
#pragma once

#include <optional>

#include "emit/cuda/anchor_frame.h"
#include "ir/conv_geometry.h"

namespace graphc::emit {

// The kernel for conv frame `f` with geometry `g`; nullopt when a
// channels-first conv is better left to the other generated kernels (the
// rules refuse it, or its plane is too small for a tile); an error for a
// channels-last conv the direct kernel cannot run. `batch`: the run-time
// batch over a shape range (batch_range.h), else nullopt.
Expected<std::optional<GeneratedKernel>> direct_conv_kernel(
    const AnchorFrame& f, const ir::ConvGeometry& g, const std::optional<ir::DimExpr>& batch);

}  // namespace graphc::emit
