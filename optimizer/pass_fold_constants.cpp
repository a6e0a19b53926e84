// Constant folding: a node whose inputs are all known at build time is
// evaluated by the reference executor and replaced by its result. Results
// larger than PassContext::fold_max_bytes are folded only when the constant
// inputs they replace have no other reader, so weights are never duplicated.
// For a shape range (PassContext::shape_range), nothing whose value depends
// on the varying dims folds: it is what the opt shape gives, not every shape.
#include "optimizer/passes.h"
#include "reference/executor.h"

#include <optional>

namespace graphc::optimizer {

namespace {
bool all_inputs_constant(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId in : n.inputs)
    if (in != ir::kNoValue && !g.value(in).constant) return false;
  return true;
}

int64_t output_bytes(const ir::Graph& g, const ir::Node& n) {
  int64_t total = 0;
  for (ir::ValueId o : n.outputs)
    if (o != ir::kNoValue)
      total += ir::shape_numel(g.value(o).shape) *
               static_cast<int64_t>(ir::dtype_size(g.value(o).dtype));
  return total;
}

// True when every large constant input is read by this node alone.
bool replaces_its_inputs(const ir::Graph& g, const ir::Node& n, int64_t cap) {
  for (ir::ValueId in : n.inputs) {
    if (in == ir::kNoValue) continue;
    const ir::Value& v = g.value(in);
    if (static_cast<int64_t>(v.constant->byte_size()) <= cap) continue;
    if (g.consumers(in).size() != 1 || g.is_graph_output(in)) return false;
  }
  return true;
}
}  // namespace

Status fold_constants(ir::Graph& g, PassContext& ctx) {
  std::optional<ir::SymbolicShapes> sym;
  if (ctx.shape_range) {
    auto s = ir::infer_symbolic_shapes(g, *ctx.shape_range);
    if (!s.ok()) return s.status().with_context("fold-constants over the shape range");
    sym = std::move(*s);
  }
  auto varies = [&](const ir::Node& n) {
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue && sym->values[static_cast<size_t>(o)].depends_on_symbols()) return true;
    return false;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (n.dead) continue;
    if (sym && varies(n)) continue;
    // Outputs shape inference already knows (Shape, Size, small propagated
    // values) fold even when the inputs are runtime values.
    bool known = true;
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue && !g.value(o).constant) known = false;
    if (!known && !all_inputs_constant(g, n)) continue;
    if (!known && output_bytes(g, n) > ctx.fold_max_bytes &&
        !replaces_its_inputs(g, n, ctx.fold_max_bytes))
      continue;
    std::vector<ir::Tensor> results;
    if (known) {
      for (ir::ValueId o : n.outputs)
        results.push_back(o == ir::kNoValue ? ir::Tensor() : *g.value(o).constant);
    } else {
      std::vector<const ir::Tensor*> in;
      for (ir::ValueId id : n.inputs)
        in.push_back(id == ir::kNoValue ? nullptr : &*g.value(id).constant);
      auto r = reference::evaluate_node(g, n, in);
      if (!r.ok())
        return r.status().with_context(
            fmt::format("folding node '{}' ({})", n.name, ir::op_name(n.op)));
      results = std::move(*r);
    }
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] == ir::kNoValue) continue;
      ir::Value& v = g.value(n.outputs[o]);
      v.constant = std::move(results[o]);
      v.producer = -1;
    }
    n.dead = true;
    ctx.count("fold-constants: nodes folded");
  }
  g.rebuild_producers();
  return Status::ok_status();
}

}  // namespace graphc::optimizer
