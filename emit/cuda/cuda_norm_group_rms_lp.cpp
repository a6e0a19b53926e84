// GroupNormalization, RMSNormalization and LpNormalization on the team frame
// of the other normalizations (cuda_reduction_common.h), mirroring
// reference/kernels_norm_rotary.cpp: one kernel per node (fused prologue and
// epilogue included), statistics in float (double for fp64 inputs or a
// float64 stash_type), one write per element.
//  - RMSNormalization: rows are the dims before `axis`; sum of squares, then
//    x * rsqrt(mean + eps) * scale (Llama's RMSNorm: one pass when the row
//    fits in registers, which it does up to 16 elements a thread).
//  - GroupNormalization: row (n, g) is the contiguous block of C/G channels
//    of sample n; mean, then E[(x - mean)^2] (two passes, no cancellation),
//    then the per-channel (opset 21) or per-group (opset 18) affine.
//  - LpNormalization: the row is one axis (strided when it is not the last).
#include <fmt/format.h>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"
#include "ir/shape_inference.h"

namespace graphc::emit::reduction {

namespace {

using ir::DType;

// Statistics type: double for fp64 data or a float64 stash_type, else float.
std::string stats_type(const AnchorFrame& f) {
  const bool wide = f.input(0).dtype == DType::kFloat64 ||
                    f.anchor->attrs.get_int("stash_type", 1) == static_cast<int64_t>(11);
  return wide ? "double" : "float";
}

std::string stats_literal(const std::string& st, double v) {
  return cuda::literal(st == "double" ? DType::kFloat64 : DType::kFloat32, v);
}

// Team statements leaving `sum` (of `term`, an expression of x as `st`) in every thread.
std::string team_sum(const RowLoops& rows, const std::string& st, const std::string& name,
                     const std::string& term) {
  std::string b = fmt::format("  {0} {1} = ({0})0;\n", st, name);
  b += rows.each(fmt::format("      {{ const {0} v_ = ({0})x; {1} += {2}; }}\n", st, name, term));
  b += fmt::format("  {0} = team_allreduce({0}, RAdd());\n", name);
  return b;
}

Status check_float(const AnchorFrame& f) {
  if (!ir::is_float(f.input(0).dtype) || cuda::compute_type(f.input(0).dtype).empty())
    return unsupported("node '{}': {} of {} has no GPU lowering (float types only)", f.node_name,
                       ir::op_name(f.anchor->op), ir::dtype_name(f.input(0).dtype));
  return Status::ok_status();
}

}  // namespace

Expected<GeneratedKernel> generate_rms_norm(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_float(f));
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", -1), rank));
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= x.shape[static_cast<size_t>(d)];
  if (rows == 0 || cols == 0) return empty_kernel(f, "rmsnorm");
  const Segments segs = segments_for({rows, cols}, {false, true});
  const TeamPlan plan = plan_teams(segs);
  const std::string ct = cuda::compute_type(x.dtype);
  const std::string st = stats_type(f);
  const double eps = f.anchor->attrs.get_float("epsilon", 1e-5);
  ASSIGN_OR_RETURN(std::string scale_fn,
                   broadcast_offset_fn("scale_off", f.input(1).shape, x.shape));
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill();
  body += team_sum(loops, st, "sq", "v_ * v_");
  body += fmt::format("  const {0} inv = ({0})1 / {1}(sq / ({0}){2} + {3});\n", st,
                      math_fn(st, "sqrt"), cols, stats_literal(st, eps));
  body += loops.each(fmt::format(
      "      {}\n",
      f.store(0, "off",
              fmt::format("({})(({})x * inv * ({}){})", ct, st, st, f.load(1, "scale_off(off)")))));
  return finish_anchor_kernel(f, "rmsnorm", team_helpers(segs, plan) + scale_fn, body, plan.launch);
}

Expected<GeneratedKernel> generate_group_norm(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_float(f));
  const ir::Value& x = f.input(0);
  if (x.shape.size() < 2)
    return invalid_model("node '{}': GroupNormalization needs an input of rank >= 2, got {}",
                         f.node_name, ir::shape_to_string(x.shape));
  const int64_t n = x.shape[0], c = x.shape[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) spatial *= x.shape[d];
  const int64_t groups = f.anchor->attrs.get_int("num_groups", 0);
  if (groups <= 0 || c % groups != 0)
    return invalid_model("node '{}': GroupNormalization num_groups {} does not divide the {} channels",
                         f.node_name, groups, c);
  const int64_t cpg = c / groups;
  const int64_t affine = ir::shape_numel(f.input(1).shape);
  if (affine != c && affine != groups)
    return invalid_model("node '{}': GroupNormalization scale has {} values, expected {} (channels) "
                         "or {} (groups)", f.node_name, affine, c, groups);
  for (size_t k = 1; k < 3; ++k)
    if (ir::shape_numel(f.input(k).shape) != affine)
      return invalid_model("node '{}': GroupNormalization scale and bias differ in size",
                           f.node_name);
  // Opset 18's per-group affine, as the reference tells the two forms apart.
  const bool per_group = affine == groups && groups != c;
  const int64_t len = cpg * spatial;
  if (n * groups == 0 || len == 0) return empty_kernel(f, "groupnorm");
  const Segments segs = segments_for({n * groups, len}, {false, true});
  const TeamPlan plan = plan_teams(segs);
  const std::string ct = cuda::compute_type(x.dtype);
  const std::string st = stats_type(f);
  const double eps = f.anchor->attrs.get_float("epsilon", 1e-5);
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill();
  body += team_sum(loops, st, "sum", "v_");
  body += fmt::format("  const {0} mean = sum / ({0}){1};\n", st, len);
  body += team_sum(loops, st, "sq", "(v_ - mean) * (v_ - mean)");
  body += fmt::format("  const {0} inv = ({0})1 / {1}(sq / ({0}){2} + {3});\n", st,
                      math_fn(st, "sqrt"), len, stats_literal(st, eps));
  body += fmt::format("  const long long g_ = row % {}LL;\n", groups);
  const std::string param =
      per_group ? "g_" : fmt::format("g_ * {}LL + j / {}LL", cpg, spatial);
  body += loops.each(fmt::format(
      "      const long long p_ = {0};\n"
      "      {1}\n",
      param,
      f.store(0, "off",
              fmt::format("({0})((({1})x - mean) * inv * ({1}){2} + ({1}){3})", ct, st,
                          f.load(1, "p_"), f.load(2, "p_")))));
  return finish_anchor_kernel(f, "groupnorm", team_helpers(segs, plan), body, plan.launch);
}

Expected<GeneratedKernel> generate_lp_norm(const AnchorFrame& f) {
  RETURN_IF_ERROR(check_float(f));
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::normalize_axis(f.anchor->attrs.get_int("axis", -1), rank));
  const int64_t p = f.anchor->attrs.get_int("p", 2);
  if (p != 1 && p != 2)
    return invalid_model("node '{}': LpNormalization p must be 1 or 2, got {}", f.node_name, p);
  if (ir::shape_numel(x.shape) == 0) return empty_kernel(f, "lpnorm");
  std::vector<bool> mask(x.shape.size(), false);
  mask[static_cast<size_t>(axis)] = true;
  const Segments segs = segments_for(x.shape, mask);
  const TeamPlan plan = plan_teams(segs);
  const std::string ct = cuda::compute_type(x.dtype);
  const std::string st = ct == "double" ? "double" : "float";
  RowLoops loops(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + loops.fill();
  body += team_sum(loops, st, "acc", p == 1 ? math_fn(st, "fabs") + "(v_)" : "v_ * v_");
  body += fmt::format("  const {0} norm = {1};\n", st,
                      p == 1 ? "acc" : math_fn(st, "sqrt") + "(acc)");
  body += loops.each(fmt::format(
      "      {}\n",
      f.store(0, "off", fmt::format("({0})(norm == ({1})0 ? ({1})0 : ({1})x / norm)", ct, st))));
  return finish_anchor_kernel(f, "lpnorm", team_helpers(segs, plan), body, plan.launch);
}

}  // namespace graphc::emit::reduction
