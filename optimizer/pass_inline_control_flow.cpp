// inline-control-flow: control flow whose path is known at build time becomes
// straight-line code that the rest of the pipeline (and the GPU lowering)
// already handles. An If with a constant condition becomes its branch; an If
// on a run-time condition whose branches give the same dtypes and static
// shapes becomes both branches and a Where per output (both run every time:
// the fallback for CUDA graph conditional nodes, which the runtime does not
// use yet; branches the exporters emit are small); a Loop
// with a constant trip count (and a condition that stays true) and a Scan are
// unrolled, one copy of the body per iteration, scan outputs joined with
// Concat. Each copy is typed for its iteration first (ir::infer_subgraph, the
// iteration number a constant), so nothing changes unless every iteration
// types; past kMaxUnrolledNodes the node stays as it is (and the GPU lowering
// refuses it by name).
#include "ir/control_flow.h"
#include "optimizer/passes.h"
#include "reference/executor.h"

namespace graphc::optimizer {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Tensor;
using ir::ValueId;

constexpr int64_t kMaxUnrolledNodes = 4096;

// Nodes for one splice, built before the graph changes.
struct Splice {
  Graph& g;
  std::string prefix;
  std::vector<Node> nodes;

  ValueId new_value(const ir::Value& like, const std::string& hint) {
    ir::Value v;
    v.name = g.unique_name(prefix + "/" + hint);
    v.dtype = like.dtype;
    v.shape = like.shape;
    v.has_shape = like.has_shape;
    v.constant = like.constant;  // known values keep nested control flow inlinable
    return g.add_value(std::move(v));
  }
  ValueId constant(const std::string& hint, Tensor t) {
    return g.add_constant(g.unique_name(prefix + "/" + hint), std::move(t));
  }
  // Copies the nodes of the typed sub-graph `sub`, its inputs bound to
  // `bound`; returns the outer values of its outputs.
  std::vector<ValueId> copy(const Graph& sub, const std::vector<ValueId>& bound,
                            const std::string& tag) {
    std::vector<ValueId> map(sub.values.size(), ir::kNoValue);
    for (size_t i = 0; i < sub.inputs.size(); ++i) map[static_cast<size_t>(sub.inputs[i])] = bound[i];
    for (size_t v = 0; v < sub.values.size(); ++v) {
      const ir::Value& sv = sub.values[v];
      if (map[v] == ir::kNoValue && sv.constant && sv.producer < 0)
        map[v] = constant(tag + "/" + sv.name, *sv.constant);
    }
    for (const Node& sn : sub.nodes) {
      if (sn.dead) continue;
      Node n = sn;
      n.name = g.unique_name(prefix + "/" + tag + "/" + sn.name);
      for (auto& in : n.inputs)
        if (in != ir::kNoValue) in = map[static_cast<size_t>(in)];
      for (auto& out : n.outputs) {
        if (out == ir::kNoValue) continue;
        ValueId outer = new_value(sub.value(out), tag + "/" + sub.value(out).name);
        map[static_cast<size_t>(out)] = outer;
        out = outer;
      }
      nodes.push_back(std::move(n));
    }
    std::vector<ValueId> outs;
    for (ValueId o : sub.outputs) outs.push_back(map[static_cast<size_t>(o)]);
    return outs;
  }
  void add(ir::OpKind op, std::vector<ValueId> ins, ValueId out, ir::AttributeMap attrs = {}) {
    Node n;
    n.op = op;
    n.name = g.unique_name(prefix + "/" + std::string(ir::op_name(op)));
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    nodes.push_back(std::move(n));
  }
  // Joins per-iteration values along `axis` (a new axis) into `out`.
  void stack(const std::vector<ValueId>& parts, int64_t axis, ValueId out) {
    std::vector<ValueId> expanded;
    ValueId axes = constant("axes", Tensor::from_i64({axis}, {1}));
    for (ValueId p : parts) {
      ir::Value like = g.value(p);
      like.constant.reset();
      like.shape.insert(like.shape.begin() + axis, 1);
      ValueId e = new_value(like, "unsqueezed");
      add(ir::OpKind::Unsqueeze, {p, axes}, e);
      expanded.push_back(e);
    }
    ir::AttributeMap a;
    a.set("axis", ir::Attribute::of_int(axis));
    add(ir::OpKind::Concat, expanded, out, a);
  }
};

ir::SubgraphInput typed(const Graph& g, ValueId id) {
  const ir::Value& v = g.value(id);
  return {v.dtype, v.shape, v.constant ? &*v.constant : nullptr};
}

std::vector<ValueId> captures(const Node& n) {
  auto c = static_cast<size_t>(ir::captured_count(n));
  return {n.inputs.end() - static_cast<std::ptrdiff_t>(c), n.inputs.end()};
}

ir::ShapeInferenceOptions infer_options() {
  ir::ShapeInferenceOptions o;
  o.evaluator = reference::constant_evaluator();
  return o;
}

// If on a run-time condition: both branches, each output Where(cond, then,
// else). Only where every output of both branches has the If output's dtype
// and static shape (a Where cannot select between shapes) and the branches
// together stay under kMaxUnrolledNodes; otherwise false (the node stays, and
// the GPU lowering refuses it by name).
bool same_static_type(const ir::Value& a, const ir::Value& b) {
  return a.has_shape && b.has_shape && a.dtype == b.dtype && a.shape == b.shape;
}

bool select_if_branches(Graph& g, const Node& n, Splice& s) {
  std::vector<ir::SubgraphInput> ins;
  for (ValueId c : captures(n)) ins.push_back(typed(g, c));
  auto then_g = ir::infer_subgraph(*n.subgraphs[0], ins, infer_options());
  auto else_g = ir::infer_subgraph(*n.subgraphs[1], ins, infer_options());
  if (!then_g.ok() || !else_g.ok()) return false;
  if (then_g->nodes.size() + else_g->nodes.size() > static_cast<size_t>(kMaxUnrolledNodes))
    return false;
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    if (n.outputs[o] == ir::kNoValue) continue;
    const ir::Value& out = g.value(n.outputs[o]);
    if (!same_static_type(out, then_g->value(then_g->outputs[o])) ||
        !same_static_type(out, else_g->value(else_g->outputs[o])))
      return false;
  }
  const ir::Value& cond = g.value(n.inputs[0]);
  if (cond.dtype != ir::DType::kBool || !cond.has_shape || ir::shape_numel(cond.shape) != 1)
    return false;
  // The condition as a scalar, so Where keeps each output's shape (a [1]
  // condition would broadcast a scalar output to [1]).
  ValueId c = n.inputs[0];
  if (!cond.shape.empty()) {
    ir::Value scalar = cond;
    scalar.shape.clear();
    scalar.constant.reset();
    c = s.new_value(scalar, "condition");
    s.add(ir::OpKind::Reshape, {n.inputs[0], s.constant("scalar_shape", Tensor::from_i64({}, {0}))},
          c);
  }
  auto then_outs = s.copy(*then_g, captures(n), "then");
  auto else_outs = s.copy(*else_g, captures(n), "else");
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] != ir::kNoValue)
      s.add(ir::OpKind::Where, {c, then_outs[o], else_outs[o]}, n.outputs[o]);
  return true;
}

// If with a constant condition: its branch; on a run-time condition, both
// selected (above). Returns false when not inlinable.
Expected<bool> inline_if(Graph& g, const Node& n, Splice& s) {
  const ir::Value& cond = g.value(n.inputs[0]);
  if (!cond.constant) return select_if_branches(g, n, s);
  const Graph& branch = *n.subgraphs[cond.constant->get_i64(0) != 0 ? 0 : 1];
  std::vector<ir::SubgraphInput> ins;
  for (ValueId c : captures(n)) ins.push_back(typed(g, c));
  ASSIGN_OR_RETURN(Graph typed_branch, ir::infer_subgraph(branch, ins, infer_options()));
  auto outs = s.copy(typed_branch, captures(n), "branch");
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] != ir::kNoValue) s.add(ir::OpKind::Identity, {outs[o]}, n.outputs[o]);
  return true;
}

Expected<bool> inline_loop(Graph& g, const Node& n, Splice& s) {
  const auto c = static_cast<size_t>(ir::captured_count(n));
  const size_t formal = n.inputs.size() - c;
  const size_t carried = formal > 2 ? formal - 2 : 0;
  if (!n.has_input(0) || !g.value(n.inputs[0]).constant) return false;
  if (n.has_input(1) && !(g.value(n.inputs[1]).constant && g.value(n.inputs[1]).constant->get_i64(0)))
    return false;
  const int64_t trips = std::max<int64_t>(0, g.value(n.inputs[0]).constant->get_i64(0));
  const Graph& body = *n.subgraphs[0];
  if (trips * static_cast<int64_t>(body.nodes.size() + 2) > kMaxUnrolledNodes) return false;
  Tensor yes(ir::DType::kBool, {});
  yes.set_i64(0, 1);
  std::vector<Graph> typed_bodies;
  for (int64_t i = 0; i < trips; ++i) {
    Tensor iter = Tensor::scalar_i64(i);
    std::vector<ir::SubgraphInput> ins{{ir::DType::kInt64, {}, &iter}, {ir::DType::kBool, {}, &yes}};
    for (size_t k = 0; k < carried; ++k) {
      auto t = typed(g, n.inputs[2 + k]);
      t.constant = nullptr;
      ins.push_back(t);
    }
    for (ValueId cap : captures(n)) ins.push_back(typed(g, cap));
    auto tb = ir::infer_subgraph(body, ins, infer_options());
    if (!tb.ok()) return false;
    // Every iteration but the last must keep going: its condition must be a constant true.
    const ir::Value& cond_out = tb->value(tb->outputs[0]);
    if (i + 1 < trips && !(cond_out.constant && cond_out.constant->get_i64(0))) return false;
    typed_bodies.push_back(std::move(*tb));
  }
  std::vector<ValueId> state(n.inputs.begin() + 2, n.inputs.begin() + 2 + static_cast<std::ptrdiff_t>(carried));
  const size_t k_scan = n.outputs.size() - carried;
  std::vector<std::vector<ValueId>> scans(k_scan);
  for (int64_t i = 0; i < trips; ++i) {
    std::vector<ValueId> bound{s.constant("iter", Tensor::scalar_i64(i)), s.constant("cond", yes)};
    bound.insert(bound.end(), state.begin(), state.end());
    for (ValueId cap : captures(n)) bound.push_back(cap);
    auto outs = s.copy(typed_bodies[static_cast<size_t>(i)], bound, "iter" + std::to_string(i));
    for (size_t k = 0; k < carried; ++k) state[k] = outs[1 + k];
    for (size_t j = 0; j < k_scan; ++j) scans[j].push_back(outs[1 + carried + j]);
  }
  for (size_t k = 0; k < carried; ++k)
    if (n.outputs[k] != ir::kNoValue) s.add(ir::OpKind::Identity, {state[k]}, n.outputs[k]);
  for (size_t j = 0; j < k_scan; ++j) {
    if (n.outputs[carried + j] == ir::kNoValue) continue;
    if (trips == 0) return false;  // an empty scan output: leave it to the node
    s.stack(scans[j], 0, n.outputs[carried + j]);
  }
  return true;
}

Expected<bool> inline_scan(Graph& g, const Node& n, Splice& s) {
  std::vector<const ir::Shape*> shapes;
  for (ValueId in : n.inputs) shapes.push_back(in == ir::kNoValue ? nullptr : &g.value(in).shape);
  ASSIGN_OR_RETURN(ir::ScanParams p, ir::scan_params(n, shapes));
  const Graph& body = *n.subgraphs[0];
  if (p.batched || p.seq_len == 0 ||
      p.seq_len * static_cast<int64_t>(body.nodes.size() + 2 * p.scans + 2) > kMaxUnrolledNodes)
    return false;
  std::vector<ir::SubgraphInput> ins;
  for (int64_t i = 0; i < p.states; ++i) {
    auto t = typed(g, n.inputs[static_cast<size_t>(i)]);
    t.constant = nullptr;
    ins.push_back(t);
  }
  for (int64_t j = 0; j < p.scans; ++j) {
    auto t = typed(g, n.inputs[static_cast<size_t>(p.states + j)]);
    t.shape = ir::shape_without_axis(t.shape, p.input_axes[static_cast<size_t>(j)]);
    t.constant = nullptr;
    ins.push_back(t);
  }
  for (ValueId cap : captures(n)) ins.push_back(typed(g, cap));
  auto tb = ir::infer_subgraph(body, ins, infer_options());
  if (!tb.ok()) return false;
  std::vector<ValueId> state(n.inputs.begin(), n.inputs.begin() + p.states);
  std::vector<std::vector<ValueId>> outs_per_step(static_cast<size_t>(p.outputs));
  for (int64_t t = 0; t < p.seq_len; ++t) {
    std::vector<ValueId> bound = state;
    for (int64_t j = 0; j < p.scans; ++j) {
      auto u = static_cast<size_t>(j);
      ValueId src = n.inputs[static_cast<size_t>(p.states + j)];
      int64_t at = p.input_reverse[u] ? p.seq_len - 1 - t : t;
      // Gather with a scalar index drops the axis: the step's slice.
      ir::Value like = g.value(src);
      like.constant.reset();
      like.shape = ir::shape_without_axis(like.shape, p.input_axes[u]);
      ValueId slice = s.new_value(like, "step" + std::to_string(t));
      ir::AttributeMap a;
      a.set("axis", ir::Attribute::of_int(p.input_axes[u]));
      s.add(ir::OpKind::Gather, {src, s.constant("index", Tensor::scalar_i64(at))}, slice, a);
      bound.push_back(slice);
    }
    for (ValueId cap : captures(n)) bound.push_back(cap);
    auto outs = s.copy(*tb, bound, "step" + std::to_string(t));
    for (int64_t i = 0; i < p.states; ++i) state[static_cast<size_t>(i)] = outs[static_cast<size_t>(i)];
    for (int64_t k = 0; k < p.outputs; ++k)
      outs_per_step[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(p.states + k)]);
  }
  for (int64_t i = 0; i < p.states; ++i)
    if (n.outputs[static_cast<size_t>(i)] != ir::kNoValue)
      s.add(ir::OpKind::Identity, {state[static_cast<size_t>(i)]}, n.outputs[static_cast<size_t>(i)]);
  for (int64_t k = 0; k < p.outputs; ++k) {
    ValueId out = n.outputs[static_cast<size_t>(p.states + k)];
    if (out == ir::kNoValue) continue;
    auto parts = outs_per_step[static_cast<size_t>(k)];
    if (p.output_reverse[static_cast<size_t>(k)]) std::reverse(parts.begin(), parts.end());
    int64_t axis = p.output_axes[static_cast<size_t>(k)];
    if (axis < 0) axis += static_cast<int64_t>(g.value(out).shape.size());
    s.stack(parts, axis, out);
  }
  return true;
}

}  // namespace

Status inline_control_flow(Graph& g, PassContext& ctx) {
  bool changed = false;
  const size_t values_before = g.values.size();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& node = g.nodes[i];
    if (node.dead || ir::op_info(node.op).category != ir::OpCategory::kControlFlow) continue;
    const Node n = node;  // the splice adds values; keep a stable copy
    Splice s{g, n.name, {}};
    Expected<bool> done = false;
    if (n.op == ir::OpKind::If) done = inline_if(g, n, s);
    else if (n.op == ir::OpKind::Loop) done = inline_loop(g, n, s);
    else done = inline_scan(g, n, s);
    if (!done.ok()) return done.status().with_context(fmt::format("node '{}' ({})", n.name, ir::op_name(n.op)));
    if (!*done) continue;  // values it added stay unused; a later compact() drops them
    changed = true;
    g.nodes[i].dead = true;
    for (auto& added : s.nodes) added.absorbed.push_back(n.name);
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), s.nodes.begin(), s.nodes.end());
    g.rebuild_producers();
    --i;  // revisit the copies: they may hold control flow of their own (wraps, then ++)
    ctx.count("inline-control-flow: nodes inlined");
  }
  if (changed || g.values.size() != values_before) g.compact();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
