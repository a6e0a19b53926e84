// Reference kernel of GridSample (opsets 16-22): samples X [N, C, D1..Dk] at
// the normalized coordinates of grid [N, O1..Ok, k] (last entry = the
// innermost axis) with nearest, (bi)linear or (bi)cubic interpolation and
// zeros/border/reflection padding, as ONNX's reference does.
#include <cmath>
#include <string>

#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {

enum class Padding { kZeros, kBorder, kReflection };

double reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (x < lo) {
    const double dx = lo - x;
    const auto n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto n = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double x, double c[4]) {
  constexpr double a = -0.75;
  x = std::fabs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

struct Sampler {
  const ir::Tensor& x;
  std::vector<int64_t> dims;     // spatial extents
  std::vector<double> lo, hi;    // borders per spatial axis
  Padding padding;

  // X[plane + idx], with the padding rule for indices outside the image.
  double pixel(int64_t plane, std::vector<int64_t> idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t i = idx[d];
      if (i < 0 || i >= dims[d]) {
        if (padding == Padding::kZeros) return 0.0;
        if (padding == Padding::kBorder) i = std::min(std::max<int64_t>(i, 0), dims[d] - 1);
        else i = static_cast<int64_t>(reflect(static_cast<double>(i), lo[d], hi[d]));
      }
      off = off * dims[d] + i;
    }
    return x.get_f64(plane + off);
  }
};

}  // namespace

Status run_GridSample(KernelContext& ctx) {
  const ir::Tensor& x = ctx.in(0);
  const ir::Tensor& grid = ctx.in(1);
  ir::Tensor& y = ctx.out(0);
  std::string mode = ctx.attrs().get_string("mode", "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string pad = ctx.attrs().get_string("padding_mode", "zeros");
  const bool align = ctx.attrs().get_int("align_corners", 0) != 0;
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return invalid_model("GridSample: mode '{}' is not nearest, linear or cubic", mode);
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return invalid_model("GridSample: padding_mode '{}' is not zeros, border or reflection", pad);
  Sampler s{x, {}, {}, {},
            pad == "zeros" ? Padding::kZeros : pad == "border" ? Padding::kBorder : Padding::kReflection};
  const size_t k = static_cast<size_t>(x.rank()) - 2;
  s.dims.assign(x.shape().begin() + 2, x.shape().end());
  for (size_t d = 0; d < k; ++d) {
    s.lo.push_back(align ? 0.0 : -0.5);
    s.hi.push_back(align ? static_cast<double>(s.dims[d]) - 1 : static_cast<double>(s.dims[d]) - 0.5);
  }
  const int64_t n = x.shape()[0], c = x.shape()[1];
  int64_t plane = 1;
  for (int64_t d : s.dims) plane *= d;
  const int64_t outs = grid.numel() / (n * static_cast<int64_t>(k));
  const int taps = mode == "linear" ? 2 : mode == "cubic" ? 4 : 1;
  std::vector<double> pos(k);
  std::vector<int64_t> base(k), idx(k);
  std::vector<std::vector<double>> w(k, std::vector<double>(4));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < outs; ++o) {
      for (size_t d = 0; d < k; ++d) {
        // grid's last axis lists the innermost spatial axis first.
        const double g = grid.get_f64((b * outs + o) * static_cast<int64_t>(k) + static_cast<int64_t>(k - 1 - d));
        const double len = static_cast<double>(s.dims[d]);
        double v = static_cast<float>(align ? (g + 1) / 2.0 * (len - 1) : ((g + 1) * len - 1) / 2.0);
        if (mode == "nearest") v = std::nearbyint(v);
        if (v < s.lo[d] || v > s.hi[d]) {
          if (s.padding == Padding::kBorder) v = std::min(std::max(v, 0.0), len - 1);
          else if (s.padding == Padding::kReflection) v = reflect(v, s.lo[d], s.hi[d]);
        }
        pos[d] = v;
        if (mode == "nearest") {
          base[d] = static_cast<int64_t>(v);
        } else {
          base[d] = static_cast<int64_t>(std::floor(v)) - (taps == 4 ? 1 : 0);
          const double t = v - std::floor(v);
          if (taps == 2) {
            w[d][0] = 1 - t;
            w[d][1] = t;
          } else {
            cubic_coeffs(t, w[d].data());
          }
        }
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t pl = (b * c + ch) * plane;
        double acc = 0;
        if (mode == "nearest") {
          acc = s.pixel(pl, base);
        } else {
          int64_t combos = 1;
          for (size_t d = 0; d < k; ++d) combos *= taps;
          for (int64_t t = 0; t < combos; ++t) {
            int64_t rem = t;
            double weight = 1;
            for (size_t d = k; d-- > 0;) {
              const int64_t j = rem % taps;
              rem /= taps;
              idx[d] = base[d] + j;
              weight *= w[d][static_cast<size_t>(j)];
            }
            acc += weight * s.pixel(pl, idx);
          }
        }
        y.set_f64((b * c + ch) * outs + o, acc);
      }
    }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
