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

}  // namespace graphc::optimizer
