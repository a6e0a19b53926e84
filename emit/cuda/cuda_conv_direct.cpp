// The direct 2-D convolution for depthwise and small-group convs (which convs:
// target/cuda/direct_conv_rules.h). A GEMM with K = taps x channels per group
// would waste its tiles; these kernels are memory-bound loops instead:
//
//  - channels-last (NHWC) pure depthwise convs: the tiled kernel
//    (cuda_conv_dw_tiled.cpp) where target/cuda/depthwise_tile_rules.h
//    takes the conv; the untiled kernel below otherwise.
//  - channels-last (NHWC), untiled: each thread computes V neighbouring output
//    channels (V = 4/2/1, read as one vector of 4-16 bytes for a depthwise
//    conv whose input is a plain kernel parameter) at P (4/2/1) neighbouring
//    output pixels along W, fewer of each when a small layer would
//    otherwise leave the GPU idle. Per kernel row it loads the input row segment those P
//    outputs need once into registers (P·stride + taps·dilation values
//    instead of P·taps) and reuses each weight over the P pixels. Threads
//    run channel-vector fastest, so a warp reads contiguous channels.
//  - channels-first (NCHW): one block per (image, output channel, spatial
//    tile); the tile's input halo and the channel's weights are staged in
//    shared memory (per input channel of the group), each thread computes R
//    output rows of one column from there.
// Both accumulate in fp32 (fp64 for float64) and end in the frame's store,
// so a fused bias, activation and residual add run in the same kernel.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "emit/cuda/cuda_conv_direct.h"

#include "emit/cuda/batch_range.h"
#include "emit/cuda/cuda_conv_dw_tiled.h"
#include "emit/cuda/cuda_gemm_tile.h"  // gemm_acc_type
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_window.h"
#include "target/cuda/direct_conv_rules.h"

namespace graphc::emit {

namespace {

using ir::ConvGeometry;
using ir::DType;

// The sizes of a 2-D conv, named as the kernels use them.
struct Dims {
  int64_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, cg, mg;
};

Dims dims_of(const ConvGeometry& g) {
  return {g.batch,          g.in_channels,   g.in_spatial[0],  g.in_spatial[1], g.out_channels,
          g.out_spatial[0], g.out_spatial[1], g.kernel[0],     g.kernel[1],     g.strides[0],
          g.strides[1],     g.dilations[0],  g.dilations[1],  g.pads_begin[0], g.pads_begin[1],
          g.in_channels / g.group, g.out_channels / g.group};
}

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

std::string bias_plus(const AnchorFrame& f, const std::string& oc) {
  return f.has_input(2) ? fmt::format(" + (acc_t)({})", f.load(2, oc)) : "";
}

// Flat weight index of (output channel, input channel in group, tap row,
// tap column): NCHW weights are M x C/g x KH x KW, channels-last ones
// M x KH x KW x C/g.
std::string weight_index(const Dims& d, bool nhwc, const std::string& oc, const std::string& ci,
                         const std::string& kh, const std::string& kw) {
  if (nhwc)
    return fmt::format("(((long long)({oc}) * {KH} + {kh}) * {KW} + {kw}) * {cg} + {ci}",
                       fmt::arg("oc", oc), fmt::arg("KH", d.kh), fmt::arg("kh", kh),
                       fmt::arg("KW", d.kw), fmt::arg("kw", kw), fmt::arg("cg", d.cg),
                       fmt::arg("ci", ci));
  return fmt::format("(((long long)({oc}) * {cg} + {ci}) * {KH} + {kh}) * {KW} + {kw}",
                     fmt::arg("oc", oc), fmt::arg("cg", d.cg), fmt::arg("ci", ci),
                     fmt::arg("KH", d.kh), fmt::arg("kh", kh), fmt::arg("KW", d.kw),
                     fmt::arg("kw", kw));
}

Expected<GeneratedKernel> nhwc_kernel(const AnchorFrame& f, const Dims& d,
                                      const std::optional<ir::DimExpr>& batch) {
  const DType dt = f.input(0).dtype;
  const std::string compute = cuda::compute_type(dt);
  // V output channels per thread, P output pixels along W: 4 x 4 for reuse,
  // fewer when that leaves too few threads to keep the memory system busy
  // (batch-1 layers: ConvNeXt's 96 x 56 x 56 would be 147 blocks of 128).
  // Tiny layers (< 8192 outputs, launch-bound whatever the split) keep 4 x 4.
  constexpr int64_t kEnoughThreads = 96 * 1024, kTinyOutputs = 8192;
  int64_t v = d.m % 4 == 0 ? 4 : d.m % 2 == 0 ? 2 : 1;
  int64_t p = std::min<int64_t>(4, d.ow);
  auto threads = [&] { return d.n * d.oh * ((d.ow + p - 1) / p) * (d.m / v); };
  if (d.n * d.oh * d.ow * d.m >= kTinyOutputs) {
    while (threads() < kEnoughThreads && p > 1) p /= 2;
    while (threads() < kEnoughThreads && v > 2) v /= 2;
  }
  const int64_t tiles_w = (d.ow + p - 1) / p;
  const int64_t mv = d.m / v;
  const int64_t total = threads();
  const int64_t per_image = d.oh * tiles_w * mv;
  ASSIGN_OR_RETURN(const int64_t most_n, most_batch(f, batch, d.n));
  if (most_n * per_image >= (int64_t{1} << 31) - (int64_t{1} << 28))
    return unsupported("Conv '{}': {} threads exceed the direct kernel's 32-bit indices",
                       f.node_name, most_n * per_image);
  const bool pure_depthwise = d.cg == 1 && d.mg == 1;
  const bool vector_loads = pure_depthwise && v > 1 && !f.input_params.empty() &&
                            !f.input_params[0].empty() && dt != DType::kFloat64;
  // The input row segment of P outputs, cached in registers when small.
  const int64_t seg = (p - 1) * d.sw + (d.kw - 1) * d.dw + 1;
  const bool cached = d.kw <= 16 && seg * v <= 64;

  std::string helpers;
  if (vector_loads)
    helpers = fmt::format("struct alignas({}) dw_vec_t {{ {} v[{}]; }};\n",
                          ir::dtype_size(dt) * v, cuda::storage_type(dt), v);
  // Statements loading the V input channels of output channels oc0.. at
  // input pixel offset `pix` (a flat NHWC pixel index) into `dst[u]`.
  auto load_channels = [&](const std::string& dst, const std::string& pix) {
    const std::string scalar = fmt::format(
        "{{\n#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) {dst}[u] = (acc_t){ld}; }}",
        fmt::arg("V", v), fmt::arg("dst", dst),
        fmt::arg("ld", f.load(0, fmt::format("({}) * {}LL + (long long)((oc0 + u) / {}) * {} + ci",
                                             pix, d.c, d.mg, d.cg))));
    if (!vector_loads) return scalar;
    // Offsets are multiples of V elements; the base pointer of a view may
    // not be aligned to V elements, which the (uniform) branch checks.
    return fmt::format(
        "if (x_aligned) {{ const dw_vec_t xvec = *reinterpret_cast<const dw_vec_t*>({p} + ({pix}) * "
        "{C} + oc0);\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) {dst}[u] = (acc_t){ld}; }}\n"
        "          else {scalar}",
        fmt::arg("p", f.input_params[0]), fmt::arg("pix", pix), fmt::arg("C", d.c),
        fmt::arg("V", v), fmt::arg("dst", dst), fmt::arg("ld", cuda::load_expr(dt, "xvec.v[u]")),
        fmt::arg("scalar", scalar));
  };
  const std::string wload =
      fmt::format("#pragma unroll\n          for (int u = 0; u < {V}; ++u) wv[u] = (acc_t)({w});\n",
                  fmt::arg("V", v),
                  fmt::arg("w", f.load(1, weight_index(d, true, "oc0 + u", "ci", "kh", "kw"))));

  std::string b;
  if (vector_loads)
    b = fmt::format("  const bool x_aligned = (unsigned long long)({}) % {} == 0;\n",
                    f.input_params[0], ir::dtype_size(dt) * v);
  b += fmt::format(
      "  typedef {acc} acc_t;\n"
      "  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < {total}; t += gridDim.x * "
      "blockDim.x) {{\n"
      "    const int oc0 = (t % {MV}) * {V};\n"
      "    int r = t / {MV};\n"
      "    const int ow0 = (r % {TW}) * {P};\n"
      "    r /= {TW};\n"
      "    const int oh = r % {OH};\n"
      "    const int n = r / {OH};\n"
      "    acc_t acc[{P}][{V}];\n"
      "#pragma unroll\n"
      "    for (int q = 0; q < {P}; ++q)\n"
      "#pragma unroll\n"
      "      for (int u = 0; u < {V}; ++u) acc[q][u] = (acc_t)0;\n"
      "    {ci_loop} {{\n"
      "      {kh_unroll}\n"
      "      for (int kh = 0; kh < {KH}; ++kh) {{\n"
      "        const int ih = oh * {sh} - {ph} + kh * {dh};\n"
      "        if (ih < 0 || ih >= {H}) continue;\n"
      "        const long long row = ((long long)n * {H} + ih) * {W};\n",
      fmt::arg("acc", gemm_acc_type(dt)),
      fmt::arg("total", batch ? batch_count_code(f, batch, per_image) : std::to_string(total)),
      fmt::arg("MV", mv),
      fmt::arg("V", v), fmt::arg("TW", tiles_w), fmt::arg("P", p), fmt::arg("OH", d.oh),
      fmt::arg("ci_loop", d.cg == 1 ? "const int ci = 0;" : fmt::format("for (int ci = 0; ci < {}; ++ci)", d.cg)),
      fmt::arg("kh_unroll", window_unroll(d.kh)), fmt::arg("KH", d.kh), fmt::arg("sh", d.sh),
      fmt::arg("ph", d.ph), fmt::arg("dh", d.dh), fmt::arg("H", d.h), fmt::arg("W", d.w));
  if (cached) {
    b += fmt::format(
        "        acc_t xr[{S}][{V}];\n"
        "#pragma unroll\n"
        "        for (int j = 0; j < {S}; ++j) {{\n"
        "          const int iw = ow0 * {sw} - {pw} + j;\n"
        "          if (iw >= 0 && iw < {W}) {{ {load} }}\n"
        "          else {{\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) xr[j][u] = (acc_t)0; }}\n"
        "        }}\n"
        "#pragma unroll\n"
        "        for (int kw = 0; kw < {KW}; ++kw) {{\n"
        "          acc_t wv[{V}];\n"
        "{wload}"
        "#pragma unroll\n"
        "          for (int q = 0; q < {P}; ++q)\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) acc[q][u] += xr[q * {sw} + kw * {dw}][u] * wv[u];\n"
        "        }}\n",
        fmt::arg("S", seg), fmt::arg("V", v), fmt::arg("sw", d.sw), fmt::arg("pw", d.pw),
        fmt::arg("W", d.w), fmt::arg("load", load_channels("xr[j]", "row + iw")),
        fmt::arg("KW", d.kw), fmt::arg("wload", wload), fmt::arg("P", p), fmt::arg("dw", d.dw));
  } else {
    b += fmt::format(
        "        {kw_unroll}\n"
        "        for (int kw = 0; kw < {KW}; ++kw) {{\n"
        "          acc_t wv[{V}];\n"
        "{wload}"
        "#pragma unroll\n"
        "          for (int q = 0; q < {P}; ++q) {{\n"
        "            const int iw = (ow0 + q) * {sw} - {pw} + kw * {dw};\n"
        "            if (iw < 0 || iw >= {W}) continue;\n"
        "            acc_t xv[{V}];\n"
        "            {load}\n"
        "#pragma unroll\n"
        "            for (int u = 0; u < {V}; ++u) acc[q][u] += xv[u] * wv[u];\n"
        "          }}\n"
        "        }}\n",
        fmt::arg("kw_unroll", window_unroll(d.kw)), fmt::arg("KW", d.kw), fmt::arg("V", v),
        fmt::arg("wload", wload), fmt::arg("P", p), fmt::arg("sw", d.sw), fmt::arg("pw", d.pw),
        fmt::arg("dw", d.dw), fmt::arg("W", d.w), fmt::arg("load", load_channels("xv", "row + iw")));
  }
  b += fmt::format(
      "      }}\n"
      "    }}\n"
      "#pragma unroll\n"
      "    for (int q = 0; q < {P}; ++q) {{\n"
      "      if (ow0 + q >= {OW}) break;\n"
      "      const long long o = (((long long)n * {OH} + oh) * {OW} + ow0 + q) * {M} + oc0;\n"
      "#pragma unroll\n"
      "      for (int u = 0; u < {V}; ++u) {{\n"
      "        const int oc = oc0 + u;\n"
      "        {store}\n"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("P", p), fmt::arg("OW", d.ow), fmt::arg("OH", d.oh), fmt::arg("M", d.m),
      fmt::arg("V", v),
      fmt::arg("store", f.store(0, "o + u",
                                fmt::format("({})(acc[q][u]{})", compute, bias_plus(f, "oc")))));
  LaunchShape launch;
  launch.block = {128, 1, 1};
  RETURN_IF_ERROR(batch_grid(f, batch, per_image, total, 128, launch));
  return finish_anchor_kernel(f, "dwconv_nhwc", helpers, b, launch);
}

// The NCHW tile: TW x TY threads, R output rows each; nullopt when the
// staged halo would not fit in 40 KiB of shared memory or the plane is so
// small that a block would be mostly idle.
struct NchwTile {
  int64_t tw, ty, r, sh_rows, sh_cols;
};
std::optional<NchwTile> nchw_tile(const Dims& d, int64_t acc_bytes) {
  if (d.oh * d.ow < 32) return std::nullopt;
  NchwTile t;
  t.tw = std::min<int64_t>(32, pow2_at_least(d.ow));
  t.r = d.oh >= 16 ? 2 : 1;
  t.ty = std::max<int64_t>(1, std::min<int64_t>(256 / t.tw, pow2_at_least((d.oh + t.r - 1) / t.r)));
  t.sh_rows = (t.ty * t.r - 1) * d.sh + (d.kh - 1) * d.dh + 1;
  t.sh_cols = (t.tw - 1) * d.sw + (d.kw - 1) * d.dw + 1;
  if ((t.sh_rows * t.sh_cols + d.kh * d.kw) * acc_bytes > 40 * 1024) return std::nullopt;
  return t;
}

Expected<GeneratedKernel> nchw_kernel(const AnchorFrame& f, const Dims& d, const NchwTile& t,
                                      const std::optional<ir::DimExpr>& batch) {
  const DType dt = f.input(0).dtype;
  const int64_t threads = t.tw * t.ty;
  const int64_t th = t.ty * t.r;
  const int64_t tiles_w = (d.ow + t.tw - 1) / t.tw, tiles_h = (d.oh + th - 1) / th;
  const int64_t per_image = d.m * tiles_h * tiles_w;
  const int64_t blocks = d.n * per_image;
  ASSIGN_OR_RETURN(const int64_t most_n, most_batch(f, batch, d.n));
  if (most_n * per_image >= (int64_t{1} << 31) - (int64_t{1} << 21))
    return unsupported("Conv '{}': {} blocks exceed the direct kernel's 32-bit indices",
                       f.node_name, most_n * per_image);
  const int64_t taps = d.kh * d.kw;
  std::string b = fmt::format(
      "  typedef {acc} acc_t;\n"
      "  __shared__ acc_t s_in[{SR} * {SC}];\n"
      "  __shared__ acc_t s_w[{KS}];\n"
      "  const int tx = threadIdx.x % {TW}, ty = threadIdx.x / {TW};\n"
      "  for (int blk = blockIdx.x; blk < {blocks}; blk += gridDim.x) {{\n"
      "    int r = blk;\n"
      "    const int tw0 = (r % {TWS}) * {TW};\n"
      "    r /= {TWS};\n"
      "    const int th0 = (r % {THS}) * {TH};\n"
      "    r /= {THS};\n"
      "    const int oc = r % {M};\n"
      "    const int n = r / {M};\n"
      "    const int ih0 = th0 * {sh} - {ph}, iw0 = tw0 * {sw} - {pw};\n"
      "    acc_t acc[{R}];\n"
      "#pragma unroll\n"
      "    for (int q = 0; q < {R}; ++q) acc[q] = (acc_t)0;\n"
      "    for (int ci = 0; ci < {cg}; ++ci) {{\n"
      "      const long long plane = ((long long)n * {C} + (oc / {mg}) * {cg} + ci) * {HW}LL;\n"
      "      for (int e = threadIdx.x; e < {SR} * {SC}; e += {T}) {{\n"
      "        const int ih = ih0 + e / {SC}, iw = iw0 + e % {SC};\n"
      "        s_in[e] = (ih >= 0 && ih < {H} && iw >= 0 && iw < {W})\n"
      "                      ? (acc_t)({xload}) : (acc_t)0;\n"
      "      }}\n"
      "      for (int e = threadIdx.x; e < {KS}; e += {T}) s_w[e] = (acc_t)({wload});\n"
      "      __syncthreads();\n"
      "#pragma unroll\n"
      "      for (int q = 0; q < {R}; ++q) {{\n"
      "        const acc_t* src = s_in + ((ty + q * {TY}) * {sh}) * {SC} + tx * {sw};\n"
      "        {kh_unroll}\n"
      "        for (int kh = 0; kh < {KH}; ++kh) {{\n"
      "          {kw_unroll}\n"
      "          for (int kw = 0; kw < {KW}; ++kw)\n"
      "            acc[q] += src[kh * {dh} * {SC} + kw * {dw}] * s_w[kh * {KW} + kw];\n"
      "        }}\n"
      "      }}\n"
      "      __syncthreads();\n"
      "    }}\n"
      "    const int ow = tw0 + tx;\n"
      "#pragma unroll\n"
      "    for (int q = 0; q < {R}; ++q) {{\n"
      "      const int oh = th0 + ty + q * {TY};\n"
      "      if (oh < {OH} && ow < {OW}) {{\n"
      "        {store}\n"
      "      }}\n"
      "    }}\n"
      "  }}\n",
      fmt::arg("acc", gemm_acc_type(dt)), fmt::arg("SR", t.sh_rows), fmt::arg("SC", t.sh_cols),
      fmt::arg("KS", taps), fmt::arg("TW", t.tw), fmt::arg("TY", t.ty),
      fmt::arg("blocks", batch ? batch_count_code(f, batch, per_image) : std::to_string(blocks)),
      fmt::arg("TWS", tiles_w), fmt::arg("THS", tiles_h), fmt::arg("TH", th), fmt::arg("M", d.m),
      fmt::arg("sh", d.sh), fmt::arg("ph", d.ph), fmt::arg("sw", d.sw), fmt::arg("pw", d.pw),
      fmt::arg("R", t.r), fmt::arg("cg", d.cg), fmt::arg("C", d.c), fmt::arg("mg", d.mg),
      fmt::arg("HW", d.h * d.w), fmt::arg("T", threads), fmt::arg("H", d.h), fmt::arg("W", d.w),
      fmt::arg("xload", f.load(0, fmt::format("plane + (long long)ih * {} + iw", d.w))),
      fmt::arg("wload", f.load(1, fmt::format("((long long)oc * {} + ci) * {} + e", d.cg, taps))),
      fmt::arg("kh_unroll", window_unroll(d.kh)), fmt::arg("kw_unroll", window_unroll(d.kw)),
      fmt::arg("KH", d.kh), fmt::arg("KW", d.kw), fmt::arg("dh", d.dh), fmt::arg("dw", d.dw),
      fmt::arg("OH", d.oh), fmt::arg("OW", d.ow),
      fmt::arg("store",
               f.store(0, fmt::format("((long long)n * {} + oc) * {}LL + (long long)oh * {} + ow",
                                      d.m, d.oh * d.ow, d.ow),
                       fmt::format("({})(acc[q]{})", cuda::compute_type(dt), bias_plus(f, "oc")))));
  LaunchShape launch;
  launch.block = {threads, 1, 1};
  RETURN_IF_ERROR(batch_grid(f, batch, per_image, blocks, 1, launch));
  return finish_anchor_kernel(f, "dwconv_tile", "", b, launch);
}

}  // namespace

Expected<std::optional<GeneratedKernel>> direct_conv_kernel(
    const AnchorFrame& f, const ConvGeometry& g, const std::optional<ir::DimExpr>& batch) {
  if (!target::direct_conv_takes(g)) {
    if (g.channels_last)
      return unsupported("Conv '{}' is channels-last, which only cuDNN and the direct kernel run: {}",
                         f.node_name, target::direct_conv_refusal(g));
    return std::optional<GeneratedKernel>{};
  }
  const Dims d = dims_of(g);
  if (g.channels_last) {
    const auto choice = target::choose_depthwise_tile(g, f.input(0).dtype, f.anchor->attrs);
    if (choice.tile) {
      ASSIGN_OR_RETURN(GeneratedKernel k, tiled_depthwise_kernel(f, g, *choice.tile, batch));
      return std::optional<GeneratedKernel>{std::move(k)};
    }
    ASSIGN_OR_RETURN(GeneratedKernel k, nhwc_kernel(f, d, batch));
    return std::optional<GeneratedKernel>{std::move(k)};
  }
  const int64_t acc_bytes = f.input(0).dtype == DType::kFloat64 ? 8 : 4;
  const auto tile = nchw_tile(d, acc_bytes);
  if (!tile) return std::optional<GeneratedKernel>{};
  ASSIGN_OR_RETURN(GeneratedKernel k, nchw_kernel(f, d, *tile, batch));
  return std::optional<GeneratedKernel>{std::move(k)};
}

}  // namespace graphc::emit
