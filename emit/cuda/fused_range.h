// Fused kernels over a shape range: the body's values' shapes as expressions
// of the range (a FusedGroup is inferred through its body), and the check
// that every elementwise op in it reads each input at an offset no varying
// dim enters. The anchor frame renders prologues and epilogues with the opt
// shape's numbers, so an input must be the op's own shape, or a fixed shape
// broadcast along leading dims only (a bias row) whose trailing dims of the
// op's shape are fixed too. Families that take run-time sizes call this for
// a fused node before generating.
#pragma once

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "support/status.h"

namespace graphc::emit {

// For a FusedGroup `node` of `graph`: `body` gets the body values' shapes
// over `range`; Unsupported (naming the kernel and the input) where an
// elementwise op would read along a varying dim. A plain node passes.
Status check_fused_range(const ir::Graph& graph, ir::NodeId node, const ir::SymbolicShapes& range,
                         ir::SymbolicShapes* body);

}  // namespace graphc::emit
