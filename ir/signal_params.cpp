#include "ir/signal_params.h"

#include <cmath>

#include "ir/shape_inference.h"

namespace graphc::ir {

Expected<DftGeometry> dft_geometry(const Shape& x, int64_t axis, std::optional<int64_t> dft_length,
                                   bool inverse, bool onesided) {
  DftGeometry g;
  if (x.size() < 2 || (x.back() != 1 && x.back() != 2))
    return invalid_model("DFT: input must be [..., signal, 1 or 2], got {}", shape_to_string(x));
  const auto rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis >= rank - 1 || axis == -1)
    return invalid_model("DFT: axis {} is not a signal axis of input {}", axis, shape_to_string(x));
  ASSIGN_OR_RETURN(int64_t a, normalize_axis(axis, rank));
  g.axis = static_cast<size_t>(a);
  g.in_len = x[g.axis];
  g.in_complex = x.back() == 2;
  g.inverse = inverse;
  g.onesided = onesided;
  if (dft_length) {
    g.n = *dft_length;
  } else {
    g.n = inverse && onesided ? 2 * (g.in_len - 1) : g.in_len;
  }
  if (g.n <= 0 || g.n > (int64_t{1} << 24))
    return invalid_model("DFT: dft_length {} must be in [1, 2^24]", g.n);
  g.out_len = onesided && !inverse ? g.n / 2 + 1 : g.n;
  g.out_complex = !(inverse && onesided);
  return g;
}

Expected<StftGeometry> stft_geometry(const Shape& signal, int64_t step,
                                     std::optional<int64_t> window_length,
                                     std::optional<int64_t> frame_length, bool onesided) {
  StftGeometry g;
  if (signal.size() != 3 || (signal[2] != 1 && signal[2] != 2))
    return invalid_model("STFT: signal must be [batch, length, 1 or 2], got {}",
                         shape_to_string(signal));
  if (window_length && frame_length && *window_length != *frame_length)
    return invalid_model("STFT: window has {} samples but frame_length is {}", *window_length,
                         *frame_length);
  g.batch = signal[0];
  g.length = signal[1];
  g.complex = signal[2] == 2;
  g.step = step;
  g.frame_length = frame_length ? *frame_length : window_length ? *window_length : g.length;
  g.onesided = onesided;
  if (step <= 0) return invalid_model("STFT: frame_step {} must be positive", step);
  if (g.frame_length <= 0 || g.frame_length > g.length)
    return invalid_model("STFT: frame_length {} must be in [1, signal length {}]", g.frame_length,
                         g.length);
  g.frames = 1 + (g.length - g.frame_length) / step;
  g.bins = onesided ? g.frame_length / 2 + 1 : g.frame_length;
  return g;
}

Expected<RoiAlignParams> roi_align_params(const AttributeMap& attrs) {
  RoiAlignParams p;
  const std::string mode = attrs.get_string("mode", "avg");
  const std::string ctm = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (mode != "avg" && mode != "max")
    return invalid_model("RoiAlign: mode '{}' must be avg or max", mode);
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return invalid_model(
        "RoiAlign: coordinate_transformation_mode '{}' must be half_pixel or output_half_pixel", ctm);
  p.max_mode = mode == "max";
  p.half_pixel = ctm == "half_pixel";
  p.output_height = attrs.get_int("output_height", 1);
  p.output_width = attrs.get_int("output_width", 1);
  p.sampling_ratio = attrs.get_int("sampling_ratio", 0);
  p.spatial_scale = attrs.get_float("spatial_scale", 1.0);
  const int64_t cap = int64_t{1} << 16;
  if (p.output_height <= 0 || p.output_width <= 0 || p.output_height > cap || p.output_width > cap)
    return invalid_model("RoiAlign: output_height {} and output_width {} must be in [1, 65536]",
                         p.output_height, p.output_width);
  if (p.sampling_ratio < 0 || p.sampling_ratio > cap)
    return invalid_model("RoiAlign: sampling_ratio {} must be in [0, 65536]", p.sampling_ratio);
  if (!std::isfinite(p.spatial_scale) || p.spatial_scale <= 0)
    return invalid_model("RoiAlign: spatial_scale {} must be positive", p.spatial_scale);
  return p;
}

double window_value(int kind, int64_t i, int64_t n, bool periodic) {
  const int64_t denom = periodic ? n : n - 1;
  const double pi = 3.14159265358979323846;
  const double t = denom > 0 ? 2.0 * pi * static_cast<double>(i) / static_cast<double>(denom) : 0.0;
  switch (kind) {
    case 0: return 0.5 - 0.5 * std::cos(t);
    case 1: {
      const double alpha = 25.0 / 46.0;
      return alpha - (1.0 - alpha) * std::cos(t);
    }
    default: return 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2.0 * t);
  }
}

}  // namespace graphc::ir
