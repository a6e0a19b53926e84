// Internal to the symbolic shape rules (ir/symbolic_rules.cpp, which
// dispatches, and ir/symbolic_rules_data_movement.cpp): shared helpers and
// the data movement and shape arithmetic rules.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "ir/symbolic_rules.h"

namespace graphc::ir::symbolic::detail {

inline Expected<int64_t> axis_in(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return invalid_model("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + r : axis;
}

inline DimExpr product(const SymShape& s, size_t from = 0, size_t to = SIZE_MAX) {
  DimExpr p(1);
  for (size_t i = from; i < std::min(to, s.size()); ++i) p = p * s[i];
  return p;
}

inline SymValue with_shape(SymShape s) {
  SymValue v;
  v.shape = std::move(s);
  return v;
}

inline SymValue with_elements(std::vector<DimExpr> e, bool scalar = false) {
  SymValue v;
  if (!scalar) v.shape = {DimExpr(static_cast<int64_t>(e.size()))};
  v.elements = std::move(e);
  return v;
}

// ir/symbolic_rules_data_movement.cpp: Transpose, Reshape, Flatten, Squeeze,
// Unsqueeze, Concat, Shape, Gather, Slice, Split, Expand, ConstantOfShape,
// Range, Tile, Pad.
Status transpose(SymContext& ctx);
Status reshape(SymContext& ctx);
Status flatten(SymContext& ctx);
Status squeeze(SymContext& ctx);
Status unsqueeze(SymContext& ctx);
Status concat(SymContext& ctx);
Status shape_op(SymContext& ctx);
Status gather(SymContext& ctx);
Status slice(SymContext& ctx);
Status split(SymContext& ctx);
Status expand(SymContext& ctx);
Status constant_of_shape(SymContext& ctx);
Status range(SymContext& ctx);
Status tile(SymContext& ctx);
Status pad(SymContext& ctx);

}  // namespace graphc::ir::symbolic::detail
