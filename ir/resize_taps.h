// Resize's per-axis sampling, shared by the reference kernel
// (reference/kernels_resize.cpp) and the CUDA generator (emit/cuda/cuda_resize.cpp)
// so both sample exactly the same taps with the same weights. Follows the ONNX
// reference implementation (onnx/reference/ops/op_resize.py), including its
// tie-breaking, edge clamping and exclude_outside renormalisation.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/pool_resize_params.h"

namespace graphc::ir {

// Taps of one resized axis: for output position i, taps idx[i*n + k] with
// weights w[i*n + k] (k < n), or extrapolate[i] (tf_crop_and_resize outside
// the input: the output is extrapolation_value).
struct ResizeAxisTaps {
  int64_t axis = 0;
  int64_t in = 0, out = 0;
  int64_t n = 0;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> extrapolate;
};

ResizeAxisTaps resize_axis_taps(const ResizeParams& p, int64_t d, int64_t in, int64_t out);

// The taps of every axis that is actually resized, in the order of p.axes
// (axes with scale 1, the same size and an identity roi are skipped, as the
// ONNX reference does). `x` is the input shape.
std::vector<ResizeAxisTaps> resize_taps(const ResizeParams& p, const Shape& x);

// Stores v into element i of y, as onnx's saturate_cast: floats convert,
// integers round half to even and clamp to the type's range, bool is v != 0.
void resize_store(Tensor& y, int64_t i, double v);

}  // namespace graphc::ir
