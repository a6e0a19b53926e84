// Conv / ConvTranspose geometry: the attributes (kernel_shape, strides,
// dilations, pads, auto_pad, group, output_padding, output_shape) resolved
// against the shapes of X, W and B, with every check the ONNX spec implies.
// Shared by the shape rules (ir/) and the reference kernels (reference/) so
// both see exactly the same pads and output dims.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

struct ConvGeometry {
  bool transpose = false;
  int64_t batch = 0;         // N
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t group = 1;
  // Per spatial dim (size = spatial rank S).
  std::vector<int64_t> in_spatial;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  // Padding at the start of each spatial dim. For ConvTranspose this may be
  // negative when output_shape asks for a larger output (the spec's
  // total_padding formula); the kernel handles any value.
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  std::vector<int64_t> out_spatial;

  size_t spatial_rank() const { return in_spatial.size(); }
  Shape output_shape() const;  // N x M x out_spatial
};

// Validates the attributes against the shapes and resolves the geometry.
// `bias` is nullptr when the optional B input is absent. Errors are
// invalid_model and name the attribute or input and the offending values.
Expected<ConvGeometry> resolve_conv_geometry(const AttributeMap& attrs, const Shape& x,
                                             const Shape& w, const Shape* bias, bool transpose);

}  // namespace graphc::ir
