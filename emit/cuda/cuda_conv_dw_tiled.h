// The tiled channels-last depthwise conv (cuda_conv_dw_tiled.cpp; its tile
// and when it is chosen: target/cuda/depthwise_tile_rules.h).
#pragma once

#include "emit/cuda/anchor_frame.h"
#include "ir/conv_geometry.h"
#include "target/cuda/depthwise_tile_rules.h"

namespace graphc::emit {

// The kernel for depthwise conv frame `f` (channels-last, geometry `g`) with
// tile `t` from target::choose_depthwise_tile.
Expected<GeneratedKernel> tiled_depthwise_kernel(const AnchorFrame& f, const ir::ConvGeometry& g,
                                                 const target::DepthwiseTile& t);

}  // namespace graphc::emit
