// CumSum along one axis (exclusive / reverse as attributes), accumulated in
// the compute type (fp16/bf16 in float, integers wrapping) like the reference.
//
// Many rows or short rows: one thread per row scans it sequentially, the
// reference's exact order of additions (neighbouring threads take
// neighbouring rows of the inner dims, so accesses coalesce when the axis is
// not innermost). Few long rows: one block per row walks it in tiles of
// blockDim elements, each tile a warp-shuffle block scan plus the carry of the
// tiles before it, so the work stays O(n) and the reads coalesce (float sums
// then associate differently from the sequential reference, by rounding only).
#include <fmt/format.h>

#include "emit/cuda/cuda_dm_common.h"
#include "emit/cuda/cuda_dm_ops.h"
#include "emit/cuda/cuda_ops.h"
#include "ir/shape_inference.h"

namespace graphc::emit::dm {

namespace {

constexpr int64_t kScanThreads = 1024;

const char* kShuffleHelpers =
    R"(// Warp shuffles of any compute type (narrow integers and bool travel as int).
template <class T> G_HD T g_shfl_up(T v, int d) { return (T)__shfl_up_sync(0xffffffffu, (long long)v, d); }
G_HD float g_shfl_up(float v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
G_HD double g_shfl_up(double v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
G_HD bool g_shfl_up(bool v, int d) { return __shfl_up_sync(0xffffffffu, (int)v, d) != 0; }
)";

}  // namespace

Expected<GeneratedKernel> cumsum_kernel(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  const ir::DType dt = f.input(0).dtype;
  ASSIGN_OR_RETURN(auto axis_v, constant_ints(f, 1, "axis"));
  if (axis_v.size() != 1)
    return invalid_model("node '{}': CumSum axis must be one value", f.node_name);
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(axis_v[0], static_cast<int64_t>(s.size())));
  const bool exclusive = f.anchor->attrs.get_int("exclusive", 0) != 0;
  const bool reverse = f.anchor->attrs.get_int("reverse", 0) != 0;
  const auto ax = static_cast<size_t>(axis);
  int64_t outer = 1, inner = 1;
  const int64_t dim = s[ax];
  for (size_t d = 0; d < ax; ++d) outer *= s[d];
  for (size_t d = ax + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t rows = outer * inner;
  const std::string ct = cuda::compute_type(dt);
  const std::string zero = zero_of(dt);
  const std::string pos = reverse ? fmt::format("((IX){} - 1 - t)", dim) : std::string("t");

  if (dim <= 64 || rows >= 2048) {
    std::string per;
    per += fmt::format("    const IX base = (i / (IX){0}) * (IX){1} + i % (IX){0};\n", inner,
                       dim * inner);
    per += fmt::format("    {} acc = {};\n", ct, zero);
    per += fmt::format("    for (IX t = 0; t < (IX){}; ++t) {{\n", dim);
    per += fmt::format("      const IX off = base + {} * (IX){};\n", pos, inner);
    per += fmt::format("      const {} x = {};\n", ct, f.load(0, "off"));
    if (!exclusive) per += fmt::format("      acc = {};\n", add_expr(dt, "acc", "x"));
    per += fmt::format("      {}\n", f.store(0, "off", "acc"));
    if (exclusive) per += fmt::format("      acc = {};\n", add_expr(dt, "acc", "x"));
    per += "    }\n";
    return finish_flat_kernel(f, "cumsum", rows, per);
  }

  const int64_t warps = kScanThreads / 32;
  std::string b = fmt::format("  typedef {} IX;\n", index_type(max_numel(f)));
  b += fmt::format("  __shared__ {} warp_sum[{}];\n", ct, warps);
  b += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  b += fmt::format("  for (IX row = blockIdx.x; row < (IX){}; row += gridDim.x) {{\n", rows);
  b += fmt::format("    const IX base = (row / (IX){0}) * (IX){1} + row % (IX){0};\n", inner,
                   dim * inner);
  b += fmt::format("    {} carry = {};\n", ct, zero);
  b += fmt::format("    for (IX t0 = 0; t0 < (IX){}; t0 += (IX){}) {{\n", dim, kScanThreads);
  b += "      const IX t = t0 + (IX)threadIdx.x;\n";
  b += fmt::format("      const IX off = base + {} * (IX){};\n", pos, inner);
  b += fmt::format("      const {} x = t < (IX){} ? {} : {};\n", ct, dim, f.load(0, "off"), zero);
  b += fmt::format("      {} v = x;\n", ct);
  b += "      for (int d = 1; d < 32; d <<= 1) {\n";
  b += fmt::format("        const {} y = g_shfl_up(v, d);\n", ct);
  b += fmt::format("        if (lane >= d) v = {};\n      }}\n", add_expr(dt, "y", "v"));
  b += fmt::format("      {} before = g_shfl_up(v, 1);\n", ct);  // exclusive within the warp
  b += fmt::format("      if (lane == 0) before = {};\n", zero);
  b += "      if (lane == 31) warp_sum[warp] = v;\n";
  b += "      __syncthreads();\n";
  b += "      if (warp == 0) {\n";
  b += fmt::format("        {} w = lane < {} ? warp_sum[lane] : {};\n", ct, warps, zero);
  b += "        for (int d = 1; d < 32; d <<= 1) {\n";
  b += fmt::format("          const {} y = g_shfl_up(w, d);\n", ct);
  b += fmt::format("          if (lane >= d) w = {};\n        }}\n", add_expr(dt, "y", "w"));
  b += fmt::format("        if (lane < {}) warp_sum[lane] = w;\n      }}\n", warps);
  b += "      __syncthreads();\n";
  b += fmt::format("      const {} prefix = warp > 0 ? {} : carry;\n", ct,
                   add_expr(dt, "carry", "warp_sum[warp - 1]"));
  b += fmt::format(
      "      if (t < (IX){}) {}\n", dim,
      f.store(0, "off",
              exclusive ? add_expr(dt, "prefix", "before") : add_expr(dt, "prefix", "v")));
  b += fmt::format("      carry = {};\n",
                   add_expr(dt, "carry", fmt::format("warp_sum[{}]", warps - 1)));
  b += "      __syncthreads();\n    }\n  }\n";
  LaunchShape launch;
  launch.block = {kScanThreads, 1, 1};
  launch.grid = {std::max<int64_t>(rows, 1), 1, 1};
  return finish_anchor_kernel(f, "cumsum", kShuffleHelpers, b, launch);
}

}  // namespace graphc::emit::dm
