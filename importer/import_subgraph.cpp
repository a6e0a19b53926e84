#include <algorithm>
#include <map>
#include <set>

#include "importer/node_importers.h"
#include "importer/subgraph.h"

namespace graphc::importer {

namespace {

// Names `g` reads (node inputs, nested sub-graphs' reads, its outputs) that
// it does not define, in order of first use.
void free_names(const onnx::GraphProto& g, std::vector<std::string>& out,
                std::set<std::string>& seen) {
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& sp : g.sparse_initializer()) defined.insert(sp.values().name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& a : n.attribute()) {
      std::vector<std::string> inner;
      std::set<std::string> inner_seen;
      if (a.has_g()) free_names(a.g(), inner, inner_seen);
      for (const auto& sub : a.graphs()) free_names(sub, inner, inner_seen);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : g.output()) use(o.name());
}

}  // namespace

Status attach_subgraphs(const onnx::ModelProto& model, const std::string& model_dir,
                        const ImportOptions& options,
                        const std::unordered_map<std::string, ir::ValueId>& outer,
                        const std::vector<const onnx::AttributeProto*>& graph_attrs,
                        ir::Node& node) {
  std::vector<std::string> wanted;
  if (node.op == ir::OpKind::If) wanted = {"then_branch", "else_branch"};
  else if (node.op == ir::OpKind::Loop || node.op == ir::OpKind::Scan) wanted = {"body"};
  else
    return unsupported("attribute '{}' of type GRAPH: only If, Loop and Scan take sub-graphs",
                       graph_attrs[0]->name());
  std::map<std::string, const onnx::AttributeProto*> by_attr;
  for (const auto* a : graph_attrs) {
    if (std::find(wanted.begin(), wanted.end(), a->name()) == wanted.end())
      return invalid_model("{} has no graph attribute '{}'", ir::op_name(node.op), a->name());
    by_attr[a->name()] = a;
  }
  std::vector<std::string> captures;
  std::set<std::string> seen;
  for (const auto& name : wanted) {
    if (!by_attr.count(name))
      return invalid_model("{} needs the graph attribute '{}'", ir::op_name(node.op), name);
    free_names(by_attr[name]->g(), captures, seen);
  }
  std::vector<ir::ValueId> capture_ids;
  for (const auto& name : captures) {
    auto it = outer.find(name);
    if (it == outer.end())
      return invalid_model("a sub-graph reads '{}', which no enclosing graph defines before "
                           "this node",
                           name);
    capture_ids.push_back(it->second);
  }
  for (const auto& name : wanted) {
    onnx::GraphProto sub = by_attr[name]->g();
    for (const auto& c : captures) sub.add_input()->set_name(c);
    auto g = import_graph(model, sub, model_dir, options, true);
    if (!g.ok()) return g.status().with_context(fmt::format("sub-graph '{}'", name));
    if (g->name.empty()) g->name = name;
    node.subgraphs.push_back(std::make_shared<const ir::Graph>(std::move(*g)));
  }
  // Loop's M and cond keep their positions ahead of the captures even when empty.
  if (node.op == ir::OpKind::Loop && node.inputs.size() < 2) node.inputs.resize(2, ir::kNoValue);
  node.inputs.insert(node.inputs.end(), capture_ids.begin(), capture_ids.end());
  node.attrs.set("_captures", ir::Attribute::of_int(static_cast<int64_t>(capture_ids.size())));
  return Status::ok_status();
}

}  // namespace graphc::importer
