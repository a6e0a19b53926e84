// Pooling kernels, mirroring reference/kernels_pool.cpp and the geometry of
// ir/pool_resize_params.h (kernel_shape, strides, pads / auto_pad,
// dilations, ceil_mode; any number of spatial dims).
//
//  - MaxPool / AveragePool: one thread per output element, the window's
//    loops unrolled with every extent baked in. Taps outside the input are
//    skipped (MaxPool's -inf padding). MaxPool keeps the first maximum in
//    row-major window order and compares with `>`, so a NaN in the first
//    in-range tap wins and later NaNs never do, as the reference's scan;
//    Indices are flat over N x C x spatial (storage_order 1: the spatial
//    part column-major). AveragePool divides by the in-range tap count, or
//    with count_include_pad by the taps inside the padded input.
//  - GlobalAveragePool / GlobalMaxPool: one block per (n, c) plane, a strided
//    per-thread pass then warp shuffles and one shared-memory step. Every
//    thread's max starts from the plane's first element, which reproduces
//    the reference's scan (a leading NaN wins, later NaNs are ignored).
// Loads and stores go through the frame, so a fused prologue (scale, mask)
// and epilogue (activation) run here.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/batch_range.h"
#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_window.h"
#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"
#include "ir/pool_resize_params.h"

namespace graphc::emit {

namespace {

using ir::DType;

constexpr int64_t kThreads = 256;

Expected<GeneratedKernel> window_pool(const AnchorFrame& f,
                                      const std::optional<ir::DimExpr>& batch) {
  const ir::Node& n = *f.anchor;
  const bool is_max = n.op == ir::OpKind::MaxPool;
  const char* op = is_max ? "MaxPool" : "AveragePool";
  const ir::Value& x = f.input(0);
  const DType dt = x.dtype;
  if (x.shape.size() < 3)
    return invalid_model("{} '{}': X must be N x C x D1 ... (rank >= 3), got {}", op, n.name,
                         ir::shape_to_string(x.shape));
  if (is_max ? (dt == DType::kBool || cuda::is_narrow(dt) || cuda::compute_type(dt).empty())
             : !ir::is_float(dt))
    return unsupported("{} '{}': element type {} is not supported", op, n.name, ir::dtype_name(dt));
  const bool include_pad = !is_max && n.attrs.get_int("count_include_pad", 0) != 0;
  ASSIGN_OR_RETURN(ir::PoolParams p, ir::pool_params(op, n.attrs, x.shape, !include_pad));
  const bool want_values = f.has_output(0);
  const bool want_indices = is_max && f.has_output(1);
  if (want_values && f.output(0).shape != p.out_shape)
    return invalid_model("{} '{}': output shape {} differs from the geometry's {}", op, n.name,
                         ir::shape_to_string(f.output(0).shape), ir::shape_to_string(p.out_shape));
  if (want_indices && f.output(1).dtype != DType::kInt64)
    return invalid_model("MaxPool '{}': Indices must be int64", n.name);
  const auto S = static_cast<size_t>(p.spatial_rank);
  const std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end());
  if (!window_fits_int32(in, p.out_spatial, p.kernel, p.strides, p.dilations, p.pad_begin,
                         p.pad_end) ||
      ir::shape_numel(p.kernel) > (int64_t{1} << 30))
    return unsupported("{} '{}': window geometry exceeds the generated kernel's 32-bit indices", op,
                       n.name);
  std::vector<int64_t> row(S, 1), col(S, 1);
  for (size_t d = S; d-- > 1;) row[d - 1] = row[d] * in[d];
  for (size_t d = 1; d < S; ++d) col[d] = col[d - 1] * in[d - 1];
  const int64_t in_plane = ir::shape_numel(in);
  const int64_t total = ir::shape_numel(p.out_shape);
  const int64_t per_image = ir::shape_numel(p.out_spatial) * x.shape[1];
  const std::string ct = cuda::compute_type(dt);
  const std::string acc = dt == DType::kFloat64 ? "double" : "float";

  std::string b = fmt::format(
      "  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < {total};\n"
      "       idx += (long long)gridDim.x * blockDim.x) {{\n"
      "    long long r = idx;\n",
      fmt::arg("total", batch ? batch_count_code(f, batch, per_image) : fmt::format("{}LL", total)));
  for (size_t d = S; d-- > 0;)
    b += fmt::format("    const int o{d} = (int)(r % {n});\n    r /= {n};\n", fmt::arg("d", d),
                     fmt::arg("n", p.out_spatial[d]));
  b += fmt::format("    const long long base = r * {}LL;\n", in_plane);
  if (is_max)
    b += fmt::format("    bool have = false;\n    {} best = ({})0;\n    long long arg = 0;\n", ct,
                     ct);
  else
    b += fmt::format("    {} sum = ({})0;\n    int count = 0;\n", acc, acc);
  std::string indent = "    ", off, flat;
  for (size_t d = 0; d < S; ++d) {
    b += window_loop_open(indent, d, p.kernel[d], p.strides[d], p.pad_begin[d], p.dilations[d],
                          in[d]);
    off += fmt::format(" + (long long)i{} * {}", d, row[d]);
    flat += fmt::format(" + (long long)i{} * {}", d, p.storage_order == 0 ? row[d] : col[d]);
    indent += "  ";
  }
  if (is_max)
    b += fmt::format(
        "{ind}const {ct} v = {load};\n"
        "{ind}if (!have || v > best) {{ have = true; best = v; arg = 0{flat}; }}\n",
        fmt::arg("ind", indent), fmt::arg("ct", ct), fmt::arg("load", f.load(0, "base" + off)),
        fmt::arg("flat", flat));
  else
    b += fmt::format("{}sum += ({})({});\n{}++count;\n", indent, acc, f.load(0, "base" + off),
                     indent);
  for (size_t d = S; d-- > 0;) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  if (is_max) {
    if (want_values) b += "    " + f.store(0, "idx", "best") + "\n";
    if (want_indices) b += "    " + f.store(1, "idx", "base + arg") + "\n";
  } else {
    if (include_pad) {
      // Taps inside the padded input [-pad_begin, in + pad_end), per dim.
      b += "    count = 1;\n";
      for (size_t d = 0; d < S; ++d)
        b += fmt::format(
            "    {{ int c = 0;\n"
            "      for (int q = 0; q < {k}; ++q) {{ const int i = o{d} * {s} - {p} + q * {dl};"
            " c += (i >= -{p} && i < {lim}) ? 1 : 0; }}\n"
            "      count *= c; }}\n",
            fmt::arg("d", d), fmt::arg("k", p.kernel[d]), fmt::arg("s", p.strides[d]),
            fmt::arg("p", p.pad_begin[d]), fmt::arg("dl", p.dilations[d]),
            fmt::arg("lim", in[d] + p.pad_end[d]));
    }
    b += "    " + f.store(0, "idx", fmt::format("({})(sum / ({})count)", ct, acc)) + "\n";
  }
  b += "  }\n";
  LaunchShape launch;
  launch.block = {kThreads, 1, 1};
  RETURN_IF_ERROR(batch_grid(f, batch, per_image, total, kThreads, launch));
  return finish_anchor_kernel(f, is_max ? "maxpool" : "avgpool", "", b, launch);
}

Expected<GeneratedKernel> global_pool(const AnchorFrame& f,
                                      const std::optional<ir::DimExpr>& batch) {
  const ir::Node& n = *f.anchor;
  const bool is_max = n.op == ir::OpKind::GlobalMaxPool;
  const char* op = is_max ? "GlobalMaxPool" : "GlobalAveragePool";
  const ir::Value& x = f.input(0);
  const DType dt = x.dtype;
  if (x.shape.size() < 2)
    return invalid_model("{} '{}': X must be N x C x ..., got {}", op, n.name,
                         ir::shape_to_string(x.shape));
  std::string red;
  if (ir::is_float(dt))
    red = dt == DType::kFloat64 ? "double" : "float";
  else if (is_max && ir::is_integer(dt))
    red = ir::is_unsigned_integer(dt) ? "unsigned long long" : "long long";
  else
    return unsupported("{} '{}': element type {} is not supported", op, n.name, ir::dtype_name(dt));
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t plane = ir::shape_numel(x.shape) / std::max<int64_t>(planes, 1);
  if (plane == 0 && planes > 0)
    return invalid_model("{} '{}': spatial dims of X are empty", op, n.name);
  if (ir::shape_numel(f.output(0).shape) != planes)
    return invalid_model("{} '{}': output shape {} is not N x C x 1 ...", op, n.name,
                         ir::shape_to_string(f.output(0).shape));
  int64_t threads = 32;
  while (threads < plane && threads < kThreads) threads *= 2;
  const std::string ct = cuda::compute_type(dt);
  const std::string combine = is_max ? "if (w > acc) acc = w;" : "acc += w;";
  std::string b = fmt::format(
      R"(  typedef {red} red_t;
  constexpr int NT = {nt}, WARPS = NT / 32;
  __shared__ red_t part[WARPS];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (long long plane = blockIdx.x; plane < {planes}; plane += gridDim.x) {{
    const long long base = plane * {plane}LL;
    red_t acc = {init};
    for (long long i = threadIdx.x; i < {plane}LL; i += NT) {{
      const red_t w = (red_t)({load});
      {combine}
    }}
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {{
      const red_t w = __shfl_down_sync(0xffffffffu, acc, o);
      {combine}
    }}
    if (lane == 0) part[warp] = acc;
    __syncthreads();
    if (warp == 0) {{
      acc = lane < WARPS ? part[lane] : {identity};
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {{
        const red_t w = __shfl_down_sync(0xffffffffu, acc, o);
        {combine}
      }}
      if (lane == 0) {{ {store} }}
    }}
    __syncthreads();
  }}
)",
      fmt::arg("red", red), fmt::arg("nt", threads),
      fmt::arg("planes", batch ? batch_count_code(f, batch, x.shape[1]) : fmt::format("{}LL", planes)),
      fmt::arg("plane", plane), fmt::arg("load", f.load(0, "base + i")),
      fmt::arg("combine", combine),
      // The plane's first element seeds every max (see the file comment).
      fmt::arg("init", is_max ? fmt::format("(red_t)({})", f.load(0, "base")) : "(red_t)0"),
      fmt::arg("identity", is_max ? "part[0]" : "(red_t)0"),
      fmt::arg("store", f.store(0, "plane",
                                is_max ? fmt::format("({})acc", ct)
                                       : fmt::format("({})(acc / (red_t){})", ct, plane))));
  LaunchShape launch;
  launch.block = {threads, 1, 1};
  RETURN_IF_ERROR(batch_grid(f, batch, x.shape[1], planes, 1, launch));
  return finish_anchor_kernel(f, is_max ? "gmaxpool" : "gavgpool", "", b, launch);
}

}  // namespace

Expected<GeneratedKernel> generate_pool_kernel(const ir::Graph& graph, ir::NodeId node,
                                               const ir::SymbolicShapes* range) {
  ASSIGN_OR_RETURN(AnchorFrame frame, make_anchor_frame(graph, node));
  const ir::Node& a = *frame.anchor;
  if (!frame.has_input(0))
    return invalid_model("{} '{}' needs input X", ir::op_name(a.op), frame.node_name);
  // Over a shape range the batch may vary (batch_range.h).
  KernelSizes sizes(range);
  ir::SymbolicShapes body;
  if (range) RETURN_IF_ERROR(use_run_time_sizes(graph, node, *range, true, sizes, body, frame));
  ASSIGN_OR_RETURN(const std::optional<ir::DimExpr> batch,
                   run_time_batch(frame, {0}, "pooling kernels"));
  switch (a.op) {
    case ir::OpKind::MaxPool:
    case ir::OpKind::AveragePool: return window_pool(frame, batch);
    case ir::OpKind::GlobalAveragePool:
    case ir::OpKind::GlobalMaxPool:
      if (!frame.has_output(0))
        return invalid_model("{} '{}' needs output Y", ir::op_name(a.op), frame.node_name);
      return global_pool(frame, batch);
    default: break;
  }
  return unsupported("no GPU pooling kernel for node '{}' ({})", frame.node_name,
                     ir::op_name(a.op));
}

}  // namespace graphc::emit
