// Reduction-family kernels: the dispatch (generate_reduction_kernel), and
// Reduce* and ArgMax/ArgMin as team reductions (cuda_reduction_common.h).
// Semantics mirror reference/kernels_reduction.cpp: floats accumulate in
// float (fp16/bf16/fp32) or double (fp64); integers in 64 bits, wrapping
// like the reference's value classes; L2/LogSum/LogSumExp of integers in
// double, converted like Tensor::set_f64; Max/Min propagate NaN.
#include <fmt/format.h>

#include <limits>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"
#include "emit/cuda/fused_range.h"
#include "emit/cuda/gpu_kernels.h"
#include "ir/reduction_util.h"

namespace graphc::emit {

namespace reduction {

namespace {

using ir::DType;
using ir::OpKind;

// Literal of accumulator type `at` (see accumulator_type) for `dt`'s values.
std::string acc_literal(DType dt, double v) {
  if (ir::is_float(dt)) return cuda::literal(dt == DType::kFloat64 ? dt : DType::kFloat32, v);
  return ir::is_unsigned_integer(dt) ? cuda::uint_literal(DType::kUInt64, static_cast<uint64_t>(v))
                                     : cuda::int_literal(DType::kInt64, static_cast<int64_t>(v));
}

// `v` (accumulator or real type) as the compute type of output dtype `out`.
std::string to_output(DType out, bool real_of_integer, const std::string& v) {
  const std::string ct = cuda::compute_type(out);
  if (real_of_integer)
    return fmt::format("(({})({}({})))", ct, ir::is_unsigned_integer(out) ? "r_d2u" : "r_d2i", v);
  return fmt::format("(({})({}))", ct, v);
}

struct Plan {
  Segments segs;
  TeamPlan team;
};

Plan plan_for(const ir::Shape& shape, const std::vector<bool>& mask) {
  Plan p;
  p.segs = segments_for(shape, mask);
  p.team = plan_teams(p.segs);
  return p;
}

// Over a shape range (f.sizes set): a reduction over fixed innermost dims
// whose leading kept dims vary (ReduceMean over H and W of a batch: the
// squeeze of a squeeze-excitation) runs as rows x len with the row count at
// run time; the plan is made with the rows at opt. Unsupported otherwise.
Expected<Plan> plan_over_range(const AnchorFrame& f, const std::vector<bool>& mask) {
  const ir::SymShape xs = f.sizes->shape(*f.graph, f.anchor->inputs[0]);
  const ir::Shape& x = f.input(0).shape;
  ir::DimExpr rows(1);
  int64_t rows_opt = 1, len = 1;
  bool reducing = false;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (mask[d]) {
      reducing = true;
      if (!xs[d].is_constant())
        return unsupported("node '{}': a {} over dims that vary ({}) does not take run-time sizes "
                           "yet",
                           f.node_name, ir::op_name(f.anchor->op), f.sizes->shape_string(xs));
      len *= x[d];
      continue;
    }
    if (reducing && xs[d].constant() != 1)
      return unsupported("node '{}': only reductions over the innermost dims take run-time sizes "
                         "yet ({} over {})",
                         f.node_name, ir::op_name(f.anchor->op), f.sizes->shape_string(xs));
    rows = rows * xs[d];
    rows_opt *= x[d];
  }
  Plan p;
  p.segs = segments_for({std::max<int64_t>(rows_opt, 2), len}, {false, true});  // plan with a kept dim
  p.team = plan_teams(p.segs);
  RETURN_IF_ERROR(rows_at_run_time(f, rows, p.segs, p.team));
  return p;
}

}  // namespace

Expected<GeneratedKernel> generate_reduce(const AnchorFrame& f) {
  const ir::Node& n = *f.anchor;
  const ir::Value& x = f.input(0);
  const DType dt = x.dtype;
  std::vector<int64_t> axes;
  if (f.has_input(1)) {
    const ir::Tensor* t = f.constant_input(1);
    if (!t)
      return unsupported(
          "node '{}': {} axes are computed at run time; the GPU back end needs build-time axes",
          f.node_name, ir::op_name(n.op));
    axes = t->to_i64_vector();
  }
  ASSIGN_OR_RETURN(auto mask, ir::reduce_axes_mask(n.attrs, f.has_input(1) ? &axes : nullptr,
                                                   static_cast<int64_t>(x.shape.size())));
  if (ir::shape_numel(f.output(0).shape) == 0) return empty_kernel(f, "reduce");
  Plan p;
  if (f.sizes) {
    ASSIGN_OR_RETURN(p, plan_over_range(f, mask));
  } else {
    p = plan_for(x.shape, mask);
  }
  const bool is_f = ir::is_float(dt);
  const std::string ct = cuda::compute_type(dt);
  const std::string at = accumulator_type(dt);
  const std::string rt = is_f ? at : "double";
  const std::string len = fmt::format("{}LL", p.segs.len);
  RowLoops rows(f, p.segs, p.team, ct);
  const DType out = f.output(0).dtype;

  std::string body = team_prologue(p.segs, p.team) + rows.fill();
  std::string acc_t = at, init = acc_literal(dt, 0), elem = fmt::format("({})x", at),
              functor = "RAdd", result = "acc";
  bool real = false;
  switch (n.op) {
    case OpKind::ReduceSum: break;
    case OpKind::ReduceMean:
      result = is_f || p.segs.len > 0 ? fmt::format("acc / ({}){}", at, len) : "acc";
      break;
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: {
      const bool mx = n.op == OpKind::ReduceMax;
      init = extreme_literal(dt, mx);
      functor = mx ? "RMax" : "RMin";
      break;
    }
    case OpKind::ReduceProd:
      init = acc_literal(dt, 1);
      functor = "RMul";
      break;
    case OpKind::ReduceL1:
      elem = fmt::format("(({0})x < ({0})0 ? r_neg(({0})x) : ({0})x)", at);
      break;
    case OpKind::ReduceSumSquare: elem = fmt::format("r_mul(({0})x, ({0})x)", at); break;
    case OpKind::ReduceL2:
      acc_t = rt;
      real = !is_f;
      init = fmt::format("({})0", rt);
      elem = fmt::format("({0})x * ({0})x", rt);
      result = math_fn(rt, "sqrt") + "(acc)";
      break;
    case OpKind::ReduceLogSum:
      acc_t = rt;
      real = !is_f;
      init = fmt::format("({})0", rt);
      elem = fmt::format("({})x", rt);
      result = math_fn(rt, "log") + "(acc)";
      break;
    case OpKind::ReduceLogSumExp: {
      // Max first (NaN propagates; an infinite max is the result), then the
      // shifted sum, as the reference.
      const std::string ninf = cuda::literal(rt == "double" ? DType::kFloat64 : DType::kFloat32,
                                             -std::numeric_limits<double>::infinity());
      body += fmt::format("  {} m = {};\n", rt, ninf);
      body += rows.each(fmt::format("      m = RMax()(m, ({})x);\n", rt));
      body += "  m = team_allreduce(m, RMax());\n";
      body += fmt::format("  {} s = ({})0;\n", rt, rt);
      body += rows.each(fmt::format("      s += {}(({})x - m);\n", math_fn(rt, "exp"), rt));
      body += "  s = team_allreduce(s, RAdd());\n";
      body += fmt::format(
          "  if (active && rank == 0) {{\n    const {} r_ = r_finite(m) ? m + {}(s) : m;\n    {}\n "
          " "
          "}}\n",
          rt, math_fn(rt, "log"), f.store(0, "row", to_output(out, !is_f, "r_")));
      return finish_anchor_kernel(f, "reduce", team_helpers(p.segs, p.team), body, p.team.launch);
    }
    default:
      return internal_error("node '{}': {} is not a Reduce op", f.node_name, ir::op_name(n.op));
  }
  body += fmt::format("  {} acc = {};\n", acc_t, init);
  body += rows.each(fmt::format("      acc = {}()(acc, {});\n", functor, elem));
  body += fmt::format("  acc = team_allreduce(acc, {}());\n", functor);
  body += fmt::format("  if (active && rank == 0) {{\n    {}\n  }}\n",
                      f.store(0, "row", to_output(out, real, result)));
  return finish_anchor_kernel(f, "reduce", team_helpers(p.segs, p.team), body, p.team.launch);
}

// ArgMax/ArgMin in two team passes: the extreme value (NaN wins), then the
// first (or, with select_last_index, the last) index holding it; a NaN
// extreme always takes the first NaN, as the reference stops there.
Expected<GeneratedKernel> generate_arg(const AnchorFrame& f) {
  const ir::Node& n = *f.anchor;
  const ir::Value& x = f.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  ASSIGN_OR_RETURN(int64_t axis, ir::single_axis(n.attrs, 0, rank));
  if (x.shape[static_cast<size_t>(axis)] == 0)
    return invalid_model("node '{}': {} over the empty axis {}", f.node_name, ir::op_name(n.op),
                         axis);
  if (ir::shape_numel(f.output(0).shape) == 0) return empty_kernel(f, "arg");
  std::vector<bool> mask(x.shape.size(), false);
  mask[static_cast<size_t>(axis)] = true;
  const Plan p = plan_for(x.shape, mask);
  const bool is_max = n.op == OpKind::ArgMax;
  const bool last = n.attrs.get_int("select_last_index", 0) != 0;
  const std::string ct = cuda::compute_type(x.dtype);
  const std::string at = accumulator_type(x.dtype);
  RowLoops rows(f, p.segs, p.team, ct);
  const std::string functor = is_max ? "RMax" : "RMin";
  std::string body = team_prologue(p.segs, p.team) + rows.fill();
  body += fmt::format("  {} m = {};\n", at, extreme_literal(x.dtype, is_max));
  body += rows.each(fmt::format("      m = {}()(m, ({})x);\n", functor, at));
  body += fmt::format("  m = team_allreduce(m, {}());\n", functor);
  // One min-reduction over a key: j, or -j to pick the last index.
  body += fmt::format(
      "  const bool m_nan = m != m;\n"
      "  const bool take_last = {} && !m_nan;\n"
      "  long long key = 9223372036854775807LL;\n",
      last ? "true" : "false");
  body +=
      rows.each(fmt::format("      const {0} v_ = ({0})x;\n"
                            "      if (m_nan ? (v_ != v_) : (v_ == m)) {{\n"
                            "        const long long kj = take_last ? -j : j;\n"
                            "        key = kj < key ? kj : key;\n"
                            "      }}\n",
                            at));
  body += "  key = team_allreduce(key, RMinNum());\n";
  body += fmt::format("  if (active && rank == 0) {{\n    {}\n  }}\n",
                      f.store(0, "row", "(take_last ? -key : key)"));
  return finish_anchor_kernel(f, "arg", team_helpers(p.segs, p.team), body, p.team.launch);
}

}  // namespace reduction

Expected<GeneratedKernel> generate_reduction_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const ir::SymbolicShapes* range) {
  ASSIGN_OR_RETURN(AnchorFrame f, make_anchor_frame(graph, node));
  using ir::OpKind;
  // Over a shape range: LayerNormalization, the softmaxes and the Reduce ops
  // over innermost fixed dims (alone, or fused where fused_range.h allows)
  // take their row count at run time (docs/dynamic-shapes.md); the rest are
  // refused where a tensor varies.
  KernelSizes sizes(range);
  ir::SymbolicShapes body_shapes;
  if (range) {
    const OpKind op = f.anchor->op;
    const bool rows_only =
        op == OpKind::LayerNormalization || op == OpKind::InstanceNormalization ||
        op == OpKind::Softmax || op == OpKind::LogSoftmax ||
        op == OpKind::ReduceSum || op == OpKind::ReduceMean || op == OpKind::ReduceMax ||
        op == OpKind::ReduceMin || op == OpKind::ReduceProd || op == OpKind::ReduceL1 ||
        op == OpKind::ReduceL2 || op == OpKind::ReduceSumSquare || op == OpKind::ReduceLogSum ||
        op == OpKind::ReduceLogSumExp;
    RETURN_IF_ERROR(use_run_time_sizes(graph, node, *range, rows_only, sizes, body_shapes, f));
  }
  switch (f.anchor->op) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::ReduceL1:
    case OpKind::ReduceL2:
    case OpKind::ReduceLogSum:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceSumSquare: return reduction::generate_reduce(f);
    case OpKind::ArgMax:
    case OpKind::ArgMin: return reduction::generate_arg(f);
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::Hardmax: return reduction::generate_softmax(f);
    case OpKind::LayerNormalization: return reduction::generate_layer_norm(f);
    case OpKind::InstanceNormalization: return reduction::generate_instance_norm(f);
    case OpKind::MeanVarianceNormalization: return reduction::generate_mean_variance_norm(f);
    case OpKind::BatchNormalization: return reduction::generate_batch_norm(f);
    case OpKind::LRN: return reduction::generate_lrn(f);
    case OpKind::GroupNormalization: return reduction::generate_group_norm(f);
    case OpKind::RMSNormalization: return reduction::generate_rms_norm(f);
    case OpKind::LpNormalization: return reduction::generate_lp_norm(f);
    case OpKind::DynamicQuantizeLinear: return reduction::generate_dynamic_quantize(f);
    case OpKind::TopK: return reduction::generate_topk(f);
    case OpKind::NegativeLogLikelihoodLoss:
    case OpKind::SoftmaxCrossEntropyLoss: return reduction::generate_loss(f);
    default:
      return unsupported("node '{}': {} is not a reduction-family op with a GPU lowering",
                         f.node_name, ir::op_name(f.anchor->op));
  }
}

}  // namespace graphc::emit
