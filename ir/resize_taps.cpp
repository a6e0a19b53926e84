#include "ir/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graphc::ir {

namespace {

bool is_close(double a, double b) {  // Python's math.isclose with its default rel_tol
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

double source_coordinate(const ResizeParams& p, int64_t d, double y, int64_t in, int64_t out_int,
                         bool* extrapolate) {
  using C = ResizeParams::Coord;
  const auto du = static_cast<size_t>(d);
  const double s = p.scales[du];
  const double w_in = static_cast<double>(in);
  const double out_w = s * w_in;  // the (fractional) output length, as the spec's reference uses
  *extrapolate = false;
  switch (p.coord) {
    case C::kAlignCorners: return out_w == 1 ? 0.0 : y * (w_in - 1) / (out_w - 1);
    case C::kAsymmetric: return y / s;
    case C::kTfCropAndResize: {
      const double r0 = p.roi_start[du], r1 = p.roi_end[du];
      double x = out_w == 1 ? (r1 - r0) * (w_in - 1) / 2 : y * (r1 - r0) * (w_in - 1) / (out_w - 1);
      x += r0 * (w_in - 1);
      *extrapolate = x < 0 || x > w_in - 1;
      return x;
    }
    case C::kPytorchHalfPixel: return out_w == 1 ? -0.5 : (y + 0.5) / s - 0.5;
    case C::kHalfPixel: return (y + 0.5) / s - 0.5;
    case C::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_int) / out_w;
      const double offset = w_in / 2 * (1 - adjustment);
      return offset + (y + 0.5) / s - 0.5;
    }
    case C::kTfHalfPixelForNN: return (y + 0.5) / s;
  }
  return 0.0;
}

// Keys' cubic convolution kernel with parameter a, at distance |x|.
double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  const double x2 = x * x, x3 = x * x2;
  if (x <= 1) return (a + 2) * x3 - (a + 3) * x2 + 1;
  if (x < 2) return a * x3 - 5 * a * x2 + 8 * a * x - 4 * a;
  return 0.0;
}

// Weights of the taps around x_original, left to right: the taps are the
// n (even) input positions nearest to x_original, where x_original - ratio is
// the tap at index n/2 - 1. `ratio` is in (0, 1]; `scale` is the axis scale.
std::vector<double> coefficients(const ResizeParams& p, double ratio, double scale) {
  using N = ResizeParams::Nearest;
  using M = ResizeParams::Mode;
  if (p.mode == M::kNearest) {
    if (ratio == 1.0) return {0.0, 1.0};
    switch (p.nearest) {
      case N::kRoundPreferFloor: return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
      case N::kRoundPreferCeil: return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
      case N::kFloor: return {1.0, 0.0};
      case N::kCeil: return {0.0, 1.0};
    }
  }
  if (p.mode == M::kCubic && !p.antialias) {
    // The four taps sit at distances 1 + ratio, ratio, 1 - ratio, 2 - ratio
    // (the expanded polynomials of the ONNX reference, same evaluation order).
    const double a = p.cubic_coeff_a, r = ratio;
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a};
  }
  if (p.mode == M::kLinear && !p.antialias) return {1.0 - ratio, ratio};
  // Antialiased linear / cubic: the filter (triangle of half-width 1, cubic of
  // half-width 2) stretched by 1/scale when downscaling, weights normalised to
  // sum 1. Tap k sits at offset start + k from x_original - ratio.
  const double s = std::min(scale, 1.0);
  const double half_width = p.mode == M::kCubic ? 2.0 : 1.0;
  const auto start = static_cast<int64_t>(std::floor(-half_width / s) + 1);
  const int64_t footprint = 2 - 2 * start;
  std::vector<double> c(static_cast<size_t>(footprint));
  double sum = 0;
  for (int64_t k = 0; k < footprint; ++k) {
    const double arg = (static_cast<double>(start + k) - ratio) * s;
    double& v = c[static_cast<size_t>(k)];
    v = p.mode == M::kCubic ? cubic_kernel(arg, p.cubic_coeff_a)
                            : std::clamp(1.0 - std::fabs(arg), 0.0, 1.0);
    sum += v;
  }
  for (double& v : c) v /= sum;
  return c;
}

}  // namespace

ResizeAxisTaps resize_axis_taps(const ResizeParams& p, int64_t d, int64_t in, int64_t out) {
  ResizeAxisTaps t;
  t.axis = d;
  t.in = in;
  t.out = out;
  t.extrapolate.assign(static_cast<size_t>(out), 0);
  for (int64_t i = 0; i < out; ++i) {
    bool extrapolate = false;
    const double x = source_coordinate(p, d, static_cast<double>(i), in, out, &extrapolate);
    t.extrapolate[static_cast<size_t>(i)] = extrapolate ? 1 : 0;
    const double x_int = std::floor(x);
    // Prefer the pixel left of x_original: an integer x has ratio 1.
    const double ratio = x == x_int ? 1.0 : x - x_int;
    std::vector<double> c = coefficients(p, ratio, p.scales[static_cast<size_t>(d)]);
    const auto n = static_cast<int64_t>(c.size());  // always even
    if (t.n == 0) t.n = n;
    // The n taps nearest to x, ties to the smaller index (computed on the
    // edge-padded axis like the ONNX reference, then shifted back).
    const int64_t pad = n / 2;
    const double xp = x + static_cast<double>(pad);
    const double pp = std::floor(xp);
    const int64_t first = static_cast<int64_t>(pp) + (xp == pp ? -n / 2 : 1 - n / 2) - pad;
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) idx[static_cast<size_t>(k)] = first + k;
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        auto ku = static_cast<size_t>(k);
        if (idx[ku] < 0 || idx[ku] >= in) c[ku] = 0;
        sum += c[ku];
      }
      if (sum == 0) sum = 1;
      for (double& v : c) v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      auto ku = static_cast<size_t>(k);
      t.idx.push_back(std::clamp<int64_t>(idx[ku], 0, in - 1));  // edge padding
      t.w.push_back(c[ku]);
    }
  }
  return t;
}

std::vector<ResizeAxisTaps> resize_taps(const ResizeParams& p, const Shape& x) {
  std::vector<ResizeAxisTaps> taps;
  for (int64_t d : p.axes) {
    const auto du = static_cast<size_t>(d);
    const int64_t in = x[du], out = p.out_shape[du];
    const bool identity_roi = p.coord != ResizeParams::Coord::kTfCropAndResize ||
                              (is_close(p.roi_start[du], 0.0) && is_close(p.roi_end[du], 1.0));
    if (is_close(p.scales[du], 1.0) && out == in && identity_roi)
      continue;  // as the ONNX reference
    taps.push_back(resize_axis_taps(p, d, in, out));
  }
  return taps;
}

// Stores v into element i, as onnx's saturate_cast: floats convert, integers
// round half to even and clamp to the type's range.
void resize_store(Tensor& y, int64_t i, double v) {
  DType t = y.dtype();
  if (is_float(t)) {
    y.set_f64(i, v);
    return;
  }
  if (t == DType::kBool) {
    y.set_i64(i, v != 0 ? 1 : 0);
    return;
  }
  if (std::isnan(v)) {
    y.set_i64(i, 0);
    return;
  }
  v = std::nearbyint(v);
  if (is_unsigned_integer(t)) {
    double hi = t == DType::kUInt8    ? 255.0
                : t == DType::kUInt16 ? 65535.0
                : t == DType::kUInt32 ? 4294967295.0
                                      : 18446744073709551615.0;
    if (v <= 0) {
      y.set_u64(i, 0);
    } else if (v >= hi) {
      y.set_u64(i, t == DType::kUInt64 ? std::numeric_limits<uint64_t>::max()
                                       : static_cast<uint64_t>(hi));
    } else {
      y.set_u64(i, static_cast<uint64_t>(v));
    }
    return;
  }
  int64_t lo_i = t == DType::kInt8    ? INT8_MIN
                 : t == DType::kInt16 ? INT16_MIN
                 : t == DType::kInt32 ? INT32_MIN
                                      : INT64_MIN;
  int64_t hi_i = t == DType::kInt8    ? INT8_MAX
                 : t == DType::kInt16 ? INT16_MAX
                 : t == DType::kInt32 ? INT32_MAX
                                      : INT64_MAX;
  if (v <= static_cast<double>(lo_i)) {
    y.set_i64(i, lo_i);
  } else if (v >= static_cast<double>(hi_i)) {
    y.set_i64(i, hi_i);
  } else {
    y.set_i64(i, static_cast<int64_t>(v));
  }
}

}  // namespace graphc::ir
