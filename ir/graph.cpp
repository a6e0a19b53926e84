#include "ir/graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace graphc::ir {

std::string_view fusion_kind_name(FusionKind kind) {
  switch (kind) {
    case FusionKind::kNone: return "";
    case FusionKind::kElementwise: return "elementwise";
    case FusionKind::kReduction: return "reduction";
    case FusionKind::kPool: return "pool";
    case FusionKind::kGemm: return "gemm";
    case FusionKind::kConv: return "conv";
  }
  return "";
}

ValueId Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string vname, Tensor t) {
  Value v;
  v.name = std::move(vname);
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.has_shape = true;
  v.constant = std::move(t);
  return add_value(std::move(v));
}

NodeId Graph::add_node(Node n) {
  auto id = static_cast<NodeId>(nodes.size());
  for (ValueId out : n.outputs)
    if (out != kNoValue) value(out).producer = id;
  nodes.push_back(std::move(n));
  return id;
}

NodeId Graph::insert_node_before(NodeId position, Node n) {
  nodes.insert(nodes.begin() + position, std::move(n));
  rebuild_producers();
  return position;
}

std::optional<ValueId> Graph::find_value(const std::string& vname) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == vname) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::vector<NodeId> Graph::consumers(ValueId id) const {
  std::vector<NodeId> out;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].dead) continue;
    if (std::find(nodes[n].inputs.begin(), nodes[n].inputs.end(), id) != nodes[n].inputs.end())
      out.push_back(static_cast<NodeId>(n));
  }
  return out;
}

bool Graph::is_graph_output(ValueId id) const {
  return std::find(outputs.begin(), outputs.end(), id) != outputs.end();
}
bool Graph::is_graph_input(ValueId id) const {
  return std::find(inputs.begin(), inputs.end(), id) != inputs.end();
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (auto& n : nodes) {
    if (n.dead) continue;
    for (auto& in : n.inputs)
      if (in == from) in = to;
  }
  for (auto& out : outputs)
    if (out == from) out = to;
}

void Graph::rebuild_producers() {
  for (auto& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].dead) continue;
    for (ValueId out : nodes[n].outputs)
      if (out != kNoValue) values[static_cast<size_t>(out)].producer = static_cast<NodeId>(n);
  }
}

void Graph::compact() {
  std::erase_if(nodes, [](const Node& n) { return n.dead; });
  std::vector<char> used(values.size(), 0);
  for (ValueId id : inputs) used[static_cast<size_t>(id)] = 1;
  for (ValueId id : outputs) used[static_cast<size_t>(id)] = 1;
  for (const auto& n : nodes) {
    for (ValueId id : n.inputs)
      if (id != kNoValue) used[static_cast<size_t>(id)] = 1;
    for (ValueId id : n.outputs)
      if (id != kNoValue) used[static_cast<size_t>(id)] = 1;
  }
  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(values[i]));
  }
  values = std::move(kept);
  auto fix = [&](ValueId& id) {
    if (id != kNoValue) id = remap[static_cast<size_t>(id)];
  };
  for (auto& id : inputs) fix(id);
  for (auto& id : outputs) fix(id);
  for (auto& n : nodes) {
    for (auto& id : n.inputs) fix(id);
    for (auto& id : n.outputs) fix(id);
  }
  rebuild_producers();
}

std::string Graph::unique_name(const std::string& base) {
  std::unordered_set<std::string> taken;
  for (const auto& v : values) taken.insert(v.name);
  for (const auto& n : nodes) taken.insert(n.name);
  if (!taken.count(base)) return base;
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++name_counter_);
    if (!taken.count(candidate)) return candidate;
  }
}

int64_t Graph::live_node_count() const {
  return std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return !n.dead; });
}

Expected<std::vector<NodeId>> topological_order(const Graph& g) {
  // Kahn's algorithm, stable: among ready nodes the earliest in node order goes first.
  const size_t n = g.nodes.size();
  std::vector<NodeId> producer(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    if (g.nodes[i].dead) continue;
    for (ValueId out : g.nodes[i].outputs)
      if (out != kNoValue) producer[static_cast<size_t>(out)] = static_cast<NodeId>(i);
  }
  std::vector<int> pending(n, 0);
  std::vector<std::vector<NodeId>> users(n);
  for (size_t i = 0; i < n; ++i) {
    if (g.nodes[i].dead) continue;
    for (ValueId in : g.nodes[i].inputs) {
      if (in == kNoValue) continue;
      NodeId p = producer[static_cast<size_t>(in)];
      if (p < 0) continue;
      ++pending[i];
      users[static_cast<size_t>(p)].push_back(static_cast<NodeId>(i));
    }
  }
  std::vector<NodeId> order;
  std::vector<NodeId> ready;
  for (size_t i = 0; i < n; ++i)
    if (!g.nodes[i].dead && pending[i] == 0) ready.push_back(static_cast<NodeId>(i));
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    NodeId cur = ready.back();
    ready.pop_back();
    order.push_back(cur);
    for (NodeId u : users[static_cast<size_t>(cur)]) {
      if (--pending[static_cast<size_t>(u)] == 0) {
        ready.push_back(u);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  if (static_cast<int64_t>(order.size()) != g.live_node_count()) {
    for (size_t i = 0; i < n; ++i)
      if (!g.nodes[i].dead && pending[i] > 0)
        return invalid_model("the graph has a cycle through node '{}' ({})", g.nodes[i].name,
                             op_name(g.nodes[i].op));
  }
  return order;
}

}  // namespace graphc::ir
