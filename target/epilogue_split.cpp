#include "target/epilogue_split.h"

#include <set>

namespace graphc::target {

namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::ValueId;

bool is_library_anchor(ir::OpKind op) {
  return op == ir::OpKind::MatMul || op == ir::OpKind::Gemm || op == ir::OpKind::Conv ||
         op == ir::OpKind::ConvTranspose || op == ir::OpKind::MatMulInteger;
}

}  // namespace

size_t epilogue_op_count(const ir::Node& group) {
  if (group.op != ir::OpKind::FusedGroup || !group.body) return 0;
  size_t live = 0;
  for (const Node& n : group.body->nodes) live += n.dead ? 0 : 1;
  return live > 0 ? live - 1 : 0;
}

Expected<SplitPoint> find_split(const ir::Node& group, size_t taken) {
  if (group.op != ir::OpKind::FusedGroup || !group.body)
    return unsupported("'{}' is not a fused group", group.name);
  const Graph& body = *group.body;
  SplitPoint sp;
  for (size_t i = 0; i < body.nodes.size(); ++i) {
    const Node& n = body.nodes[i];
    if (n.dead || !is_library_anchor(n.op)) continue;
    if (sp.anchor >= 0) return unsupported("two anchors in one group");
    sp.anchor = static_cast<NodeId>(i);
  }
  if (sp.anchor < 0) return unsupported("no MatMul/Gemm/Conv in the group");
  const Node& anchor = body.node(sp.anchor);
  if (anchor.outputs.empty() || anchor.outputs[0] == ir::kNoValue)
    return unsupported("the anchor has no output");
  sp.library.push_back(sp.anchor);
  ValueId cur = anchor.outputs[0];
  for (size_t i = 0; i < taken; ++i) {
    // The library writes only its last value: each one before it must feed
    // the next op of the chain and nothing else.
    if (body.is_graph_output(cur))
      return unsupported("'{}' is read outside the group before the cut", body.value(cur).name);
    const auto users = body.consumers(cur);
    if (users.size() != 1) return unsupported("the epilogue branches before the cut");
    const Node& e = body.node(users[0]);
    if (!ir::is_elementwise(e.op) || e.outputs.size() != 1)
      return unsupported("epilogue op {} is not a one-output elementwise op", ir::op_name(e.op));
    sp.library.push_back(users[0]);
    cur = e.outputs[0];
  }
  sp.cut = cur;
  const ir::Value& cut = body.value(sp.cut);
  const std::set<NodeId> in_library(sp.library.begin(), sp.library.end());
  for (size_t i = 0; i < body.nodes.size(); ++i) {
    const Node& n = body.nodes[i];
    if (n.dead || in_library.count(static_cast<NodeId>(i))) continue;
    if (!ir::is_elementwise(n.op) || n.outputs.size() != 1 || n.outputs[0] == ir::kNoValue)
      return unsupported("epilogue op {} is not a one-output elementwise op", ir::op_name(n.op));
    if (body.value(n.outputs[0]).shape != cut.shape)
      return unsupported("epilogue op {} changes the shape", ir::op_name(n.op));
    for (ValueId in : n.inputs) {
      if (in == ir::kNoValue || in == sp.cut) continue;
      const NodeId p = body.value(in).producer;
      if (p >= 0 && in_library.count(p))
        return unsupported("epilogue op {} reads '{}', which the library does not write",
                           ir::op_name(n.op), body.value(in).name);
    }
    sp.generated.push_back(static_cast<NodeId>(i));
    sp.generated_ops.emplace_back(ir::op_name(n.op));
  }
  if (sp.generated.empty()) return unsupported("the library takes the whole epilogue");
  bool cut_read = body.is_graph_output(sp.cut);
  for (NodeId c : body.consumers(sp.cut)) cut_read |= !in_library.count(c);
  if (!cut_read) return unsupported("nothing reads the library's result");
  return sp;
}

}  // namespace graphc::target
