// Attention written as (q * s) @ (k^T * s) (torch's scaled_dot_product_attention
// decomposition scales both operands by d^-1/4) launches two scaling kernels
// before the product. A scalar commutes with the product:
//   MatMul(Mul(a, s1) [-> Transpose], Mul(b, s2) [-> Transpose]) = Mul(MatMul(a', b'), s1*s2)
// so the scale moves after the MatMul, where fuse-reductions folds it into the
// softmax kernel with the mask. Div by a scalar counts as Mul by its inverse.
// Exact up to float reassociation (one rounding of s1*s2 instead of two
// roundings of the operands).
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

namespace {

bool private_value(const Graph& g, ValueId v) {
  return !g.is_graph_output(v) && consumer_count(g, v) == 1;
}

// If `v` is Mul/Div by a float scalar constant (optionally under one private
// Transpose), returns the scaling node and its factor.
std::optional<std::pair<NodeId, double>> scaled_operand(const Graph& g, ValueId v) {
  if (!private_value(g, v)) return std::nullopt;
  NodeId p = g.value(v).producer;
  if (p < 0) return std::nullopt;
  if (g.node(p).op == OpKind::Transpose) {
    v = g.node(p).inputs[0];
    if (!private_value(g, v)) return std::nullopt;
    p = g.value(v).producer;
    if (p < 0) return std::nullopt;
  }
  const Node& n = g.node(p);
  if (n.dead || (n.op != OpKind::Mul && n.op != OpKind::Div) || !ir::is_float(g.value(v).dtype))
    return std::nullopt;
  // The scaled tensor must keep its shape (the scalar does not broadcast it up).
  if (g.value(n.inputs[0]).shape != g.value(v).shape && n.op == OpKind::Div) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    if (n.op == OpKind::Div && side == 0) continue;  // s / x is not a scale
    auto s = scalar_constant(g, n.inputs[static_cast<size_t>(side)]);
    ValueId other = n.inputs[static_cast<size_t>(1 - side)];
    if (!s || *s == 0 || g.value(other).shape != g.value(v).shape) continue;
    return std::make_pair(p, n.op == OpKind::Div ? 1.0 / *s : *s);
  }
  return std::nullopt;
}

}  // namespace

Status hoist_matmul_scale(Graph& g, PassContext& ctx) {
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    if (g.nodes[mi].dead || g.nodes[mi].op != OpKind::MatMul) continue;
    // float32/float64 only: in half precision moving the scale changes rounding
    // noticeably (the operands no longer round after scaling).
    const ir::DType mdt = g.value(g.nodes[mi].outputs[0]).dtype;
    if (mdt != ir::DType::kFloat32 && mdt != ir::DType::kFloat64) continue;
    double factor = 1.0;
    int hoisted = 0;
    for (size_t side = 0; side < 2; ++side) {
      auto scaled = scaled_operand(g, g.nodes[mi].inputs[side]);
      if (!scaled) continue;
      Node& scale = g.node(scaled->first);
      const bool x_first = scale.op == OpKind::Div || !scalar_constant(g, scale.inputs[0]);
      const ValueId unscaled = x_first ? scale.inputs[0] : scale.inputs[1];
      g.replace_all_uses(scale.outputs[0], unscaled);
      scale.dead = true;
      factor *= scaled->second;
      ++hoisted;
    }
    if (hoisted == 0) continue;
    const ValueId out = g.nodes[mi].outputs[0];
    ir::Value product = g.value(out);
    product.name = g.unique_name(g.nodes[mi].name + "/unscaled");
    product.constant.reset();
    const ir::DType dt = product.dtype;
    const ValueId pid = g.add_value(std::move(product));
    ir::Tensor s = ir::Tensor::from_f32({static_cast<float>(factor)}, {}).cast_to(dt);
    const ValueId sid = g.add_constant(g.unique_name(g.nodes[mi].name + "/scale"), std::move(s));
    g.nodes[mi].outputs[0] = pid;
    Node mul;
    mul.op = OpKind::Mul;
    mul.name = g.unique_name(g.nodes[mi].name + "/scale");
    mul.inputs = {pid, sid};
    mul.outputs = {out};
    g.insert_node_before(static_cast<NodeId>(mi + 1), std::move(mul));
    ctx.count("hoist-matmul-scale: scales moved after MatMul", hoisted);
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
