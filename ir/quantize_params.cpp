#include "ir/quantize_params.h"

#include "ir/shape_inference.h"

namespace graphc::ir {

Expected<QuantizeLayout> quantize_layout(const AttributeMap& attrs, const Shape& x,
                                         const Shape& scale, const char* op) {
  QuantizeLayout out;
  out.block_size = attrs.get_int("block_size", 0);
  if (out.block_size < 0)
    return invalid_model("{}: block_size {} is negative", op, out.block_size);
  // A scalar or a one-element 1-D scale is per tensor (as ONNX's reference reads it).
  if (out.block_size == 0 && (scale.empty() || (scale.size() == 1 && scale[0] == 1)))
    return out;
  out.per_tensor = false;
  const auto rank = static_cast<int64_t>(x.size());
  auto axis = normalize_axis(attrs.get_int("axis", 1), rank);
  if (!axis.ok())
    return invalid_model("{}: axis {} is out of range for input shape {}", op,
                         attrs.get_int("axis", 1), shape_to_string(x));
  out.axis = *axis;
  const int64_t extent = x[static_cast<size_t>(out.axis)];
  if (out.block_size == 0) {
    if (scale.size() != 1 || scale[0] != extent)
      return invalid_model("{}: scale of shape {} does not match axis {} of input shape {}", op,
                           shape_to_string(scale), out.axis, shape_to_string(x));
    return out;
  }
  bool ok = static_cast<int64_t>(scale.size()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d) {
    int64_t want = d == out.axis ? (extent + out.block_size - 1) / out.block_size
                                 : x[static_cast<size_t>(d)];
    ok = scale[static_cast<size_t>(d)] == want;
  }
  if (!ok)
    return invalid_model(
        "{}: blocked scale of shape {} does not match input shape {} with block_size {} on axis {}",
        op, shape_to_string(scale), shape_to_string(x), out.block_size, out.axis);
  return out;
}

std::pair<int64_t, int64_t> quantized_range(DType t) {
  switch (t) {
    case DType::kUInt8: return {0, 255};
    case DType::kInt8: return {-128, 127};
    case DType::kUInt16: return {0, 65535};
    case DType::kInt16: return {-32768, 32767};
    case DType::kInt32: return {INT32_MIN, INT32_MAX};
    case DType::kUInt4: return {0, 15};
    case DType::kInt4: return {-8, 7};
    case DType::kUInt2: return {0, 3};
    case DType::kInt2: return {-2, 1};
    default: return {0, 0};
  }
}

}  // namespace graphc::ir
