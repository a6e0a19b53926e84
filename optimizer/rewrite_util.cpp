#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

bool bypass_value(ir::Graph& g, ir::ValueId from, ir::ValueId to) {
  if (g.is_graph_output(from)) {
    const ir::Value& t = g.value(to);
    bool plain = t.producer >= 0 && !g.is_graph_input(to) && !g.is_graph_output(to);
    if (!plain) return false;
    std::string name = g.value(from).name;
    g.value(from).name = g.unique_name(name + "/bypassed");
    g.value(to).name = name;
  }
  g.replace_all_uses(from, to);
  return true;
}

}  // namespace graphc::optimizer

namespace graphc::optimizer {

std::optional<double> scalar_constant(const ir::Graph& g, ir::ValueId id) {
  if (id == ir::kNoValue) return std::nullopt;
  const auto& v = g.value(id);
  if (!v.constant || v.constant->numel() != 1) return std::nullopt;
  return v.constant->get_f64(0);
}

bool is_scalar_near(const ir::Graph& g, ir::ValueId id, double want, double tol) {
  auto s = scalar_constant(g, id);
  return s && std::abs(*s - want) <= tol * std::max(1.0, std::abs(want));
}

const ir::Node* producer_if(const ir::Graph& g, ir::ValueId id, ir::OpKind op) {
  if (id == ir::kNoValue) return nullptr;
  ir::NodeId p = g.value(id).producer;
  if (p < 0) return nullptr;
  const ir::Node& n = g.node(p);
  return !n.dead && n.op == op ? &n : nullptr;
}

ir::ValueId other_operand(const ir::Node& n, ir::ValueId known) {
  if (n.inputs.size() != 2) return ir::kNoValue;
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return ir::kNoValue;
}

int consumer_count(const ir::Graph& g, ir::ValueId id) {
  return static_cast<int>(g.consumers(id).size());
}

Expected<QdqActivation> match_int8_activation(const ir::Graph& g, ir::ValueId v) {
  const ir::Node* dq = producer_if(g, v, ir::OpKind::DequantizeLinear);
  if (!dq || !ir::is_float(g.value(v).dtype)) return unsupported("");
  QdqActivation a;
  a.xq = dq->inputs[0];
  const ir::DType t = g.value(a.xq).dtype;
  if (t != ir::DType::kInt8 && t != ir::DType::kUInt8)
    return unsupported("activation is {}, not int8/uint8", ir::dtype_name(t));
  auto s = scalar_constant(g, dq->inputs[1]);
  if (!s || !(*s > 0)) return unsupported("activation scale is not a positive constant scalar");
  a.scale = *s;
  if (dq->has_input(2)) {
    auto z = scalar_constant(g, dq->inputs[2]);
    if (!z) return unsupported("activation zero point is not a constant scalar");
    a.zero_point = static_cast<int64_t>(*z);
  }
  return a;
}

Status zero_points_are_zero(const ir::Graph& g, const ir::Node& dq, const char* what) {
  if (!dq.has_input(2)) return Status::ok_status();
  if (!is_constant(g, dq.inputs[2])) return unsupported("the {}'s zero point is not a constant", what);
  const ir::Tensor& z = *g.value(dq.inputs[2]).constant;
  for (int64_t i = 0; i < z.numel(); ++i)
    if (z.get_f64(i) != 0) return unsupported("the {}'s zero points are not 0", what);
  return Status::ok_status();
}

}  // namespace graphc::optimizer
