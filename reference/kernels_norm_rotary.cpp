// Reference kernels of GroupNormalization (opset 18 per-group and opset 21
// per-channel scale/bias), RMSNormalization, LpNormalization,
// RotaryEmbedding and Col2Im. Arithmetic in double, rounded once on store.
#include <cmath>

#include "reference/kernels.h"

namespace graphc::reference::kernels {

namespace {
using ir::Shape;
using ir::Tensor;

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}
}  // namespace

// Y = scale * (X - mean) / sqrt(var + epsilon) + bias over each group of
// C/num_groups channels; scale/bias hold one value per group (opset 18) or
// per channel (opset 21).
Status run_GroupNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  const Tensor& bias = ctx.in(2);
  Tensor& y = ctx.out(0);
  const int64_t groups = ctx.attrs().get_int("num_groups", 0);
  const double eps = ctx.attrs().get_float("epsilon", 1e-5);
  const int64_t n = x.shape()[0], c = x.shape()[1];
  const int64_t spatial = prod(x.shape(), 2, x.shape().size());
  const int64_t cpg = c / groups;
  const bool per_group = scale.numel() == groups && groups != c;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (b * c + g * cpg) * spatial, count = cpg * spatial;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < count; ++i) sum += x.get_f64(base + i);
      const double mean = sum / static_cast<double>(count);
      for (int64_t i = 0; i < count; ++i) {
        double d = x.get_f64(base + i) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(count) + eps);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t ch = g * cpg + i / spatial;
        const int64_t p = per_group ? g : ch;
        y.set_f64(base + i, (x.get_f64(base + i) - mean) * inv * scale.get_f64(p) + bias.get_f64(p));
      }
    }
  return Status::ok_status();
}

// Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale, the scale
// broadcast over the normalized axes.
Status run_RMSNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  Tensor& y = ctx.out(0);
  const auto rank = x.rank();
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += rank;
  const double eps = ctx.attrs().get_float("epsilon", 1e-5);
  const int64_t inner = prod(x.shape(), static_cast<size_t>(axis), x.shape().size());
  const int64_t outer = inner ? x.numel() / inner : 0;
  // Scale offsets within one normalized slice (numpy broadcasting from the right).
  Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  Shape s_shape = scale.shape();
  if (s_shape.size() > norm_shape.size())
    return invalid_model("RMSNormalization: scale of shape {} has more dims than the normalized {}",
                         ir::shape_to_string(s_shape), ir::shape_to_string(norm_shape));
  s_shape.insert(s_shape.begin(), norm_shape.size() - s_shape.size(), 1);
  std::vector<int64_t> soff(static_cast<size_t>(inner));
  {
    auto ns = strides_of(norm_shape), ss = strides_of(s_shape);
    for (int64_t i = 0; i < inner; ++i) {
      int64_t rem = i, off = 0;
      for (size_t d = 0; d < norm_shape.size(); ++d) {
        int64_t idx = rem / ns[d];
        rem %= ns[d];
        if (s_shape[d] != 1) off += idx * ss[d];
      }
      soff[static_cast<size_t>(i)] = off;
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      double v = x.get_f64(o * inner + i);
      sq += v * v;
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    for (int64_t i = 0; i < inner; ++i)
      y.set_f64(o * inner + i, x.get_f64(o * inner + i) * inv * scale.get_f64(soff[static_cast<size_t>(i)]));
  }
  return Status::ok_status();
}

// Y = X / ||X||_p along `axis` (p = 1 or 2); a zero norm gives 0.
Status run_LpNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t axis = ctx.attrs().get_int("axis", -1);
  if (axis < 0) axis += x.rank();
  const int64_t p = ctx.attrs().get_int("p", 2);
  const int64_t len = x.shape()[static_cast<size_t>(axis)];
  const int64_t inner = prod(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  const int64_t outer = prod(x.shape(), 0, static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      double acc = 0;
      for (int64_t k = 0; k < len; ++k) {
        double v = x.get_f64(base + k * inner);
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      const double norm = p == 1 ? acc : std::sqrt(acc);
      for (int64_t k = 0; k < len; ++k)
        y.set_f64(base + k * inner, norm == 0 ? 0.0 : x.get_f64(base + k * inner) / norm);
    }
  return Status::ok_status();
}

// RotaryEmbedding(X, cos_cache, sin_cache, position_ids?): X is
// [batch, heads, seq, head_size] or [batch, seq, heads * head_size]; the
// first rotary_embedding_dim features of each head rotate, as halves
// (x1 = [0, d/2), x2 = [d/2, d)) or interleaved pairs (2i, 2i + 1).
Status run_RotaryEmbedding(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& cosc = ctx.in(1);
  const Tensor& sinc = ctx.in(2);
  const Tensor* pos = ctx.has_input(3) ? &ctx.in(3) : nullptr;
  Tensor& y = ctx.out(0);
  const bool interleaved = ctx.attrs().get_int("interleaved", 0) != 0;
  const bool four_d = x.rank() == 4;
  const int64_t batch = x.shape()[0];
  const int64_t seq = four_d ? x.shape()[2] : x.shape()[1];
  const int64_t heads = four_d ? x.shape()[1] : ctx.attrs().get_int("num_heads", 0);
  const int64_t head = four_d ? x.shape()[3] : x.shape()[2] / heads;
  int64_t rot = ctx.attrs().get_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  const int64_t half = rot / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      // The cache row: position_ids[b, s], else (b, s) of a [batch, seq, half] cache.
      const int64_t row = pos ? pos->get_i64(b * seq + s) : b * seq + s;
      if (row < 0 || row * half >= cosc.numel())
        return invalid_argument("RotaryEmbedding: position id {} is outside the cache", row);
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = four_d ? ((b * heads + h) * seq + s) * head : (b * seq + s) * heads * head + h * head;
        for (int64_t d = 0; d < head; ++d) y.set_f64(base + d, x.get_f64(base + d));
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          const double c = cosc.get_f64(row * half + i), sn = sinc.get_f64(row * half + i);
          const double x1 = x.get_f64(base + i1), x2 = x.get_f64(base + i2);
          y.set_f64(base + i1, c * x1 - sn * x2);
          y.set_f64(base + i2, sn * x1 + c * x2);
        }
      }
    }
  return Status::ok_status();
}

// Col2Im(input [N, C * prod(block), L], image_shape, block_shape): sums each
// column of sliding blocks back into the image (the inverse of im2col).
Status run_Col2Im(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const auto image = ctx.in(1).to_i64_vector();
  const auto block = ctx.in(2).to_i64_vector();
  Tensor& y = ctx.out(0);
  const size_t nd = image.size();
  auto dil = ctx.attrs().get_ints("dilations", std::vector<int64_t>(nd, 1));
  auto strides = ctx.attrs().get_ints("strides", std::vector<int64_t>(nd, 1));
  auto pads = ctx.attrs().get_ints("pads", std::vector<int64_t>(2 * nd, 0));
  std::vector<int64_t> nblocks(nd);
  for (size_t d = 0; d < nd; ++d)
    nblocks[d] = (image[d] + pads[d] + pads[d + nd] - dil[d] * (block[d] - 1) - 1) / strides[d] + 1;
  const int64_t n = x.shape()[0];
  const int64_t kprod = prod(block, 0, nd), lprod = prod(nblocks, 0, nd), iprod = prod(image, 0, nd);
  const int64_t c = x.shape()[1] / kprod;
  for (int64_t i = 0; i < y.numel(); ++i) y.set_f64(i, 0.0);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < kprod; ++k)
        for (int64_t l = 0; l < lprod; ++l) {
          int64_t krem = k, lrem = l, pix = 0;
          bool inside = true;
          for (size_t d = nd; d-- > 0;) {
            const int64_t kd = krem % block[d], ld = lrem % nblocks[d];
            krem /= block[d];
            lrem /= nblocks[d];
            const int64_t pos = ld * strides[d] - pads[d] + kd * dil[d];
            if (pos < 0 || pos >= image[d]) inside = false;
            int64_t stride = prod(image, d + 1, nd);
            pix += pos * stride;
          }
          if (!inside) continue;
          acc[static_cast<size_t>((b * c + ch) * iprod + pix)] +=
              x.get_f64((b * x.shape()[1] + ch * kprod + k) * lprod + l);
        }
  for (int64_t i = 0; i < y.numel(); ++i) y.set_f64(i, acc[static_cast<size_t>(i)]);
  return Status::ok_status();
}

}  // namespace graphc::reference::kernels
