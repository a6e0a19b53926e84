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

// graphc-internal Conv attribute (set by the channels-last pass, refused in
// ONNX files like every '_' attribute): X and Y are channels-last, N x D1 x
// ... x C, and W is M x k1 x ... x C/group (cuDNN's NHWC filter layout). The
// geometry is the same; only the order of the dims in memory changes.
inline constexpr const char* kChannelsLastAttr = "_channels_last";
bool is_channels_last(const AttributeMap& attrs);
// graphc-internal ConvInteger attribute (set by fuse-qdq-conv and
// lower-integer-contractions for the int8 tensor-core conv): the int8 value
// the padded border of x holds (default 0). A quantized activation's zero
// point is its float 0, so padding with it keeps the integer sum equal to the
// float conv of the dequantized values.
inline constexpr const char* kPadValueAttr = "_pad_value";
// N x C x D1 x ... <-> N x D1 x ... x C (rank >= 2; also M x C/g x k... <->
// M x k... x C/g for weights).
Shape to_channels_last(const Shape& s);
Shape to_channels_first(const Shape& s);
// The same moves applied to a tensor's bytes: [N, C, D...] -> [N, D..., C]
// and back (rank >= 3; any dtype).
Tensor to_channels_last(const Tensor& t);
Tensor to_channels_first(const Tensor& t);
// The permutations a Transpose node takes for the same moves.
std::vector<int64_t> channels_last_perm(size_t rank);   // first -> last: [0, 2, .., r-1, 1]
std::vector<int64_t> channels_first_perm(size_t rank);  // last -> first: [0, r-1, 1, .., r-2]

struct ConvGeometry {
  bool transpose = false;
  bool channels_last = false;  // the node's kChannelsLastAttr
  int64_t batch = 0;           // N
  int64_t in_channels = 0;     // C
  int64_t out_channels = 0;    // M
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
  Shape output_shape() const;  // N x M x out_spatial (N x out_spatial x M when channels_last)
};

// Validates the attributes against the shapes and resolves the geometry.
// With kChannelsLastAttr set, `x` and `w` are read in the channels-last order.
// `bias` is nullptr when the optional B input is absent. Errors are
// invalid_model and name the attribute or input and the offending values.
Expected<ConvGeometry> resolve_conv_geometry(const AttributeMap& attrs, const Shape& x,
                                             const Shape& w, const Shape* bias, bool transpose);

}  // namespace graphc::ir
