// Softmax, LogSoftmax and Hardmax as team reductions over the [outer, n,
// inner] view of ir::softmax_split (opset >= 13: one axis; opset < 13: the
// input flattened to 2-D at `axis`). Mirrors reference run_soft: the row's
// max ignores NaN (a NaN then poisons the sum, so the row is NaN, as in the
// reference), values are shifted by it, and the sum is taken in float
// (double for fp64). The row is read from global memory once when it fits in
// registers (<= 16 elements per thread: rows up to 16384).
#include <fmt/format.h>

#include <limits>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"
#include "ir/reduction_util.h"

namespace graphc::emit::reduction {

Expected<GeneratedKernel> generate_softmax(const AnchorFrame& f) {
  const ir::Node& n = *f.anchor;
  const ir::Value& x = f.input(0);
  ASSIGN_OR_RETURN(ir::AxisSplit sp, ir::softmax_split(n.attrs, x.shape));
  // Over a shape range: the rows (the outer dims) may vary; the reduced and
  // inner dims may not, and the reduction is over the innermost dims.
  std::optional<ir::DimExpr> run_time_rows;
  if (f.sizes) {
    const ir::SymShape xs = f.sizes->shape(*f.graph, f.anchor->inputs[0]);
    // The outer dims are those before the axis (softmax_split's rule).
    const auto rank = static_cast<int64_t>(xs.size());
    const bool legacy = n.attrs.get_int("_legacy_coerce_2d", 0) != 0;
    ASSIGN_OR_RETURN(const int64_t axis,
                     ir::normalize_axis(n.attrs.get_int("axis", legacy ? 1 : -1), rank));
    ir::DimExpr outer(1);
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer = outer * xs[static_cast<size_t>(d)];
      } else if (!xs[static_cast<size_t>(d)].is_constant()) {
        return unsupported("node '{}': a {} over dims that vary ({}) does not take run-time sizes "
                           "yet", f.node_name, ir::op_name(n.op), f.sizes->shape_string(xs));
      }
    }
    if (sp.inner != 1)
      return unsupported("node '{}': a {} over a middle axis does not take run-time sizes yet",
                         f.node_name, ir::op_name(n.op));
    run_time_rows = outer;
    sp.outer = std::max<int64_t>(sp.outer, 2);  // plan with a kept dim
  }
  if (!run_time_rows && ir::shape_numel(x.shape) == 0) return empty_kernel(f, "softmax");
  Segments segs = segments_for({sp.outer, sp.n, sp.inner}, {false, true, false});
  TeamPlan plan = plan_teams(segs);
  if (run_time_rows) RETURN_IF_ERROR(rows_at_run_time(f, *run_time_rows, segs, plan));
  const std::string ct = cuda::compute_type(x.dtype);
  const ir::DType lit_t = ct == "double" ? ir::DType::kFloat64 : ir::DType::kFloat32;
  RowLoops rows(f, segs, plan, ct);
  std::string body = team_prologue(segs, plan) + rows.fill();
  body += fmt::format("  {} m = {};\n", ct,
                      cuda::literal(lit_t, -std::numeric_limits<double>::infinity()));
  body += rows.each("      m = x > m ? x : m;\n");
  body += "  m = team_allreduce(m, RMaxNum());\n";
  if (n.op == ir::OpKind::Hardmax) {
    // The reference's argmax starts at element 0 even when it is NaN; later
    // NaNs never win.
    body += fmt::format(
        "  const {0} x0_ = active ? {1} : ({0})0;\n"
        "  long long key = 9223372036854775807LL;\n",
        ct, f.load(0, "base"));
    body += rows.each("      if (x == m && j < key) key = j;\n");
    body += "  key = team_allreduce(key, RMinNum());\n";
    body += "  const long long arg = x0_ != x0_ ? 0LL : key;\n";
    body += rows.each(fmt::format(
        "      {}\n", f.store(0, "off", fmt::format("j == arg ? ({0})1 : ({0})0", ct))));
  } else {
    body += fmt::format("  {} s = ({})0;\n", ct, ct);
    body += rows.each(fmt::format("      s += {}(x - m);\n", math_fn(ct, "exp")));
    body += "  s = team_allreduce(s, RAdd());\n";
    if (n.op == ir::OpKind::Softmax) {
      body += rows.each(
          fmt::format("      {}\n", f.store(0, "off", math_fn(ct, "exp") + "(x - m) / s")));
    } else {
      body += fmt::format("  const {} log_s = {}(s);\n", ct, math_fn(ct, "log"));
      body += rows.each(fmt::format("      {}\n", f.store(0, "off", "(x - m) - log_s")));
    }
  }
  return finish_anchor_kernel(f, "softmax", team_helpers(segs, plan), body, plan.launch);
}

}  // namespace graphc::emit::reduction
