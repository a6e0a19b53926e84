// Attribute decoding shared by the pooling/Resize shape rules and reference
// kernels: one place validates the attributes against the input rank and
// derives the padding, output sizes and per-axis resize factors, so the shape
// a rule declares and the loops a kernel runs cannot drift apart.
#pragma once

#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

// MaxPool / AveragePool over the spatial dims of an N x C x D1 x ... x Dk input.
struct PoolParams {
  int64_t spatial_rank = 0;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pad_begin, pad_end;  // after auto_pad is resolved
  std::vector<int64_t> out_spatial;
  bool count_include_pad = false;  // AveragePool
  int64_t storage_order = 0;       // MaxPool Indices: 0 row-major, 1 column-major
  Shape out_shape;                 // N x C x out_spatial
};

// `op` names the op in messages ("MaxPool", "AveragePool"). Windows that hold
// no input element are rejected when `require_nonempty_windows` (MaxPool, and
// AveragePool with count_include_pad=0, would have nothing to reduce).
Expected<PoolParams> pool_params(const char* op, const AttributeMap& attrs, const Shape& x,
                                 bool require_nonempty_windows);

// Resize (canonical opset-19 form; the importer rewrites opset 10 and Upsample).
struct ResizeParams {
  enum class Mode { kNearest, kLinear, kCubic };
  enum class Coord {
    kHalfPixel,
    kHalfPixelSymmetric,
    kPytorchHalfPixel,
    kAlignCorners,
    kAsymmetric,
    kTfCropAndResize,
    kTfHalfPixelForNN,  // opset 11 only; kept as-is in the IR
  };
  enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  bool exclude_outside = false;
  bool antialias = false;        // linear and cubic only (nearest ignores it)
  double cubic_coeff_a = -0.75;  // cubic only
  double extrapolation_value = 0.0;
  std::vector<int64_t> axes;               // the resized axes, in the order given (default 0..r-1)
  std::vector<double> scales;              // per dim of X (1 for untouched dims)
  std::vector<double> roi_start, roi_end;  // per dim of X (0 / 1 unless tf_crop_and_resize)
  Shape out_shape;
};

// roi/scales/sizes: the constant inputs (nullptr when omitted or not known);
// an empty tensor counts as omitted, as in opsets 11-13.
Expected<ResizeParams> resize_params(const AttributeMap& attrs, const Shape& x, const Tensor* roi,
                                     const Tensor* scales, const Tensor* sizes);

}  // namespace graphc::ir
