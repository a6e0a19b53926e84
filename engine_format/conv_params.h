// The cuDNN convolution descriptor an engine records in LibraryCall.params
// (library "cudnn", op "conv"). Everything the runtime needs to set up the
// call without the graph: direction, dtype, layout, sizes, window, epilogue,
// compute type and a recorded algorithm. A fixed little-endian layout with a
// version in front, checked field by field on read (like matmul_params.h).
//
// Semantics (ONNX names; S = spatial_rank, 1 to 3; a 1-D conv runs as a 2-D
// one with H = 1):
//   forward (Conv):       x [N, C, in...], w [K, C/groups, filter...], y [N, K, out...]
//   backward data (ConvTranspose, cuDNN's dgrad of a forward conv from y to x):
//                         x [N, C, in...], w [C, K/groups, filter...], y [N, K, out...]
//   y = act(conv(x, w) + bias + residual)
// bias has K elements (one per output channel), residual has y's shape (cuDNN's
// z with alpha2 = 1). Layout kNhwc stores x, y and residual channels-last and
// w as [K, filter..., C/groups] (cuDNN's NHWC filter format). cuDNN takes one
// pad per dim, so pads_begin must equal pads_end; asymmetric pads stay generated.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "support/status.h"

namespace graphc::engine {

enum class ConvOp : uint8_t { kForward = 0, kBackwardData = 1 };
enum class ConvLayout : uint8_t { kNchw = 0, kNhwc = 1 };
enum class ConvActivation : uint8_t { kNone = 0, kRelu = 1 };
enum class ConvCompute : uint8_t { kF32 = 0, kF32FastTf32 = 1 };  // accumulate type

struct ConvParams {
  static constexpr uint32_t kVersion = 1;
  static constexpr int kMaxSpatial = 3;
  // cuDNN's forward algorithms (cudnnConvolutionFwdAlgo_t) and backward-data
  // ones (cudnnConvolutionBwdDataAlgo_t) counted; the recorded one is below.
  static constexpr int32_t kForwardAlgorithms = 8;
  static constexpr int32_t kBackwardDataAlgorithms = 6;
  using Dims = std::array<int64_t, kMaxSpatial>;  // entries past spatial_rank are 0

  ConvOp op = ConvOp::kForward;
  int32_t dtype = 1;  // x, w, bias, residual, y: ONNX 1 (float), 10 (float16) or 16 (bfloat16)
  ConvLayout layout = ConvLayout::kNchw;
  ConvCompute compute = ConvCompute::kF32;
  ConvActivation activation = ConvActivation::kNone;
  bool has_bias = false, has_residual = false;
  int32_t spatial_rank = 2;
  int64_t n = 0, c = 0, k = 0, groups = 1;
  Dims in{}, filter{}, out{}, pads_begin{}, pads_end{}, strides{}, dilations{};
  // cudnnConvolutionFwdAlgo_t (forward) or cudnnConvolutionBwdDataAlgo_t
  // (backward data) chosen by a tuner; -1: cuDNN's heuristic at load.
  int32_t algorithm = -1;

  // Kernel args: x, w, then bias if has_bias, residual if has_residual, then y.
  int num_args() const { return 3 + (has_bias ? 1 : 0) + (has_residual ? 1 : 0); }
  int bias_arg() const { return has_bias ? 2 : -1; }
  int residual_arg() const { return has_residual ? (has_bias ? 3 : 2) : -1; }
  int y_arg() const { return num_args() - 1; }

  // Elements of each operand (-1 on overflow).
  int64_t x_elements() const;
  int64_t w_elements() const;
  int64_t y_elements() const;  // also the residual's

  bool operator==(const ConvParams&) const = default;
};

std::string encode_conv_params(const ConvParams& p);
// Checks version, size and every field (dtype, enums, flags, positive sizes
// that divide by groups, symmetric non-negative pads, output dims that match
// the window arithmetic, extents within cuDNN's 32-bit indexing, an algorithm
// cuDNN has); an invalid_engine error names the field.
Expected<ConvParams> decode_conv_params(std::string_view bytes);

// Over a shape range (format 4) a conv call whose tensors vary records its
// sizes as LibraryCall.sizes in this order: N, the spatial dims of x
// (in[0..S)), then those of y (out[0..S)); channels, filter and window stay
// the built ones. The call's params hold the sizes at the shape the engine
// was built at.
inline constexpr int kConvSizesPerRank = 2;
inline int conv_range_sizes(int32_t spatial_rank) { return 1 + kConvSizesPerRank * spatial_rank; }
// `built` at `sizes` (conv_range_sizes(built.spatial_rank) values), checked as
// decode_conv_params checks a recorded descriptor (window arithmetic, 32-bit
// extents). The algorithm is reset to -1 (cuDNN's heuristic) unless the sizes
// are the built ones.
Expected<ConvParams> conv_params_at(const ConvParams& built, std::span<const int64_t> sizes);

// The output size of one spatial dim of a forward convolution; 0 when the
// window does not fit (or on overflow).
int64_t conv_forward_out_dim(int64_t in, int64_t filter, int64_t pad_begin, int64_t pad_end,
                             int64_t stride, int64_t dilation);

// "conv2d fp16 NCHW N=1 C=64->K=64 56x56->56x56 f=3x3 s=1x1 p=1x1 d=1x1 bias+relu algo=heuristic"
std::string describe_conv(const ConvParams& p);

}  // namespace graphc::engine
