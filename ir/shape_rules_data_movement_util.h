// Input readers shared by the data-movement shape rules
// (shape_rules_data_movement.cpp, shape_rules_gather_scatter.cpp).
#pragma once

#include <optional>
#include <vector>

#include "ir/shape_inference.h"

namespace graphc::ir::shape_rules {

// A build-time-constant integer input of rank <= 1; nullopt when omitted.
Expected<std::optional<std::vector<int64_t>>> optional_ints(const ShapeContext& ctx, size_t i,
                                                            const char* what);
// A build-time-constant 1-D int64 input (Reshape/Expand shape, Tile repeats).
Expected<std::vector<int64_t>> shape_input(const ShapeContext& ctx, size_t i, const char* what);
// A build-time-constant integer input holding exactly one value.
Expected<int64_t> scalar_int_input(const ShapeContext& ctx, size_t i, const char* what);

}  // namespace graphc::ir::shape_rules
