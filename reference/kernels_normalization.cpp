// Reference kernels for normalizations. Everything is computed in double
// (fp16/bf16/fp32 widen exactly) and stored in the output dtype. Variances
// are population variances, E[(x - mean)^2].
#include <cmath>

#include "reference/kernels.h"
#include "reference/reduce_slices.h"

namespace graphc::reference::kernels {

using ir::Tensor;

namespace {

struct MeanVar {
  double mean = 0;
  double var = 0;
};

// Mean and variance of the elements x[base + offsets[j]].
MeanVar mean_var(const Tensor& x, int64_t base, const std::vector<int64_t>& offsets) {
  MeanVar r;
  if (offsets.empty()) return {std::nan(""), std::nan("")};  // numpy: mean of nothing
  auto n = static_cast<double>(offsets.size());
  for (int64_t off : offsets) r.mean += x.get_f64(base + off);
  r.mean /= n;
  for (int64_t off : offsets) {
    double d = x.get_f64(base + off) - r.mean;
    r.var += d * d;
  }
  r.var /= n;
  return r;
}

std::vector<int64_t> iota_offsets(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// N, C and the product of the dims after C.
struct Nchw {
  int64_t n, c, inner;
};
Expected<Nchw> nchw(const ir::Shape& s) {
  if (s.size() < 2)
    return invalid_argument("input must have rank >= 2 (N x C x ...), got {}", s.size());
  Nchw r{s[0], s[1], 1};
  for (size_t d = 2; d < s.size(); ++d) r.inner *= s[d];
  return r;
}

}  // namespace

Status run_BatchNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double eps = ctx.attrs().get_float("epsilon", 1e-5);
  ASSIGN_OR_RETURN(Nchw g, nchw(x.shape()));
  Tensor& y = ctx.out(0);
  for (int64_t c = 0; c < g.c; ++c) {
    double scale = ctx.in(1).get_f64(c), bias = ctx.in(2).get_f64(c);
    double mean = ctx.in(3).get_f64(c), var = ctx.in(4).get_f64(c);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t i = 0; i < g.inner; ++i) {
        int64_t off = (n * g.c + c) * g.inner + i;
        y.set_f64(off, scale * (x.get_f64(off) - mean) * inv + bias);
      }
  }
  return Status::ok_status();
}

Status run_LayerNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t rank = x.rank();
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("axis out of range");
  double eps = ctx.attrs().get_float("epsilon", 1e-5);
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= x.shape()[static_cast<size_t>(d)];
  auto offsets = iota_offsets(cols);
  std::vector<double> mean(static_cast<size_t>(rows)), inv(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    MeanVar mv = mean_var(x, r * cols, offsets);
    mean[static_cast<size_t>(r)] = mv.mean;
    inv[static_cast<size_t>(r)] = 1.0 / std::sqrt(mv.var + eps);
  }
  const Tensor* scale = ctx.has_input(1) ? &ctx.in(1) : nullptr;
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  auto scale_strides = scale ? strides_of(scale->shape()) : std::vector<int64_t>{};
  auto bias_strides = bias ? strides_of(bias->shape()) : std::vector<int64_t>{};
  Tensor& y = ctx.out(0);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t f = 0; f < x.numel(); ++f, next_index(idx, x.shape())) {
    auto r = static_cast<size_t>(f / cols);
    double v = (x.get_f64(f) - mean[r]) * inv[r];
    if (scale) v *= scale->get_f64(broadcast_offset(idx, scale->shape(), scale_strides));
    if (bias) v += bias->get_f64(broadcast_offset(idx, bias->shape(), bias_strides));
    y.set_f64(f, v);
  }
  for (size_t o = 1; o < 3 && o < ctx.outputs.size(); ++o) {
    if (ctx.node.outputs[o] == ir::kNoValue) continue;
    Tensor& t = ctx.out(o);
    for (int64_t r = 0; r < rows; ++r)
      t.set_f64(r, o == 1 ? mean[static_cast<size_t>(r)] : inv[static_cast<size_t>(r)]);
  }
  return Status::ok_status();
}

Status run_InstanceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double eps = ctx.attrs().get_float("epsilon", 1e-5);
  ASSIGN_OR_RETURN(Nchw g, nchw(x.shape()));
  auto offsets = iota_offsets(g.inner);
  Tensor& y = ctx.out(0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c) {
      int64_t base = (n * g.c + c) * g.inner;
      MeanVar mv = mean_var(x, base, offsets);
      double inv = 1.0 / std::sqrt(mv.var + eps);
      double scale = ctx.in(1).get_f64(c), bias = ctx.in(2).get_f64(c);
      for (int64_t i = 0; i < g.inner; ++i)
        y.set_f64(base + i, scale * (x.get_f64(base + i) - mv.mean) * inv + bias);
    }
  return Status::ok_status();
}

// ONNX LRN: square_sum[n, c, ...] = sum of x[n, c', ...]^2 for c' in
// [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C);
// y = x / (bias + alpha / size * square_sum)^beta.
Status run_LRN(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t size = ctx.attrs().get_int("size", 0);
  if (size < 1) return invalid_argument("attribute 'size' must be >= 1, got {}", size);
  double alpha = ctx.attrs().get_float("alpha", 1e-4);
  double beta = ctx.attrs().get_float("beta", 0.75);
  double bias = ctx.attrs().get_float("bias", 1.0);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  ASSIGN_OR_RETURN(Nchw g, nchw(x.shape()));
  Tensor& y = ctx.out(0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i = 0; i < g.inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(g.c - 1, c + hi); ++k) {
          double v = x.get_f64((n * g.c + k) * g.inner + i);
          sq += v * v;
        }
        int64_t off = (n * g.c + c) * g.inner + i;
        y.set_f64(off,
                  x.get_f64(off) / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
  return Status::ok_status();
}

// ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over
// `axes`; the variance is computed here as E[(X - E[X])^2], equal in exact
// arithmetic and without cancellation.
Status run_MeanVarianceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  auto axes = ctx.attrs().get_ints("axes", {0, 2, 3});
  std::vector<bool> mask(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) {
    if (a < -x.rank() || a >= x.rank()) return invalid_argument("axes value {} is out of range", a);
    mask[static_cast<size_t>(a < 0 ? a + x.rank() : a)] = true;
  }
  Slices s = slices_for(x.shape(), mask);
  Tensor& y = ctx.out(0);
  for (int64_t base : s.base) {
    MeanVar mv = mean_var(x, base, s.slice);
    double denom = std::sqrt(mv.var) + 1e-9;
    for (int64_t off : s.slice) y.set_f64(base + off, (x.get_f64(base + off) - mv.mean) / denom);
  }
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
