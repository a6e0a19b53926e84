// How a QuantizeLinear/DequantizeLinear scale (and zero point) maps onto the
// input: one value for the tensor, one per index of `axis`, or one per block
// of `block_size` consecutive indices along `axis` (opset 21).
#pragma once

#include <cstdint>
#include <utility>

#include "ir/attribute.h"
#include "ir/tensor.h"

namespace graphc::ir {

struct QuantizeLayout {
  bool per_tensor = true;
  int64_t axis = 0;        // normalized to [0, rank)
  int64_t block_size = 0;  // 0: per axis (or per tensor)
};

// Checks the scale's shape against x's for the node's axis/block_size.
Expected<QuantizeLayout> quantize_layout(const AttributeMap& attrs, const Shape& x,
                                         const Shape& scale, const char* op);

// The integer range of a quantized integer type ({0, 0} for other types).
std::pair<int64_t, int64_t> quantized_range(DType t);

}  // namespace graphc::ir
