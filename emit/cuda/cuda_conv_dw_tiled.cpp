// The tiled channels-last depthwise conv (target/cuda/depthwise_tile_rules.h
// has the tile and the choice). Per block: one image, TH x TW output pixels,
// CB channels. The block stages the input tile with its halo and the CB
// channels' taps in shared memory as fp32 (global reads are LV-channel
// vectors, consecutive threads on consecutive vectors of one pixel; taps are
// read in memory order into rows padded by V floats, so the transposing
// stores hit several banks), then each
// thread computes P output pixels along W for V channels: per kernel row it
// reads the (P-1)·stride + (KW-1)·dilation + 1 input vectors it needs into
// registers once and each tap vector once, and accumulates in fp32. The
// frame's store runs the fused bias / activation / residual epilogue.
#include "emit/cuda/cuda_conv_dw_tiled.h"

#include "emit/cuda/batch_range.h"

#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_window.h"

namespace graphc::emit {

Expected<GeneratedKernel> tiled_depthwise_kernel(const AnchorFrame& f, const ir::ConvGeometry& g,
                                                 const target::DepthwiseTile& t,
                                                 const std::optional<ir::DimExpr>& batch) {
  const ir::DType dt = f.input(0).dtype;
  const int64_t c = g.in_channels, h = g.in_spatial[0], w = g.in_spatial[1];
  const int64_t oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t cb = t.cb();
  const int64_t chunks = (c + cb - 1) / cb;
  const int64_t tiles_h = (oh + t.th - 1) / t.th, tiles_w = (ow + t.tw - 1) / t.tw;
  const int64_t per_image = tiles_h * tiles_w * chunks;
  ASSIGN_OR_RETURN(const int64_t most_n, most_batch(f, batch, g.batch));
  if (most_n * per_image >= (int64_t{1} << 31) - (int64_t{1} << 21))
    return unsupported("Conv '{}': {} blocks exceed the tiled depthwise kernel's 32-bit indices",
                       f.node_name, most_n * per_image);
  // The input segment of P outputs along W: in registers when small.
  const int64_t seg = (t.p - 1) * sw + (kw - 1) * dw + 1;
  const bool cached = kw <= 16 && seg * t.v <= 64;
  const bool vector_loads = t.lv > 1 && !f.input_params.empty() && !f.input_params[0].empty();
  const int64_t es = static_cast<int64_t>(ir::dtype_size(dt));

  std::string helpers =
      fmt::format("struct alignas({}) dwt_acc_vec {{ float v[{}]; }};\n", 4 * t.v, t.v);
  if (vector_loads)
    helpers += fmt::format("struct alignas({}) dwt_ld_vec {{ {} v[{}]; }};\n", es * t.lv,
                           cuda::storage_type(dt), t.lv);

  // Staging one LV-channel vector of input pixel `src` into `dst`.
  const std::string scalar_stage = fmt::format(
      "{{\n#pragma unroll\n          for (int u = 0; u < {LV}; ++u) dst[u] = (acc_t)({ld}); }}",
      fmt::arg("LV", t.lv), fmt::arg("ld", f.load(0, "src + u")));
  std::string stage = scalar_stage;
  if (vector_loads)
    stage = fmt::format(
        "if (x_aligned) {{\n"
        "          const dwt_ld_vec xv = *reinterpret_cast<const dwt_ld_vec*>({p} + src);\n"
        "#pragma unroll\n"
        "          for (int u = 0; u < {LV}; ++u) dst[u] = (acc_t)({ld}); }}\n"
        "        else {scalar}",
        fmt::arg("p", f.input_params[0]), fmt::arg("LV", t.lv),
        fmt::arg("ld", cuda::load_expr(dt, "xv.v[u]")), fmt::arg("scalar", scalar_stage));

  std::string b;
  if (vector_loads)
    b = fmt::format("  const bool x_aligned = (unsigned long long)({}) % {} == 0;\n",
                    f.input_params[0], es * t.lv);
  b += fmt::format(
      "  typedef float acc_t;\n"
      "  __shared__ __align__(16) acc_t s_in[{IR} * {IC} * {CB}];\n"
      "  __shared__ __align__(16) acc_t s_w[{TAPS} * {WS}];\n"
      "  const int cv = threadIdx.x % {CV}, pg = threadIdx.x / {CV};\n"
      "  const int tr = pg / {GW}, tc = (pg % {GW}) * {P};\n"
      "  for (int blk = blockIdx.x; blk < {BLOCKS}; blk += gridDim.x) {{\n"
      "    int r = blk;\n"
      "    const int c0 = (r % {CHUNKS}) * {CB};\n"
      "    r /= {CHUNKS};\n"
      "    const int ow0 = (r % {TWS}) * {TW};\n"
      "    r /= {TWS};\n"
      "    const int oh0 = (r % {THS}) * {TH};\n"
      "    const int n = r / {THS};\n"
      "    const int ih0 = oh0 * {sh} - {ph}, iw0 = ow0 * {sw} - {pw};\n"
      "    for (int e = threadIdx.x; e < {IR} * {IC} * {LVS}; e += {T}) {{\n"
      "      const int pix = e / {LVS};\n"
      "      const int c = c0 + (e % {LVS}) * {LV};\n"
      "      const int ih = ih0 + pix / {IC}, iw = iw0 + pix % {IC};\n"
      "      acc_t* dst = s_in + pix * {CB} + (e % {LVS}) * {LV};\n"
      "      if (ih >= 0 && ih < {H} && iw >= 0 && iw < {W} && c < {C}) {{\n"
      "        const long long src = (((long long)n * {H} + ih) * {W} + iw) * {C} + c;\n"
      "        {stage}\n"
      "      }} else {{\n"
      "#pragma unroll\n"
      "        for (int u = 0; u < {LV}; ++u) dst[u] = (acc_t)0;\n"
      "      }}\n"
      "    }}\n"
      "    for (int e = threadIdx.x; e < {TAPS} * {CB}; e += {T}) {{\n"
      "      const int c = c0 + e / {TAPS};\n"
      "      s_w[(e % {TAPS}) * {WS} + e / {TAPS}] = c < {C} ? (acc_t)({wload}) : (acc_t)0;\n"
      "    }}\n"
      "    __syncthreads();\n"
      "    const int c = c0 + cv * {V};\n"
      "    const int oh = oh0 + tr;\n"
      "    if (c < {C} && oh < {OH}) {{\n"
      "      acc_t acc[{P}][{V}];\n"
      "#pragma unroll\n"
      "      for (int q = 0; q < {P}; ++q)\n"
      "#pragma unroll\n"
      "        for (int u = 0; u < {V}; ++u) acc[q][u] = (acc_t)0;\n"
      "      {kh_unroll}\n"
      "      for (int kh = 0; kh < {KH}; ++kh) {{\n"
      "        const acc_t* srow =\n"
      "            s_in + ((tr * {sh} + kh * {dh}) * {IC} + tc * {sw}) * {CB} + cv * {V};\n"
      "        const acc_t* wrow = s_w + kh * {KW} * {WS} + cv * {V};\n",
      fmt::arg("IR", t.in_rows), fmt::arg("IC", t.in_cols), fmt::arg("CB", cb),
      fmt::arg("TAPS", kh * kw), fmt::arg("CV", t.cv), fmt::arg("GW", t.tw / t.p),
      fmt::arg("P", t.p), fmt::arg("BLOCKS", batch ? batch_count_code(f, batch, per_image) : std::to_string(t.blocks)), fmt::arg("CHUNKS", chunks),
      fmt::arg("TWS", tiles_w), fmt::arg("TW", t.tw), fmt::arg("THS", tiles_h),
      fmt::arg("TH", t.th), fmt::arg("sh", sh), fmt::arg("ph", g.pads_begin[0]), fmt::arg("sw", sw),
      fmt::arg("pw", g.pads_begin[1]), fmt::arg("LVS", cb / t.lv), fmt::arg("LV", t.lv),
      fmt::arg("T", t.threads()), fmt::arg("H", h), fmt::arg("W", w), fmt::arg("C", c),
      fmt::arg("stage", stage),
      fmt::arg("wload", f.load(1, fmt::format("(long long)c0 * {} + e", kh * kw))),
      fmt::arg("WS", t.weight_stride()), fmt::arg("V", t.v), fmt::arg("OH", oh),
      fmt::arg("kh_unroll", window_unroll(kh)), fmt::arg("KH", kh), fmt::arg("dh", dh),
      fmt::arg("KW", kw));
  if (cached) {
    b += fmt::format(
        "        dwt_acc_vec xr[{S}];\n"
        "#pragma unroll\n"
        "        for (int j = 0; j < {S}; ++j)\n"
        "          xr[j] = *reinterpret_cast<const dwt_acc_vec*>(srow + j * {CB});\n"
        "#pragma unroll\n"
        "        for (int kw = 0; kw < {KW}; ++kw) {{\n"
        "          const dwt_acc_vec wv =\n"
        "              *reinterpret_cast<const dwt_acc_vec*>(wrow + kw * {WS});\n"
        "#pragma unroll\n"
        "          for (int q = 0; q < {P}; ++q)\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u)\n"
        "              acc[q][u] += xr[q * {sw} + kw * {dw}].v[u] * wv.v[u];\n"
        "        }}\n",
        fmt::arg("S", seg), fmt::arg("CB", cb), fmt::arg("WS", t.weight_stride()),
        fmt::arg("KW", kw), fmt::arg("P", t.p), fmt::arg("V", t.v), fmt::arg("sw", sw),
        fmt::arg("dw", dw));
  } else {
    b += fmt::format(
        "        {kw_unroll}\n"
        "        for (int kw = 0; kw < {KW}; ++kw) {{\n"
        "          const dwt_acc_vec wv =\n"
        "              *reinterpret_cast<const dwt_acc_vec*>(wrow + kw * {WS});\n"
        "#pragma unroll\n"
        "          for (int q = 0; q < {P}; ++q) {{\n"
        "            const dwt_acc_vec xv =\n"
        "                *reinterpret_cast<const dwt_acc_vec*>(srow + (q * {sw} + kw * {dw}) *\n"
        "                                                      {CB});\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) acc[q][u] += xv.v[u] * wv.v[u];\n"
        "          }}\n"
        "        }}\n",
        fmt::arg("kw_unroll", window_unroll(kw)), fmt::arg("KW", kw), fmt::arg("CB", cb),
        fmt::arg("WS", t.weight_stride()), fmt::arg("P", t.p), fmt::arg("sw", sw),
        fmt::arg("dw", dw), fmt::arg("V", t.v));
  }
  const std::string bias = f.has_input(2) ? fmt::format(" + (acc_t)({})", f.load(2, "c + u")) : "";
  b += fmt::format(
      "      }}\n"
      "#pragma unroll\n"
      "      for (int q = 0; q < {P}; ++q) {{\n"
      "        const int ow = ow0 + tc + q;\n"
      "        if (ow >= {OW}) break;\n"
      "        const long long o = (((long long)n * {OH} + oh) * {OW} + ow) * {C} + c;\n"
      "#pragma unroll\n"
      "        for (int u = 0; u < {V}; ++u) {{\n"
      "          {store}\n"
      "        }}\n"
      "      }}\n"
      "    }}\n"
      "    __syncthreads();\n"
      "  }}\n",
      fmt::arg("P", t.p), fmt::arg("OW", ow), fmt::arg("OH", oh), fmt::arg("C", c),
      fmt::arg("V", t.v),
      fmt::arg("store", f.store(0, "o + u",
                                fmt::format("({})(acc[q][u]{})", cuda::compute_type(dt), bias))));
  LaunchShape launch;
  launch.block = {t.threads(), 1, 1};
  RETURN_IF_ERROR(batch_grid(f, batch, per_image, t.blocks, 1, launch));
  return finish_anchor_kernel(f, "dwconv_nhwc_tiled", helpers, b, launch);
}

}  // namespace graphc::emit
