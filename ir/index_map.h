// The index map of one pure data-movement op: which source element each
// output element is. Shared by the fuse-index-maps pass (which ops it may
// group) and the CUDA index-map kernel (which renders the maps), so the two
// cannot disagree about what an op means. Every parameter must be known at
// build time (attributes or constant inputs). Over a shape range the graph's
// shapes are the opt shape's and index_map_step's numbers come from them:
// index_map_follows_range says whether they hold at every shape of the range.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/symbolic_shapes.h"

namespace graphc::ir {

struct IndexMapStep {
  enum class Kind { kSame, kReshape, kTranspose, kSlice, kPad, kConcat, kSplit, kExpand, kTile,
                    kGather };
  Kind kind = Kind::kSame;
  std::vector<int64_t> perm;          // kTranspose: out dim d reads in dim perm[d]
  std::vector<int64_t> start, step;   // kSlice: per in dim
  std::vector<int64_t> pad_begin;     // kPad: per dim (negative crops)
  std::vector<int64_t> pad_lo, pad_w; // kPad: the cropped input window per dim
  std::optional<Tensor> pad_value;    // kPad: one element of the data dtype
  int64_t axis = 0;                   // kConcat/kSplit/kGather
  std::vector<int64_t> offsets;       // kConcat: first index of input k; kSplit: of output k
  std::vector<int64_t> indices;       // kGather: in [0, dim)
  Shape indices_shape;                // kGather
};

// The map of node `n` of `g` (data input 0; all inputs for Concat), or
// unsupported saying why (a run-time parameter, a non-constant pad mode, an
// out-of-range Gather index, no static shape).
Expected<IndexMapStep> index_map_step(const Graph& g, const Node& n);

// The inputs of `n` that carry data through the map (the rest are
// parameters: shapes, pads, starts, indices ...).
std::vector<size_t> index_map_data_inputs(const Node& n);

// Over a shape range (`sym`: g's symbolic shapes, by ValueId): whether the
// map index_map_step computes from the opt shape is the map at every shape.
// It is where every parameter input is a build-time constant the same at
// every shape (a range graph keeps the opt shape's values of shape
// arithmetic: those do not count) and every number taken from a dim is from
// a dim that does not vary: a Slice, Pad or Tile leaves a varying dim whole,
// a Gather and a Split cut a fixed axis, an Expand broadcasts only dims of
// one element. Unsupported otherwise, naming the node and the dim.
Status index_map_follows_range(const Graph& g, const Node& n, const SymbolicShapes& sym);

// Over a shape range: whether elementwise node `n` reads every input at the
// output's coordinates or broadcasts it only along dims of one element (a
// varying dim broadcast against another size is not followed).
Status broadcast_follows_range(const Graph& g, const Node& n, const SymbolicShapes& sym);

}  // namespace graphc::ir
