// Structural checks on an ir::Graph: ids in range, arity within the op
// table's limits, single producers, every input defined, no cycles, unique
// names; with `require_shapes`, every value typed and shaped.
#pragma once

#include "ir/graph.h"

namespace graphc::ir {

struct VerifyOptions {
  bool require_shapes = false;
};

Status verify(const Graph& graph, const VerifyOptions& options = {});

}  // namespace graphc::ir
