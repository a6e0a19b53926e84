// One reference kernel per op, named run_<Op>, declared from ir/ops.def. The
// dispatch table in executor.cpp is generated from the same list.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace graphc::reference {

// What a kernel sees: the node, its input tensors (nullptr for an omitted
// optional input) and its outputs, already allocated with the dtype and shape
// shape inference gave them.
struct KernelContext {
  const ir::Node& node;
  std::vector<const ir::Tensor*> inputs;
  std::vector<ir::Tensor> outputs;

  const ir::AttributeMap& attrs() const { return node.attrs; }
  const ir::Tensor& in(size_t i) const { return *inputs[i]; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  ir::Tensor& out(size_t i) { return outputs[i]; }
};

namespace kernels {
#define GRAPHC_OP(name, ...) Status run_##name(KernelContext& ctx);
#include "ir/ops.def"
#undef GRAPHC_OP
}  // namespace kernels

// Index helpers shared by kernels.
std::vector<int64_t> strides_of(const ir::Shape& shape);  // row-major element strides
// For broadcasting: the input's flat offset for output multi-index `idx`.
int64_t broadcast_offset(const std::vector<int64_t>& out_idx, const ir::Shape& in_shape,
                         const std::vector<int64_t>& in_strides);
// Advances a multi-index in row-major order; false when it wraps around.
bool next_index(std::vector<int64_t>& idx, const ir::Shape& shape);

}  // namespace graphc::reference
