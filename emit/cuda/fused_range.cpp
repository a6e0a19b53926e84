#include "emit/cuda/fused_range.h"

#include <map>

namespace graphc::emit {

namespace {

// `in` read at the flat index of `out` without any varying dim entering the
// offset: the same shape, or a fixed shape under fixed trailing dims of `out`.
bool offsets_fixed(const ir::SymShape& in, const ir::SymShape& out) {
  if (in == out) return true;
  if (in.size() > out.size() || !fixed_over_range(in)) return false;
  size_t first = 0;  // leading 1s of `in` broadcast to everything before
  while (first < in.size() && in[first].constant() == 1) ++first;
  for (size_t d = out.size() - (in.size() - first); d < out.size(); ++d)
    if (!out[d].is_constant()) return false;
  return true;
}

}  // namespace

Expected<ir::SymbolicShapes> fused_body_shapes(const ir::Graph& graph, ir::NodeId node,
                                               const ir::SymbolicShapes& range) {
  const ir::Node& n = graph.node(node);
  if (n.op != ir::OpKind::FusedGroup || !n.body)
    return internal_error("node '{}' is not a fused group", n.name);
  const ir::Graph& body = *n.body;
  std::map<std::string, ir::SymShape> inputs;
  for (size_t i = 0; i < n.inputs.size() && i < body.inputs.size(); ++i)
    if (n.has_input(i))
      inputs[body.value(body.inputs[i]).name] = range.values[static_cast<size_t>(n.inputs[i])].shape;
  ir::SymbolTable symbols{range.symbol_names, range.symbol_min, range.symbol_max};
  auto shapes = ir::infer_symbolic_shapes(body, inputs, symbols);
  if (!shapes.ok()) return shapes.status().with_context(fmt::format("fused kernel '{}'", n.name));
  return shapes;
}

Status check_fused_range(const ir::Graph& graph, ir::NodeId node, const ir::SymbolicShapes& range,
                         ir::SymbolicShapes* body_shapes) {
  const ir::Node& n = graph.node(node);
  if (n.op != ir::OpKind::FusedGroup || !n.body) return Status::ok_status();
  const ir::Graph& body = *n.body;
  auto shapes = fused_body_shapes(graph, node, range);
  if (!shapes.ok()) return shapes.status();
  for (const auto& e : body.nodes) {
    if (e.dead || !ir::is_elementwise(e.op) || e.outputs.empty()) continue;
    const ir::SymShape& out = shapes->values[static_cast<size_t>(e.outputs[0])].shape;
    for (ir::ValueId in : e.inputs) {
      if (in == ir::kNoValue) continue;
      if (!offsets_fixed(shapes->values[static_cast<size_t>(in)].shape, out))
        return unsupported(
            "fused kernel '{}': '{}' ({}) is read by '{}' along a dim that varies over the shape "
            "range, which fused kernels do not take at run time yet",
            n.name, body.value(in).name, shapes->shape_string(in), e.name);
    }
  }
  *body_shapes = std::move(*shapes);
  return Status::ok_status();
}

ir::ValueId first_varying_value(const ir::Node& n, const ir::SymbolicShapes& range) {
  for (const auto* list : {&n.inputs, &n.outputs})
    for (ir::ValueId v : *list)
      if (v != ir::kNoValue && range.values[static_cast<size_t>(v)].depends_on_symbols()) return v;
  return ir::kNoValue;
}

Status no_run_time_sizes(const std::string& what, const ir::Graph& graph, ir::ValueId varying,
                         const ir::SymbolicShapes& range) {
  return unsupported("{} do not take run-time sizes yet, and '{}' is {} over the shape range", what,
                     graph.value(varying).name, range.shape_string(varying));
}

Status use_run_time_sizes(const ir::Graph& graph, ir::NodeId node, const ir::SymbolicShapes& range,
                          bool takes_them, KernelSizes& sizes, ir::SymbolicShapes& body,
                          AnchorFrame& frame) {
  const ir::Node& n = graph.node(node);
  const ir::ValueId v = first_varying_value(n, range);
  if (v == ir::kNoValue) return Status::ok_status();
  if (!takes_them)
    return no_run_time_sizes(fmt::format("{} kernels", ir::op_name(frame.anchor->op)), graph, v,
                             range);
  RETURN_IF_ERROR(check_fused_range(graph, node, range, &body));
  if (n.op == ir::OpKind::FusedGroup) sizes.set_body(n.body.get(), &body);
  frame.sizes = &sizes;
  return Status::ok_status();
}

}  // namespace graphc::emit
