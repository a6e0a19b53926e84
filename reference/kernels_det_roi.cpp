// Reference kernels of Det (LU with partial pivoting, in double),
// ReverseSequence and RoiAlign (ONNX's reference algorithm: bilinear samples
// on a roi_bin_grid per output bin, averaged or maxed, in double).
#include <cmath>
#include <cstring>

#include "ir/signal_params.h"
#include "reference/kernels.h"

namespace graphc::reference::kernels {

using ir::Tensor;

Status run_Det(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t n = x.shape().back();
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < y.numel(); ++m) {
    for (int64_t i = 0; i < n * n; ++i) a[static_cast<size_t>(i)] = x.get_f64(m * n * n + i);
    auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * n + c)]; };
    double det = 1.0;
    for (int64_t col = 0; col < n; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < n; ++r)
        if (std::fabs(at(r, col)) > std::fabs(at(piv, col))) piv = r;
      if (at(piv, col) == 0.0) {
        det = 0.0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < n; ++c) std::swap(at(piv, c), at(col, c));
        det = -det;
      }
      det *= at(col, col);
      for (int64_t r = col + 1; r < n; ++r) {
        const double f = at(r, col) / at(col, col);
        for (int64_t c = col + 1; c < n; ++c) at(r, c) -= f * at(col, c);
      }
    }
    y.set_f64(m, det);
  }
  return Status::ok_status();
}

// Reverses the first sequence_lens[b] steps along time_axis of each batch
// entry b (batch_axis), copying the rest.
Status run_ReverseSequence(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& lens = ctx.in(1);
  Tensor& y = ctx.out(0);
  const ir::Shape& s = x.shape();
  const int64_t batch_axis = ctx.attrs().get_int("batch_axis", 1);
  const int64_t T = s[static_cast<size_t>(1 - batch_axis)];
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  for (int64_t b = 0; b < lens.numel(); ++b)
    if (lens.get_i64(b) < 0 || lens.get_i64(b) > T)
      return invalid_model("node '{}': ReverseSequence sequence_lens[{}] = {} is outside [0, {}]",
                           ctx.node.name, b, lens.get_i64(b), T);
  const size_t esz = ir::dtype_size(x.dtype());
  for (int64_t i = 0; i < x.numel() / std::max<int64_t>(inner, 1); ++i) {
    const int64_t a0 = i / s[1], a1 = i % s[1];
    const int64_t b = batch_axis == 0 ? a0 : a1, t = batch_axis == 0 ? a1 : a0;
    const int64_t len = lens.get_i64(b);
    const int64_t src_t = t < len ? len - 1 - t : t;
    const int64_t src = batch_axis == 0 ? b * s[1] + src_t : src_t * s[1] + b;
    std::memcpy(y.mutable_data() + static_cast<size_t>(i * inner) * esz,
                x.data() + static_cast<size_t>(src * inner) * esz,
                static_cast<size_t>(inner) * esz);
  }
  return Status::ok_status();
}

Status run_RoiAlign(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& rois = ctx.in(1);
  const Tensor& idx = ctx.in(2);
  Tensor& y = ctx.out(0);
  ASSIGN_OR_RETURN(ir::RoiAlignParams p, ir::roi_align_params(ctx.attrs()));
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t PH = p.output_height, PW = p.output_width;
  for (int64_t r = 0; r < rois.shape()[0]; ++r) {
    const int64_t b = idx.get_i64(r);
    if (b < 0 || b >= N)
      return invalid_model("node '{}': RoiAlign batch_indices[{}] = {} is outside [0, {})",
                           ctx.node.name, r, b, N);
    const double off = p.half_pixel ? 0.5 : 0.0;
    const double x0 = rois.get_f64(r * 4) * p.spatial_scale - off;
    const double y0 = rois.get_f64(r * 4 + 1) * p.spatial_scale - off;
    const double x1 = rois.get_f64(r * 4 + 2) * p.spatial_scale - off;
    const double y1 = rois.get_f64(r * 4 + 3) * p.spatial_scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(PH), bw = rw / static_cast<double>(PW);
    const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio
                                            : static_cast<int64_t>(std::ceil(rh / static_cast<double>(PH)));
    const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio
                                            : static_cast<int64_t>(std::ceil(rw / static_cast<double>(PW)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane = (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw) {
          double acc = 0.0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + static_cast<double>(ph) * bh +
                          (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
              double xx = x0 + static_cast<double>(pw) * bw +
                          (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
              double v1 = 0, v2 = 0, v3 = 0, v4 = 0;  // weighted corner values
              if (!(yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 ||
                    xx > static_cast<double>(W))) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                auto ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx);
                int64_t yhi, xhi;
                if (ylo >= H - 1) { yhi = ylo = H - 1; yy = static_cast<double>(ylo); } else { yhi = ylo + 1; }
                if (xlo >= W - 1) { xhi = xlo = W - 1; xx = static_cast<double>(xlo); } else { xhi = xlo + 1; }
                const double ly = yy - static_cast<double>(ylo), lx = xx - static_cast<double>(xlo);
                const double hy = 1.0 - ly, hx = 1.0 - lx;
                v1 = hy * hx * x.get_f64(plane + ylo * W + xlo);
                v2 = hy * lx * x.get_f64(plane + ylo * W + xhi);
                v3 = ly * hx * x.get_f64(plane + yhi * W + xlo);
                v4 = ly * lx * x.get_f64(plane + yhi * W + xhi);
              }
              if (p.max_mode) {
                const double v = std::max(std::max(v1, v2), std::max(v3, v4));
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                acc += v1 + v2 + v3 + v4;
              }
            }
          y.set_f64(((r * C + c) * PH + ph) * PW + pw, p.max_mode ? acc : acc / count);
        }
    }
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
