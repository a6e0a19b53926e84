// Kernels over a shape range: which tensor of a node varies, the refusal of a
// family that cannot follow it yet, and for fused kernels the body's values'
// shapes as expressions
// of the range (a FusedGroup is inferred through its body), and the check
// that every elementwise op in it reads each input at an offset no varying
// dim enters. The anchor frame renders prologues and epilogues with the opt
// shape's numbers, so an input must be the op's own shape, or a fixed shape
// broadcast along leading dims only (a bias row) whose trailing dims of the
// op's shape are fixed too. Families that take run-time sizes call this for
// a fused node before generating.
#pragma once

#include <string>

#include "emit/cuda/anchor_frame.h"
#include "emit/cuda/kernel_sizes.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "support/status.h"

namespace graphc::emit {

// The body values' shapes over `range` of FusedGroup `node` (by body ValueId).
Expected<ir::SymbolicShapes> fused_body_shapes(const ir::Graph& graph, ir::NodeId node,
                                               const ir::SymbolicShapes& range);

// For a FusedGroup `node` of `graph`: `body` gets the body values' shapes
// over `range`; Unsupported (naming the kernel and the input) where an
// elementwise op would read along a varying dim. A plain node passes.
Status check_fused_range(const ir::Graph& graph, ir::NodeId node, const ir::SymbolicShapes& range,
                         ir::SymbolicShapes* body);

// The first input or output of `n` whose shape varies over `range`, or kNoValue.
ir::ValueId first_varying_value(const ir::Node& n, const ir::SymbolicShapes& range);

// "<what> do not take run-time sizes yet, and 'x' is batchx32 over the shape range".
Status no_run_time_sizes(const std::string& what, const ir::Graph& graph, ir::ValueId varying,
                         const ir::SymbolicShapes& range);

// For a family generator over a shape range: when a tensor of `node` varies,
// either the anchor takes run-time sizes (`takes_them`: the fusion is checked,
// `sizes` learns the body's shapes, kept in `body`, and `frame` takes
// `sizes`) or the kernel is refused naming the anchor's op and the tensor.
// Nothing varies: the frame stays static.
Status use_run_time_sizes(const ir::Graph& graph, ir::NodeId node, const ir::SymbolicShapes& range,
                          bool takes_them, KernelSizes& sizes, ir::SymbolicShapes& body,
                          AnchorFrame& frame);

}  // namespace graphc::emit
