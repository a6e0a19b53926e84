// Reference kernel for Resize (nearest, n-linear and n-cubic, optional
// antialias for linear and cubic),
// written to follow the ONNX reference implementation (onnx/reference/ops/
// op_resize.py): interpolation is separable, so each resized axis is done in
// turn, in the order of `axes`. For every output position along an axis the
// kernel derives the source coordinate x_original, a set of taps (input
// indices) and their weights exactly as the ONNX reference does (including
// its tie-breaking, edge clamping and exclude_outside renormalisation).
//
// Nearest mode gathers input elements bit-exactly (every dtype, int64
// included); linear and cubic compute in double and store once at the end
// (integers: round half to even, then saturate, as onnx's saturate_cast).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/pool_resize_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

using ir::ResizeParams;
using ir::Tensor;

bool is_close(double a, double b) {  // Python's math.isclose with its default rel_tol
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// Taps of one resized axis: for output position i, taps idx[i*n + k] with
// weights w[i*n + k] (k < n), or extrapolate[i] (tf_crop_and_resize outside
// the input: the output is extrapolation_value).
struct AxisTaps {
  int64_t axis = 0;
  int64_t in = 0, out = 0;
  int64_t n = 0;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> extrapolate;
};

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

AxisTaps axis_taps(const ResizeParams& p, int64_t d, int64_t in, int64_t out) {
  AxisTaps t;
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

// Stores v into element i, as onnx's saturate_cast: floats convert, integers
// round half to even and clamp to the type's range.
void store(Tensor& y, int64_t i, double v) {
  using ir::DType;
  DType t = y.dtype();
  if (ir::is_float(t)) {
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
  if (ir::is_unsigned_integer(t)) {
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

// Nearest: each axis maps an output position to one input index, or to a
// constant (extrapolation_value, or 0 when exclude_outside removed the only
// tap). Along the processing order the last axis with a constant decides it.
Status resize_nearest(const ResizeParams& p, const std::vector<AxisTaps>& taps, const Tensor& x,
                      Tensor& y) {
  const size_t r = x.shape().size();
  enum : int8_t { kCopy = 0, kExtrapolate = 1, kZero = 2 };
  std::vector<std::vector<int64_t>> src(r);
  std::vector<std::vector<int8_t>> kind(r);
  std::vector<int> order(r, -1);  // processing position of each resized axis
  for (size_t d = 0; d < r; ++d) {
    src[d].resize(static_cast<size_t>(y.shape()[d]));
    kind[d].assign(static_cast<size_t>(y.shape()[d]), kCopy);
    for (int64_t i = 0; i < y.shape()[d]; ++i) src[d][static_cast<size_t>(i)] = i;  // identity
  }
  for (size_t a = 0; a < taps.size(); ++a) {
    const AxisTaps& t = taps[a];
    const auto d = static_cast<size_t>(t.axis);
    order[d] = static_cast<int>(a);
    for (int64_t i = 0; i < t.out; ++i) {
      const auto iu = static_cast<size_t>(i);
      if (t.extrapolate[iu]) {
        kind[d][iu] = kExtrapolate;
        continue;
      }
      bool found = false;
      for (int64_t k = 0; k < t.n; ++k) {
        const auto ku = static_cast<size_t>(i * t.n + k);
        if (t.w[ku] != 0) {
          src[d][iu] = t.idx[ku];
          found = true;
        }
      }
      if (!found) kind[d][iu] = kZero;
    }
  }
  const size_t es = ir::dtype_size(x.dtype());
  const uint8_t* in = x.data();
  uint8_t* out = y.mutable_data();
  const auto in_strides = strides_of(x.shape());
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t off = 0;
    int best = -1;
    int8_t what = kCopy;
    for (size_t d = 0; d < r; ++d) {
      const auto iu = static_cast<size_t>(idx[d]);
      off += src[d][iu] * in_strides[d];
      if (kind[d][iu] != kCopy && order[d] > best) {
        best = order[d];
        what = kind[d][iu];
      }
    }
    if (what == kCopy) {
      std::memcpy(out + static_cast<size_t>(o) * es, in + static_cast<size_t>(off) * es, es);
    } else {
      store(y, o, what == kExtrapolate ? p.extrapolation_value : 0.0);
    }
    next_index(idx, y.shape());
  }
  return Status::ok_status();
}

// Linear and cubic (optionally antialiased): one axis at a time in double.
Status resize_interpolate(const ResizeParams& p, const std::vector<AxisTaps>& taps, const Tensor& x,
                          Tensor& y) {
  ir::Shape shape = x.shape();
  std::vector<double> cur = x.to_f64_vector();
  for (const AxisTaps& t : taps) {
    const auto d = static_cast<size_t>(t.axis);
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    std::vector<double> next(static_cast<size_t>(outer * t.out * inner));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < t.out; ++i) {
        const auto iu = static_cast<size_t>(i);
        for (int64_t j = 0; j < inner; ++j) {
          double v;
          if (t.extrapolate[iu]) {
            v = p.extrapolation_value;
          } else {
            v = 0;
            for (int64_t k = 0; k < t.n; ++k) {
              const auto ku = static_cast<size_t>(i * t.n + k);
              v += t.w[ku] * cur[static_cast<size_t>((o * t.in + t.idx[ku]) * inner + j)];
            }
          }
          next[static_cast<size_t>((o * t.out + i) * inner + j)] = v;
        }
      }
    }
    cur = std::move(next);
    shape[d] = t.out;
  }
  for (int64_t i = 0; i < y.numel(); ++i) store(y, i, cur[static_cast<size_t>(i)]);
  return Status::ok_status();
}

}  // namespace

Status run_Resize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  auto input = [&](size_t i) { return ctx.has_input(i) ? ctx.inputs[i] : nullptr; };
  ASSIGN_OR_RETURN(ResizeParams p,
                   ir::resize_params(ctx.attrs(), x.shape(), input(1), input(2), input(3)));
  Tensor& y = ctx.out(0);
  if (y.shape() != p.out_shape)
    return internal_error("Resize: output shape {} does not match the computed {}",
                          ir::shape_to_string(y.shape()), ir::shape_to_string(p.out_shape));
  if (p.mode != ResizeParams::Mode::kNearest && x.dtype() == ir::DType::kBool)
    return invalid_model("Resize: mode {} needs a numeric input, got bool",
                         p.mode == ResizeParams::Mode::kLinear ? "linear" : "cubic");
  if (y.numel() == 0) return Status::ok_status();
  std::vector<AxisTaps> taps;
  for (int64_t d : p.axes) {
    const auto du = static_cast<size_t>(d);
    const int64_t in = x.shape()[du], out = p.out_shape[du];
    const bool identity_roi = p.coord != ResizeParams::Coord::kTfCropAndResize ||
                              (is_close(p.roi_start[du], 0.0) && is_close(p.roi_end[du], 1.0));
    if (is_close(p.scales[du], 1.0) && out == in && identity_roi)
      continue;  // as the ONNX reference
    taps.push_back(axis_taps(p, d, in, out));
  }
  if (p.mode == ResizeParams::Mode::kNearest) return resize_nearest(p, taps, x, y);
  return resize_interpolate(p, taps, x, y);
}

}  // namespace graphc::reference::kernels
