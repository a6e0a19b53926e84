// Helpers shared by the reduction shape rules (ir/shape_rules_reduction.cpp)
// and the reference kernels (reference/kernels_reduction*.cpp), so the rule
// and the kernel can never disagree on which axes an op reduces.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attribute.h"
#include "ir/shape_inference.h"
#include "ir/tensor.h"

namespace graphc::ir {

// Reduce* (canonical opset-18 form): `axes` is the optional int64 input 1;
// attributes keepdims (default 1) and noop_with_empty_axes (default 0).
// Returns one flag per input dim: true where the dim is reduced. No axes (or
// an empty axes tensor) reduces every dim, unless noop_with_empty_axes = 1,
// which reduces none (each output element then "reduces" one element, so
// ReduceSumSquare acts as Square, ReduceL1 as Abs ...).
inline Expected<std::vector<bool>> reduce_axes_mask(const AttributeMap& attrs,
                                                    const std::vector<int64_t>* axes,
                                                    int64_t rank) {
  if (attrs.has("axes"))
    return invalid_model(
        "'axes' must be input 1 in graphc IR, not an attribute (the importer moves it)");
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  if (axes == nullptr || axes->empty()) {
    if (attrs.get_int("noop_with_empty_axes", 0) == 0) mask.assign(static_cast<size_t>(rank), true);
    return mask;
  }
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank)
      return invalid_model("axes value {} is out of range for input rank {}", a, rank);
    auto d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (mask[d]) return invalid_model("axes lists dim {} more than once", d);
    mask[d] = true;
  }
  return mask;
}

// The output shape of a reduction over `mask`.
inline Shape reduced_shape(const Shape& in, const std::vector<bool>& mask, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d])
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

// A [outer, n, inner] view of a tensor around the dims an op works along.
struct AxisSplit {
  int64_t outer = 1;  // product of the dims before
  int64_t n = 1;      // size of the dims operated on (one axis, or axis.. for legacy)
  int64_t inner = 1;  // product of the dims after
};

// Softmax / LogSoftmax / Hardmax. Opset >= 13: one axis (default -1).
// `_legacy_coerce_2d` = 1 (set by the importer for opset < 13): the input is
// viewed as 2-D [prod(dims[:axis]), prod(dims[axis:])] with axis default 1,
// and the op runs over the whole second dim.
inline Expected<AxisSplit> softmax_split(const AttributeMap& attrs, const Shape& shape) {
  auto rank = static_cast<int64_t>(shape.size());
  bool legacy = attrs.get_int("_legacy_coerce_2d", 0) != 0;
  int64_t axis_attr = attrs.get_int("axis", legacy ? 1 : -1);
  if (rank == 0) return invalid_model("input must have rank >= 1, got a scalar");
  auto axis = normalize_axis(axis_attr, rank);
  if (!axis.ok())
    return invalid_model("attribute 'axis' = {} is out of range for input rank {}", axis_attr,
                         rank);
  AxisSplit s;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = shape[static_cast<size_t>(d)];
    if (d < *axis)
      s.outer *= dim;
    else if (d == *axis || legacy)
      s.n *= dim;
    else
      s.inner *= dim;
  }
  return s;
}

// ArgMax / ArgMin / TopK: one axis. Returns the normalised axis.
inline Expected<int64_t> single_axis(const AttributeMap& attrs, int64_t def, int64_t rank) {
  int64_t a = attrs.get_int("axis", def);
  auto axis = normalize_axis(a, rank);
  if (!axis.ok())
    return invalid_model("attribute 'axis' = {} is out of range for input rank {}", a, rank);
  return *axis;
}

inline AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < shape.size(); ++d) {
    auto di = static_cast<int64_t>(d);
    if (di < axis)
      s.outer *= shape[d];
    else if (di == axis)
      s.n = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

}  // namespace graphc::ir
