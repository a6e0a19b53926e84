// TopK, mirroring reference run_TopK: per slice along `axis`, the K largest
// (or smallest) values in order, NaN ranking above every number, equal values
// keeping the lower index first; always sorted (sorted = 0 allows any order).
// The order "a before b" is strict and total over (value, index), so any
// correct sort reproduces the reference's stable sort exactly.
//  - slices whose (value, index) pairs fit in 96 KiB of shared memory (8192
//    elements; under every sm_80+ GPU's limit): one block per slice runs a
//    bitonic sort in shared memory;
//  - longer slices: K rounds of team selection (cuda_reduction_common.h),
//    each finding the next element in that order (two team reductions).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"
#include "ir/reduction_util.h"

namespace graphc::emit::reduction {

namespace {

using ir::DType;

int64_t key_bytes(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64: return 8;
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
    default: return 4;  // float (fp16/bf16/fp32 keys are kept as float), int32, uint32
  }
}

constexpr int64_t kMaxSortSharedBytes = 96 * 1024;

// Shared memory of the bitonic sort: int indices (16-byte aligned), then keys.
int64_t sort_shared_bytes(ir::DType t, int64_t n, int64_t* padded) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  *padded = p;
  return (p * 4 + 15) / 16 * 16 + p * key_bytes(t);
}

// tk_before(va, ia, vb, ib): element (va, ia) comes before (vb, ib) in the output.
std::string before_fn(const std::string& ct, bool largest, int64_t n) {
  return fmt::format(
      "// (va, ia) precedes (vb, ib): ranked by value (NaN above every number), then\n"
      "// lower index first; indices >= {2} are padding and come last.\n"
      "__device__ __forceinline__ bool tk_vless({0} a, {0} b) {{\n"
      "  if (a != a) return false;\n"
      "  if (b != b) return true;\n"
      "  return a < b;\n"
      "}}\n"
      "__device__ __forceinline__ bool tk_before({0} va, long long ia, {0} vb, long long ib) {{\n"
      "  if (ia >= {2}LL) return false;\n"
      "  if (ib >= {2}LL) return true;\n"
      "  if ({1}) {{\n"
      "    if (tk_vless(vb, va)) return true;\n"
      "    if (tk_vless(va, vb)) return false;\n"
      "  }} else {{\n"
      "    if (tk_vless(va, vb)) return true;\n"
      "    if (tk_vless(vb, va)) return false;\n"
      "  }}\n"
      "  return ia < ib;\n"
      "}}\n",
      ct, largest ? "true" : "false", n);
}

struct TopKShape {
  ir::AxisSplit split;
  int64_t k = 0;
  bool largest = true;
};

// Rows are (outer, inner) pairs; element t of a row is at base + t * inner,
// output t at obase + t * inner.
std::string store_results(const AnchorFrame& f, const std::string& t, const std::string& value,
                          const std::string& index, int64_t inner) {
  std::string s;
  const std::string at = fmt::format("obase + {} * {}LL", t, inner);
  if (f.has_output(0)) s += f.store(0, at, value) + " ";
  if (f.has_output(1)) s += f.store(1, at, "(long long)(" + index + ")");
  return s;
}

Expected<GeneratedKernel> bitonic(const AnchorFrame& f, const TopKShape& ts) {
  const DType dt = f.input(0).dtype;
  const std::string ct = cuda::compute_type(dt);
  const ir::AxisSplit& s = ts.split;
  int64_t p = 1;
  LaunchShape launch;
  launch.shared_bytes = sort_shared_bytes(dt, s.n, &p);
  const int64_t ids_bytes = (p * 4 + 15) / 16 * 16;
  launch.block = {std::clamp<int64_t>(p / 2, 32, 1024), 1, 1};
  launch.grid = {s.outer * s.inner, 1, 1};
  const std::string body = fmt::format(
      "  extern __shared__ __align__(16) unsigned char tk_smem[];\n"
      "  int* ids = (int*)tk_smem;\n"
      "  {0}* keys = ({0}*)(tk_smem + {1});\n"
      "  const long long row = (long long)blockIdx.x;\n"
      "  const long long base = (row / {2}LL) * {3}LL * {2}LL + row % {2}LL;\n"
      "  const long long obase = (row / {2}LL) * {4}LL * {2}LL + row % {2}LL;\n"
      "  for (int t = threadIdx.x; t < {5}; t += blockDim.x) {{\n"
      "    ids[t] = t;\n"
      "    keys[t] = t < {3} ? {6} : ({0})0;\n"
      "  }}\n"
      "  for (int size = 2; size <= {5}; size <<= 1) {{\n"
      "    for (int stride = size >> 1; stride > 0; stride >>= 1) {{\n"
      "      __syncthreads();\n"
      "      for (int t = threadIdx.x; t < {5} / 2; t += blockDim.x) {{\n"
      "        const int a = (t / stride) * 2 * stride + t % stride;\n"
      "        const int b = a + stride;\n"
      "        const bool up = (a & size) == 0;\n"
      "        const bool swap = up ? tk_before(keys[b], ids[b], keys[a], ids[a])\n"
      "                             : tk_before(keys[a], ids[a], keys[b], ids[b]);\n"
      "        if (swap) {{\n"
      "          const {0} kv = keys[a]; keys[a] = keys[b]; keys[b] = kv;\n"
      "          const int iv = ids[a]; ids[a] = ids[b]; ids[b] = iv;\n"
      "        }}\n"
      "      }}\n"
      "    }}\n"
      "  }}\n"
      "  __syncthreads();\n"
      "  for (int t = threadIdx.x; t < {4}; t += blockDim.x) {{\n"
      "    {7}\n"
      "  }}\n",
      ct, ids_bytes, s.inner, s.n, ts.k, p,
      f.load(0, fmt::format("base + (long long)t * {}LL", s.inner)),
      store_results(f, "(long long)t", "keys[t]", "ids[t]", s.inner));
  return finish_anchor_kernel(f, "topk", before_fn(ct, ts.largest, s.n), body, launch);
}

Expected<GeneratedKernel> selection(const AnchorFrame& f, const TopKShape& ts) {
  const DType dt = f.input(0).dtype;
  const std::string ct = cuda::compute_type(dt);
  // Keys in a type warp shuffles take (char/short/bool widened to 64 bits).
  const std::string kt = accumulator_type(dt);
  const ir::AxisSplit& s = ts.split;
  const Segments segs = segments_for({s.outer, s.n, s.inner}, {false, true, false});
  const TeamPlan plan = plan_teams(segs);
  RowLoops rows(f, segs, plan, ct);
  // The value ranked last (the identity of "better"): NaN for smallest floats.
  const std::string worst = ir::is_float(dt) && !ts.largest
                                ? cuda::literal(kt == "double" ? DType::kFloat64 : DType::kFloat32,
                                                std::numeric_limits<double>::quiet_NaN())
                                : extreme_literal(dt, ts.largest);
  std::string helpers = team_helpers(segs, plan) + before_fn(kt, ts.largest, s.n);
  helpers += fmt::format(
      "struct TkBetter {{\n"
      "  __device__ {0} operator()({0} a, {0} b) const {{ return {1}; }}\n"
      "}};\n",
      kt, ts.largest ? "tk_vless(a, b) ? b : a" : "tk_vless(b, a) ? b : a");
  std::string body = team_prologue(segs, plan) + rows.fill();
  body += fmt::format(
      "  const long long obase = (row / {0}LL) * {1}LL * {0}LL + row % {0}LL;\n"
      "  {2} pv = ({2})0;\n"
      "  long long pi = -1;\n"
      "  for (long long t = 0; t < {1}LL; ++t) {{\n"
      "    {2} bv = {3};\n",
      s.inner, ts.k, kt, worst);
  body += rows.each(
      fmt::format("      const {} xk = ({})x;\n"
                  "      if (pi < 0 || tk_before(pv, pi, xk, j)) bv = TkBetter()(bv, xk);\n",
                  kt, kt));
  body += "    bv = team_allreduce(bv, TkBetter());\n    long long bi = 9223372036854775807LL;\n";
  body += rows.each(fmt::format(
      "      const {} xk = ({})x;\n"
      "      if ((pi < 0 || tk_before(pv, pi, xk, j)) && (bv != bv ? xk != xk : xk == bv) &&\n"
      "          j < bi)\n"
      "        bi = j;\n",
      kt, kt));
  body += "    bi = team_allreduce(bi, RMinNum());\n";
  body += fmt::format("    if (active && rank == 0) {{ {} }}\n",
                      store_results(f, "t", fmt::format("({})bv", ct), "bi", s.inner));
  body += "    pv = bv;\n    pi = bi;\n  }\n";
  return finish_anchor_kernel(f, "topk", helpers, body, plan.launch);
}

}  // namespace

Expected<GeneratedKernel> generate_topk(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::single_axis(f.anchor->attrs, -1, rank));
  const ir::Tensor* kt = f.constant_input(1);
  if (!kt)
    return unsupported(
        "node '{}': TopK's K is computed at run time; the GPU back end needs it at "
        "build time",
        f.node_name);
  TopKShape ts;
  ts.split = ir::split_at(x.shape, axis);
  const auto kv = kt->to_i64_vector();
  if (kv.size() != 1 || kv[0] < 0 || kv[0] > ts.split.n)
    return invalid_model("node '{}': TopK's K must be one value in [0, {}]", f.node_name,
                         ts.split.n);
  ts.k = kv[0];
  ts.largest = f.anchor->attrs.get_int("largest", 1) != 0;
  if (ts.k == 0 || ts.split.outer * ts.split.inner == 0) return empty_kernel(f, "topk");
  int64_t padded = 1;
  if (sort_shared_bytes(x.dtype, ts.split.n, &padded) <= kMaxSortSharedBytes) return bitonic(f, ts);
  return selection(f, ts);
}

}  // namespace graphc::emit::reduction
