// cuDNN's fused SDPA over a shape range (docs/dynamic-shapes.md). The static
// choice (target/cuda/attention_rules.h) is made at the opt shape; over a
// range the call's sizes and strides follow the shape, so the engine records
// each field of engine::SdpaParams that varies as an expression (then a size
// program) and the runtime plans the call per shape on first use. The
// generated kernel with run-time sizes stays in the engine as the fallback
// for shapes cuDNN refuses at run time (Kernel.preferred_call, format 6).
// What cuDNN cannot take at some shape of the range is decided here, at build
// time, conservatively: the mask must give one value per key at every shape,
// and head dims, head ratio and the mask's broadcast pattern must not change.
#pragma once

#include <array>
#include <optional>

#include "engine_format/sdpa_params.h"
#include "ir/dim_expr.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "target/cuda/attention_rules.h"

namespace graphc::emit {

// Per engine::sdpa_range_fields field: its expression over the range, or
// nullopt where it is the built value at every shape.
using SdpaRangeFields = std::array<std::optional<ir::DimExpr>, engine::kSdpaRangeFields>;

// The fields of `call` (chosen for node `n` at the opt shape) over `range`,
// or kUnsupported saying why cuDNN cannot serve every shape of the range.
Expected<SdpaRangeFields> sdpa_over_range(const ir::Graph& g, const ir::Node& n,
                                          const target::CudnnSdpaCall& call,
                                          const ir::SymbolicShapes& range);

}  // namespace graphc::emit
