#include "ir/verifier.h"

#include <unordered_set>

namespace graphc::ir {

Status verify(const Graph& graph, const VerifyOptions& options) {
  const auto nvalues = static_cast<ValueId>(graph.values.size());
  auto valid = [&](ValueId id) { return id >= 0 && id < nvalues; };
  std::vector<NodeId> producer(graph.values.size(), -1);
  std::unordered_set<std::string> names;
  for (const auto& v : graph.values) {
    if (v.name.empty()) return invalid_model("a value has an empty name");
    if (!names.insert(v.name).second) return invalid_model("duplicate value name '{}'", v.name);
  }
  for (ValueId in : graph.inputs) {
    if (!valid(in)) return internal_error("graph input id {} out of range", in);
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.dead) continue;
    const OpInfo& info = op_info(node.op);
    auto where = fmt::format("node '{}' ({})", node.name, info.name);
    auto nin = static_cast<int>(node.inputs.size());
    auto nout = static_cast<int>(node.outputs.size());
    if (nin < info.min_inputs || (info.max_inputs >= 0 && nin > info.max_inputs))
      return invalid_model("{} has {} inputs; {} takes {} to {}", where, nin, info.name,
                           info.min_inputs,
                           info.max_inputs < 0 ? std::string("any") : std::to_string(info.max_inputs));
    if (nout < info.min_outputs || (info.max_outputs >= 0 && nout > info.max_outputs))
      return invalid_model("{} has {} outputs; {} produces {} to {}", where, nout, info.name,
                           info.min_outputs,
                           info.max_outputs < 0 ? std::string("any") : std::to_string(info.max_outputs));
    if (node.op == OpKind::FusedGroup) {
      if (!node.body) return invalid_model("{} has no body", where);
      Status body_status = verify(*node.body, options);
      if (!body_status.ok()) return body_status.with_context(where + " body");
      if (node.body->inputs.size() != node.inputs.size() ||
          node.body->outputs.size() != node.outputs.size())
        return invalid_model("{}: body arity differs from the node's", where);
    }
    for (size_t k = 0; k < node.subgraphs.size(); ++k) {
      if (!node.subgraphs[k]) return internal_error("{}: sub-graph {} is missing", where, k);
      // Sub-graphs are typed only when their node's inputs are (ir/control_flow.h).
      Status sub_status = verify(*node.subgraphs[k], VerifyOptions{});
      if (!sub_status.ok()) return sub_status.with_context(fmt::format("{} sub-graph {}", where, k));
    }
    for (int i = 0; i < info.min_inputs; ++i)
      if (node.inputs[static_cast<size_t>(i)] == kNoValue)
        return invalid_model("{}: required input {} is missing", where, i);
    for (ValueId in : node.inputs)
      if (in != kNoValue && !valid(in)) return internal_error("{}: input id {} out of range", where, in);
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      if (!valid(out)) return internal_error("{}: output id {} out of range", where, out);
      if (producer[static_cast<size_t>(out)] >= 0)
        return invalid_model("value '{}' is produced by two nodes ('{}' and '{}')",
                             graph.value(out).name,
                             graph.nodes[static_cast<size_t>(producer[static_cast<size_t>(out)])].name,
                             node.name);
      if (graph.value(out).constant && graph.value(out).is_initializer)
        return invalid_model("{} writes '{}', which is an initializer", where, graph.value(out).name);
      if (graph.is_graph_input(out))
        return invalid_model("{} writes '{}', which is a graph input", where, graph.value(out).name);
      producer[static_cast<size_t>(out)] = static_cast<NodeId>(n);
    }
  }
  auto defined = [&](ValueId id) {
    const Value& v = graph.value(id);
    return producer[static_cast<size_t>(id)] >= 0 || graph.is_graph_input(id) ||
           (v.constant && v.producer < 0);
  };
  for (const Node& node : graph.nodes) {
    if (node.dead) continue;
    for (ValueId in : node.inputs)
      if (in != kNoValue && !defined(in))
        return invalid_model("node '{}' ({}) reads '{}', which no node produces and is not an "
                             "input or initializer",
                             node.name, op_name(node.op), graph.value(in).name);
  }
  for (ValueId out : graph.outputs) {
    if (!valid(out)) return internal_error("graph output id {} out of range", out);
    if (!defined(out))
      return invalid_model("graph output '{}' is not produced by any node", graph.value(out).name);
  }
  ASSIGN_OR_RETURN(auto order, topological_order(graph));
  (void)order;
  if (options.require_shapes) {
    for (const Node& node : graph.nodes) {
      if (node.dead) continue;
      for (ValueId out : node.outputs)
        if (out != kNoValue && (!graph.value(out).has_shape ||
                                graph.value(out).dtype == DType::kUndefined))
          return invalid_model("value '{}' has no inferred shape", graph.value(out).name);
    }
  }
  return Status::ok_status();
}

}  // namespace graphc::ir
