// Recognises the two GELU forms exporters write and replaces each with one
// Gelu node (so it can ride in a GEMM epilogue as one activation):
//   erf:  x * 0.5 * (1 + Erf(x / sqrt(2)))            -> Gelu(x)
//   tanh: 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> Gelu(x, approximate="tanh")
// The products may be associated either way and operands in either order.
#include <cmath>
#include <set>

#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

namespace {

const Node* sole_consumer_node(const Graph& g, ValueId v, OpKind op) {
  if (g.is_graph_output(v)) return nullptr;
  auto c = g.consumers(v);
  if (c.size() != 1) return nullptr;
  const Node& n = g.node(c[0]);
  return n.op == op ? &n : nullptr;
}

bool commutative_match(const Graph& g, const Node& n, ValueId known, double constant) {
  return is_scalar_near(g, other_operand(n, known), constant);
}

// Given a = (1 + f(x)), finds y = x * a * 0.5 in any association. Fills the
// nodes to delete (the final node is returned separately).
const Node* match_half_x_product(const Graph& g, ValueId x, ValueId a,
                                 std::vector<const Node*>& chain) {
  // (i) m1 = x*a; y = m1*0.5
  if (const Node* m1 = sole_consumer_node(g, a, OpKind::Mul)) {
    ValueId other = other_operand(*m1, a);
    if (other == x) {
      if (const Node* y = sole_consumer_node(g, m1->outputs[0], OpKind::Mul))
        if (commutative_match(g, *y, m1->outputs[0], 0.5)) {
          chain.push_back(m1);
          return y;
        }
    }
    // (iii) m1 = a*0.5; y = x*m1
    if (is_scalar_near(g, other, 0.5)) {
      if (const Node* y = sole_consumer_node(g, m1->outputs[0], OpKind::Mul))
        if (other_operand(*y, m1->outputs[0]) == x) {
          chain.push_back(m1);
          return y;
        }
    }
    // (ii) h = x*0.5; y = h*a
    if (const Node* h = producer_if(g, other, OpKind::Mul)) {
      if (other_operand(*h, x) != ir::kNoValue && commutative_match(g, *h, x, 0.5) &&
          consumer_count(g, h->outputs[0]) == 1 && !g.is_graph_output(h->outputs[0])) {
        chain.push_back(h);
        return m1;
      }
    }
  }
  return nullptr;
}

// x / sqrt(2) or x * (1/sqrt(2)): returns x.
ValueId match_scaled_input(const Graph& g, ValueId u) {
  if (const Node* d = producer_if(g, u, OpKind::Div))
    if (is_scalar_near(g, d->inputs[1], std::sqrt(2.0))) return d->inputs[0];
  if (const Node* m = producer_if(g, u, OpKind::Mul)) {
    if (is_scalar_near(g, m->inputs[1], 1.0 / std::sqrt(2.0))) return m->inputs[0];
    if (is_scalar_near(g, m->inputs[0], 1.0 / std::sqrt(2.0))) return m->inputs[1];
  }
  return ir::kNoValue;
}

// x + 0.044715 * x^3 : returns x, appending the nodes of the cubic term.
ValueId match_cubic_inner(const Graph& g, ValueId inner, std::vector<const Node*>& chain) {
  const Node* add = producer_if(g, inner, OpKind::Add);
  if (!add) return ir::kNoValue;
  for (int side = 0; side < 2; ++side) {
    ValueId x = add->inputs[static_cast<size_t>(side)];
    ValueId w = add->inputs[static_cast<size_t>(1 - side)];
    const Node* mul = producer_if(g, w, OpKind::Mul);
    if (!mul) continue;
    ValueId cube = ir::kNoValue;
    if (is_scalar_near(g, mul->inputs[0], 0.044715)) cube = mul->inputs[1];
    if (is_scalar_near(g, mul->inputs[1], 0.044715)) cube = mul->inputs[0];
    const Node* pow = producer_if(g, cube, OpKind::Pow);
    if (!pow || pow->inputs[0] != x || !is_scalar_near(g, pow->inputs[1], 3.0)) continue;
    chain.insert(chain.end(), {add, mul, pow});
    return x;
  }
  return ir::kNoValue;
}

bool single_use(const Graph& g, const std::vector<const Node*>& chain) {
  for (const Node* n : chain)
    if (consumer_count(g, n->outputs[0]) != 1 || g.is_graph_output(n->outputs[0])) return false;
  return true;
}

}  // namespace

Status recognize_gelu(Graph& g, PassContext& ctx) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& f = g.nodes[i];
    if (f.dead || (f.op != OpKind::Erf && f.op != OpKind::Tanh)) continue;
    std::vector<const Node*> chain{&f};
    ValueId x = ir::kNoValue;
    if (f.op == OpKind::Erf) {
      x = match_scaled_input(g, f.inputs[0]);
      if (x == ir::kNoValue) continue;
      chain.push_back(&g.node(g.value(f.inputs[0]).producer));
    } else {
      const Node* scale = producer_if(g, f.inputs[0], OpKind::Mul);
      if (!scale) continue;
      ValueId inner = ir::kNoValue;
      const double k = std::sqrt(2.0 / M_PI);
      if (is_scalar_near(g, scale->inputs[0], k)) inner = scale->inputs[1];
      if (is_scalar_near(g, scale->inputs[1], k)) inner = scale->inputs[0];
      if (inner == ir::kNoValue) continue;
      chain.push_back(scale);
      x = match_cubic_inner(g, inner, chain);
      if (x == ir::kNoValue) continue;
    }
    const Node* plus_one = sole_consumer_node(g, f.outputs[0], OpKind::Add);
    if (!plus_one || !commutative_match(g, *plus_one, f.outputs[0], 1.0)) continue;
    chain.push_back(plus_one);
    const Node* last = match_half_x_product(g, x, plus_one->outputs[0], chain);
    if (!last || !single_use(g, chain)) continue;
    // The cubic term reads x twice (Add and Pow); everything else must be private.
    std::string approximate = f.op == OpKind::Erf ? "none" : "tanh";
    ir::NodeId last_id = -1;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (&g.nodes[k] == last) last_id = static_cast<ir::NodeId>(k);
    std::vector<std::string> absorbed;
    for (const Node* n : chain)
      if (n != last) absorbed.push_back(n->name);
    for (const Node* n : chain) const_cast<Node*>(n)->dead = true;
    Node& gelu = g.node(last_id);
    gelu.absorbed.insert(gelu.absorbed.begin(), absorbed.begin(), absorbed.end());
    gelu.op = OpKind::Gelu;
    gelu.inputs = {x};
    gelu.attrs = {};
    gelu.attrs.set("approximate", ir::Attribute::of_string(approximate));
    ctx.count("recognize-gelu: " + approximate);
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
