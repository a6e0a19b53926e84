// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, mirroring
// reference/kernels_loss.cpp: input [N, C, d...] viewed as [N, C, D], target
// [N, D]; per (n, d) with target t: ignored (t == ignore_index) counts as loss
// 0 and weight 0, otherwise loss = -weight[t] * v[n, t, d] with v the input
// (NLL) or its log_softmax over C (SCE). reduction "none" stores every loss,
// "sum" their sum, "mean" sum(loss) / sum(weight). Computed in float (double
// for fp64). A target outside [0, C) is an error in the reference; a kernel
// cannot fail, so its loss is NaN.
//  - NLL "none": one thread per (n, d); "sum"/"mean": one team sums all.
//  - SCE "none": one team per (n, d) row over C (as Softmax); "sum"/"mean":
//    one block walks the rows in order, so the result is deterministic.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "emit/cuda/cuda_ops.h"
#include "emit/cuda/cuda_reduction_common.h"
#include "emit/cuda/cuda_reduction_ops.h"

namespace graphc::emit::reduction {

namespace {

struct LossShape {
  int64_t n = 0, c = 0, d = 1;
  std::string reduction;
  bool has_ignore = false;
  int64_t ignore = 0;
};

Expected<LossShape> loss_shape(const AnchorFrame& f) {
  const ir::Shape& s = f.input(0).shape;
  if (s.size() < 2)
    return invalid_model("node '{}': {} input must have rank >= 2", f.node_name,
                         ir::op_name(f.anchor->op));
  LossShape l;
  l.n = s[0];
  l.c = s[1];
  for (size_t i = 2; i < s.size(); ++i) l.d *= s[i];
  l.reduction = f.anchor->attrs.get_string("reduction", "mean");
  if (l.reduction != "none" && l.reduction != "sum" && l.reduction != "mean")
    return invalid_model("node '{}': reduction = '{}'; expected 'none', 'sum' or 'mean'",
                         f.node_name, l.reduction);
  l.has_ignore = f.anchor->attrs.has("ignore_index");
  l.ignore = f.anchor->attrs.get_int("ignore_index", 0);
  return l;
}

// Statements setting `loss_` and `w_` (type st) for target element `flat`,
// reading the value at class t through `value_of_t` (an expression of `t`).
std::string target_loss(const AnchorFrame& f, const LossShape& l, const std::string& st,
                        const std::string& flat, const std::string& value_of_t) {
  const ir::DType lt = st == "double" ? ir::DType::kFloat64 : ir::DType::kFloat32;
  std::string s = fmt::format(
      "    const long long t = (long long)({});\n"
      "    {} loss_ = ({})0, w_ = ({})0;\n",
      f.load(1, flat), st, st, st);
  s += fmt::format("    if ({}) {{\n", l.has_ignore ? fmt::format("t != {}LL", l.ignore) : "true");
  s += fmt::format("      if (t < 0 || t >= {}LL) {{\n        loss_ = {};\n      }} else {{\n", l.c,
                   cuda::literal(lt, std::numeric_limits<double>::quiet_NaN()));
  s += fmt::format("        w_ = {};\n",
                   f.has_input(2) ? fmt::format("({}){}", st, f.load(2, "t")) : "(" + st + ")1");
  s += fmt::format("        loss_ = -w_ * ({});\n      }}\n    }}\n", value_of_t);
  return s;
}

std::string final_value(const LossShape& l) { return l.reduction == "sum" ? "ls" : "ls / ws"; }

Expected<GeneratedKernel> nll(const AnchorFrame& f, const LossShape& l) {
  const std::string ct = cuda::compute_type(f.input(0).dtype);
  const std::string st = ct == "double" ? "double" : "float";
  const std::string value =
      fmt::format("({}){}", st, f.load(0, fmt::format("(n_ * {}LL + t) * {}LL + d_", l.c, l.d)));
  const std::string coords =
      fmt::format("    const long long n_ = i / {0}LL, d_ = i % {0}LL;\n", l.d);
  const int64_t elems = l.n * l.d;
  if (l.reduction == "none") {
    if (elems == 0) return empty_kernel(f, "loss");
    LaunchShape launch;
    launch.block = {256, 1, 1};
    launch.grid = {std::min<int64_t>((elems + 255) / 256, int64_t{1} << 20), 1, 1};
    const std::string body = fmt::format(
        "  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < {}LL;\n"
        "       i += (long long)gridDim.x * 256) {{\n{}{}    {}\n  }}\n",
        elems, coords, target_loss(f, l, st, "i", value),
        f.store(0, "i", fmt::format("({})loss_", ct)));
    return finish_anchor_kernel(f, "loss", "", body, launch);
  }
  const Segments segs = segments_for({elems}, {true});
  const TeamPlan plan = plan_teams(segs);
  std::string body = team_prologue(segs, plan);
  body += fmt::format("  {0} ls = ({0})0, ws = ({0})0;\n", st);
  body += fmt::format(
      "  for (long long i = rank; active && i < {}LL; i += {}) {{\n{}{}    ls += loss_;\n"
      "    ws += w_;\n  }}\n",
      elems, plan.team, coords, target_loss(f, l, st, "i", value));
  body += "  ls = team_allreduce(ls, RAdd());\n  ws = team_allreduce(ws, RAdd());\n";
  body += fmt::format("  if (active && rank == 0) {{\n    {}\n  }}\n",
                      f.store(0, "0", fmt::format("({})({})", ct, final_value(l))));
  return finish_anchor_kernel(f, "loss", team_helpers(segs, plan), body, plan.launch);
}

// log_softmax statistics of the row at `base` (m, log_s), the optional
// log_prob output, and the row's loss.
std::string sce_row(const AnchorFrame& f, const LossShape& l, const RowLoops& loops,
                    const std::string& ct, const std::string& st) {
  const ir::DType lt = st == "double" ? ir::DType::kFloat64 : ir::DType::kFloat32;
  std::string b = loops.fill();
  b += fmt::format("  {} m = {};\n", st,
                   cuda::literal(lt, -std::numeric_limits<double>::infinity()));
  b += loops.each(fmt::format("      m = ({0})x > m ? ({0})x : m;\n", st));
  b += "  m = team_allreduce(m, RMaxNum());\n";
  b += fmt::format("  {0} s = ({0})0;\n", st);
  b += loops.each(fmt::format("      s += {}(({})x - m);\n", math_fn(st, "exp"), st));
  b += "  s = team_allreduce(s, RAdd());\n";
  b += fmt::format("  const {} log_s = {}(s);\n", st, math_fn(st, "log"));
  if (f.has_output(1))
    b += loops.each(fmt::format(
        "      {}\n", f.store(1, "off", fmt::format("({})((({})x - m) - log_s)", ct, st))));
  const std::string value =
      fmt::format("(({}){} - m) - log_s", st, f.load(0, "base + elem_off(t)"));
  b += "  if (active && rank == 0) {\n" + target_loss(f, l, st, "row", value);
  return b;
}

Expected<GeneratedKernel> sce(const AnchorFrame& f, const LossShape& l) {
  const std::string ct = cuda::compute_type(f.input(0).dtype);
  const std::string st = ct == "double" ? "double" : "float";
  const Segments segs = segments_for({l.n, l.c, l.d}, {false, true, false});
  if (l.reduction == "none") {
    if (l.n * l.d == 0) return empty_kernel(f, "loss");
    const TeamPlan plan = plan_teams(segs);
    RowLoops loops(f, segs, plan, ct);
    std::string body = team_prologue(segs, plan) + sce_row(f, l, loops, ct, st);
    body += fmt::format("    {}\n  }}\n", f.store(0, "row", fmt::format("({})loss_", ct)));
    return finish_anchor_kernel(f, "loss", team_helpers(segs, plan), body, plan.launch);
  }
  // One block walks every row: a block team over C.
  TeamPlan plan;
  plan.layout = TeamPlan::Layout::kBlock;
  int64_t team = 32;
  while (team < 1024 && team * 8 < segs.len) team <<= 1;
  plan.team = team;
  plan.per_thread = std::max<int64_t>(1, (segs.len + team - 1) / team);
  plan.cached = plan.per_thread <= kMaxCached;
  plan.launch.block = {team, 1, 1};
  RowLoops loops(f, segs, plan, ct);
  std::string body = fmt::format(
      "  const int rank = (int)threadIdx.x;\n"
      "  const bool active = true;\n"
      "  {0} ls = ({0})0, ws = ({0})0;\n"
      "  for (long long row = 0; row < {1}LL; ++row) {{\n"
      "  const long long base = row_base(row);\n",
      st, segs.rows);
  body += sce_row(f, l, loops, ct, st);
  body += "    ls += loss_;\n    ws += w_;\n  }\n  }\n";
  body += fmt::format("  if (rank == 0) {{\n    {}\n  }}\n",
                      f.store(0, "0", fmt::format("({})({})", ct, final_value(l))));
  return finish_anchor_kernel(f, "loss", team_helpers(segs, plan), body, plan.launch);
}

}  // namespace

Expected<GeneratedKernel> generate_loss(const AnchorFrame& f) {
  ASSIGN_OR_RETURN(LossShape l, loss_shape(f));
  if (f.anchor->op == ir::OpKind::NegativeLogLikelihoodLoss) return nll(f, l);
  return sce(f, l);
}

}  // namespace graphc::emit::reduction
