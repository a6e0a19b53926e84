// Which ConvInteger nodes the generated int8 tensor-core convolution takes as
// they are (emit/cuda/cuda_conv_int8.cpp): int8 x int8 without zero-point
// inputs, int32 out, 2-D (NCHW) with groups = 1 and static shapes. The
// quantized rewrites (fuse-qdq-conv, lower-integer-contractions) leave these
// in the graph; graphc's `_pad_value` attribute says which int8 value the
// padded border holds (the activation's zero point, ir::kPadValueAttr).
#pragma once

#include "ir/graph.h"
#include "support/status.h"
#include "target/target.h"

namespace graphc::target {

// OK when the int8 tensor-core conv takes `n`; else why not.
Status int8_conv_takes(const ir::Graph& g, const ir::Node& n);

// The same conditions for a Conv about to be rewritten: x and w shapes, the
// Conv's attributes. OK or why not (depthwise, groups, rank ...).
Status int8_conv_geometry_ok(const ir::AttributeMap& attrs, const ir::Shape& x,
                             const ir::Shape& w);

// Whether the engine's oldest GPU runs the int8 conv (mma.sync s8 and
// cp.async: sm_80 and newer). OK without a target (a graph for the reference).
Status int8_conv_target_ok(const Target* target);

}  // namespace graphc::target
