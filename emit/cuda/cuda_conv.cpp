// Conv and ConvTranspose kernels, mirroring reference/kernels_conv.cpp (any
// spatial rank, groups, strides, dilations, pads, bias; float types, and int32
// for the quantized convs).
//
//  - Conv as an implicit GEMM on the tiled kernel (cuda_gemm_tile.h), one
//    batch per group: A = W viewed as [M/group] x [C/group * kernel], B the
//    input patches gathered on the fly (im2col without a buffer), columns
//    = image x output position so small images still fill the tiles.
//  - ConvTranspose the same way, with B gathering the input element that
//    lands on each output position through each kernel tap
//    (out = in * stride - pad + tap * dilation, so in = (out + pad - tap *
//    dilation) / stride where that divides exactly and lies in range).
//  - 2-D depthwise and small-group Conv (NCHW and channels-last) as the
//    direct kernels of cuda_conv_direct.cpp; other depthwise convs (1-D,
//    3-D, planes too small for its tiles) as a direct kernel here: one thread
//    per output element looping over its window; a GEMM with K = kernel size
//    would waste the tiles.
// The output goes through the frame's store: bias, BatchNorm-folded scale,
// activation and residual add of a fused conv group run in this kernel.
#include <algorithm>

#include <fmt/format.h>

#include "emit/cuda/batch_range.h"
#include "emit/cuda/cuda_contraction.h"
#include "emit/cuda/cuda_conv_direct.h"
#include "emit/cuda/cuda_gemm_tile.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_window.h"
#include "ir/conv_geometry.h"

namespace graphc::emit {

namespace {

using ir::ConvGeometry;
using ir::DType;

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// Statements declaring `const int <name><d>` for every dim: the row-major
// coordinates of the int expression `index` over `dims`.
std::string coords_of(const std::string& index, const std::vector<int64_t>& dims,
                      const std::string& name) {
  std::string s = fmt::format("      int r_{} = {};\n", name, index);
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0) {
      s += fmt::format("      const int {}0 = r_{};\n", name, name);
    } else {
      s += fmt::format("      const int {}{} = r_{} % {};\n", name, d, name, dims[d]);
      s += fmt::format("      r_{} /= {};\n", name, dims[d]);
    }
  }
  return s;
}

// The bias term of the epilogue for output channel expression `oc`.
std::string bias_term(const AnchorFrame& f, const std::string& oc) {
  return f.has_input(2) ? fmt::format(" + (acc_t)({})", f.load(2, oc)) : "";
}

Expected<GeneratedKernel> implicit_gemm(const AnchorFrame& f, const ConvGeometry& g, int min_sm) {
  const bool tr = g.transpose;
  const size_t S = g.spatial_rank();
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  const int64_t ks = ir::shape_numel(g.kernel);
  const int64_t in_plane = ir::shape_numel(g.in_spatial);
  const int64_t out_plane = ir::shape_numel(g.out_spatial);
  const auto in_stride = row_major_strides(g.in_spatial);
  const DType dt = f.input(0).dtype;

  TiledGemmSpec s;
  s.min_sm = min_sm;
  s.dtype = dt;
  s.batches = g.group;  // b = group
  s.m = mg;
  s.n = g.batch * out_plane;
  s.k = cg * ks;
  // A: Conv W is [M, C/group, kernel] (row = b*mg + gm, column gk);
  // ConvTranspose W is [C, M/group, kernel] (gk = c * ks + tap).
  if (!tr) {
    s.a_body =
        fmt::format("      return {};",
                    f.load(1, fmt::format("((long long)b * {} + gm) * {}LL + gk", mg, cg * ks)));
  } else {
    s.a_body = fmt::format(
        "      const int c = gk / {ks}, t = gk % {ks};\n"
        "      return {load};",
        fmt::arg("ks", ks),
        fmt::arg("load", f.load(1, fmt::format("(((long long)b * {} + c) * {} + gm) * {}LL + t", cg,
                                               mg, ks))));
  }
  s.a_contiguous_k = true;
  // B: the input element feeding (tap of gk, output position of gn).
  std::string bb;
  bb += fmt::format("      const int img = gn / {op}, j = gn % {op};\n", fmt::arg("op", out_plane));
  bb += fmt::format("      const int c = gk / {ks}, t = gk % {ks};\n", fmt::arg("ks", ks));
  bb += coords_of("j", g.out_spatial, "o");
  bb += coords_of("t", g.kernel, "q");
  std::string off;
  for (size_t d = 0; d < S; ++d) {
    if (!tr) {
      bb += fmt::format("      const int i{d} = o{d} * {s} - {p} + q{d} * {dl};\n",
                        fmt::arg("d", d), fmt::arg("s", g.strides[d]),
                        fmt::arg("p", g.pads_begin[d]), fmt::arg("dl", g.dilations[d]));
    } else {
      bb += fmt::format(
          "      const int n{d} = o{d} + {p} - q{d} * {dl};\n"
          "      if (n{d} < 0 || n{d} % {s} != 0) return (acc_t)0;\n"
          "      const int i{d} = n{d} / {s};\n",
          fmt::arg("d", d), fmt::arg("s", g.strides[d]), fmt::arg("p", g.pads_begin[d]),
          fmt::arg("dl", g.dilations[d]));
    }
    bb += fmt::format("      if (i{d} < 0 || i{d} >= {n}) return (acc_t)0;\n", fmt::arg("d", d),
                      fmt::arg("n", g.in_spatial[d]));
    off += fmt::format(" + (long long)i{} * {}", d, in_stride[d]);
  }
  bb += fmt::format("      return {};",
                    f.load(0, fmt::format("((long long)img * {} + (long long)b * {} + c) * {}LL{}",
                                          g.in_channels, cg, in_plane, off)));
  s.b_body = bb;
  s.b_contiguous_n = true;
  s.epilogue = fmt::format(
      "          const int img = gn / {op}, jo = gn % {op};\n"
      "          const int oc = (int)b * {mg} + gm;\n"
      "          {store}",
      fmt::arg("op", out_plane), fmt::arg("mg", mg),
      fmt::arg(
          "store",
          f.store(0,
                  fmt::format("((long long)img * {} + oc) * {}LL + jo", g.out_channels, out_plane),
                  fmt::format("({})(v{})", cuda::compute_type(dt), bias_term(f, "oc")))));
  return emit_tiled_gemm(f, tr ? "convt" : "conv", s);
}

// Depthwise (C/group == 1): one thread per output element.
Expected<GeneratedKernel> direct_conv(const AnchorFrame& f, const ConvGeometry& g,
                                      const std::optional<ir::DimExpr>& batch) {
  const size_t S = g.spatial_rank();
  const int64_t mg = g.out_channels / g.group;
  const int64_t ks = ir::shape_numel(g.kernel);
  const int64_t in_plane = ir::shape_numel(g.in_spatial);
  const int64_t total = ir::shape_numel(f.output(0).shape);
  const auto in_stride = row_major_strides(g.in_spatial);
  const auto k_stride = row_major_strides(g.kernel);
  const DType dt = f.input(0).dtype;
  std::string b = fmt::format(
      "  typedef {acc} acc_t;\n"
      "  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < {total};\n"
      "       idx += (long long)gridDim.x * blockDim.x) {{\n"
      "    long long r = idx;\n",
      fmt::arg("acc", gemm_acc_type(dt)),
      fmt::arg("total", batch ? batch_count_code(f, batch, total / std::max<int64_t>(g.batch, 1))
                              : fmt::format("{}LL", total)));
  for (size_t d = S; d-- > 0;)
    b += fmt::format("    const int o{d} = (int)(r % {n});\n    r /= {n};\n", fmt::arg("d", d),
                     fmt::arg("n", g.out_spatial[d]));
  b += fmt::format(
      "    const int oc = (int)(r % {m});\n"
      "    const long long img = r / {m};\n"
      "    const long long xbase = (img * {c} + oc / {mg}) * {plane}LL;\n"
      "    const long long wbase = (long long)oc * {ks};\n"
      "    acc_t acc = (acc_t)0;\n",
      fmt::arg("m", g.out_channels), fmt::arg("c", g.in_channels), fmt::arg("mg", mg),
      fmt::arg("plane", in_plane), fmt::arg("ks", ks));
  std::string indent = "    ";
  std::string xoff, woff;
  for (size_t d = 0; d < S; ++d) {
    b += window_loop_open(indent, d, g.kernel[d], g.strides[d], g.pads_begin[d], g.dilations[d],
                          g.in_spatial[d]);
    xoff += fmt::format(" + (long long)i{} * {}", d, in_stride[d]);
    woff += fmt::format(" + q{} * {}", d, k_stride[d]);
    indent += "  ";
  }
  b += fmt::format("{}acc += (acc_t)({}) * (acc_t)({});\n", indent, f.load(1, "wbase" + woff),
                   f.load(0, "xbase" + xoff));
  for (size_t d = S; d-- > 0;) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  b += fmt::format(
      "    {}\n  }}\n",
      f.store(0, "idx", fmt::format("({})(acc{})", cuda::compute_type(dt), bias_term(f, "oc"))));
  LaunchShape launch;
  launch.block = {256, 1, 1};
  RETURN_IF_ERROR(
      batch_grid(f, batch, total / std::max<int64_t>(g.batch, 1), total, 256, launch));
  return finish_anchor_kernel(f, "dwconv", "", b, launch);
}

}  // namespace

Expected<GeneratedKernel> generate_conv_kernel(const AnchorFrame& f, int min_sm) {
  const ir::Node& n = *f.anchor;
  const bool tr = n.op == ir::OpKind::ConvTranspose;
  const char* op = tr ? "ConvTranspose" : "Conv";
  if (!f.has_input(0) || !f.has_input(1) || !f.has_output(0))
    return invalid_model("{} '{}' needs inputs X, W and output Y", op, n.name);
  const DType dt = f.input(0).dtype;
  // int32: the exact integer conv the quantized rewrites make (ConvInteger,
  // QLinearConv), on the implicit GEMM's wrapping integer accumulator.
  const bool int32 = dt == DType::kInt32 && !tr;
  if ((!ir::is_float(dt) && !int32) || f.input(1).dtype != dt || f.output(0).dtype != dt ||
      (f.has_input(2) && f.input(2).dtype != dt))
    return unsupported("{} '{}': element types {}/{} (float types or int32, all equal, only)", op, n.name,
                       ir::dtype_name(dt), ir::dtype_name(f.input(1).dtype));
  const ir::Shape bias_shape = f.has_input(2) ? f.input(2).shape : ir::Shape{};
  ASSIGN_OR_RETURN(ConvGeometry g,
                   ir::resolve_conv_geometry(n.attrs, f.input(0).shape, f.input(1).shape,
                                             f.has_input(2) ? &bias_shape : nullptr, tr));
  if (g.output_shape() != f.output(0).shape)
    return invalid_model("{} '{}': output shape {} differs from the geometry's {}", op, n.name,
                         ir::shape_to_string(f.output(0).shape),
                         ir::shape_to_string(g.output_shape()));
  // Depthwise and small-group convs: the direct kernel, the only generated
  // one that also runs channels-last (the channels-last pass converts only
  // convs that it or cuDNN takes).
  // Over a shape range the direct kernels take the batch at run time
  // (batch_range.h); the implicit GEMM does not yet.
  ASSIGN_OR_RETURN(const std::optional<ir::DimExpr> batch,
                   run_time_batch(f, {0}, "generated convolutions"));
  if (!tr && !int32) {
    ASSIGN_OR_RETURN(std::optional<GeneratedKernel> direct, direct_conv_kernel(f, g, batch));
    if (direct) return std::move(*direct);
  }
  if (g.channels_last)
    return unsupported(
        "{} '{}' is channels-last: it runs only through cuDNN or the direct kernel "
        "(--conv generated keeps every other conv channels-first)",
        op, n.name);
  constexpr int64_t kMaxInt = 2147483647;
  if (g.spatial_rank() == 0) return unsupported("{} '{}' without spatial dims", op, n.name);
  if (ir::shape_numel(g.in_spatial) >= kMaxInt || ir::shape_numel(g.out_spatial) >= kMaxInt ||
      g.batch * ir::shape_numel(g.out_spatial) >= kMaxInt ||
      !window_fits_int32(g.in_spatial, g.out_spatial, g.kernel, g.strides, g.dilations,
                         g.pads_begin, g.pads_end) ||
      (g.in_channels / g.group) * ir::shape_numel(g.kernel) >= kMaxInt)
    return unsupported("{} '{}': spatial extents exceed the generated kernel's 32-bit indices", op,
                       n.name);
  if (!tr && g.group > 1 && g.in_channels == g.group) return direct_conv(f, g, batch);
  if (batch)
    return unsupported(
        "{} '{}': the generated implicit-GEMM convolution does not take run-time sizes yet, and "
        "'{}' varies over the shape range (cuDNN takes convolutions over a range: --conv auto)",
        op, n.name, f.input(0).name);
  return implicit_gemm(f, g, min_sm);
}

}  // namespace graphc::emit
