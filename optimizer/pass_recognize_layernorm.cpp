// Recognises the decomposed layer norm exporters write and replaces it with
// one LayerNormalization node (one kernel later):
//   m = ReduceMean(x, trailing axes); d = x - m; v = ReduceMean(d*d or d^2)
//   y = d / Sqrt(v + eps) [* gamma] [+ beta]
// gamma/beta must be constants; missing ones become 1 and 0.
#include <numeric>

#include "ir/shape_inference.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

namespace {

// The first normalized axis if `reduce` averages over trailing contiguous axes
// with keepdims, else -1.
int64_t trailing_axis(const Graph& g, const Node& reduce) {
  if (reduce.attrs.get_int("keepdims", 1) != 1) return -1;
  auto rank = static_cast<int64_t>(g.value(reduce.inputs[0]).shape.size());
  std::vector<int64_t> axes;
  if (reduce.has_input(1)) {
    const auto& c = g.value(reduce.inputs[1]).constant;
    if (!c) return -1;
    axes = c->to_i64_vector();
  } else {
    axes = reduce.attrs.get_ints("axes");
  }
  if (axes.empty()) return -1;
  for (auto& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return -1;
  return axes.front();
}

const Node* only_consumer(const Graph& g, ValueId v, OpKind op) {
  if (g.is_graph_output(v)) return nullptr;
  auto c = g.consumers(v);
  if (c.size() != 1) return nullptr;
  return g.node(c[0]).op == op ? &g.node(c[0]) : nullptr;
}

// A constant affine parameter broadcast to the normalized shape.
std::optional<ir::Tensor> affine_param(const Graph& g, ValueId v, const ir::Shape& norm_shape,
                                       ir::DType dt) {
  if (v == ir::kNoValue || !g.value(v).constant) return std::nullopt;
  const ir::Tensor& t = *g.value(v).constant;
  auto b = ir::broadcast_shapes(norm_shape, t.shape());
  if (!b.ok() || *b != norm_shape) return std::nullopt;
  ir::Tensor out(dt, norm_shape);
  auto n = out.numel();
  // Broadcast by index: the parameter's trailing dims align with the normalized dims.
  std::vector<int64_t> idx(norm_shape.size(), 0);
  const auto& ts = t.shape();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(norm_shape.size()) - 1; d >= 0; --d) {
      int64_t coord = rem % norm_shape[static_cast<size_t>(d)];
      rem /= norm_shape[static_cast<size_t>(d)];
      int64_t td = d - static_cast<int64_t>(norm_shape.size() - ts.size());
      if (td >= 0) {
        int64_t dim = ts[static_cast<size_t>(td)];
        off += (dim == 1 ? 0 : coord) * stride;
        stride *= dim;
      }
    }
    out.set_f64(i, t.get_f64(off));
  }
  return out;
}

}  // namespace

Status recognize_layernorm(Graph& g, PassContext& ctx) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mean = g.nodes[i];
    if (mean.dead || mean.op != OpKind::ReduceMean) continue;
    int64_t axis = trailing_axis(g, mean);
    if (axis < 0) continue;
    ValueId x = mean.inputs[0];
    if (!ir::is_float(g.value(x).dtype)) continue;
    const Node* sub = only_consumer(g, mean.outputs[0], OpKind::Sub);
    if (!sub || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) continue;
    ValueId d = sub->inputs.size() ? sub->outputs[0] : ir::kNoValue;
    auto d_users = g.consumers(d);
    if (d_users.size() != 2 || g.is_graph_output(d)) continue;
    const Node* square = nullptr;
    const Node* div = nullptr;
    for (ir::NodeId u : d_users) {
      const Node& n = g.node(u);
      if (n.op == OpKind::Pow && n.inputs[0] == d && is_scalar_near(g, n.inputs[1], 2.0))
        square = &n;
      else if (n.op == OpKind::Mul && n.inputs[0] == d && n.inputs[1] == d)
        square = &n;
      else if (n.op == OpKind::Div && n.inputs[0] == d)
        div = &n;
    }
    if (!square || !div) continue;
    const Node* var = only_consumer(g, square->outputs[0], OpKind::ReduceMean);
    if (!var || trailing_axis(g, *var) != axis) continue;
    const Node* add_eps = only_consumer(g, var->outputs[0], OpKind::Add);
    if (!add_eps) continue;
    auto eps = scalar_constant(g, other_operand(*add_eps, var->outputs[0]));
    if (!eps || *eps < 0) continue;
    const Node* sqrt = only_consumer(g, add_eps->outputs[0], OpKind::Sqrt);
    if (!sqrt || div->inputs[1] != sqrt->outputs[0] || consumer_count(g, sqrt->outputs[0]) != 1)
      continue;
    // Optional affine: Mul(gamma) then Add(beta).
    const auto& xshape = g.value(x).shape;
    ir::Shape norm_shape(xshape.begin() + axis, xshape.end());
    ir::DType dt = g.value(x).dtype;
    std::vector<const Node*> chain{&mean, sub, square, var, add_eps, sqrt, div};
    const Node* last = div;
    ir::Tensor gamma(dt, norm_shape), beta(dt, norm_shape);
    for (int64_t k = 0; k < gamma.numel(); ++k) gamma.set_f64(k, 1.0);
    bool has_beta = false;
    if (const Node* mul = only_consumer(g, last->outputs[0], OpKind::Mul)) {
      if (auto p = affine_param(g, other_operand(*mul, last->outputs[0]), norm_shape, dt)) {
        gamma = *p;
        chain.push_back(mul);
        last = mul;
      }
    }
    if (const Node* add = only_consumer(g, last->outputs[0], OpKind::Add)) {
      if (auto p = affine_param(g, other_operand(*add, last->outputs[0]), norm_shape, dt)) {
        beta = *p;
        has_beta = true;
        chain.push_back(add);
        last = add;
      }
    }
    if (g.value(last->outputs[0]).shape != xshape) continue;
    ValueId out = last->outputs[0];
    std::string name = last->name;
    for (const Node* n : chain) const_cast<Node*>(n)->dead = true;
    ir::Node ln;
    for (const Node* n : chain) ln.absorbed.push_back(n->name);
    ln.op = OpKind::LayerNormalization;
    ln.name = g.unique_name(name + "/layernorm");
    ValueId gid = g.add_constant(g.unique_name(ln.name + "/scale"), gamma);
    g.value(gid).is_initializer = true;
    ln.inputs = {x, gid};
    if (has_beta) {
      ValueId bid = g.add_constant(g.unique_name(ln.name + "/bias"), beta);
      g.value(bid).is_initializer = true;
      ln.inputs.push_back(bid);
    }
    ln.outputs = {out};
    ln.attrs.set("axis", ir::Attribute::of_int(axis));
    ln.attrs.set("epsilon", ir::Attribute::of_float(*eps));
    // Place it where the last matched node was: all its inputs exist by then.
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].dead && g.nodes[k].outputs.size() == 1 && g.nodes[k].outputs[0] == out) {
        g.nodes[k] = std::move(ln);
        break;
      }
    g.rebuild_producers();
    ctx.count("recognize-layernorm: layer norms");
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
