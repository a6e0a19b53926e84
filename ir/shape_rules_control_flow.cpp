// Shape rules for If, Loop and Scan: each infers its sub-graphs for the
// node's input types (ir/control_flow.h) and reads the outputs off them.
// graphc's shapes are static, so a run-time If must give the same shapes in
// both branches, a loop-carried value must keep its shape, and a Loop with
// scan outputs needs its trip count at build time.
#include "ir/control_flow.h"
#include "ir/shape_rules.h"

namespace graphc::ir::shape_rules {

namespace {

// Handed on to the sub-graph's inference, which reports what its rules read.
SubgraphInput input_of(ShapeContext& ctx, size_t i) {
  return {ctx.dtype(i), ctx.shape(i), ctx.constant_for_subgraph(i)};
}

std::vector<SubgraphInput> captures_of(ShapeContext& ctx) {
  std::vector<SubgraphInput> out;
  const auto c = static_cast<size_t>(captured_count(ctx.node()));
  for (size_t i = ctx.num_inputs() - c; i < ctx.num_inputs(); ++i) out.push_back(input_of(ctx, i));
  return out;
}

Status need_subgraphs(ShapeContext& ctx, size_t count) {
  if (ctx.node().subgraphs.size() != count)
    return ctx.error("{} needs {} sub-graph(s), the node has {}", op_name(ctx.node().op), count,
                     ctx.node().subgraphs.size());
  if (captured_count(ctx.node()) < 0 ||
      captured_count(ctx.node()) > static_cast<int64_t>(ctx.num_inputs()))
    return ctx.error("_captures is {}, the node has {} inputs", captured_count(ctx.node()),
                     ctx.num_inputs());
  return Status::ok_status();
}

const Value& out_value(const Graph& g, size_t i) { return g.value(g.outputs[i]); }

}  // namespace

Status infer_If(ShapeContext& ctx) {
  RETURN_IF_ERROR(need_subgraphs(ctx, 2));
  if (ctx.dtype(0) != DType::kBool || shape_numel(ctx.shape(0)) != 1)
    return ctx.error("cond must be one bool, got {}[{}]", dtype_name(ctx.dtype(0)),
                     shape_to_string(ctx.shape(0)));
  auto captures = captures_of(ctx);
  const Tensor* cond = ctx.constant(0);
  std::vector<Graph> branches;
  for (size_t b = 0; b < 2; ++b) {
    // A build-time condition needs only its branch: the other may not even type-check.
    if (cond && (cond->get_i64(0) != 0) != (b == 0)) continue;
    ASSIGN_OR_RETURN(Graph g, infer_subgraph(*ctx.node().subgraphs[b], captures, ctx.options()));
    if (g.outputs.size() != ctx.num_outputs())
      return ctx.error("{} branch has {} outputs, the node {}", b == 0 ? "then" : "else",
                       g.outputs.size(), ctx.num_outputs());
    branches.push_back(std::move(g));
  }
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    const Value& v = out_value(branches[0], o);
    if (branches.size() == 2) {
      const Value& e = out_value(branches[1], o);
      if (v.dtype != e.dtype || v.shape != e.shape)
        return ctx.error(
            "output {}: the then branch gives {}[{}], the else branch {}[{}]; with a run-time "
            "condition graphc needs both alike (static shapes)",
            o, dtype_name(v.dtype), shape_to_string(v.shape), dtype_name(e.dtype),
            shape_to_string(e.shape));
    }
    if (branches.size() == 1 && v.constant) ctx.set_output_constant(o, *v.constant);
    else ctx.set_output(o, v.dtype, v.shape);
  }
  return Status::ok_status();
}

Status infer_Loop(ShapeContext& ctx) {
  RETURN_IF_ERROR(need_subgraphs(ctx, 1));
  const Graph& body = *ctx.node().subgraphs[0];
  const auto c = static_cast<size_t>(captured_count(ctx.node()));
  // M and cond may be empty, and trailing empty inputs are dropped at import.
  const size_t formal = ctx.num_inputs() - c;
  const size_t n = formal > 2 ? formal - 2 : 0;
  if (body.inputs.size() != n + 2 + c || body.outputs.size() < n + 1)
    return ctx.error("the body takes {} inputs and gives {} outputs; with {} loop-carried values "
                     "it needs {} inputs and at least {} outputs",
                     body.inputs.size(), body.outputs.size(), n, n + 2 + c, n + 1);
  const size_t k = body.outputs.size() - 1 - n;
  if (ctx.num_outputs() != n + k)
    return ctx.error("Loop has {} outputs, its body gives {} loop-carried and {} scan outputs",
                     ctx.num_outputs(), n, k);
  std::optional<int64_t> trips;
  if (ctx.has_input(0)) {
    if (!is_integer(ctx.dtype(0)) || shape_numel(ctx.shape(0)) != 1)
      return ctx.error("M must be one integer, got {}[{}]", dtype_name(ctx.dtype(0)),
                       shape_to_string(ctx.shape(0)));
    if (const Tensor* m = ctx.constant(0)) trips = std::max<int64_t>(0, m->get_i64(0));
  }
  if (ctx.has_input(1) && (ctx.dtype(1) != DType::kBool || shape_numel(ctx.shape(1)) != 1))
    return ctx.error("cond must be one bool, got {}[{}]", dtype_name(ctx.dtype(1)),
                     shape_to_string(ctx.shape(1)));
  if (k > 0 && !trips)
    return unsupported(
        "Loop with {} scan output(s) needs its trip count M known at build time (graphc needs "
        "static shapes)",
        k);
  if (!ctx.has_input(0) && !ctx.has_input(1))
    return ctx.error("Loop has neither a trip count nor a condition: it would never end");
  // The first iteration's types: iter 0 and the initial values (types only:
  // they change from one iteration to the next).
  Tensor iter0 = Tensor::scalar_i64(0);
  std::vector<SubgraphInput> ins;
  ins.push_back({DType::kInt64, {}, trips && *trips > 0 ? &iter0 : nullptr});
  ins.push_back({DType::kBool, {}, nullptr});
  for (size_t i = 0; i < n; ++i) ins.push_back({ctx.dtype(2 + i), ctx.shape(2 + i), nullptr});
  for (auto& cap : captures_of(ctx)) ins.push_back(cap);
  ASSIGN_OR_RETURN(Graph g, infer_subgraph(body, ins, ctx.options()));
  const Value& cond_out = out_value(g, 0);
  if (cond_out.dtype != DType::kBool || shape_numel(cond_out.shape) != 1)
    return ctx.error("the body's first output (cond) must be one bool, got {}[{}]",
                     dtype_name(cond_out.dtype), shape_to_string(cond_out.shape));
  for (size_t i = 0; i < n; ++i) {
    const Value& v = out_value(g, 1 + i);
    if (v.dtype != ctx.dtype(2 + i) || v.shape != ctx.shape(2 + i))
      return ctx.error("loop-carried value {} enters as {}[{}] and leaves the body as {}[{}]; "
                       "graphc needs it to keep its type and shape",
                       i, dtype_name(ctx.dtype(2 + i)), shape_to_string(ctx.shape(2 + i)),
                       dtype_name(v.dtype), shape_to_string(v.shape));
    ctx.set_output(i, v.dtype, v.shape);
  }
  for (size_t j = 0; j < k; ++j) {
    const Value& v = out_value(g, 1 + n + j);
    ctx.set_output(n + j, v.dtype, shape_with_axis(v.shape, 0, *trips));
  }
  return Status::ok_status();
}

Status infer_Scan(ShapeContext& ctx) {
  RETURN_IF_ERROR(need_subgraphs(ctx, 1));
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    shapes.push_back(ctx.has_input(i) ? &ctx.shape(i) : nullptr);
  ASSIGN_OR_RETURN(ScanParams p, scan_params(ctx.node(), shapes));
  const Graph& body = *ctx.node().subgraphs[0];
  if (static_cast<int64_t>(body.outputs.size()) != p.states + p.outputs)
    return ctx.error("the body gives {} outputs, the node has {}", body.outputs.size(),
                     ctx.num_outputs());
  std::vector<SubgraphInput> ins;
  for (int64_t i = 0; i < p.states; ++i) {
    auto u = static_cast<size_t>(i);
    Shape s = p.batched ? shape_without_axis(ctx.shape(u), 0) : ctx.shape(u);
    ins.push_back({ctx.dtype(u), s, nullptr});
  }
  for (int64_t j = 0; j < p.scans; ++j) {
    auto u = static_cast<size_t>(p.states + j);
    Shape s = p.batched ? shape_without_axis(ctx.shape(u), 0) : ctx.shape(u);
    ins.push_back({ctx.dtype(u), shape_without_axis(s, p.input_axes[static_cast<size_t>(j)]), nullptr});
  }
  for (auto& cap : captures_of(ctx)) ins.push_back(cap);
  ASSIGN_OR_RETURN(Graph g, infer_subgraph(body, ins, ctx.options()));
  for (int64_t i = 0; i < p.states; ++i) {
    auto u = static_cast<size_t>(i);
    const Value& v = out_value(g, u);
    if (v.dtype != ins[u].dtype || v.shape != ins[u].shape)
      return ctx.error("state {} enters as {}[{}] and leaves the body as {}[{}]", i,
                       dtype_name(ins[u].dtype), shape_to_string(ins[u].shape),
                       dtype_name(v.dtype), shape_to_string(v.shape));
    ctx.set_output(u, v.dtype, ctx.shape(u));
  }
  for (int64_t k = 0; k < p.outputs; ++k) {
    const Value& v = out_value(g, static_cast<size_t>(p.states + k));
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(p.output_axes[static_cast<size_t>(k)],
                                                  static_cast<int64_t>(v.shape.size()) + 1));
    Shape s = shape_with_axis(v.shape, axis, p.seq_len);
    if (p.batched) s = shape_with_axis(s, 0, p.batch);
    ctx.set_output(static_cast<size_t>(p.states + k), v.dtype, s);
  }
  return Status::ok_status();
}

}  // namespace graphc::ir::shape_rules
