// The fusion passes. Each plans groups on the current graph, then turns every
// group into one FusedGroup node (fusion_group.cpp):
//  - fuse-reductions: Softmax/LogSoftmax/Layer-/RMS-/Group-/LpNormalization/Reduce*/pooling
//    take the elementwise chain that feeds them (scale, mask, residual add)
//    and the one that follows them (activation), as one kernel;
//  - fuse-epilogues: MatMul/Gemm/Conv/ConvTranspose take the elementwise
//    chain that follows them (bias, activation, residual add);
//  - fuse-elementwise: what is left of elementwise DAGs becomes multi-input,
//    multi-output kernels over one iteration shape.
#include <algorithm>
#include <set>

#include "ir/symbolic_shapes.h"
#include "optimizer/fusion_group.h"
#include "optimizer/passes.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

namespace {

bool fusable_elementwise(const Node& n) {
  return !n.dead && ir::is_elementwise(n.op) && n.op != OpKind::Identity && !n.outputs.empty() &&
         n.outputs.size() == 1;
}

const ir::Shape& out_shape(const Graph& g, const Node& n) { return g.value(n.outputs[0]).shape; }

bool is_gemm_anchor(OpKind op) {
  return op == OpKind::MatMul || op == OpKind::Gemm || op == OpKind::MatMulInteger;
}
// ConvInteger: the int8 tensor-core conv the quantized rewrites leave.
bool is_conv_anchor(OpKind op) {
  return op == OpKind::Conv || op == OpKind::ConvTranspose || op == OpKind::ConvInteger;
}
bool is_reduction_anchor(const Node& n) {
  auto cat = ir::op_info(n.op).category;
  if (n.op == OpKind::TopK || n.op == OpKind::ArgMax || n.op == OpKind::ArgMin) return false;
  if (n.op == OpKind::MaxPool) return n.outputs.size() == 1;
  return cat == ir::OpCategory::kReduction || n.op == OpKind::LayerNormalization ||
         n.op == OpKind::RMSNormalization || n.op == OpKind::GroupNormalization ||
         n.op == OpKind::LpNormalization || cat == ir::OpCategory::kPooling;
}

// The single live consumer of `v`, or -1 (several, none, or a graph output).
NodeId sole_consumer(const Graph& g, ValueId v) {
  if (g.is_graph_output(v)) return -1;
  auto c = g.consumers(v);
  return c.size() == 1 ? c[0] : -1;
}

// Follows single-consumer elementwise successors of `start` whose output shape
// is `shape`, adding them to `group` while no cycle appears.
void grow_epilogue(const Graph& g, NodeId start, const ir::Shape& shape,
                   std::vector<NodeId>& group) {
  ValueId cur = g.node(start).outputs[0];
  for (;;) {
    NodeId next = sole_consumer(g, cur);
    if (next < 0 || !fusable_elementwise(g.node(next)) || out_shape(g, g.node(next)) != shape)
      return;
    group.push_back(next);
    if (fusion_creates_cycle(g, group)) {
      group.pop_back();
      return;
    }
    cur = g.node(next).outputs[0];
  }
}

// Absorbs single-consumer elementwise producers of `value` of the same shape.
void grow_prologue(const Graph& g, ValueId value, std::vector<NodeId>& group) {
  NodeId p = g.value(value).producer;
  if (p < 0 || !fusable_elementwise(g.node(p))) return;
  if (out_shape(g, g.node(p)) != g.value(value).shape || sole_consumer(g, value) < 0) return;
  if (std::find(group.begin(), group.end(), p) != group.end()) return;
  group.push_back(p);
  if (fusion_creates_cycle(g, group)) {
    group.pop_back();
    return;
  }
  for (ValueId in : g.node(p).inputs)
    if (in != ir::kNoValue && g.value(in).shape == g.value(value).shape)
      grow_prologue(g, in, group);
}

// The normalizations diffusion UNets follow with SiLU, x * Sigmoid(x): the
// anchor's output feeds both nodes, which grow_epilogue (single consumers)
// cannot take. When `start`'s output is read only by a Sigmoid and by the
// Mul of it with that Sigmoid, both join the group and the epilogue grows on
// from the Mul. Only for GroupNormalization/RMSNormalization/LpNormalization,
// so the groups of every other anchor stay as they were.
void grow_silu_epilogue(const Graph& g, NodeId start, std::vector<NodeId>& group) {
  const Node& anchor = g.node(start);
  if (anchor.op != OpKind::GroupNormalization && anchor.op != OpKind::RMSNormalization &&
      anchor.op != OpKind::LpNormalization)
    return;
  const ValueId v = anchor.outputs[0];
  if (g.is_graph_output(v)) return;
  const auto users = g.consumers(v);
  if (users.size() != 2) return;
  for (int first = 0; first < 2; ++first) {
    const NodeId sig = users[static_cast<size_t>(first)], mul = users[static_cast<size_t>(1 - first)];
    const Node& s = g.node(sig);
    const Node& m = g.node(mul);
    if (s.op != OpKind::Sigmoid || m.op != OpKind::Mul || !fusable_elementwise(s) ||
        !fusable_elementwise(m) || sole_consumer(g, s.outputs[0]) != mul)
      continue;
    if (out_shape(g, m) != out_shape(g, anchor)) return;
    group.push_back(sig);
    group.push_back(mul);
    if (fusion_creates_cycle(g, group)) {
      group.resize(group.size() - 2);
      return;
    }
    grow_epilogue(g, mul, out_shape(g, anchor), group);
    return;
  }
}

// Over a shape range, an anchor kernel renders its prologue and epilogue with
// the opt shape's numbers (emit/cuda/fused_range.h): each elementwise op must
// read its inputs at offsets no varying dim enters, the op's own shape or a
// fixed shape under fixed trailing dims. A group with another broadcast is
// not formed (its elementwise ops run as elementwise kernels, which take
// broadcasts over varying dims).
bool offsets_fixed(const ir::SymShape& in, const ir::SymShape& out) {
  if (in == out) return true;
  auto fixed = [](const ir::DimExpr& d) { return d.is_constant(); };
  if (in.size() > out.size() || !std::all_of(in.begin(), in.end(), fixed)) return false;
  size_t first = 0;
  while (first < in.size() && in[first].constant() == 1) ++first;
  for (size_t d = out.size() - (in.size() - first); d < out.size(); ++d)
    if (!fixed(out[d])) return false;
  return true;
}

bool fusable_over_range(const Graph& g, const std::vector<NodeId>& group, const PassContext& ctx) {
  if (!ctx.shape_range) return true;
  auto sym = ir::infer_symbolic_shapes(g, *ctx.shape_range);
  if (!sym.ok()) return false;
  auto shape = [&](ValueId v) -> const ir::SymShape& {
    return sym->values[static_cast<size_t>(v)].shape;
  };
  for (NodeId id : group) {
    const Node& n = g.node(id);
    if (!ir::is_elementwise(n.op)) continue;
    for (ValueId in : n.inputs)
      if (in != ir::kNoValue && !offsets_fixed(shape(in), shape(n.outputs[0]))) return false;
  }
  return true;
}

// Applies `plan` to each node (by name, since ids change as groups form) and
// materializes the groups it returns.
template <typename Planner>
Status fuse_by_anchor(Graph& g, PassContext& ctx, const std::string& counter, Planner plan) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes)
    if (!n.dead) names.push_back(n.name);
  for (const auto& name : names) {
    NodeId id = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!g.nodes[i].dead && g.nodes[i].name == name) id = static_cast<NodeId>(i);
    if (id < 0) continue;
    ir::FusionKind kind = ir::FusionKind::kNone;
    std::vector<NodeId> group = plan(g, id, kind);
    if (group.size() < 2 || !fusable_over_range(g, group, ctx)) continue;
    auto made = materialize_group(g, group, kind);
    if (!made.ok()) return made.status();
    ctx.count(counter);
    ctx.count(counter + " (nodes fused)", static_cast<int64_t>(group.size()));
  }
  return Status::ok_status();
}

}  // namespace

Status fuse_reductions(Graph& g, PassContext& ctx) {
  return fuse_by_anchor(
      g, ctx, "fuse-reductions: groups", [](const Graph& gr, NodeId id, ir::FusionKind& kind) {
        const Node& n = gr.node(id);
        std::vector<NodeId> group;
        if (n.dead || !is_reduction_anchor(n)) return group;
        kind = ir::op_info(n.op).category == ir::OpCategory::kPooling ? ir::FusionKind::kPool
                                                                      : ir::FusionKind::kReduction;
        group.push_back(id);
        grow_prologue(gr, n.inputs[0], group);
        if (n.outputs.size() == 1) {
          grow_epilogue(gr, id, out_shape(gr, n), group);
          grow_silu_epilogue(gr, id, group);  // adds nothing when grow_epilogue did
        }
        return group;
      });
}

Status fuse_epilogues(Graph& g, PassContext& ctx) {
  return fuse_by_anchor(
      g, ctx, "fuse-epilogues: groups", [](const Graph& gr, NodeId id, ir::FusionKind& kind) {
        const Node& n = gr.node(id);
        std::vector<NodeId> group;
        if (n.dead || !(is_gemm_anchor(n.op) || is_conv_anchor(n.op))) return group;
        kind = is_gemm_anchor(n.op) ? ir::FusionKind::kGemm : ir::FusionKind::kConv;
        group.push_back(id);
        grow_epilogue(gr, id, out_shape(gr, n), group);
        return group;
      });
}

Status fuse_elementwise(Graph& g, PassContext& ctx) {
  // Start from the last unassigned elementwise node and absorb its elementwise
  // producers of the same iteration shape (a producer read outside the group
  // becomes an extra output of the group's kernel).
  std::set<std::string> assigned;
  for (;;) {
    NodeId seed = -1;
    for (NodeId i = static_cast<NodeId>(g.nodes.size()) - 1; i >= 0; --i) {
      const Node& n = g.node(i);
      if (fusable_elementwise(n) && !assigned.count(n.name)) {
        seed = i;
        break;
      }
    }
    if (seed < 0) break;
    assigned.insert(g.node(seed).name);
    const ir::Shape shape = out_shape(g, g.node(seed));
    std::vector<NodeId> group{seed};
    for (size_t k = 0; k < group.size(); ++k) {
      for (ValueId in : g.node(group[k]).inputs) {
        if (in == ir::kNoValue) continue;
        NodeId p = g.value(in).producer;
        if (p < 0 || !fusable_elementwise(g.node(p)) || assigned.count(g.node(p).name)) continue;
        if (out_shape(g, g.node(p)) != shape) continue;
        if (std::find(group.begin(), group.end(), p) != group.end()) continue;
        group.push_back(p);
        if (fusion_creates_cycle(g, group)) {
          group.pop_back();
          continue;
        }
        assigned.insert(g.node(p).name);
      }
    }
    if (group.size() < 2) continue;
    auto made = materialize_group(g, group, ir::FusionKind::kElementwise);
    if (!made.ok()) return made.status();
    ctx.count("fuse-elementwise: groups");
    ctx.count("fuse-elementwise: groups (nodes fused)", static_cast<int64_t>(group.size()));
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
