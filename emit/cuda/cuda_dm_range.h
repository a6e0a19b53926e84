// Data movement kernels over a shape range (docs/dynamic-shapes.md): the
// index math of Transpose, Slice, Concat, Split, Gather, GatherElements, GatherND,
// Expand, Range, CumSum and ConstantOfShape with every size that varies read from the kernel's size
// block (kernel_sizes.h) and the grid computed per shape. One thread per
// output element in a grid-stride loop, scalar loads and stores.
//
// Integer inputs that are shape arithmetic (a Slice's ends from Shape ->
// Gather, an Expand's target shape) are not read on the device: their
// elements come from the symbolic shapes. driver/range_graph.cpp drops the
// opt shape's values of whatever else varies and is read as data, so its
// kernel computes it at run time (shape arithmetic by the shape values
// kernel below).
#pragma once

#include "emit/cuda/gpu_kernels.h"
#include "ir/symbolic_shapes.h"

namespace graphc::emit {

// Whether input `input` of an `op` node is read as a shape over a range
// (its elements taken from the symbolic shapes, never from the device):
// Reshape's target, a Slice's bounds, an Expand's shape ...
bool reads_as_shape(ir::OpKind op, size_t input);

// Shape arithmetic over a range: every output of `n` has elements graphc
// follows, and some vary. Such a node computes nothing from its inputs: when
// a kernel reads its outputs as data, the shape values kernel writes them
// from the size block.
bool is_shape_values_node(const ir::Node& n, const ir::SymbolicShapes& range);
Expected<GeneratedKernel> generate_shape_values_kernel(const ir::Graph& graph, ir::NodeId node,
                                                       const ir::SymbolicShapes& range);

// Whether the op's data movement kernel takes run-time sizes.
bool data_movement_takes_run_time_sizes(ir::OpKind op);

// The kernel of data movement node `node` (plain, or fused with elementwise
// ops that fused_range.h accepts) over `range`; Unsupported naming the node
// and tensor where it cannot follow the range.
Expected<GeneratedKernel> generate_data_movement_range(const ir::Graph& graph, ir::NodeId node,
                                                       const ir::SymbolicShapes& range);

}  // namespace graphc::emit
