// Geometry of DFT, STFT and RoiAlign, shared by their shape rules, reference
// kernels and CUDA generators: one place validates sizes and attributes, so
// the shape a rule declares and the loops a kernel runs cannot drift apart.
#pragma once

#include <optional>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "support/status.h"

namespace graphc::ir {

// DFT over `axis` of x [..., signal..., 1 | 2] (the last dim: real, or real
// and imaginary). Inverse + onesided is the inverse real DFT: the input holds
// bins 0..n/2 of a Hermitian spectrum and the output is real.
struct DftGeometry {
  size_t axis = 0;        // normalized, never the last dim
  int64_t in_len = 0;     // x's size along axis
  int64_t n = 0;          // dft_length: input zero-padded or truncated to it
  int64_t out_len = 0;    // n, or n / 2 + 1 for a forward onesided DFT
  bool in_complex = false, out_complex = true;
  bool inverse = false, onesided = false;
};
Expected<DftGeometry> dft_geometry(const Shape& x, int64_t axis, std::optional<int64_t> dft_length,
                                   bool inverse, bool onesided);

// STFT of signal [batch, length, 1 | 2]: frames of frame_length samples every
// frame_step samples, each weighted by the window (ones without one).
struct StftGeometry {
  int64_t batch = 0, length = 0, frame_length = 0, step = 0, frames = 0, bins = 0;
  bool complex = false, onesided = true;
};
Expected<StftGeometry> stft_geometry(const Shape& signal, int64_t step,
                                     std::optional<int64_t> window_length,
                                     std::optional<int64_t> frame_length, bool onesided);

struct RoiAlignParams {
  bool max_mode = false;    // mode: avg (default) or max
  bool half_pixel = true;   // coordinate_transformation_mode
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // 0: adaptive, ceil(roi size / output size)
  double spatial_scale = 1.0;
};
Expected<RoiAlignParams> roi_align_params(const AttributeMap& attrs);

// Window value at i of an n-point window (periodic: denominator n, else n - 1);
// `kind` 0 Hann, 1 Hamming, 2 Blackman. In double, as the reference.
double window_value(int kind, int64_t i, int64_t n, bool periodic);

}  // namespace graphc::ir
