// CUDA C++ for an elementwise FusedGroup whose body reads through index maps
// (optimizer/pass_fuse_index_maps.cpp): a chain of pure index-mapping ops (Transpose, Reshape/Flatten/Squeeze/
// Unsqueeze, Slice, Concat, constant Pad, Expand, Split, Gather with constant
// indices, Tile) and the elementwise ops after it, rendered as one kernel.
//
// One thread per element of the group's one output, grid-stride loop. The
// body is walked backwards from the output: each op turns the coordinates it
// is asked for into the coordinates of its source element (a Concat or Pad
// branches), so every element is read once from the group's inputs, straight
// from where it lies, and the intermediates never exist. A static build bakes
// every size in as a constant; over a shape range the sizes that vary are
// read from the kernel's size block (kernel_sizes.h) and the grid follows the
// element count (the pass groups only maps that hold at every shape:
// ir::index_map_follows_range).
#pragma once

#include "emit/cuda/cuda_elementwise.h"
#include "ir/graph.h"
#include "ir/symbolic_shapes.h"
#include "support/status.h"

namespace graphc::emit {

// True for an elementwise FusedGroup whose body holds index-map ops: it is
// rendered here, and never runs in place (an element is read from elsewhere).
bool has_index_maps(const ir::Node& n);

// The kernel of such a group (one output). generate_elementwise_kernel calls it.
// With `range` (the graph's symbolic shapes) it serves every shape in it.
Expected<GeneratedKernel> generate_index_map_kernel(const ir::Graph& graph, ir::NodeId node,
                                                    const ir::SymbolicShapes* range = nullptr);

}  // namespace graphc::emit
