#include "optimizer/rewrite_util.h"

namespace graphc::optimizer {

bool bypass_value(ir::Graph& g, ir::ValueId from, ir::ValueId to) {
  if (g.is_graph_output(from)) {
    const ir::Value& t = g.value(to);
    bool plain = t.producer >= 0 && !g.is_graph_input(to) && !g.is_graph_output(to);
    if (!plain) return false;
    std::string name = g.value(from).name;
    g.value(from).name = g.unique_name(name + "/bypassed");
    g.value(to).name = name;
  }
  g.replace_all_uses(from, to);
  return true;
}

}  // namespace graphc::optimizer
