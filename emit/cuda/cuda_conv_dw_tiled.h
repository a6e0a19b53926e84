// The tiled channels-last depthwise conv (cuda_conv_dw_tiled.cpp; its tile
// and when it is chosen: target/cuda/depthwise_tile_rules.h).
#pragma once

#include <optional>

#include "emit/cuda/anchor_frame.h"
#include "ir/conv_geometry.h"
#include "target/cuda/depthwise_tile_rules.h"

namespace graphc::emit {

// The kernel for depthwise conv frame `f` (channels-last, geometry `g`) with
// tile `t` from target::choose_depthwise_tile; `batch` the run-time batch
// over a shape range (batch_range.h), else nullopt.
Expected<GeneratedKernel> tiled_depthwise_kernel(const AnchorFrame& f, const ir::ConvGeometry& g,
                                                 const target::DepthwiseTile& t,
                                                 const std::optional<ir::DimExpr>& batch);

}  // namespace graphc::emit
