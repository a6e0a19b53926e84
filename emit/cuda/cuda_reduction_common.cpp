// Row/team machinery of the reduction-family kernels (see the header).
#include "emit/cuda/cuda_reduction_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "emit/cuda/cuda_ops.h"

namespace graphc::emit::reduction {

namespace {

int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// A device function mapping an index over `groups` (row-major) to an offset.
std::string offset_fn(const std::string& name, const std::vector<Segments::Group>& groups) {
  std::string s = fmt::format("__device__ __forceinline__ long long {}(long long q) {{\n", name);
  if (groups.empty()) return s + "  (void)q;\n  return 0;\n}\n";
  s += "  long long off = 0;\n";
  for (size_t g = groups.size(); g-- > 1;) {
    s += fmt::format("  off += (q % {}LL) * {}LL;\n", groups[g].size, groups[g].stride);
    s += fmt::format("  q /= {}LL;\n", groups[g].size);
  }
  s += fmt::format("  off += q * {}LL;\n  return off;\n}}\n", groups[0].stride);
  return s;
}

const char* kFunctors =
    R"(// Reduction functors: integer sums and products wrap (computed unsigned),
// Max/Min propagate NaN, the *Num variants never pick a NaN.
template <class T> G_HD T r_add(T a, T b) { return a + b; }
G_HD long long r_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
template <class T> G_HD T r_mul(T a, T b) { return a * b; }
G_HD long long r_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
template <class T> G_HD T r_neg(T a) { return -a; }
G_HD long long r_neg(long long a) { return (long long)(0ull - (unsigned long long)a); }
G_HD unsigned long long r_neg(unsigned long long a) { return 0ull - a; }
struct RAdd { template <class T> G_HD T operator()(T a, T b) const { return r_add(a, b); } };
struct RMul { template <class T> G_HD T operator()(T a, T b) const { return r_mul(a, b); } };
struct RMax { template <class T> G_HD T operator()(T a, T b) const { return g_vmax(a, b); } };
struct RMin { template <class T> G_HD T operator()(T a, T b) const { return g_vmin(a, b); } };
struct RMaxNum { template <class T> G_HD T operator()(T a, T b) const { return b > a ? b : a; } };
struct RMinNum { template <class T> G_HD T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> G_HD bool r_finite(T v) { return v == v && v - v == (T)0; }
// double -> integer as the reference's Tensor::set_f64 (NaN -> 0, saturating to 64 bits).
G_HD long long r_d2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return 9223372036854775807LL;
  if (v <= -9.2233720368547758e18) return -9223372036854775807LL - 1;
  return (long long)v;
}
G_HD unsigned long long r_d2u(double v) {
  if (v != v) return 0ull;
  if (v < 0.0) return (unsigned long long)r_d2i(v);
  if (v >= 1.8446744073709552e19) return ~0ull;
  return (unsigned long long)v;
}
)";

}  // namespace

Segments segments_for(const ir::Shape& shape, const std::vector<bool>& mask) {
  Segments s;
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  struct Run {
    bool reduced;
    Segments::Group g;
  };
  std::vector<Run> runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool red = mask[d];
    red ? s.len *= shape[d] : s.rows *= shape[d];
    if (!runs.empty() && runs.back().reduced == red) {
      runs.back().g.size *= shape[d];
      runs.back().g.stride = strides[d];
    } else {
      runs.push_back({red, {shape[d], strides[d]}});
    }
  }
  for (const Run& r : runs) (r.reduced ? s.reduced : s.kept).push_back(r.g);
  if (!runs.empty() && !runs.back().reduced) {
    s.inner_kept = true;
    s.inner_size = runs.back().g.size;
  }
  return s;
}

TeamPlan plan_teams(const Segments& s) {
  TeamPlan p;
  const int64_t len = std::max<int64_t>(s.len, 1);
  const int64_t rows = std::max<int64_t>(s.rows, 1);
  if (s.inner_kept) {
    p.layout = TeamPlan::Layout::kColumns;
    const int64_t cx = std::min<int64_t>(32, pow2_ceil(s.inner_size));
    // Few columns (a long reduction over a leading axis): more threads per
    // column so the few blocks still have work spread over many threads.
    const int64_t max_threads = ceil_div(rows, cx) < 264 ? 1024 : 256;
    const int64_t cy = std::min<int64_t>(max_threads / cx, pow2_ceil(len));
    p.team = cy;
    p.teams_per_block = cx;
    p.launch.block = {cx, cy, 1};
    p.launch.grid = {ceil_div(rows, cx), 1, 1};
  } else if (len <= 512) {
    p.layout = TeamPlan::Layout::kSubWarp;
    p.team = std::min<int64_t>(32, pow2_ceil(len));
    const int64_t block = std::max<int64_t>(32, std::min<int64_t>(256, p.team * pow2_ceil(rows)));
    p.teams_per_block = block / p.team;
    p.launch.block = {block, 1, 1};
    p.launch.grid = {ceil_div(rows, p.teams_per_block), 1, 1};
  } else {
    p.layout = TeamPlan::Layout::kBlock;
    p.team = std::clamp<int64_t>(pow2_ceil(ceil_div(len, 8)), 64, 1024);
    p.launch.block = {p.team, 1, 1};
    p.launch.grid = {rows, 1, 1};
  }
  p.per_thread = ceil_div(len, p.team);
  p.cached = p.per_thread <= kMaxCached;
  return p;
}

Status rows_at_run_time(const AnchorFrame& f, const ir::DimExpr& rows, Segments& s, TeamPlan& p) {
  if (s.inner_kept || s.kept.size() != 1)
    return unsupported("node '{}': only reductions over the innermost dims take run-time sizes yet",
                       f.node_name);
  s.rows_code = f.sizes->code(rows);
  ir::DimExpr grid;
  if (p.layout == TeamPlan::Layout::kSubWarp)
    grid = ir::DimExpr::ceil_div(rows, ir::DimExpr(p.teams_per_block));
  else if (p.layout == TeamPlan::Layout::kBlock)
    grid = rows;
  else
    return unsupported("node '{}': column reductions do not take run-time sizes yet", f.node_name);
  grid = ir::DimExpr::max(ir::DimExpr(1), grid);
  ASSIGN_OR_RETURN(p.launch.grid[0], f.sizes->upper_bound(grid));
  p.launch.grid_x = grid;
  return Status::ok_status();
}

std::string team_helpers(const Segments& s, const TeamPlan& p) {
  std::string h = kFunctors;
  h += offset_fn("row_base", s.kept);
  h += offset_fn("elem_off", s.reduced);
  h += "// Combines one value per thread of a team; every thread gets the result.\n";
  h += "template <class T, class F> __device__ __forceinline__ T team_allreduce(T v, F f) {\n";
  switch (p.layout) {
    case TeamPlan::Layout::kSubWarp:
      h += fmt::format(
          "#pragma unroll\n"
          "  for (int o = {}; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
          "  return v;\n",
          p.team / 2);
      break;
    case TeamPlan::Layout::kBlock:
      h += fmt::format(
          "  __shared__ T sh[{0}];\n"
          "#pragma unroll\n"
          "  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
          "  __syncthreads();  // the previous call has read sh\n"
          "  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;\n"
          "  __syncthreads();\n"
          "  T r = sh[0];\n"
          "#pragma unroll\n"
          "  for (int w = 1; w < {0}; ++w) r = f(r, sh[w]);\n"
          "  return r;\n",
          p.team / 32);
      break;
    case TeamPlan::Layout::kColumns:
      if (p.team == 1) {
        h += "  (void)f;\n  return v;\n";
        break;
      }
      h += fmt::format(
          "  __shared__ T sh[{0} * {1}];\n"
          "  __syncthreads();  // the previous call has read sh\n"
          "  sh[threadIdx.y * {1} + threadIdx.x] = v;\n"
          "  __syncthreads();\n"
          "  T r = sh[threadIdx.x];\n"
          "  for (int y = 1; y < {0}; ++y) r = f(r, sh[y * {1} + threadIdx.x]);\n"
          "  return r;\n",
          p.team, p.teams_per_block);
      break;
  }
  h += "}\n";
  return h;
}

std::string team_prologue(const Segments& s, const TeamPlan& p) {
  std::string b;
  switch (p.layout) {
    case TeamPlan::Layout::kSubWarp:
      b += fmt::format(
          "  const long long row = (long long)blockIdx.x * {} + (long long)(threadIdx.x / {});\n"
          "  const int rank = (int)(threadIdx.x % {});\n",
          p.teams_per_block, p.team, p.team);
      break;
    case TeamPlan::Layout::kBlock:
      b += "  const long long row = (long long)blockIdx.x;\n  const int rank = (int)threadIdx.x;\n";
      break;
    case TeamPlan::Layout::kColumns:
      b += fmt::format(
          "  const long long row = (long long)blockIdx.x * {} + (long long)threadIdx.x;\n"
          "  const int rank = (int)threadIdx.y;\n",
          p.teams_per_block);
      break;
  }
  // Inactive threads still take part in every team_allreduce (shuffles and
  // barriers need the whole warp / block); they only skip loads and stores.
  b += fmt::format(
      "  const bool active = row < {};\n"
      "  const long long base = active ? row_base(row) : 0;\n"
      "  (void)rank;\n  (void)base;\n",
      s.rows_code.empty() ? std::to_string(s.rows) + "LL" : s.rows_code);
  return b;
}

std::string RowLoops::loop(const std::string& value, const std::string& body) const {
  return fmt::format(
      "{}  for (int k_ = 0; k_ < {}; ++k_) {{\n"
      "    const long long j = (long long)rank + (long long)k_ * {};\n"
      "    if (active && j < {}LL) {{\n"
      "      const long long off = base + elem_off(j);\n"
      "      (void)off;\n"
      "{}"
      "{}"
      "    }}\n"
      "  }}\n",
      p_.cached ? "#pragma unroll\n" : "", p_.per_thread, p_.team, s_.len, value, body);
}

std::string RowLoops::fill() const {
  if (!p_.cached) return "";
  return fmt::format("  {} xs[{}];\n", ct_, p_.per_thread) +
         loop("", fmt::format("      xs[k_] = {};\n", frame_.load(0, "off")));
}

std::string RowLoops::each(const std::string& body) const {
  const std::string value =
      p_.cached ? fmt::format("      const {} x = xs[k_];\n", ct_)
                : fmt::format("      const {} x = {};\n", ct_, frame_.load(0, "off"));
  return loop(value + "      (void)x;\n", body);
}

std::string math_fn(const std::string& ct, const std::string& name) {
  return ct == "double" ? name : name + "f";
}

std::string accumulator_type(ir::DType t) {
  if (ir::is_float(t)) return cuda::compute_type(t);
  if (ir::is_unsigned_integer(t)) return "unsigned long long";
  return "long long";
}

Expected<std::string> broadcast_offset_fn(const std::string& name, const ir::Shape& from,
                                          const ir::Shape& to) {
  ASSIGN_OR_RETURN(auto strides, broadcast_strides(from, to));
  std::string s = fmt::format("__device__ __forceinline__ long long {}(long long q) {{\n", name);
  // Common case: `from` is the trailing dims of `to` (a LayerNorm scale).
  ir::Shape trimmed = from;
  while (!trimmed.empty() && trimmed.front() == 1) trimmed.erase(trimmed.begin());
  const int64_t n = ir::shape_numel(from);
  const bool suffix = trimmed.size() <= to.size() &&
                      std::equal(trimmed.begin(), trimmed.end(), to.end() - trimmed.size());
  if (n <= 1) return s + "  (void)q;\n  return 0;\n}\n";
  if (suffix) return s + fmt::format("  return q % {}LL;\n}}\n", n);
  s += "  long long off = 0;\n";
  for (size_t d = to.size(); d-- > 0;) {
    if (strides[d] != 0 && to[d] > 1)
      s += fmt::format("  off += (q % {}LL) * {}LL;\n", to[d], strides[d]);
    if (d > 0) s += fmt::format("  q /= {}LL;\n", to[d]);
  }
  return s + "  return off;\n}\n";
}

// The identity of Max (lowest) / Min (highest) for `dt`, as the reference.
std::string extreme_literal(ir::DType dt, bool for_max) {
  if (ir::is_float(dt))
    return cuda::literal(dt == ir::DType::kFloat64 ? dt : ir::DType::kFloat32,
                         for_max ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity());
  if (dt == ir::DType::kBool) return for_max ? "0LL" : "1LL";
  const bool u = ir::is_unsigned_integer(dt);
  auto lim = [&](auto tag) {
    using T = decltype(tag);
    return for_max ? fmt::format("{}", std::numeric_limits<T>::lowest())
                   : fmt::format("{}", std::numeric_limits<T>::max());
  };
  std::string v;
  switch (dt) {
    case ir::DType::kInt8: v = lim(int8_t{}); break;
    case ir::DType::kInt16: v = lim(int16_t{}); break;
    case ir::DType::kInt32: v = lim(int32_t{}); break;
    case ir::DType::kInt64:
      return for_max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
    case ir::DType::kUInt8: v = lim(uint8_t{}); break;
    case ir::DType::kUInt16: v = lim(uint16_t{}); break;
    case ir::DType::kUInt32: v = lim(uint32_t{}); break;
    default: v = lim(uint64_t{}); break;
  }
  return u ? v + "ull" : v + "LL";
}

Expected<GeneratedKernel> empty_kernel(const AnchorFrame& frame, const std::string& prefix) {
  LaunchShape launch;
  launch.block = {32, 1, 1};
  return finish_anchor_kernel(frame, prefix, "", "  // every output is empty\n", launch);
}

}  // namespace graphc::emit::reduction
