// Reference kernels of the signal-processing ops: HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix, DFT and STFT. Arithmetic in double, each
// twiddle's angle from (k * t) mod n in exact integers, rounded once on store.
#include <cmath>

#include "ir/signal_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

using ir::Tensor;

namespace {

constexpr double kPi = 3.14159265358979323846;

Status run_window(KernelContext& ctx, int kind) {
  Tensor& y = ctx.out(0);
  const bool periodic = ctx.attrs().get_int("periodic", 1) != 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    y.set_f64(i, ir::window_value(kind, i, y.numel(), periodic));
  return Status::ok_status();
}

// e^{sign * 2 pi i * k * t / n}, the angle reduced exactly first.
void twiddle(int64_t k, int64_t t, int64_t n, double sign, double& re, double& im) {
  const auto r = static_cast<int64_t>((static_cast<__int128>(k) * t) % n);
  const double a = sign * 2.0 * kPi * static_cast<double>(r) / static_cast<double>(n);
  re = std::cos(a);
  im = std::sin(a);
}

}  // namespace

Status run_HannWindow(KernelContext& ctx) { return run_window(ctx, 0); }
Status run_HammingWindow(KernelContext& ctx) { return run_window(ctx, 1); }
Status run_BlackmanWindow(KernelContext& ctx) { return run_window(ctx, 2); }

// Triangular filters between mel-spaced edges, as ONNX's reference.
Status run_MelWeightMatrix(KernelContext& ctx) {
  const int64_t bins = ctx.in(0).get_i64(0), dft_length = ctx.in(1).get_i64(0);
  const int64_t rate = ctx.in(2).get_i64(0);
  const double lower = ctx.in(3).get_f64(0), upper = ctx.in(4).get_f64(0);
  Tensor& y = ctx.out(0);
  const int64_t rows = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0); };
  const double low_mel = to_mel(lower), high_mel = to_mel(upper);
  const double step = (high_mel - low_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double mel = static_cast<double>(i) * step + low_mel;
    const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
    edge[static_cast<size_t>(i)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate)));
    if (edge[static_cast<size_t>(i)] < 0 || edge[static_cast<size_t>(i)] > rows)
      return invalid_model("node '{}': MelWeightMatrix edge {} falls on bin {}, outside [0, {}]",
                           ctx.node.name, i, edge[static_cast<size_t>(i)], rows);
  }
  std::vector<double> out(static_cast<size_t>(rows * bins), 0.0);
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], mid = edge[static_cast<size_t>(i + 1)],
                  hi = edge[static_cast<size_t>(i + 2)];
    if (mid == lo) {
      if (mid < rows) out[static_cast<size_t>(mid * bins + i)] = 1.0;
    } else {
      for (int64_t j = lo; j <= std::min(mid, rows - 1); ++j)
        out[static_cast<size_t>(j * bins + i)] =
            static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    }
    for (int64_t j = mid; j < hi; ++j)
      out[static_cast<size_t>(j * bins + i)] =
          static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  for (int64_t i = 0; i < y.numel(); ++i) y.set_f64(i, out[static_cast<size_t>(i)]);
  return Status::ok_status();
}

Status run_DFT(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::optional<int64_t> length;
  if (ctx.has_input(1)) length = ctx.in(1).get_i64(0);
  ASSIGN_OR_RETURN(ir::DftGeometry g,
                   ir::dft_geometry(x.shape(), ctx.in(2).get_i64(0), length,
                                    ctx.attrs().get_int("inverse", 0) != 0,
                                    ctx.attrs().get_int("onesided", 0) != 0));
  Tensor& y = ctx.out(0);
  const ir::Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < g.axis; ++d) outer *= s[d];
  for (size_t d = g.axis + 1; d + 1 < s.size(); ++d) inner *= s[d];
  const int64_t cin = g.in_complex ? 2 : 1, cout = g.out_complex ? 2 : 1;
  const int64_t m = g.in_len, n = g.n;
  auto in_at = [&](int64_t o, int64_t t, int64_t j, double& re, double& im) {
    const int64_t base = ((o * m + t) * inner + j) * cin;
    re = x.get_f64(base);
    im = g.in_complex ? x.get_f64(base + 1) : 0.0;
  };
  const double sign = g.inverse ? 1.0 : -1.0;
  const double scale = g.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j)
      for (int64_t k = 0; k < g.out_len; ++k) {
        double acc_re = 0, acc_im = 0;
        if (g.inverse && g.onesided) {
          // Bins above n/2 are the conjugates of those below (Hermitian).
          for (int64_t b = 0; b < n; ++b) {
            const int64_t src = b <= n / 2 ? b : n - b;
            if (src >= m) continue;
            double re, im, wr, wi;
            in_at(o, src, j, re, im);
            if (b > n / 2) im = -im;
            twiddle(b, k, n, sign, wr, wi);
            acc_re += re * wr - im * wi;
          }
        } else {
          for (int64_t t = 0; t < std::min(m, n); ++t) {
            double re, im, wr, wi;
            in_at(o, t, j, re, im);
            twiddle(k, t, n, sign, wr, wi);
            acc_re += re * wr - im * wi;
            acc_im += re * wi + im * wr;
          }
        }
        const int64_t ob = ((o * g.out_len + k) * inner + j) * cout;
        y.set_f64(ob, acc_re * scale);
        if (g.out_complex) y.set_f64(ob + 1, acc_im * scale);
      }
  return Status::ok_status();
}

Status run_STFT(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::optional<int64_t> window_len, frame_len;
  if (ctx.has_input(2)) window_len = ctx.in(2).shape()[0];
  if (ctx.has_input(3)) frame_len = ctx.in(3).get_i64(0);
  ASSIGN_OR_RETURN(ir::StftGeometry g,
                   ir::stft_geometry(x.shape(), ctx.in(1).get_i64(0), window_len, frame_len,
                                     ctx.attrs().get_int("onesided", 1) != 0));
  Tensor& y = ctx.out(0);
  const int64_t c = g.complex ? 2 : 1, L = g.frame_length;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t f = 0; f < g.frames; ++f)
      for (int64_t k = 0; k < g.bins; ++k) {
        double acc_re = 0, acc_im = 0;
        for (int64_t t = 0; t < L; ++t) {
          const int64_t base = (b * g.length + f * g.step + t) * c;
          const double w = ctx.has_input(2) ? ctx.in(2).get_f64(t) : 1.0;
          const double re = x.get_f64(base) * w, im = g.complex ? x.get_f64(base + 1) * w : 0.0;
          double wr, wi;
          twiddle(k, t, L, -1.0, wr, wi);
          acc_re += re * wr - im * wi;
          acc_im += re * wi + im * wr;
        }
        const int64_t ob = ((b * g.frames + f) * g.bins + k) * 2;
        y.set_f64(ob, acc_re);
        y.set_f64(ob + 1, acc_im);
      }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
