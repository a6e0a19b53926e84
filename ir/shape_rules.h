// One shape rule per op, named infer_<Op>, declared from ir/ops.def. The table
// in shape_inference.cpp is generated from the same list, so a missing rule is
// a link error and a missing table entry a static_assert.
#pragma once

#include "ir/shape_inference.h"

namespace graphc::ir::shape_rules {

#define GRAPHC_OP(name, ...) Status infer_##name(ShapeContext& ctx);
#include "ir/ops.def"
#undef GRAPHC_OP

// Shared by many rules.
Status same_as_input(ShapeContext& ctx, size_t input = 0);
Status broadcast_inputs(ShapeContext& ctx, DType out_dtype);  // all present inputs

}  // namespace graphc::ir::shape_rules
