// Cancels layout ops that undo or repeat each other, so no kernel moves bytes
// only to move them back:
//   Transpose(Transpose(x, p1), p2)  -> Transpose(x, p1[p2[i]]), or x when that is the identity
//   R2(R1(x)), R1/R2 in {Reshape, Flatten, Squeeze, Unsqueeze}
//                                    -> Reshape(x, shape of R2), or x when the shapes match
//   Transpose(x, identity perm)      -> x
//   Transpose moving only size-1 dims -> Reshape (a view: row-major order is
//                                       unchanged), then merged like one
// The outer op is rewritten to read x directly; the inner op stays only while
// something else reads it (so another reader never causes duplicated work: the
// op count never grows). Graph outputs keep their names (bypass_value).
#include <optional>

#include "ir/data_movement_params.h"
#include "ir/symbolic_shapes.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::ValueId;

namespace {

bool is_reshape_like(OpKind op) { return ir::op_info(op).traits.reshape; }

// Over a shape range (PassContext::shape_range): the values whose shape
// varies, which a Reshape to explicit dims would fix at the opt shape.
struct Varying {
  std::vector<char> value;
  std::vector<std::vector<char>> dims;  // per value, which dims vary
  bool all = false;  // the range's shapes could not be inferred: take none
  bool operator()(ValueId v) const {
    return all || (static_cast<size_t>(v) < value.size() && value[static_cast<size_t>(v)]);
  }
};

Varying varying_values(const Graph& g, const PassContext& ctx) {
  Varying out;
  if (!ctx.shape_range) return out;
  auto sym = ir::infer_symbolic_shapes(g, *ctx.shape_range);
  if (!sym.ok()) {
    out.all = true;
    return out;
  }
  out.value.assign(sym->values.size(), 0);
  out.dims.resize(sym->values.size());
  for (size_t i = 0; i < sym->values.size(); ++i)
    for (const auto& d : sym->values[i].shape) {
      out.dims[i].push_back(!d.is_constant());
      out.value[i] |= !d.is_constant();
    }
  return out;
}

// Static shapes only: a symbolic (negative) dim cannot be written into a
// Reshape, nor a dim that varies over a shape range.
bool static_shape(const Graph& g, ValueId v, const Varying& varying) {
  if (varying(v)) return false;
  const ir::Value& val = g.value(v);
  if (!val.has_shape) return false;
  for (int64_t d : val.shape)
    if (d < 0) return false;
  return true;
}

std::optional<std::vector<int64_t>> perm_of(const Graph& g, const Node& t) {
  if (t.inputs.empty() || t.inputs[0] == ir::kNoValue || !g.value(t.inputs[0]).has_shape)
    return std::nullopt;
  auto rank = static_cast<int64_t>(g.value(t.inputs[0]).shape.size());
  auto p = ir::dm::transpose_perm(t.attrs.get_ints("perm"), t.attrs.has("perm"), rank);
  if (!p.ok()) return std::nullopt;
  return *p;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The live single-output producer of `v` when `want` accepts its op.
NodeId producer_where(const Graph& g, ValueId v, bool (*want)(OpKind)) {
  NodeId p = g.value(v).producer;
  if (p < 0) return -1;
  const Node& n = g.node(p);
  if (n.dead || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == ir::kNoValue) return -1;
  return want(n.op) ? p : -1;
}

bool is_transpose(OpKind op) { return op == OpKind::Transpose; }

void drop_if_unread(Graph& g, NodeId id) {
  Node& n = g.node(id);
  if (!g.is_graph_output(n.outputs[0]) && g.consumers(n.outputs[0]).empty()) n.dead = true;
}

// Makes `n` disappear when its output can be replaced by `to`.
bool try_bypass(Graph& g, Node& n, ValueId to) {
  if (!bypass_value(g, n.outputs[0], to)) return false;
  n.dead = true;
  return true;
}

void merge_transposes(Graph& g, Node& n, PassContext& ctx) {
  auto p2 = perm_of(g, n);
  if (!p2) return;
  NodeId inner = producer_where(g, n.inputs[0], &is_transpose);
  if (inner >= 0) {
    auto p1 = perm_of(g, g.node(inner));
    if (p1 && p1->size() == p2->size()) {
      // out[i] = mid[p2[i]] = x[p1[p2[i]]]
      std::vector<int64_t> q(p2->size());
      for (size_t i = 0; i < q.size(); ++i) q[i] = (*p1)[static_cast<size_t>((*p2)[i])];
      n.inputs[0] = g.node(inner).inputs[0];
      n.attrs.set("perm", ir::Attribute::of_ints(q));
      *p2 = q;
      drop_if_unread(g, inner);
      ctx.count("cancel-transposes: transpose pairs merged");
    }
  }
  if (is_identity(*p2) && try_bypass(g, n, n.inputs[0]))
    ctx.count("cancel-transposes: identity transposes removed");
}

void merge_reshapes(Graph& g, Node& n, PassContext& ctx, const Varying& varying) {
  NodeId inner = producer_where(g, n.inputs[0], &is_reshape_like);
  if (inner < 0) return;
  ValueId x = g.node(inner).inputs[0];
  ValueId out = n.outputs[0];
  if (!static_shape(g, x, varying) || !static_shape(g, out, varying)) return;
  const ir::Shape shape = g.value(out).shape;
  if (shape == g.value(x).shape && try_bypass(g, n, x)) {
    drop_if_unread(g, inner);
    ctx.count("cancel-transposes: reshape chains cancelled");
    return;
  }
  // Row-major order is untouched by every reshape-like op, so one Reshape to
  // the final (explicit) shape is the whole chain.
  auto rank = static_cast<int64_t>(shape.size());
  ValueId target =
      g.add_constant(g.unique_name(n.name + "/shape"), ir::Tensor::from_i64(shape, {rank}));
  n.op = OpKind::Reshape;
  n.inputs = {x, target};
  n.attrs = {};
  // An explicit 0 means "copy the input dim" unless allowzero is set.
  for (int64_t d : shape)
    if (d == 0) n.attrs.set("allowzero", ir::Attribute::of_int(1));
  drop_if_unread(g, inner);
  ctx.count("cancel-transposes: reshape chains merged");
}

// A Transpose whose non-1 dims keep their relative order moves no bytes.
bool moves_only_unit_dims(const Graph& g, const Node& t, const std::vector<int64_t>& perm) {
  const ir::Shape& in = g.value(t.inputs[0]).shape;
  int64_t last = -1;
  for (int64_t axis : perm) {
    if (in[static_cast<size_t>(axis)] == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

// Over a shape range, the Reshape's target for a Transpose whose varying
// dims stay where they are: 0 (ONNX's "copy the input's dim") there, the
// fixed dims as they are. nullopt where a varying dim moves or a fixed one is
// 0 (allowzero and copying cannot mix).
std::optional<ir::Shape> range_target(const Graph& g, const Node& n,
                                      const std::vector<int64_t>& perm, const Varying& varying) {
  if (varying.all || !g.value(n.outputs[0]).has_shape) return std::nullopt;
  const auto out = static_cast<size_t>(n.outputs[0]);
  if (out >= varying.dims.size()) return std::nullopt;
  ir::Shape shape = g.value(n.outputs[0]).shape;
  const std::vector<char>& dims = varying.dims[out];
  if (dims.size() != shape.size()) return std::nullopt;
  for (size_t j = 0; j < shape.size(); ++j) {
    if (!dims[j]) {
      if (shape[j] <= 0) return std::nullopt;
      continue;
    }
    if (perm[j] != static_cast<int64_t>(j)) return std::nullopt;
    shape[j] = 0;
  }
  return shape;
}

void transpose_to_reshape(Graph& g, Node& n, PassContext& ctx, const Varying& varying) {
  auto perm = perm_of(g, n);
  if (!perm || is_identity(*perm)) return;
  if (!moves_only_unit_dims(g, n, *perm)) return;
  std::optional<ir::Shape> shape;
  bool copy_dims = false;
  if (static_shape(g, n.outputs[0], varying)) {
    shape = g.value(n.outputs[0]).shape;
  } else if (varying(n.outputs[0])) {
    // e.g. a squeeze-excitation's N x C x 1 x 1 to channels-last over a batch range.
    shape = range_target(g, n, *perm, varying);
    copy_dims = true;
  }
  if (!shape) return;
  auto rank = static_cast<int64_t>(shape->size());
  ValueId target =
      g.add_constant(g.unique_name(n.name + "/shape"), ir::Tensor::from_i64(*shape, {rank}));
  n.op = OpKind::Reshape;
  n.inputs = {n.inputs[0], target};
  n.attrs = {};
  for (int64_t d : *shape)
    if (d == 0 && !copy_dims) n.attrs.set("allowzero", ir::Attribute::of_int(1));
  ctx.count("cancel-transposes: unit-dim transposes became views");
}

}  // namespace

Status cancel_transposes(Graph& g, PassContext& ctx) {
  const Varying varying = varying_values(g, ctx);
  // Node order is topological, so a chain of any length collapses in one sweep.
  for (auto& n : g.nodes) {
    if (n.dead || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == ir::kNoValue)
      continue;
    if (n.op == OpKind::Transpose) {
      merge_transposes(g, n, ctx);
      if (!n.dead && n.op == OpKind::Transpose) transpose_to_reshape(g, n, ctx, varying);
    }
    if (!n.dead && is_reshape_like(n.op)) merge_reshapes(g, n, ctx, varying);
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
