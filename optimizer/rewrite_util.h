// Small graph-rewrite helpers shared by passes.
#pragma once

#include "ir/graph.h"

namespace graphc::optimizer {

// Makes every reader of `from` read `to` instead, so the node producing `from`
// can go. Graph outputs keep their names: if `from` is a graph output, `to`
// takes over its name when `to` is a plain intermediate; otherwise returns
// false and changes nothing.
bool bypass_value(ir::Graph& g, ir::ValueId from, ir::ValueId to);

// True when the value is a build-time constant with no producing node.
inline bool is_constant(const ir::Graph& g, ir::ValueId id) {
  return id != ir::kNoValue && g.value(id).constant.has_value();
}

}  // namespace graphc::optimizer
