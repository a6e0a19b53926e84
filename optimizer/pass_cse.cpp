// Common-subexpression elimination: two live nodes with the same op, the same
// inputs and equal attributes compute the same outputs; keep the first.
// Constants with identical bytes are merged first so weight-equal inputs match.
#include <map>
#include <tuple>

#include "optimizer/passes.h"

namespace graphc::optimizer {

namespace {
// Small constants (shape tensors, scalars) are deduplicated by content.
constexpr int64_t kMergeConstantMaxBytes = 4096;
}  // namespace

Status eliminate_common_subexpressions(ir::Graph& g, PassContext& ctx) {
  // 1. Merge equal small constants (not graph outputs).
  std::vector<ir::ValueId> canonical(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) canonical[i] = static_cast<ir::ValueId>(i);
  std::vector<ir::ValueId> seen;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ir::Value& v = g.values[i];
    if (!v.constant || v.producer >= 0 || g.is_graph_output(static_cast<ir::ValueId>(i))) continue;
    if (static_cast<int64_t>(v.constant->byte_size()) > kMergeConstantMaxBytes) continue;
    for (ir::ValueId s : seen) {
      if (g.value(s).constant->same_bytes(*v.constant)) {
        canonical[i] = s;
        break;
      }
    }
    if (canonical[i] == static_cast<ir::ValueId>(i)) seen.push_back(static_cast<ir::ValueId>(i));
  }
  for (auto& n : g.nodes)
    for (auto& in : n.inputs)
      if (in != ir::kNoValue && canonical[static_cast<size_t>(in)] != in) {
        in = canonical[static_cast<size_t>(in)];
        ctx.count("cse: constant uses merged");
      }
  // 2. Merge identical nodes, in topological order so chains collapse in one sweep.
  std::map<std::tuple<ir::OpKind, std::vector<ir::ValueId>, size_t>, std::vector<ir::NodeId>>
      buckets;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    if (n.dead) continue;
    auto key = std::make_tuple(n.op, n.inputs, n.outputs.size());
    auto& bucket = buckets[key];
    bool merged = false;
    for (ir::NodeId other_id : bucket) {
      const ir::Node& other = g.node(other_id);
      if (!(other.attrs == n.attrs) || other.body != n.body || other.subgraphs != n.subgraphs)
        continue;
      bool outputs_ok = true;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if ((n.outputs[o] == ir::kNoValue) != (other.outputs[o] == ir::kNoValue))
          outputs_ok = false;
      if (!outputs_ok) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        if (n.outputs[o] == ir::kNoValue) continue;
        if (g.is_graph_output(n.outputs[o])) outputs_ok = false;  // keep output names
      }
      if (!outputs_ok) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] != ir::kNoValue) g.replace_all_uses(n.outputs[o], other.outputs[o]);
      n.dead = true;
      merged = true;
      ctx.count("cse: nodes merged");
      // Later nodes now read `other`'s outputs; their keys use the updated inputs.
      break;
    }
    if (!merged) bucket.push_back(static_cast<ir::NodeId>(i));
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
