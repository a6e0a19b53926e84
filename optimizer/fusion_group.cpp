#include "optimizer/fusion_group.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace graphc::optimizer {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::ValueId;

bool fusion_creates_cycle(const Graph& g, const std::vector<NodeId>& members) {
  std::set<NodeId> in_group(members.begin(), members.end());
  // Backward DFS from every outside producer a member reads; reaching a member is a cycle.
  std::vector<char> visited(g.nodes.size(), 0);
  std::vector<NodeId> stack;
  for (NodeId m : members)
    for (ValueId in : g.node(m).inputs) {
      if (in == ir::kNoValue) continue;
      NodeId p = g.value(in).producer;
      if (p >= 0 && !in_group.count(p)) stack.push_back(p);
    }
  while (!stack.empty()) {
    NodeId cur = stack.back();
    stack.pop_back();
    if (visited[static_cast<size_t>(cur)]) continue;
    visited[static_cast<size_t>(cur)] = 1;
    for (ValueId in : g.node(cur).inputs) {
      if (in == ir::kNoValue) continue;
      NodeId p = g.value(in).producer;
      if (p < 0) continue;
      if (in_group.count(p)) return true;
      stack.push_back(p);
    }
  }
  return false;
}

Status sort_nodes(Graph& g) {
  ASSIGN_OR_RETURN(auto order, ir::topological_order(g));
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (NodeId id : order) sorted.push_back(std::move(g.node(id)));
  g.nodes = std::move(sorted);
  g.rebuild_producers();
  return Status::ok_status();
}

std::vector<std::string> covered_node_names(const Node& n) {
  if (!n.body) {
    std::vector<std::string> names{n.name};
    names.insert(names.end(), n.absorbed.begin(), n.absorbed.end());
    return names;
  }
  std::vector<std::string> out;
  for (const auto& inner : n.body->nodes) {
    if (inner.dead) continue;
    auto names = covered_node_names(inner);
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

Expected<NodeId> materialize_group(Graph& g, const std::vector<NodeId>& members,
                                   ir::FusionKind kind) {
  if (members.empty()) return internal_error("empty fusion group");
  if (fusion_creates_cycle(g, members)) return internal_error("fusion group would create a cycle");
  std::vector<NodeId> ordered = members;
  std::sort(ordered.begin(), ordered.end());
  std::set<NodeId> in_group(ordered.begin(), ordered.end());

  auto body = std::make_shared<Graph>();
  body->opset = g.opset;
  body->name = std::string(ir::fusion_kind_name(kind));
  std::unordered_map<ValueId, ValueId> to_body;  // outer id -> body id
  std::vector<ValueId> outer_inputs;

  auto import_value = [&](ValueId outer) -> ValueId {
    auto it = to_body.find(outer);
    if (it != to_body.end()) return it->second;
    const ir::Value& v = g.value(outer);
    ValueId id;
    bool embed = v.constant && v.producer < 0 && v.constant->numel() == 1;
    if (embed) {
      id = body->add_constant(v.name, *v.constant);
    } else {
      ir::Value copy;
      copy.name = v.name;
      copy.dtype = v.dtype;
      copy.shape = v.shape;
      copy.has_shape = true;
      id = body->add_value(std::move(copy));
      body->inputs.push_back(id);
      outer_inputs.push_back(outer);
    }
    to_body[outer] = id;
    return id;
  };

  std::set<ValueId> produced;
  for (NodeId m : ordered) {
    const Node& n = g.node(m);
    Node copy = n;
    for (auto& in : copy.inputs)
      if (in != ir::kNoValue) in = produced.count(in) ? to_body.at(in) : import_value(in);
    for (auto& out : copy.outputs) {
      if (out == ir::kNoValue) continue;
      const ir::Value& v = g.value(out);
      ir::Value bv;
      bv.name = v.name;
      bv.dtype = v.dtype;
      bv.shape = v.shape;
      bv.has_shape = v.has_shape;
      ValueId id = body->add_value(std::move(bv));
      to_body[out] = id;
      produced.insert(out);
      out = id;
    }
    body->add_node(std::move(copy));
  }
  // Outputs: member results read outside the group or returned by the graph.
  std::vector<ValueId> outer_outputs;
  for (NodeId m : ordered)
    for (ValueId out : g.node(m).outputs) {
      if (out == ir::kNoValue) continue;
      bool needed = g.is_graph_output(out);
      for (NodeId c : g.consumers(out))
        if (!in_group.count(c)) needed = true;
      if (needed) {
        outer_outputs.push_back(out);
        body->outputs.push_back(to_body.at(out));
      }
    }
  if (outer_outputs.empty()) return internal_error("fusion group has no outputs");

  Node fused;
  fused.op = ir::OpKind::FusedGroup;
  fused.name = g.unique_name(
      fmt::format("fused_{}/{}", ir::fusion_kind_name(kind), g.node(ordered.back()).name));
  fused.inputs = outer_inputs;
  fused.outputs = outer_outputs;
  fused.fusion = kind;
  fused.body = std::move(body);
  for (NodeId m : ordered) g.node(m).dead = true;
  g.nodes.push_back(std::move(fused));
  NodeId new_id = static_cast<NodeId>(g.nodes.size() - 1);
  std::string name = g.nodes.back().name;
  g.compact();
  RETURN_IF_ERROR(sort_nodes(g));
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) new_id = static_cast<NodeId>(i);
  return new_id;
}

}  // namespace graphc::optimizer
