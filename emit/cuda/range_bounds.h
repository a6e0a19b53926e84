// Bounding a size over a profile's range: whether it is non-decreasing over
// the box where each symbol is at least its range's minimum, so its largest
// value is the one at the maxima (the arena, index widths and grids are
// planned with that). ir::DimExpr::is_monotone answers for every
// non-negative symbol value, which a strided conv's (h - 1)/2 + 1 fails
// (negative at h = 0) though it holds for h >= 1; this answers for the box.
#pragma once

#include <cstdint>
#include <span>

#include "ir/dim_expr.h"

namespace graphc::emit {

// Non-decreasing in every symbol over symbol i >= least[i] (least[i] >= 0):
// sums, differences by constants, products of non-negative factors, floor
// divisions by positive constants, mins and maxes of such.
bool monotone_from(const ir::DimExpr& e, std::span<const int64_t> least);

}  // namespace graphc::emit
