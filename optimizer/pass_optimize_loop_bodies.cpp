// optimize-loop-bodies: a Loop that inline-control-flow left in place (its
// trip count or condition is known only at run time) stays one node, and the
// GPU plan runs its body as a sub-plan inside a CUDA graph WHILE node
// (emit/plan/loop_plan.cpp). Here the body is typed for the node's inputs
// (iteration number and condition unknown, loop-carried values with their
// entry types, captured values as the outer graph has them: constants stay
// constants, so weight preparation folds) and optimized by this same pipeline
// as a graph of its own; nested loops are handled when it reaches them. The
// node is marked (_body_typed) so the plan knows the body is final: the
// sub-graph object is the one the plan lowers, and it holds the constants the
// engine's weights point at.
#include <memory>

#include "ir/control_flow.h"
#include "optimizer/pass.h"
#include "optimizer/passes.h"
#include "reference/executor.h"

namespace graphc::optimizer {

namespace {

Expected<ir::Graph> typed_body(const ir::Graph& g, const ir::Node& n) {
  const auto c = static_cast<size_t>(ir::captured_count(n));
  const size_t formal = n.inputs.size() - c;
  const size_t carried = formal > 2 ? formal - 2 : 0;
  std::vector<ir::SubgraphInput> ins{{ir::DType::kInt64, {}, nullptr}, {ir::DType::kBool, {}, nullptr}};
  for (size_t k = 0; k < carried; ++k) {
    const ir::Value& v = g.value(n.inputs[2 + k]);
    ins.push_back({v.dtype, v.shape, nullptr});  // changes from one iteration to the next
  }
  for (size_t i = formal; i < n.inputs.size(); ++i) {
    const ir::Value& v = g.value(n.inputs[i]);
    ins.push_back({v.dtype, v.shape, v.constant ? &*v.constant : nullptr});
  }
  ir::ShapeInferenceOptions options;
  options.evaluator = reference::constant_evaluator();
  return ir::infer_subgraph(*n.subgraphs[0], ins, options);
}

}  // namespace

Status optimize_loop_bodies(ir::Graph& g, PassContext& ctx) {
  for (auto& n : g.nodes) {
    if (n.dead || n.op != ir::OpKind::Loop || n.subgraphs.size() != 1 || n.attrs.has("_body_typed"))
      continue;
    auto where = [&](const Status& st) {
      return st.with_context(fmt::format("Loop '{}' body", n.name));
    };
    auto body = typed_body(g, n);
    // A body that needs build-time values the loop does not give (a Slice
    // start from the iteration number) stays as it is: the reference executor
    // runs the Loop, and the GPU plan refuses it by name (no _body_typed).
    if (!body.ok()) {
      ctx.count("optimize-loop-bodies: bodies left untyped");
      continue;
    }
    // The body keeps its inputs' and outputs' dtypes: they are the outer
    // graph's values, bound to the sub-plan as they are.
    PassContext sub = ctx;
    sub.keep_io_dtype = true;
    sub.counters.clear();
    sub.shape_range.reset();
    Status st = run_passes(*body, sub);
    if (!st.ok()) return where(st);
    for (const auto& [what, count] : sub.counters) ctx.count("loop body: " + what, count);
    n.subgraphs[0] = std::make_shared<const ir::Graph>(std::move(*body));
    n.attrs.set("_body_typed", ir::Attribute::of_int(1));
    ctx.count("optimize-loop-bodies: bodies optimized");
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
