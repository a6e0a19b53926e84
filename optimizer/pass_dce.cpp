// Dead-code elimination: a node is live if it (transitively) feeds a graph output.
#include "optimizer/passes.h"

namespace graphc::optimizer {

Status eliminate_dead_code(ir::Graph& g, PassContext& ctx) {
  std::vector<char> needed(g.values.size(), 0);
  for (ir::ValueId out : g.outputs) needed[static_cast<size_t>(out)] = 1;
  // Walk nodes backwards: nodes are kept in topological order.
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    ir::Node& n = *it;
    if (n.dead) continue;
    bool live = false;
    for (ir::ValueId o : n.outputs)
      if (o != ir::kNoValue && needed[static_cast<size_t>(o)]) live = true;
    if (!live) {
      n.dead = true;
      ctx.count("dce: nodes removed");
      continue;
    }
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) needed[static_cast<size_t>(in)] = 1;
  }
  return Status::ok_status();
}

}  // namespace graphc::optimizer
