// Conv and ConvTranspose reference kernels (any spatial rank, groups,
// strides, dilations, pads, bias). Everything is computed in double on flat
// vectors converted once, with no dtype dispatch inside any loop.
//
// Conv: the input is copied once into a zero-padded buffer, then each output
// element is a plain sum over (input channel, kernel position) with no bounds
// checks, computed as a panel-packed matrix product in register tiles of
// (up to 4 output channels) x (8 output positions).
// ConvTranspose: a scatter loop over (output channel, input channel, kernel
// position, row) adding w * x along the last spatial dim.
// Sums run in a fixed order (input channel, then kernel position), so results
// do not depend on the vector ISA chosen at run time.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ir/conv_geometry.h"
#include "reference/contraction_util.h"
#include "reference/kernels.h"
#include "support/checked_math.h"

namespace graphc::reference::kernels {

namespace {

using ir::ConvGeometry;
using ir::Tensor;

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Spatial geometry, with 1x1 / stride-1 / unpadded convolutions (most of a
// ResNet) collapsed into one long row so the inner loops are long.
struct Spatial {
  std::vector<int64_t> in, out, kernel, strides, dilations, pads;
};

Spatial spatial_of(const ConvGeometry& g) {
  bool pointwise = true;
  for (size_t i = 0; i < g.spatial_rank(); ++i)
    pointwise = pointwise && g.kernel[i] == 1 && g.strides[i] == 1 && g.pads_begin[i] == 0 &&
                g.in_spatial[i] == g.out_spatial[i];
  if (pointwise) {
    int64_t n = ir::shape_numel(g.in_spatial);
    return {{n}, {n}, {1}, {1}, {1}, {0}};
  }
  return {g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations, g.pads_begin};
}

// Row-major offsets of every multi-index over `dims` except the last dim,
// each dim's index scaled by `scale[d]` (element stride of that dim's step).
std::vector<int64_t> row_offsets(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& scale) {
  std::vector<int64_t> lead(dims.begin(), dims.end() - 1);
  std::vector<int64_t> rows;
  if (ir::shape_numel(lead) == 0) return rows;
  std::vector<int64_t> idx(lead.size(), 0);
  do {
    int64_t off = 0;
    for (size_t d = 0; d < lead.size(); ++d) off += idx[d] * scale[d];
    rows.push_back(off);
  } while (next_index(idx, lead));
  return rows;
}

// ---------------------------------------------------------------- Conv
//
// Per image and group, Conv is the product Y[m, j] = sum_k W[m, k] * X[k, j]
// with k = (input channel, kernel position) and j = output position; X[k, j]
// reads the zero-padded input. Output positions are taken in panels: the
// panel's X[k, j] values are packed contiguously (tile of 8 positions, then
// k), and every block of output channels sweeps the packed panel with a
// register tile of (OB channels) x (8 positions).

constexpr int kTileX = 8;            // output positions per register tile
constexpr int64_t kPanelTiles = 16;  // tiles per packed panel (128 positions)

struct ForwardPlan {
  int64_t cg = 0;                   // input channels per group
  int64_t kernel_size = 0;          // kernel positions
  int64_t ck = 0;                   // cg * kernel_size: the reduction length
  int64_t padded_plane = 0;         // elements per padded input channel
  int64_t out_len = 0, s_last = 1;  // last output dim and its stride
  std::vector<int64_t> taps;        // per kernel position: offset in the padded plane
  std::vector<int64_t> rows;        // per output row: offset of its first tap in the plane
};

// Packs X[k, j] for positions [j0, j0 + count) as [tile][k][kTileX]; positions
// past the end are zero (computed and dropped).
GRAPHC_SIMD_CLONES
void pack_panel(const ForwardPlan& p, const double* xg, int64_t j0, int64_t count, double* panel) {
  const int64_t tiles = (count + kTileX - 1) / kTileX;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t base[kTileX];
    bool live[kTileX];
    for (int jj = 0; jj < kTileX; ++jj) {
      const int64_t j = tile * kTileX + jj;
      live[jj] = j < count;
      const int64_t pos = j0 + (live[jj] ? j : 0);
      base[jj] = p.rows[static_cast<size_t>(pos / p.out_len)] + (pos % p.out_len) * p.s_last;
    }
    double* dst = panel + tile * p.ck * kTileX;
    for (int64_t c = 0; c < p.cg; ++c) {
      const double* xc = xg + c * p.padded_plane;
      for (int64_t t = 0; t < p.kernel_size; ++t, dst += kTileX) {
        const double* src = xc + p.taps[static_cast<size_t>(t)];
        for (int jj = 0; jj < kTileX; ++jj) dst[jj] = live[jj] ? src[base[jj]] : 0.0;
      }
    }
  }
}

// out[b][j] = sum_k w[k][b] * panel[tile][k][jj] for the panel's positions.
template <int OB>
[[gnu::always_inline]] inline void panel_product(const double* w, const double* panel, int64_t ck,
                                                 int64_t count, double* out, int64_t out_plane,
                                                 int valid) {
  const int64_t tiles = (count + kTileX - 1) / kTileX;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    double acc[OB][kTileX];
    for (int b = 0; b < OB; ++b)
      for (int jj = 0; jj < kTileX; ++jj) acc[b][jj] = 0.0;
    const double* v = panel + tile * ck * kTileX;
    for (int64_t k = 0; k < ck; ++k, v += kTileX) {
      for (int b = 0; b < OB; ++b) {
        const double wv = w[k * OB + b];
        for (int jj = 0; jj < kTileX; ++jj) acc[b][jj] += wv * v[jj];
      }
    }
    const int64_t n = std::min<int64_t>(kTileX, count - tile * kTileX);
    for (int b = 0; b < OB && b < valid; ++b)
      for (int jj = 0; jj < kTileX && jj < n; ++jj)
        out[b * out_plane + tile * kTileX + jj] = acc[b][jj];
  }
}

GRAPHC_SIMD_CLONES
void panel_product_dispatch(int ob, const double* w, const double* panel, int64_t ck, int64_t count,
                            double* out, int64_t out_plane, int valid) {
  switch (ob) {
    case 4: panel_product<4>(w, panel, ck, count, out, out_plane, valid); break;
    case 2: panel_product<2>(w, panel, ck, count, out, out_plane, valid); break;
    default: panel_product<1>(w, panel, ck, count, out, out_plane, valid); break;
  }
}

// Direct loop with bounds checks, used when a zero-padded copy of the input
// would be unreasonably large (pads far beyond the input, with huge strides).
void conv_forward_direct(const ConvGeometry& g, const std::vector<double>& x,
                         const std::vector<double>& w, const std::vector<double>* bias,
                         std::vector<double>& y) {
  const size_t S = g.spatial_rank();
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  const int64_t in_plane = ir::shape_numel(g.in_spatial), kernel_size = ir::shape_numel(g.kernel);
  const std::vector<int64_t> in_stride = strides_of(g.in_spatial);
  double* out = y.data();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      std::vector<int64_t> o(S, 0);
      do {
        double acc = 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          const double* xc = x.data() + (n * g.in_channels + (oc / mg) * cg + c) * in_plane;
          const double* wc = w.data() + (oc * cg + c) * kernel_size;
          std::vector<int64_t> k(S, 0);
          int64_t t = 0;
          do {
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < S && inside; ++d) {
              const int64_t i = o[d] * g.strides[d] - g.pads_begin[d] + k[d] * g.dilations[d];
              inside = i >= 0 && i < g.in_spatial[d];
              off += i * in_stride[d];
            }
            if (inside) acc += wc[t] * xc[off];
            ++t;
          } while (next_index(k, g.kernel));
        }
        *out++ = acc + (bias ? (*bias)[static_cast<size_t>(oc)] : 0.0);
      } while (next_index(o, g.out_spatial));
    }
}

void conv_forward(const ConvGeometry& g, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>* bias, std::vector<double>& y) {
  const Spatial s = spatial_of(g);
  const size_t S = s.kernel.size();
  // Padded input extents: room for every tap of every output position.
  std::vector<int64_t> padded(S);
  for (size_t d = 0; d < S; ++d)
    padded[d] = std::max(s.in[d] + s.pads[d],
                         (s.out[d] - 1) * s.strides[d] + (s.kernel[d] - 1) * s.dilations[d] + 1);
  const auto padded_count =
      checked_mul(g.batch * g.in_channels, checked_numel(padded).value_or(-1));
  const int64_t limit = 4 * static_cast<int64_t>(x.size() + y.size()) + (int64_t{1} << 20);
  if (!padded_count || *padded_count < 0 || *padded_count > limit)
    return conv_forward_direct(g, x, w, bias, y);
  const std::vector<int64_t> pstride = strides_of(padded);
  ForwardPlan p;
  p.cg = g.in_channels / g.group;
  p.kernel_size = ir::shape_numel(s.kernel);
  p.ck = p.cg * p.kernel_size;
  p.padded_plane = ir::shape_numel(padded);
  p.out_len = s.out.back();
  p.s_last = s.strides.back();
  std::vector<int64_t> kidx(S, 0);
  do {
    int64_t off = 0;
    for (size_t d = 0; d < S; ++d) off += kidx[d] * s.dilations[d] * pstride[d];
    p.taps.push_back(off);
  } while (next_index(kidx, s.kernel));
  std::vector<int64_t> row_scale(S);
  for (size_t d = 0; d < S; ++d) row_scale[d] = s.strides[d] * pstride[d];
  p.rows = row_offsets(s.out, row_scale);

  // Zero-padded copy of the input, one plane per (image, channel).
  const int64_t in_plane = ir::shape_numel(s.in);
  const int64_t planes = g.batch * g.in_channels;
  std::vector<double> xpad(static_cast<size_t>(planes * p.padded_plane), 0.0);
  int64_t origin = 0;
  for (size_t d = 0; d < S; ++d) origin += s.pads[d] * pstride[d];
  const std::vector<int64_t> src_rows = row_offsets(s.in, strides_of(s.in));
  const std::vector<int64_t> dst_rows = row_offsets(s.in, pstride);
  const int64_t in_len = s.in.back();
  for (int64_t pl = 0; pl < planes; ++pl)
    for (size_t r = 0; r < src_rows.size(); ++r)
      std::copy_n(x.data() + pl * in_plane + src_rows[r], in_len,
                  xpad.data() + pl * p.padded_plane + origin + dst_rows[r]);

  // Weights packed per block of OB output channels: [group][block][k][OB].
  const int64_t mg = g.out_channels / g.group;
  const int ob = mg >= 4 ? 4 : mg >= 2 ? 2 : 1;
  const int64_t blocks = (mg + ob - 1) / ob;
  const int64_t block_w = p.ck * ob;
  std::vector<double> wpack(static_cast<size_t>(g.group * blocks * block_w), 0.0);
  for (int64_t oc = 0; oc < g.out_channels; ++oc) {
    const int64_t grp = oc / mg, m = oc % mg, blk = m / ob, lane = m % ob;
    double* dst = wpack.data() + (grp * blocks + blk) * block_w + lane;
    const double* src = w.data() + oc * p.ck;
    for (int64_t k = 0; k < p.ck; ++k) dst[k * ob] = src[k];
  }

  const int64_t out_plane = ir::shape_numel(g.out_spatial);
  const int64_t panel_len = kPanelTiles * kTileX;
  std::vector<double> panel(static_cast<size_t>(kPanelTiles * p.ck * kTileX));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const double* xg = xpad.data() + (n * g.in_channels + grp * p.cg) * p.padded_plane;
      for (int64_t j0 = 0; j0 < out_plane; j0 += panel_len) {
        const int64_t count = std::min(panel_len, out_plane - j0);
        pack_panel(p, xg, j0, count, panel.data());
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const int64_t oc0 = grp * mg + blk * ob;
          const int valid = static_cast<int>(std::min<int64_t>(ob, mg - blk * ob));
          panel_product_dispatch(
              ob, wpack.data() + (grp * blocks + blk) * block_w, panel.data(), p.ck, count,
              y.data() + (n * g.out_channels + oc0) * out_plane + j0, out_plane, valid);
        }
      }
    }
  if (bias)
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t oc = 0; oc < g.out_channels; ++oc) {
        double* out = y.data() + (n * g.out_channels + oc) * out_plane;
        const double bv = (*bias)[static_cast<size_t>(oc)];
        for (int64_t i = 0; i < out_plane; ++i) out[i] += bv;
      }
}

// ------------------------------------------------------- ConvTranspose

// For one kernel position: pairs of (input row, output row) offsets over the
// leading spatial dims whose output coordinates are in range, and the input
// range along the last dim whose output index is in range:
//   out = in * stride - pad_begin + k * dilation   (per spatial dim).
struct ScatterTap {
  std::vector<std::pair<int64_t, int64_t>> rows;
  int64_t lo = 0, hi = 0;  // input indices [lo, hi) along the last dim
  int64_t shift = 0;       // output index = in * stride + shift along the last dim
};

std::vector<ScatterTap> make_scatter_taps(const Spatial& s) {
  const size_t S = s.kernel.size(), L = S - 1;
  const std::vector<int64_t> lead_in(s.in.begin(), s.in.end() - 1);
  std::vector<ScatterTap> taps;
  std::vector<int64_t> kidx(S, 0);
  do {
    ScatterTap tap;
    tap.shift = kidx[L] * s.dilations[L] - s.pads[L];
    tap.lo = std::max<int64_t>(0, floor_div(-tap.shift + s.strides[L] - 1, s.strides[L]));
    tap.hi = std::min<int64_t>(s.in[L], floor_div(s.out[L] - 1 - tap.shift, s.strides[L]) + 1);
    if (tap.lo < tap.hi && ir::shape_numel(lead_in) > 0) {
      std::vector<int64_t> idx(L, 0);
      do {
        int64_t in_row = 0, out_row = 0;
        bool valid = true;
        for (size_t d = 0; d < L && valid; ++d) {
          const int64_t o = idx[d] * s.strides[d] - s.pads[d] + kidx[d] * s.dilations[d];
          valid = o >= 0 && o < s.out[d];
          in_row = in_row * s.in[d] + idx[d];
          out_row = out_row * s.out[d] + o;
        }
        if (valid) tap.rows.emplace_back(in_row * s.in[L], out_row * s.out[L]);
      } while (next_index(idx, lead_in));
    }
    taps.push_back(std::move(tap));
  } while (next_index(kidx, s.kernel));
  return taps;
}

// out[o] += w * in[i] along the last dim for every row pair of every tap of
// one (output channel, input channel) pair.
GRAPHC_SIMD_CLONES
void scatter_channel(double* out, const double* in, const double* wk,
                     const std::vector<ScatterTap>& taps, int64_t stride) {
  for (size_t kk = 0; kk < taps.size(); ++kk) {
    const ScatterTap& t = taps[kk];
    const double wv = wk[kk];
    const int64_t count = t.hi - t.lo;
    for (const auto& [in_row, out_row] : t.rows) {
      const double* src = in + in_row + t.lo;
      if (stride == 1) {
        double* dst = out + out_row + t.lo + t.shift;
        for (int64_t i = 0; i < count; ++i) dst[i] += wv * src[i];
      } else {
        double* dst = out + out_row + t.lo * stride + t.shift;
        for (int64_t i = 0; i < count; ++i) dst[i * stride] += wv * src[i];
      }
    }
  }
}

void conv_transpose(const ConvGeometry& g, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>* bias,
                    std::vector<double>& y) {
  const Spatial s = spatial_of(g);
  const std::vector<ScatterTap> taps = make_scatter_taps(s);
  const int64_t in_plane = ir::shape_numel(g.in_spatial);
  const int64_t out_plane = ir::shape_numel(g.out_spatial);
  const int64_t kernel_size = ir::shape_numel(g.kernel);
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      const int64_t grp = oc / mg, m = oc % mg;
      double* out = y.data() + (n * g.out_channels + oc) * out_plane;
      if (bias) std::fill(out, out + out_plane, (*bias)[static_cast<size_t>(oc)]);
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ic = grp * cg + c;
        // W: C x M/group x kernel.
        scatter_channel(out, x.data() + (n * g.in_channels + ic) * in_plane,
                        w.data() + (ic * mg + m) * kernel_size, taps, s.strides.back());
      }
    }
}

Status run_conv_common(KernelContext& ctx, bool transpose) {
  const char* op = transpose ? "ConvTranspose" : "Conv";
  const Tensor& X = ctx.in(0);
  const Tensor& W = ctx.in(1);
  const Tensor* B = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  Tensor& Y = ctx.out(0);
  const ir::Shape bias_shape = B ? B->shape() : ir::Shape{};
  ASSIGN_OR_RETURN(ConvGeometry g, ir::resolve_conv_geometry(ctx.attrs(), X.shape(), W.shape(),
                                                             B ? &bias_shape : nullptr, transpose));
  if (g.output_shape() != Y.shape())
    return internal_error("{}: output shape {} differs from the resolved geometry's {}", op,
                          ir::shape_to_string(Y.shape()), ir::shape_to_string(g.output_shape()));
  // int32: the exact integer conv lower-integer-contractions makes of
  // ConvInteger/QLinearConv (sums of int8 products: exact in double).
  const bool int32 = X.dtype() == ir::DType::kInt32 && !transpose;
  if ((!ir::is_float(X.dtype()) && !int32) || W.dtype() != X.dtype() ||
      (B && B->dtype() != X.dtype()))
    return unsupported("{}: element types {}/{} are not supported (float types or int32, all equal)", op,
                       ir::dtype_name(X.dtype()), ir::dtype_name(W.dtype()));
  // A channels-last Conv (ir::kChannelsLastAttr) runs as the plain one on
  // channels-first copies: the reference keeps one conv loop nest.
  const std::vector<double> x = detail::load_f64(g.channels_last ? ir::to_channels_first(X) : X);
  const std::vector<double> w = detail::load_f64(g.channels_last ? ir::to_channels_first(W) : W);
  const std::vector<double> bias = B ? detail::load_f64(*B) : std::vector<double>{};
  std::vector<double> y(static_cast<size_t>(Y.numel()), 0.0);
  if (Y.numel() > 0) {
    if (transpose)
      conv_transpose(g, x, w, B ? &bias : nullptr, y);
    else
      conv_forward(g, x, w, B ? &bias : nullptr, y);
  }
  if (!g.channels_last) {
    detail::store_f64(Y, y.data());
    return Status::ok_status();
  }
  ir::Tensor first(Y.dtype(), ir::to_channels_first(Y.shape()));
  detail::store_f64(first, y.data());
  const ir::Tensor last = ir::to_channels_last(first);
  std::memcpy(Y.mutable_data(), last.data(), last.byte_size());
  return Status::ok_status();
}

}  // namespace

Status run_Conv(KernelContext& ctx) { return run_conv_common(ctx, false); }
Status run_ConvTranspose(KernelContext& ctx) { return run_conv_common(ctx, true); }

}  // namespace graphc::reference::kernels
