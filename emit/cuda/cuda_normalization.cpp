// Normalizations, mirroring reference/kernels_normalization.cpp:
//  - LayerNormalization, InstanceNormalization, MeanVarianceNormalization:
//    team reductions (cuda_reduction_common.h) computing the mean, then the
//    population variance as E[(x - mean)^2] (two passes over the row, from
//    registers when it fits: no cancellation of sum/sum-of-squares), then
//    writing every element. Statistics in float (double for fp64 inputs or a
//    float64 LayerNormalization stash_type).
//  - BatchNormalization (inference) and LRN: one thread per element.
#include <fmt/format.h>

#include <algorithm>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"
#include "ir/shape_inference.h"

namespace graphc::emit::reduction {

namespace {

using ir::DType;

ir::DType literal_type(const std::string& ct) {
  return ct == "double" ? DType::kFloat64 : DType::kFloat32;
}

// Team statements leaving `mean` and `var` (type `st`) of the row in every thread.
std::string mean_var(const RowLoops& rows, const std::string& st, int64_t len) {
  std::string b = fmt::format("  {0} sum = ({0})0;\n", st);
  b += rows.each(fmt::format("      sum += ({})x;\n", st));
  b += "  sum = team_allreduce(sum, RAdd());\n";
  b += fmt::format("  const {0} mean = sum / ({0}){1};\n  {0} sq = ({0})0;\n", st, len);
  b += rows.each(fmt::format("      const {0} d_ = ({0})x - mean;\n      sq += d_ * d_;\n", st));
  b += "  sq = team_allreduce(sq, RAdd());\n";
  b += fmt::format("  const {0} var = sq / ({0}){1};\n", st, len);
  return b;
}

// N, C and the product of the dims after C.
struct Nchw {
  int64_t n = 1, c = 1, inner = 1;
};
Expected<Nchw> nchw(const AnchorFrame& f, size_t min_rank) {
  const ir::Shape& s = f.input(0).shape;
  if (s.size() < min_rank)
    return invalid_model("node '{}': {} needs an input of rank >= {}, got {}", f.node_name,
                         ir::op_name(f.anchor->op), min_rank, ir::shape_to_string(s));
  Nchw r{s[0], s[1], 1};
  for (size_t d = 2; d < s.size(); ++d) r.inner *= s[d];
  return r;
}

// One thread per element of anchor input 0 (grid-stride): `body` sees `i`.
Expected<GeneratedKernel> per_element(const AnchorFrame& f, const std::string& prefix,
                                      const std::string& body) {
  const int64_t numel = ir::shape_numel(f.input(0).shape);
  if (numel == 0) return empty_kernel(f, prefix);
  LaunchShape launch;
  launch.block = {256, 1, 1};
  launch.grid = {std::min<int64_t>((numel + 255) / 256, int64_t{1} << 20), 1, 1};
  const std::string loop = fmt::format(
      "  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < {}LL;\n"
      "       i += (long long)gridDim.x * 256) {{\n{}  }}\n",
      numel, body);
  return finish_anchor_kernel(f, prefix, "", loop, launch);
}

}  // namespace

Expected<GeneratedKernel> generate_layer_norm(const AnchorFrame& f) {
  const ir::Node& n = *f.anchor;
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(n.attrs.get_int("axis", -1), rank));
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= x.shape[static_cast<size_t>(d)];
  // Over a shape range: the rows (dims before `axis`) may vary, the
  // normalized dims, scale and bias may not.
  std::optional<ir::DimExpr> run_time_rows;
  if (f.sizes) {
    const ir::SymShape xs = f.sizes->shape(*f.graph, f.anchor->inputs[0]);
    ir::DimExpr r(1), c(1);
    for (int64_t d = 0; d < rank; ++d) (d < axis ? r : c) = (d < axis ? r : c) * xs[static_cast<size_t>(d)];
    if (!c.is_constant())
      return unsupported("node '{}': a LayerNormalization over dims that vary ({}) does not take "
                         "run-time sizes yet", f.node_name, f.sizes->shape_string(xs));
    for (size_t k = 1; k < 3; ++k)
      if (f.has_input(k) && ir::shape_numel(f.input(k).shape) != cols)
        return unsupported("node '{}': LayerNormalization's scale and bias must span the "
                           "normalized dims alone to take run-time sizes", f.node_name);
    run_time_rows = r;
    rows = std::max<int64_t>(rows, 2);  // plan with a kept dim
  }
  if (rows == 0) return empty_kernel(f, "layernorm");
  Segments segs = segments_for({rows, cols}, {false, true});
  TeamPlan plan = plan_teams(segs);
  if (run_time_rows) RETURN_IF_ERROR(rows_at_run_time(f, *run_time_rows, segs, plan));
  const std::string ct = cuda::compute_type(x.dtype);
  bool wide = x.dtype == DType::kFloat64;
  for (size_t o = 1; o < 3; ++o) wide |= f.has_output(o) && f.output(o).dtype == DType::kFloat64;
  const std::string st = wide ? "double" : "float";
  const double eps = n.attrs.get_float("epsilon", 1e-5);
  RowLoops loops(f, segs, plan, ct);
  std::string helpers = team_helpers(segs, plan);
  std::string body = team_prologue(segs, plan) + loops.fill() + mean_var(loops, st, cols);
  body += fmt::format("  const {0} inv = ({0})1 / {1}(var + {2});\n", st, math_fn(st, "sqrt"),
                      cuda::literal(literal_type(st), eps));
  std::string write = fmt::format("      {} v_ = (({})x - mean) * inv;\n", st, st);
  const char* fn_names[] = {"", "scale_off", "bias_off"};
  for (size_t k = 1; k < 3; ++k) {
    if (!f.has_input(k)) continue;
    ASSIGN_OR_RETURN(std::string fn, broadcast_offset_fn(fn_names[k], f.input(k).shape, x.shape));
    helpers += fn;
    write += fmt::format("      v_ = v_ {} ({}){};\n", k == 1 ? "*" : "+", st,
                         f.load(k, std::string(fn_names[k]) + "(off)"));
  }
  write += fmt::format("      {}\n", f.store(0, "off", fmt::format("({})v_", ct)));
  body += loops.each(write);
  std::string stats;
  for (size_t o = 1; o < 3; ++o)
    if (f.has_output(o))
      stats += fmt::format("    {}\n",
                           f.store(o, "row",
                                   fmt::format("({})({})", cuda::compute_type(f.output(o).dtype),
                                               o == 1 ? "mean" : "inv")));
  if (!stats.empty()) body += "  if (active && rank == 0) {\n" + stats + "  }\n";
  return finish_anchor_kernel(f, "layernorm", helpers, body, plan.launch);
}

Expected<GeneratedKernel> generate_instance_norm(const AnchorFrame& f) {
  ASSIGN_OR_RETURN(Nchw g, nchw(f, 3));
  // Over a shape range: the batch may vary (rows N * C at run time), the
  // channels and the normalized dims may not.
  std::optional<ir::DimExpr> run_time_rows;
  if (f.sizes) {
    const ir::SymShape xs = f.sizes->shape(*f.graph, f.anchor->inputs[0]);
    for (size_t d = 1; d < xs.size(); ++d)
      if (!xs[d].is_constant())
        return unsupported("node '{}': an InstanceNormalization whose channels or normalized dims "
                           "vary ({}) does not take run-time sizes yet",
                           f.node_name, f.sizes->shape_string(xs));
    run_time_rows = xs[0] * ir::DimExpr(g.c);
    g.n = std::max<int64_t>(g.n, 2);  // plan with a kept dim
  }
  if (g.n * g.c == 0) return empty_kernel(f, "instnorm");
  Segments segs = segments_for({g.n * g.c, g.inner}, {false, true});
  TeamPlan plan = plan_teams(segs);
  if (run_time_rows) RETURN_IF_ERROR(rows_at_run_time(f, *run_time_rows, segs, plan));
  const std::string ct = cuda::compute_type(f.input(0).dtype);
  const double eps = f.anchor->attrs.get_float("epsilon", 1e-5);
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill() + mean_var(loops, ct, g.inner);
  body += fmt::format(
      "  const {0} inv = ({0})1 / {1}(var + {2});\n"
      "  const long long c_ = row % {3}LL;\n"
      "  const {0} scale = active ? ({0}){4} : ({0})0;\n"
      "  const {0} bias = active ? ({0}){5} : ({0})0;\n",
      ct, math_fn(ct, "sqrt"), cuda::literal(literal_type(ct), eps), g.c, f.load(1, "c_"),
      f.load(2, "c_"));
  body +=
      loops.each(fmt::format("      {}\n", f.store(0, "off", "scale * (x - mean) * inv + bias")));
  return finish_anchor_kernel(f, "instnorm", team_helpers(segs, plan), body, plan.launch);
}

// ONNX's function body (X - E[X]) / (sqrt(Var[X]) + 1e-9) over `axes`.
Expected<GeneratedKernel> generate_mean_variance_norm(const AnchorFrame& f) {
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> mask(x.shape.size(), false);
  for (int64_t a : f.anchor->attrs.get_ints("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank)
      return invalid_model("node '{}': axes value {} is out of range for rank {}", f.node_name, a,
                           rank);
    mask[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  if (ir::shape_numel(x.shape) == 0) return empty_kernel(f, "mvn");
  const Segments segs = segments_for(x.shape, mask);
  const TeamPlan plan = plan_teams(segs);
  const std::string ct = cuda::compute_type(x.dtype);
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill() + mean_var(loops, ct, segs.len);
  body += fmt::format("  const {0} denom = {1}(var) + {2};\n", ct, math_fn(ct, "sqrt"),
                      cuda::literal(literal_type(ct), 1e-9));
  body += loops.each(fmt::format("      {}\n", f.store(0, "off", "(x - mean) / denom")));
  return finish_anchor_kernel(f, "mvn", team_helpers(segs, plan), body, plan.launch);
}

// Inference BatchNormalization: y = scale * (x - mean) / sqrt(var + eps) + B per channel.
Expected<GeneratedKernel> generate_batch_norm(const AnchorFrame& f) {
  ASSIGN_OR_RETURN(Nchw g, nchw(f, 2));
  if (f.anchor->attrs.get_int("training_mode", 0) != 0)
    return unsupported("node '{}': BatchNormalization in training mode is not supported",
                       f.node_name);
  const std::string ct = cuda::compute_type(f.input(0).dtype);
  const double eps = f.anchor->attrs.get_float("epsilon", 1e-5);
  const std::string body = fmt::format(
      "    const long long c_ = (i / {0}LL) % {1}LL;\n"
      "    const {2} x = {3};\n"
      "    const {2} scale = ({2}){4};\n"
      "    const {2} bias = ({2}){5};\n"
      "    const {2} mean = ({2}){6};\n"
      "    const {2} inv = ({2})1 / {7}(({2}){8} + {9});\n"
      "    {10}\n",
      g.inner, g.c, ct, f.load(0, "i"), f.load(1, "c_"), f.load(2, "c_"), f.load(3, "c_"),
      math_fn(ct, "sqrt"), f.load(4, "c_"), cuda::literal(literal_type(ct), eps),
      f.store(0, "i", "scale * (x - mean) * inv + bias"));
  return per_element(f, "batchnorm", body);
}

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// the window [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C).
Expected<GeneratedKernel> generate_lrn(const AnchorFrame& f) {
  ASSIGN_OR_RETURN(Nchw g, nchw(f, 2));
  const ir::AttributeMap& a = f.anchor->attrs;
  const int64_t size = a.get_int("size", 0);
  if (size < 1)
    return invalid_model("node '{}': LRN attribute 'size' must be >= 1, got {}", f.node_name, size);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  const std::string ct = cuda::compute_type(f.input(0).dtype);
  const DType lt = literal_type(ct);
  const std::string body = fmt::format(
      "    const long long c_ = (i / {0}LL) % {1}LL;\n"
      "    const long long plane = i - c_ * {0}LL;\n"
      "    const long long k0 = c_ - {2}LL < 0 ? 0 : c_ - {2}LL;\n"
      "    const long long k1 = c_ + {3}LL > {1}LL - 1 ? {1}LL - 1 : c_ + {3}LL;\n"
      "    {4} sq = ({4})0;\n"
      "    for (long long k = k0; k <= k1; ++k) {{\n"
      "      const {4} v_ = {5};\n"
      "      sq += v_ * v_;\n"
      "    }}\n"
      "    const {4} x = {6};\n"
      "    {7}\n",
      g.inner, g.c, lo, hi, ct, f.load(0, "plane + k * " + std::to_string(g.inner) + "LL"),
      f.load(0, "i"),
      f.store(0, "i",
              fmt::format("x / {}({} + {} * sq, {})", math_fn(ct, "pow"),
                          cuda::literal(lt, a.get_float("bias", 1.0)),
                          cuda::literal(lt, a.get_float("alpha", 1e-4) / static_cast<double>(size)),
                          cuda::literal(lt, a.get_float("beta", 0.75)))));
  return per_element(f, "lrn", body);
}

}  // namespace graphc::emit::reduction
